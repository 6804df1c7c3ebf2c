/// `colr` (ISO/IEC 14496-12 12.1.5; QuickTime `nclc`): how to interpret a video's colours,
/// as code points (ITU-T H.273: primaries, transfer characteristics, matrix, full range) or an
/// ICC profile.
public struct ColourInformationBox: WritableBoxModel {
    public static let type: FourCC = "colr"
    public static let specName = "ColourInformationBox"
    public static let isFullBox = false

    public enum Colour: Sendable, Hashable {
        /// `nclx` (ISO) or `nclc` (QuickTime, no range flag).
        case codePoints(primaries: UInt16, transfer: UInt16, matrix: UInt16, fullRange: Bool?)
        /// `rICC` / `prof`: an ICC profile (kept as bytes).
        case iccProfile([UInt8])
        /// Another colour type, kept as bytes.
        case other([UInt8])
    }

    /// `nclx`, `nclc`, `rICC`, `prof`...
    public var colourType: FourCC
    public var colour: Colour

    public init(colourType: FourCC, colour: Colour) {
        self.colourType = colourType
        self.colour = colour
    }

    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> ColourInformationBox {
        let colourType = try reader.readFourCC()
        switch colourType {
        case "nclx", "nclc":
            let primaries = try reader.readUInt16(), transfer = try reader.readUInt16(), matrix = try reader.readUInt16()
            let fullRange = colourType == "nclx" ? (try reader.readUInt8()) & 0x80 != 0 : nil
            return ColourInformationBox(colourType: colourType, colour: .codePoints(primaries: primaries, transfer: transfer, matrix: matrix, fullRange: fullRange))
        case "rICC", "prof":
            return ColourInformationBox(colourType: colourType, colour: .iccProfile(Array(try reader.readBytes(reader.remaining))))
        default:
            return ColourInformationBox(colourType: colourType, colour: .other(Array(try reader.readBytes(reader.remaining))))
        }
    }

    public var fields: [(name: String, value: FieldValue)] {
        var fields: [(name: String, value: FieldValue)] = [("colourType", .string(colourType.description))]
        switch colour {
        case let .codePoints(primaries, transfer, matrix, fullRange):
            fields += [("colourPrimaries", .uint(UInt64(primaries))), ("transferCharacteristics", .uint(UInt64(transfer))), ("matrixCoefficients", .uint(UInt64(matrix)))]
            if let fullRange { fields.append(("fullRange", .bool(fullRange))) }
        case .iccProfile(let bytes):
            fields.append(("iccProfileSize", .uint(UInt64(bytes.count))))
        case .other(let bytes):
            fields.append(("payloadSize", .uint(UInt64(bytes.count))))
        }
        return fields
    }

    public func write(to writer: inout ByteWriter) {
        writer.fourCC(colourType)
        switch colour {
        case let .codePoints(primaries, transfer, matrix, fullRange):
            writer.u16(primaries)
            writer.u16(transfer)
            writer.u16(matrix)
            if let fullRange { writer.u8(fullRange ? 0x80 : 0) }
        case .iccProfile(let bytes), .other(let bytes):
            writer.append(bytes)
        }
    }
}
