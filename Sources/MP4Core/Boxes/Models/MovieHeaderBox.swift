/// `mvhd` (ISO/IEC 14496-12 8.2.2): the movie header. Version 1 widens times to 64 bits.
public struct MovieHeaderBox: WritableBoxModel, Codable {
    public static let type: FourCC = .mvhd
    public static let specName = "MovieHeaderBox"
    public static let isFullBox = true

    /// Creation time, seconds since 1904-01-01 UTC.
    public var creationTime: UInt64
    /// Modification time, seconds since 1904-01-01 UTC.
    public var modificationTime: UInt64
    /// Units per second of the movie's time scale.
    public var timescale: UInt32
    /// Duration of the longest track in `timescale` units (`UInt64.max`: unknown, all ones).
    public var duration: UInt64
    /// Preferred playback rate (16.16 fixed point as a Double).
    public var rate: Double
    /// Preferred volume (8.8 fixed point as a Double).
    public var volume: Double
    /// Transformation matrix (a, b, u, c, d, v, x, y, w): 16.16, and 2.30 for u, v, w.
    public var matrix: [Double]
    /// The next track ID to use.
    public var nextTrackID: UInt32
    /// Whether times are 64-bit (version 1).
    public var isWide: Bool

    public static let identityMatrix: [Double] = [1, 0, 0, 0, 1, 0, 0, 0, 1]

    public init(creationTime: UInt64 = 0, modificationTime: UInt64 = 0, timescale: UInt32, duration: UInt64, rate: Double = 1, volume: Double = 1,
                matrix: [Double] = MovieHeaderBox.identityMatrix, nextTrackID: UInt32, isWide: Bool = false) {
        self.creationTime = creationTime
        self.modificationTime = modificationTime
        self.timescale = timescale
        self.duration = duration
        self.rate = rate
        self.volume = volume
        self.matrix = matrix
        self.nextTrackID = nextTrackID
        self.isWide = isWide
    }

    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> MovieHeaderBox {
        let wide = version == 1
        let times = try HeaderTimes.read(&reader, wide: wide)
        let rate = Double(try reader.readInt32()) / 65536
        let volume = Double(try reader.readInt16()) / 256
        try reader.skip(10)  // reserved
        let matrix = try TrackHeaderBox.readMatrix(&reader)
        try reader.skip(24)  // pre_defined
        let next = try reader.readUInt32()
        return MovieHeaderBox(creationTime: times.creationTime, modificationTime: times.modificationTime, timescale: times.timescale, duration: times.duration, rate: rate, volume: volume, matrix: matrix, nextTrackID: next, isWide: wide)
    }

    /// The duration in seconds, or `nil` when unknown or the timescale is zero.
    public var durationSeconds: Double? {
        guard timescale > 0, duration != UInt64.max else { return nil }
        return Double(duration) / Double(timescale)
    }

    public var fields: [(name: String, value: FieldValue)] {
        [("timescale", .uint(UInt64(timescale))), ("duration", .duration(duration)), ("durationSeconds", .optional(durationSeconds, FieldValue.double)), ("rate", .double(rate)), ("volume", .double(volume)), ("nextTrackID", .uint(UInt64(nextTrackID)))]
    }

    /// Reserved and pre-defined bytes are written as zeros.
    public func write(to writer: inout ByteWriter) {
        HeaderTimes(creationTime: creationTime, modificationTime: modificationTime, timescale: timescale, duration: duration).write(to: &writer, wide: isWide)
        writer.i32(Int32(clamping: CheckedMath.fixedPoint(rate, fractionBits: 16)))
        writer.u16(UInt16(bitPattern: Int16(clamping: CheckedMath.fixedPoint(volume, fractionBits: 8))))
        writer.append([UInt8](repeating: 0, count: 10))
        TrackHeaderBox.writeMatrix(matrix, to: &writer)
        writer.append([UInt8](repeating: 0, count: 24))
        writer.u32(nextTrackID)
    }
}
