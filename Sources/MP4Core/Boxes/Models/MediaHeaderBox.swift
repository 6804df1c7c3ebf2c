/// `mdhd` (ISO/IEC 14496-12 8.4.2): a track's media header. Version 1 widens times to 64 bits.
public struct MediaHeaderBox: WritableBoxModel, Codable {
    public static let type: FourCC = .mdhd
    public static let specName = "MediaHeaderBox"
    public static let isFullBox = true

    /// Creation time, seconds since 1904-01-01 UTC.
    public var creationTime: UInt64
    /// Modification time, seconds since 1904-01-01 UTC.
    public var modificationTime: UInt64
    /// Units per second of the media (sample) time scale.
    public var timescale: UInt32
    /// Duration in `timescale` units (`UInt64.max` when unknown).
    public var duration: UInt64
    /// The packed language as stored: ISO-639-2/T in 3x5 bits, or a QuickTime Macintosh code.
    public var languageCode: UInt16
    /// QuickTime's quality (ISO's pre_defined, 0); nil when the box ends before it.
    public var quality: UInt16?
    /// Whether times are 64-bit (version 1).
    public var isWide: Bool

    /// ISO-639-2/T language code (`und` when unset), or `mac:N` for a QuickTime Macintosh
    /// language code.
    public var language: String { Self.language(languageCode) }

    public init(creationTime: UInt64 = 0, modificationTime: UInt64 = 0, timescale: UInt32, duration: UInt64, languageCode: UInt16 = 0x55C4, quality: UInt16? = 0, isWide: Bool = false) {
        self.creationTime = creationTime
        self.modificationTime = modificationTime
        self.timescale = timescale
        self.duration = duration
        self.languageCode = languageCode
        self.quality = quality
        self.isWide = isWide
    }

    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> MediaHeaderBox {
        let wide = version == 1
        let times = try HeaderTimes.read(&reader, wide: wide)
        let packed = try reader.readUInt16()
        // pre_defined (QuickTime: quality); tolerated when missing.
        let quality = reader.remaining >= 2 ? try reader.readUInt16() : nil
        return MediaHeaderBox(creationTime: times.creationTime, modificationTime: times.modificationTime, timescale: times.timescale, duration: times.duration, languageCode: packed, quality: quality, isWide: wide)
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

    public var fields: [(name: String, value: FieldValue)] {
        [("timescale", .uint(UInt64(timescale))), ("duration", .duration(duration)), ("durationSeconds", .optional(durationSeconds, FieldValue.double)), ("language", .string(language))]
    }

    public func write(to writer: inout ByteWriter) {
        HeaderTimes(creationTime: creationTime, modificationTime: modificationTime, timescale: timescale, duration: duration).write(to: &writer, wide: isWide)
        writer.u16(languageCode)
        if let quality { writer.u16(quality) }
    }
}
