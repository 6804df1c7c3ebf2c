/// `tkhd`: track header, ISO/IEC 14496-12 §8.3.2.
public struct TrackHeaderBox: Sendable, Hashable, Codable {
    /// Flags: 0x1 enabled, 0x2 in movie, 0x4 in preview.
    public var flags: UInt32
    /// The track's ID (never 0 in a valid file).
    public var trackID: UInt32
    /// Duration in the *movie* time scale (sum of edits).
    public var duration: UInt64
    /// Front-to-back layer.
    public var layer: Int16
    /// Group of alternative tracks (0 = none).
    public var alternateGroup: Int16
    /// Volume (8.8 fixed point).
    public var volume: Double
    /// Transformation matrix (a, b, u, c, d, v, x, y, w) as Doubles.
    public var matrix: [Double]
    /// Visual presentation width (16.16 fixed point as Double).
    public var width: Double
    /// Visual presentation height (16.16 fixed point as Double).
    public var height: Double

    /// Parses the payload after version and flags.
    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> TrackHeaderBox {
        let wide = version == 1
        try reader.skip(wide ? 16 : 8)  // creation, modification
        let trackID = try reader.readUInt32()
        try reader.skip(4)
        var duration = try reader.readUInt(wide: wide)
        if !wide && duration == UInt64(UInt32.max) { duration = UInt64.max }
        try reader.skip(8)
        let layer = try reader.readInt16()
        let group = try reader.readInt16()
        let volume = Double(try reader.readInt16()) / 256
        try reader.skip(2)
        var matrix: [Double] = []
        for index in 0..<9 {
            let raw = Double(try reader.readInt32())
            matrix.append(index % 3 == 2 ? raw / 1_073_741_824 : raw / 65536)  // u, v, w are 2.30
        }
        let width = Double(try reader.readUInt32()) / 65536
        let height = Double(try reader.readUInt32()) / 65536
        return TrackHeaderBox(flags: flags, trackID: trackID, duration: duration, layer: layer, alternateGroup: group, volume: volume, matrix: matrix, width: width, height: height)
    }

    /// Whether the track is enabled.
    public var isEnabled: Bool { flags & 1 != 0 }

    /// Rotation in degrees (0, 90, 180, 270) read from the matrix, when it is a pure rotation.
    public var rotationDegrees: Int? {
        guard matrix.count == 9 else { return nil }
        let (a, b, c, d) = (matrix[0], matrix[1], matrix[3], matrix[4])
        switch (a, b, c, d) {
        case (1, 0, 0, 1): return 0
        case (0, 1, -1, 0): return 90
        case (-1, 0, 0, -1): return 180
        case (0, -1, 1, 0): return 270
        default: return nil
        }
    }
}

extension TrackHeaderBox: BoxModel {
    public static let type: FourCC = .tkhd
    public static let specName = "TrackHeaderBox"
    public static let isFullBox = true
    public var fields: [(name: String, value: FieldValue)] {
        [("trackID", .uint(UInt64(trackID))), ("enabled", .bool(isEnabled)), ("duration", .duration(duration)), ("layer", .int(Int64(layer))), ("alternateGroup", .int(Int64(alternateGroup))), ("volume", .double(volume)), ("width", .double(width)), ("height", .double(height)), ("rotation", .optional(rotationDegrees) { .int(Int64($0)) })]
    }
}
