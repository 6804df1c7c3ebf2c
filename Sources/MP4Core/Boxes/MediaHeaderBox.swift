/// `mdhd`: media header, ISO/IEC 14496-12 §8.4.2.
public struct MediaHeaderBox: Sendable, Hashable, Codable {
    /// Units per second of the media (sample) time scale.
    public var timescale: UInt32
    /// Duration in `timescale` units (`UInt64.max` when unknown).
    public var duration: UInt64
    /// ISO-639-2/T language code (`und` when unset), or `mac:N` for a QuickTime Macintosh
    /// language code.
    public var language: String

    /// Parses the payload after version and flags.
    public static func parse(_ reader: inout ByteReader, version: UInt8) throws -> MediaHeaderBox {
        let wide = version == 1
        try reader.skip(wide ? 16 : 8)
        let timescale = try reader.readUInt32()
        var duration = try reader.readUInt(wide: wide)
        if !wide && duration == UInt64(UInt32.max) { duration = UInt64.max }
        let packed = try reader.readUInt16()
        // pre_defined (QuickTime: quality); tolerated when missing.
        if reader.remaining >= 2 { try reader.skip(2) }
        return MediaHeaderBox(timescale: timescale, duration: duration, language: Self.language(packed))
    }

    /// Decodes the packed 3×5-bit language, or a QuickTime Macintosh language code.
    static func language(_ packed: UInt16) -> String {
        if packed == 0x7FFF { return "und" }
        // QuickTime Macintosh language codes: 0 is English (as ffmpeg reads it); the others
        // are shown as `mac:N`.
        if packed == 0 { return "eng" }
        if packed < 0x400 { return "mac:\(packed)" }
        let letters = [(packed >> 10) & 0x1F, (packed >> 5) & 0x1F, packed & 0x1F]
        guard letters.allSatisfy({ $0 >= 1 && $0 <= 26 }) else { return "und" }
        return String(String.UnicodeScalarView(letters.compactMap { Unicode.Scalar(UInt32($0) + 0x60) }))
    }

    /// The duration in seconds, or `nil` when unknown or the timescale is zero.
    public var durationSeconds: Double? {
        guard timescale > 0, duration != UInt64.max else { return nil }
        return Double(duration) / Double(timescale)
    }
}

extension MediaHeaderBox: BoxModel {
    public static let type: FourCC = .mdhd
    public static let specName = "MediaHeaderBox"
    public static let isFullBox = true
    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> MediaHeaderBox { try parse(&reader, version: version) }
    public var fields: [(name: String, value: FieldValue)] {
        [("timescale", .uint(UInt64(timescale))), ("duration", .duration(duration)), ("durationSeconds", .optional(durationSeconds, FieldValue.double)), ("language", .string(language))]
    }
}
