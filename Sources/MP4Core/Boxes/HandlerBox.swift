/// `hdlr`: handler reference, ISO/IEC 14496-12 §8.4.3 (also QuickTime's component
/// description, whose name is a Pascal string).
public struct HandlerBox: Sendable, Hashable, Codable {
    /// QuickTime's component type (`mhlr`, `dhlr`), zero in ISO files.
    public var componentType: FourCC
    /// The handler: `vide`, `soun`, `text`, `sbtl`, `subt`, `meta`, `hint`, `mdir`, ...
    public var handlerType: FourCC
    /// The human-readable name.
    public var name: String

    /// Parses the payload after version and flags.
    public static func parse(_ reader: inout ByteReader) throws -> HandlerBox {
        let component = try reader.readFourCC()
        let handler = try reader.readFourCC()
        try reader.skip(12)
        var name = ""
        if reader.remaining > 0 {
            let bytes = reader.remainingBytes
            let first = Int(bytes[bytes.startIndex])
            if component.rawValue != 0, first == bytes.count - 1 || first == bytes.count - 2, first > 0 {
                // QuickTime: a Pascal string (length byte, then text).
                name = String(decoding: bytes.dropFirst().prefix(first), as: UTF8.self)
                try reader.skip(reader.remaining)
            } else {
                name = reader.readCString()
            }
        }
        return HandlerBox(componentType: component, handlerType: handler, name: name)
    }
}

extension HandlerBox: BoxModel {
    public static let type: FourCC = .hdlr
    public static let specName = "HandlerBox"
    public static let isFullBox = true
    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> HandlerBox { try parse(&reader) }
    public var fields: [(name: String, value: FieldValue)] { [("handlerType", .string(handlerType.description)), ("name", .string(name))] }
}
