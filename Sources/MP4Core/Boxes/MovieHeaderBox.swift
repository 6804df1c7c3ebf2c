/// `mvhd`: movie header, ISO/IEC 14496-12 §8.2.2. Version 1 widens times to 64 bits.
public struct MovieHeaderBox: Sendable, Hashable, Codable {
    /// Creation time, seconds since 1904-01-01 UTC.
    public var creationTime: UInt64
    /// Modification time, seconds since 1904-01-01 UTC.
    public var modificationTime: UInt64
    /// Units per second of the movie's time scale.
    public var timescale: UInt32
    /// Duration of the longest track in `timescale` units (all ones means unknown).
    public var duration: UInt64
    /// Preferred playback rate (16.16 fixed point as a Double).
    public var rate: Double
    /// Preferred volume (8.8 fixed point as a Double).
    public var volume: Double
    /// The next track ID to use.
    public var nextTrackID: UInt32

    /// Parses the payload after version and flags.
    public static func parse(_ reader: inout ByteReader, version: UInt8) throws -> MovieHeaderBox {
        let wide = version == 1
        let creation = try reader.readUInt(wide: wide)
        let modification = try reader.readUInt(wide: wide)
        let timescale = try reader.readUInt32()
        var duration = try reader.readUInt(wide: wide)
        if !wide && duration == UInt64(UInt32.max) { duration = UInt64.max }
        let rate = Double(try reader.readInt32()) / 65536
        let volume = Double(try reader.readInt16()) / 256
        try reader.skip(10 + 36 + 24)  // reserved, matrix, pre_defined
        let next = try reader.readUInt32()
        return MovieHeaderBox(creationTime: creation, modificationTime: modification, timescale: timescale, duration: duration, rate: rate, volume: volume, nextTrackID: next)
    }

    /// The duration in seconds, or `nil` when unknown or the timescale is zero.
    public var durationSeconds: Double? {
        guard timescale > 0, duration != UInt64.max else { return nil }
        return Double(duration) / Double(timescale)
    }
}

extension MovieHeaderBox: BoxModel {
    public static let type: FourCC = .mvhd
    public static let specName = "MovieHeaderBox"
    public static let isFullBox = true
    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> MovieHeaderBox { try parse(&reader, version: version) }
    public var fields: [(name: String, value: FieldValue)] {
        [("timescale", .uint(UInt64(timescale))), ("duration", .duration(duration)), ("durationSeconds", .optional(durationSeconds, FieldValue.double)), ("rate", .double(rate)), ("volume", .double(volume)), ("nextTrackID", .uint(UInt64(nextTrackID)))]
    }
}
