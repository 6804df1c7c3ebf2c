/// `hdlr` (ISO/IEC 14496-12 8.4.3; also QuickTime's component description, whose name is a
/// Pascal string).
public struct HandlerBox: WritableBoxModel, Codable {
    public static let type: FourCC = .hdlr
    public static let specName = "HandlerBox"
    public static let isFullBox = true

    /// QuickTime's component type (`mhlr`, `dhlr`), zero in ISO files.
    public var componentType: FourCC
    /// The handler: `vide`, `soun`, `text`, `sbtl`, `subt`, `meta`, `hint`, `mdir`, ...
    public var handlerType: FourCC
    /// ISO's three reserved words; QuickTime's component manufacturer, flags and mask.
    public var reserved: [UInt8]
    /// The human-readable name.
    public var name: String
    /// How the name is stored: a NUL-terminated string (ISO), a Pascal string (QuickTime), or
    /// absent.
    public var nameForm: NameForm

    /// How ``name`` is stored.
    public enum NameForm: String, Sendable, Hashable, Codable {
        case cString, pascal, pascalPadded, none
    }

    public init(componentType: FourCC = FourCC(rawValue: 0), handlerType: FourCC, reserved: [UInt8] = [UInt8](repeating: 0, count: 12), name: String, nameForm: NameForm = .cString) {
        self.componentType = componentType
        self.handlerType = handlerType
        self.reserved = reserved.count == 12 ? reserved : [UInt8](repeating: 0, count: 12)
        self.name = name
        self.nameForm = nameForm
    }

    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> HandlerBox {
        let component = try reader.readFourCC()
        let handler = try reader.readFourCC()
        let reserved = Array(try reader.readBytes(12))
        var name = "", form = NameForm.none
        if reader.remaining > 0 {
            let bytes = reader.remainingBytes
            let first = Int(bytes[bytes.startIndex])
            if component.rawValue != 0, first == bytes.count - 1 || first == bytes.count - 2, first > 0 {
                // QuickTime: a Pascal string (length byte, then text; sometimes a NUL after).
                name = String(decoding: bytes.dropFirst().prefix(first), as: UTF8.self)
                form = first == bytes.count - 1 ? .pascal : .pascalPadded
                try reader.skip(reader.remaining)
            } else {
                name = reader.readCString()
                form = .cString
            }
        }
        return HandlerBox(componentType: component, handlerType: handler, reserved: reserved, name: name, nameForm: form)
    }

    public var fields: [(name: String, value: FieldValue)] { [("handlerType", .string(handlerType.description)), ("name", .string(name))] }

    public func write(to writer: inout ByteWriter) {
        writer.fourCC(componentType)
        writer.fourCC(handlerType)
        writer.append(reserved)
        let text = Array(name.utf8)
        switch nameForm {
        case .cString: writer.append(text + [0])
        case .pascal: writer.append([UInt8(min(text.count, 255))] + text.prefix(255))
        case .pascalPadded: writer.append([UInt8(min(text.count, 255))] + text.prefix(255) + [0])
        case .none: break
        }
    }
}
