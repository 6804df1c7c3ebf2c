/// `data` inside an `ilst` item (iTunes/QuickTime metadata): a well-known type, a locale and
/// the value.
public struct MetadataValueBox: WritableBoxModel {
    public static let type: FourCC = "data"
    public static let specName = "MetadataValueBox"
    public static let isFullBox = false

    /// The well-known type (1: UTF-8, 2: UTF-16, 13: JPEG, 14: PNG, 21: signed integer,
    /// 22: unsigned integer, 0: binary), with the type set in the top byte.
    public var typeIndicator: UInt32
    public var locale: UInt32
    public var value: ArraySlice<UInt8>

    public init(typeIndicator: UInt32, locale: UInt32, value: ArraySlice<UInt8>) {
        self.typeIndicator = typeIndicator
        self.locale = locale
        self.value = value
    }

    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> MetadataValueBox {
        MetadataValueBox(typeIndicator: try reader.readUInt32(), locale: try reader.readUInt32(), value: try reader.readBytes(reader.remaining))
    }

    /// The value as text: UTF-8 and UTF-16 strings, integers; `nil` for images and binary.
    public var text: String? {
        switch typeIndicator & 0xFF_FFFF {
        case 1: return String(decoding: value, as: UTF8.self)
        case 2: return Self.utf16BigEndian(value)
        case 23, 24:
            // Big-endian IEEE 754 float32 / float64, printed as C's %f (ffprobe's form).
            guard value.count == (typeIndicator & 0xFF_FFFF == 23 ? 4 : 8) else { return nil }
            let bits = UInt64(bigEndian: value)
            let number = value.count == 4 ? Double(Float(bitPattern: UInt32(bits))) : Double(bitPattern: bits)
            return Self.fixedSix(number)
        case 21, 22:
            guard (1...8).contains(value.count) else { return nil }
            let number = UInt64(bigEndian: value)
            if typeIndicator & 0xFF_FFFF == 21, let first = value.first, first & 0x80 != 0 {
                return String(Int64(bitPattern: number | (UInt64.max << UInt64(value.count * 8))))
            }
            return String(number)
        default: return nil
        }
    }

    /// Big-endian UTF-16 text (an odd last byte is dropped): what metadata values of type 2 and
    /// QuickTime text samples with a byte-order mark hold.
    public static func utf16BigEndian(_ bytes: ArraySlice<UInt8>) -> String {
        var units: [UInt16] = []
        units.reserveCapacity(bytes.count / 2)
        var index = bytes.startIndex
        while index + 1 < bytes.endIndex {
            units.append(UInt16(bytes[index]) << 8 | UInt16(bytes[index + 1]))
            index += 2
        }
        return String(decoding: units, as: UTF16.self)
    }

    /// `number` with six decimals, as C's `%f`.
    static func fixedSix(_ number: Double) -> String {
        guard number.isFinite else { return number.isNaN ? "nan" : (number < 0 ? "-inf" : "inf") }
        guard abs(number) < 1e15 else { return String(number) }
        let scaled = (abs(number) * 1_000_000).rounded()
        let whole = UInt64(scaled / 1_000_000), fraction = UInt64(scaled.truncatingRemainder(dividingBy: 1_000_000))
        let digits = String(fraction)
        return (number < 0 && scaled > 0 ? "-" : "") + "\(whole)." + String(repeating: "0", count: 6 - digits.count) + digits
    }

    /// A short description of a value that is not text (`image/jpeg, 12,345 bytes`).
    public var summary: String {
        if let text { return text }
        switch typeIndicator & 0xFF_FFFF {
        case 13: return "image/jpeg, \(value.count) bytes"
        case 14: return "image/png, \(value.count) bytes"
        case 27: return "image/bmp, \(value.count) bytes"
        default: return "\(value.count) bytes"
        }
    }

    public var fields: [(name: String, value: FieldValue)] {
        [("dataType", .uint(UInt64(typeIndicator & 0xFF_FFFF))), ("value", .string(String(summary.prefix(200))))]
    }

    public func write(to writer: inout ByteWriter) {
        writer.u32(typeIndicator)
        writer.u32(locale)
        writer.append(value)
    }
}

/// `keys` (QuickTime metadata): the key names that `ilst` items refer to by 1-based index
/// (`com.apple.quicktime.make`, ...).
public struct MetadataKeysBox: WritableBoxModel {
    public static let type: FourCC = "keys"
    public static let specName = "MetadataKeysBox"
    public static let isFullBox = true

    public struct Key: Sendable, Hashable {
        public var namespace: FourCC
        public var name: String
    }

    public var keys: [Key]

    public init(keys: [Key]) { self.keys = keys }

    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> MetadataKeysBox {
        // Every key takes at least its 8-byte header: a count the bytes cannot hold is refused.
        let count = try reader.requireEntries(UInt64(try reader.readUInt32()), of: 8, "keys")
        var keys: [Key] = []
        keys.reserveCapacity(count)
        for _ in 0..<count {
            let size = try reader.readUInt32()
            guard size >= 8 else { throw MP4Error(.malformed, "a metadata key of \(size) bytes is shorter than its header", offset: reader.fileOffset) }
            let namespace = try reader.readFourCC()
            keys.append(Key(namespace: namespace, name: String(decoding: try reader.readBytes(Int(size) - 8), as: UTF8.self)))
        }
        return MetadataKeysBox(keys: keys)
    }

    public var fields: [(name: String, value: FieldValue)] {
        [("keys", .list(keys.prefix(64).map { .string($0.name) }))]
    }

    public func write(to writer: inout ByteWriter) {
        writer.u32(UInt32(truncatingIfNeeded: keys.count))
        for key in keys {
            let bytes = Array(key.name.utf8)
            writer.u32(UInt32(truncatingIfNeeded: bytes.count + 8))
            writer.fourCC(key.namespace)
            writer.append(bytes)
        }
    }
}

/// `chpl` (Nero chapters, in `moov/udta`): start times in 100 ns units and titles.
public struct NeroChapterListBox: WritableBoxModel {
    public static let type: FourCC = "chpl"
    public static let specName = "NeroChapterListBox"
    public static let isFullBox = true

    public struct Chapter: Sendable, Hashable {
        /// Start in 100 ns units.
        public var start: UInt64
        public var title: String
    }

    /// Version 1 has four reserved bytes before the count.
    public var reserved: UInt32?
    public var chapters: [Chapter]

    public init(reserved: UInt32?, chapters: [Chapter]) {
        self.reserved = reserved
        self.chapters = chapters
    }

    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> NeroChapterListBox {
        let reserved = version != 0 ? try reader.readUInt32() : nil
        let count = try reader.requireEntries(UInt64(try reader.readUInt8()), of: 9, "chpl")
        var chapters: [Chapter] = []
        for _ in 0..<count {
            let start = try reader.readUInt64()
            let length = Int(try reader.readUInt8())
            chapters.append(Chapter(start: start, title: String(decoding: try reader.readBytes(length), as: UTF8.self)))
        }
        return NeroChapterListBox(reserved: reserved, chapters: chapters)
    }

    public var fields: [(name: String, value: FieldValue)] { [("chapterCount", .uint(UInt64(chapters.count)))] }

    public func write(to writer: inout ByteWriter) {
        if let reserved { writer.u32(reserved) }
        writer.u8(UInt8(truncatingIfNeeded: chapters.count))
        for chapter in chapters {
            let title = Array(chapter.title.utf8.prefix(255))
            writer.u64(chapter.start)
            writer.u8(UInt8(title.count))
            writer.append(title)
        }
    }
}

/// `fiel` (QuickTime): progressive or interlaced, and the field order.
public struct FieldHandlingBox: WritableBoxModel {
    public static let type: FourCC = "fiel"
    public static let specName = "FieldHandlingBox"
    public static let isFullBox = false

    /// 1: progressive; 2: interlaced.
    public var fieldCount: UInt8
    /// For two fields: 1 top first, 6 bottom first, 9 top first (interleaved), 14 bottom first (interleaved).
    public var fieldOrdering: UInt8

    public init(fieldCount: UInt8, fieldOrdering: UInt8) {
        self.fieldCount = fieldCount
        self.fieldOrdering = fieldOrdering
    }

    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> FieldHandlingBox {
        FieldHandlingBox(fieldCount: try reader.readUInt8(), fieldOrdering: try reader.readUInt8())
    }

    /// As ffprobe names it: `progressive`, `tt`, `bb`, `tb`, `bt`; `nil` when unknown.
    public var fieldOrder: String? {
        if fieldCount == 1 { return "progressive" }
        guard fieldCount == 2 else { return nil }
        switch fieldOrdering {
        case 1: return "tt"
        case 6: return "bb"
        case 9: return "tb"
        case 14: return "bt"
        default: return nil
        }
    }

    public var fields: [(name: String, value: FieldValue)] {
        [("fieldCount", .uint(UInt64(fieldCount))), ("fieldOrdering", .uint(UInt64(fieldOrdering))), ("fieldOrder", .optional(fieldOrder) { .string($0) })]
    }

    public func write(to writer: inout ByteWriter) {
        writer.u8(fieldCount)
        writer.u8(fieldOrdering)
    }
}

/// `mdcv` (ISO/IEC 23001-8, HEVC/AV1 bindings): the mastering display of HDR content.
public struct MasteringDisplayColourVolumeBox: WritableBoxModel {
    public static let type: FourCC = "mdcv"
    public static let specName = "MasteringDisplayColourVolumeBox"
    public static let isFullBox = false

    /// Green, blue, red primaries then white point, (x, y) in units of 0.00002.
    public var primaries: [UInt16]
    /// In units of 0.0001 cd/m².
    public var maxLuminance: UInt32
    public var minLuminance: UInt32

    public init(primaries: [UInt16], maxLuminance: UInt32, minLuminance: UInt32) {
        self.primaries = primaries
        self.maxLuminance = maxLuminance
        self.minLuminance = minLuminance
    }

    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> MasteringDisplayColourVolumeBox {
        var primaries: [UInt16] = []
        for _ in 0..<8 { primaries.append(try reader.readUInt16()) }
        return MasteringDisplayColourVolumeBox(primaries: primaries, maxLuminance: try reader.readUInt32(), minLuminance: try reader.readUInt32())
    }

    public var maxLuminanceCandelas: Double { Double(maxLuminance) / 10000 }
    public var minLuminanceCandelas: Double { Double(minLuminance) / 10000 }

    public var fields: [(name: String, value: FieldValue)] {
        [("primaries", .list(primaries.map { .uint(UInt64($0)) })), ("maxLuminance", .double(maxLuminanceCandelas)), ("minLuminance", .double(minLuminanceCandelas))]
    }

    public func write(to writer: inout ByteWriter) {
        for value in primaries { writer.u16(value) }
        writer.u32(maxLuminance)
        writer.u32(minLuminance)
    }
}

/// `clli` (ISO/IEC 23001-8): content light levels of HDR content, in cd/m².
public struct ContentLightLevelBox: WritableBoxModel {
    public static let type: FourCC = "clli"
    public static let specName = "ContentLightLevelBox"
    public static let isFullBox = false

    public var maxContentLightLevel: UInt16
    public var maxPictureAverageLightLevel: UInt16

    public init(maxContentLightLevel: UInt16, maxPictureAverageLightLevel: UInt16) {
        self.maxContentLightLevel = maxContentLightLevel
        self.maxPictureAverageLightLevel = maxPictureAverageLightLevel
    }

    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> ContentLightLevelBox {
        ContentLightLevelBox(maxContentLightLevel: try reader.readUInt16(), maxPictureAverageLightLevel: try reader.readUInt16())
    }

    public var fields: [(name: String, value: FieldValue)] {
        [("maxContentLightLevel", .uint(UInt64(maxContentLightLevel))), ("maxPictureAverageLightLevel", .uint(UInt64(maxPictureAverageLightLevel)))]
    }

    public func write(to writer: inout ByteWriter) {
        writer.u16(maxContentLightLevel)
        writer.u16(maxPictureAverageLightLevel)
    }
}

/// `loci` (3GPP TS 26.244 §8.2.6): where the recording was made: a place name, longitude,
/// latitude and altitude (16.16 fixed point), the body and notes.
public struct LocationInformationBox: BoxModel {
    public static let type: FourCC = "loci"
    public static let specName = "LocationInformationBox"
    public static let isFullBox = true

    public var language: String
    public var name: String
    public var role: UInt8
    /// 16.16 fixed point degrees (longitude, latitude) and metres (altitude).
    public var longitude: Int32, latitude: Int32, altitude: Int32
    public var body: String
    public var notes: String

    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> LocationInformationBox {
        let language = MediaHeaderBox.language(try reader.readUInt16() & 0x7FFF)
        let name = reader.readCString()
        let role = try reader.readUInt8()
        let longitude = Int32(bitPattern: try reader.readUInt32())
        let latitude = Int32(bitPattern: try reader.readUInt32())
        let altitude = Int32(bitPattern: try reader.readUInt32())
        let body = reader.readCString()
        let notes = reader.readCString()
        return LocationInformationBox(language: language, name: name, role: role, longitude: longitude, latitude: latitude, altitude: altitude, body: body, notes: notes)
    }

    /// ISO 6709 text as ffmpeg writes it (`+40.6800-074.5000/`, altitude `+10.000000` when not 0,
    /// then `/` and the place name): the form of QuickTime's `©xyz`.
    public var iso6709: String {
        func degrees(_ fixed: Int32) -> Double { Double(Float(fixed) / Float(1 << 16)) }
        var text = Self.signedFixed(degrees(latitude), width: 8, decimals: 4) + Self.signedFixed(degrees(longitude), width: 9, decimals: 4)
        if altitude != 0 { text += Self.signedFixed(degrees(altitude), width: 0, decimals: 6) }
        return text + "/" + name
    }

    /// C's `%+0W.Df`: always a sign, zero-padded to `width` characters in all.
    static func signedFixed(_ value: Double, width: Int, decimals: Int) -> String {
        var scale = 1.0
        for _ in 0..<decimals { scale *= 10 }
        let scaled = (abs(value) * scale).rounded()
        let whole = UInt64(scaled / scale), fraction = UInt64(scaled.truncatingRemainder(dividingBy: scale))
        let fractionDigits = String(fraction)
        var digits = String(whole) + "." + String(repeating: "0", count: max(0, decimals - fractionDigits.count)) + fractionDigits
        let sign = value < 0 && scaled > 0 ? "-" : "+"
        while digits.count + 1 < width { digits = "0" + digits }
        return sign + digits
    }

    public var fields: [(name: String, value: FieldValue)] {
        [("language", .string(language)), ("name", .string(name)), ("location", .string(iso6709))]
    }
}
