/// `mfro` (8.8.11): the size of the enclosing `mfra`, so a reader can find it from the end.
public struct MovieFragmentRandomAccessOffsetBox: WritableBoxModel {
    public static let type: FourCC = .mfro
    public static let specName = "MovieFragmentRandomAccessOffsetBox"
    public static let isFullBox = true
    public var mfraSize: UInt32
    public init(mfraSize: UInt32) { self.mfraSize = mfraSize }
    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> MovieFragmentRandomAccessOffsetBox { MovieFragmentRandomAccessOffsetBox(mfraSize: try reader.readUInt32()) }
    public var fields: [(name: String, value: FieldValue)] { [("mfraSize", .uint(UInt64(mfraSize)))] }
    public func write(to writer: inout ByteWriter) { writer.u32(mfraSize) }
}
