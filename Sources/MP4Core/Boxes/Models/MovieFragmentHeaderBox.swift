/// `mfhd` (8.8.5): a movie fragment's sequence number.
public struct MovieFragmentHeaderBox: WritableBoxModel {
    public static let type: FourCC = .mfhd
    public static let specName = "MovieFragmentHeaderBox"
    public static let isFullBox = true
    public var sequenceNumber: UInt32
    public init(sequenceNumber: UInt32) { self.sequenceNumber = sequenceNumber }
    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> MovieFragmentHeaderBox { MovieFragmentHeaderBox(sequenceNumber: try reader.readUInt32()) }
    public var fields: [(name: String, value: FieldValue)] { [("sequenceNumber", .uint(UInt64(sequenceNumber)))] }
    public func write(to writer: inout ByteWriter) { writer.u32(sequenceNumber) }
}
