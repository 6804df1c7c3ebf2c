/// `tkhd` (ISO/IEC 14496-12 8.3.2): a track's header. Version 1 widens times to 64 bits.
public struct TrackHeaderBox: WritableBoxModel, Codable {
    public static let type: FourCC = .tkhd
    public static let specName = "TrackHeaderBox"
    public static let isFullBox = true

    /// Flags: 0x1 enabled, 0x2 in movie, 0x4 in preview.
    public var flags: UInt32
    /// Creation time, seconds since 1904-01-01 UTC.
    public var creationTime: UInt64
    /// Modification time, seconds since 1904-01-01 UTC.
    public var modificationTime: UInt64
    /// The track's ID (never 0 in a valid file).
    public var trackID: UInt32
    /// Duration in the *movie* time scale (sum of edits; `UInt64.max`: unknown).
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
    /// Whether times are 64-bit (version 1).
    public var isWide: Bool

    public init(flags: UInt32 = 3, creationTime: UInt64 = 0, modificationTime: UInt64 = 0, trackID: UInt32, duration: UInt64, layer: Int16 = 0, alternateGroup: Int16 = 0,
                volume: Double = 0, matrix: [Double] = MovieHeaderBox.identityMatrix, width: Double = 0, height: Double = 0, isWide: Bool = false) {
        self.flags = flags
        self.creationTime = creationTime
        self.modificationTime = modificationTime
        self.trackID = trackID
        self.duration = duration
        self.layer = layer
        self.alternateGroup = alternateGroup
        self.volume = volume
        self.matrix = matrix
        self.width = width
        self.height = height
        self.isWide = isWide
    }

    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> TrackHeaderBox {
        let wide = version == 1
        let creation = try reader.readUInt(wide: wide)
        let modification = try reader.readUInt(wide: wide)
        let trackID = try reader.readUInt32()
        try reader.skip(4)
        var duration = try reader.readUInt(wide: wide)
        if !wide && duration == UInt64(UInt32.max) { duration = UInt64.max }
        try reader.skip(8)
        let layer = try reader.readInt16()
        let group = try reader.readInt16()
        let volume = Double(try reader.readInt16()) / 256
        try reader.skip(2)
        let matrix = try readMatrix(&reader)
        let width = Double(try reader.readUInt32()) / 65536
        let height = Double(try reader.readUInt32()) / 65536
        return TrackHeaderBox(flags: flags, creationTime: creation, modificationTime: modification, trackID: trackID, duration: duration, layer: layer, alternateGroup: group,
                              volume: volume, matrix: matrix, width: width, height: height, isWide: wide)
    }

    /// A 3x3 matrix: 16.16 values, and 2.30 for u, v, w (`mvhd`, `tkhd`).
    static func readMatrix(_ reader: inout ByteReader) throws -> [Double] {
        var matrix: [Double] = []
        for index in 0..<9 {
            let raw = Double(try reader.readInt32())
            matrix.append(index % 3 == 2 ? raw / 1_073_741_824 : raw / 65536)
        }
        return matrix
    }

    /// The inverse of ``readMatrix(_:)`` (a matrix of another size is written as the identity).
    static func writeMatrix(_ matrix: [Double], to writer: inout ByteWriter) {
        for (index, value) in (matrix.count == 9 ? matrix : MovieHeaderBox.identityMatrix).enumerated() {
            writer.i32(Int32(clamping: CheckedMath.fixedPoint(value, fractionBits: index % 3 == 2 ? 30 : 16)))
        }
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

    public var fields: [(name: String, value: FieldValue)] {
        [("trackID", .uint(UInt64(trackID))), ("enabled", .bool(isEnabled)), ("duration", .duration(duration)), ("layer", .int(Int64(layer))), ("alternateGroup", .int(Int64(alternateGroup))), ("volume", .double(volume)), ("width", .double(width)), ("height", .double(height)), ("rotation", .optional(rotationDegrees) { .int(Int64($0)) })]
    }

    /// Reserved bytes are written as zeros.
    public func write(to writer: inout ByteWriter) {
        writer.uint(creationTime, wide: isWide)
        writer.uint(modificationTime, wide: isWide)
        writer.u32(trackID)
        writer.u32(0)
        writer.uint(duration == .max && !isWide ? UInt64(UInt32.max) : duration, wide: isWide)
        writer.append([UInt8](repeating: 0, count: 8))
        writer.u16(UInt16(bitPattern: layer))
        writer.u16(UInt16(bitPattern: alternateGroup))
        writer.u16(UInt16(bitPattern: Int16(clamping: CheckedMath.fixedPoint(volume, fractionBits: 8))))
        writer.u16(0)
        Self.writeMatrix(matrix, to: &writer)
        writer.u32(UInt32(clamping: CheckedMath.fixedPoint(width, fractionBits: 16)))
        writer.u32(UInt32(clamping: CheckedMath.fixedPoint(height, fractionBits: 16)))
    }
}
