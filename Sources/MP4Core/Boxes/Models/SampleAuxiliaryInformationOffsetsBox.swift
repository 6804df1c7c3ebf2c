/// `saio` (ISO/IEC 14496-12 §8.7.9): where the auxiliary information of samples (CENC
/// initialisation vectors, subsample maps) lies, as absolute file offsets in progressive
/// files (relative to the `moof` in fragments).
public struct SampleAuxiliaryInformationOffsetsBox: WritableBoxModel, TabularBoxModel, FileOffsetBox {
    public static let type: FourCC = "saio"
    public static let specName = "SampleAuxiliaryInformationOffsetsBox"
    public static let isFullBox = true

    /// Present with flag 1.
    public var auxInfoType: FourCC?
    /// Present with flag 1.
    public var auxInfoTypeParameter: UInt32?
    /// Whether offsets are 64-bit (version 1).
    public var isWide: Bool
    public var entryCount: Int
    /// The offsets as stored, 4 or 8 bytes each.
    public var entryBytes: ArraySlice<UInt8>

    public init(auxInfoType: FourCC?, auxInfoTypeParameter: UInt32?, isWide: Bool, entryCount: Int, entryBytes: ArraySlice<UInt8>) {
        self.auxInfoType = auxInfoType
        self.auxInfoTypeParameter = auxInfoTypeParameter
        self.isWide = isWide
        self.entryCount = entryCount
        self.entryBytes = entryBytes
    }

    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> Self {
        var type: FourCC?, parameter: UInt32?
        if flags & 1 != 0 {
            type = try reader.readFourCC()
            parameter = try reader.readUInt32()
        }
        let width = version == 0 ? 4 : 8
        let count = try reader.requireEntries(UInt64(try reader.readUInt32()), of: width, "saio")
        return Self(auxInfoType: type, auxInfoTypeParameter: parameter, isWide: version != 0, entryCount: count, entryBytes: try reader.readBytes(count * width))
    }

    public var fields: [(name: String, value: FieldValue)] {
        var fields: [(name: String, value: FieldValue)] = []
        if let auxInfoType { fields.append(("auxInfoType", .string(auxInfoType.description))) }
        if let auxInfoTypeParameter { fields.append(("auxInfoTypeParameter", .uint(UInt64(auxInfoTypeParameter)))) }
        fields.append(("entryCount", .uint(UInt64(entryCount))))
        return fields
    }

    /// Writes the payload; the box's version must be 1 exactly when ``isWide`` and its flag 1
    /// set exactly when ``auxInfoType`` is present.
    public func write(to writer: inout ByteWriter) {
        if let auxInfoType {
            writer.fourCC(auxInfoType)
            writer.u32(auxInfoTypeParameter ?? 0)
        }
        writer.u32(UInt32(truncatingIfNeeded: entryCount))
        writer.append(entryBytes)
    }

    public static var entryFieldNames: [String] { ["offset"] }

    /// Offset `index`.
    public func offset(at index: Int) -> UInt64 {
        let width = isWide ? 8 : 4
        return UInt64(bigEndian: entryBytes.dropFirst(index * width).prefix(width))
    }

    public func entryFields(at index: Int) -> [FieldValue] { [.uint(offset(at: index))] }

    public func fileOffsetFields(version: UInt8, flags: UInt32) throws -> [FileOffsetField] {
        [.run(position: (auxInfoType == nil ? 0 : 8) + 4, count: entryCount, width: isWide ? 8 : 4)]
    }
}
