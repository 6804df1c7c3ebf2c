/// `frma` (ISO/IEC 14496-12 §8.12.2): the format a protected or restricted sample entry had
/// before it was transformed (`avc1` inside an `encv`).
public struct OriginalFormatBox: WritableBoxModel {
    public static let type: FourCC = "frma"
    public static let specName = "OriginalFormatBox"
    public static let isFullBox = false

    public var dataFormat: FourCC

    public init(dataFormat: FourCC) { self.dataFormat = dataFormat }

    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> OriginalFormatBox {
        OriginalFormatBox(dataFormat: try reader.readFourCC())
    }

    public var fields: [(name: String, value: FieldValue)] { [("dataFormat", .string(dataFormat.description))] }

    public func write(to writer: inout ByteWriter) { writer.fourCC(dataFormat) }
}

/// `schm` (ISO/IEC 14496-12 §8.12.6): the protection scheme (`cenc`, `cbcs`, ...) and its
/// version; with flag 1, a URI.
public struct SchemeTypeBox: WritableBoxModel {
    public static let type: FourCC = "schm"
    public static let specName = "SchemeTypeBox"
    public static let isFullBox = true

    public var schemeType: FourCC
    public var schemeVersion: UInt32
    /// Present when the box's flag 1 is set (the bytes up to the terminating zero).
    public var schemeURI: String?

    public init(schemeType: FourCC, schemeVersion: UInt32, schemeURI: String? = nil) {
        self.schemeType = schemeType
        self.schemeVersion = schemeVersion
        self.schemeURI = schemeURI
    }

    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> SchemeTypeBox {
        let type = try reader.readFourCC()
        let schemeVersion = try reader.readUInt32()
        return SchemeTypeBox(schemeType: type, schemeVersion: schemeVersion, schemeURI: flags & 1 != 0 ? reader.readCString() : nil)
    }

    public var fields: [(name: String, value: FieldValue)] {
        var fields: [(name: String, value: FieldValue)] = [("schemeType", .string(schemeType.description)), ("schemeVersion", .uint(UInt64(schemeVersion)))]
        if let schemeURI { fields.append(("schemeURI", .string(schemeURI))) }
        return fields
    }

    /// Writes type, version and the URI (with its terminating zero); the box's flags must
    /// have bit 1 set exactly when ``schemeURI`` is present.
    public func write(to writer: inout ByteWriter) {
        writer.fourCC(schemeType)
        writer.u32(schemeVersion)
        if let schemeURI {
            writer.append(Array(schemeURI.utf8))
            writer.u8(0)
        }
    }
}
