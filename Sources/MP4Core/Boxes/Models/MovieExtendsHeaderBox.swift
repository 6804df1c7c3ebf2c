/// `mehd` (8.8.2): the whole fragmented movie's duration, in the movie time scale.
public struct MovieExtendsHeaderBox: WritableBoxModel {
    public static let type: FourCC = .mehd
    public static let specName = "MovieExtendsHeaderBox"
    public static let isFullBox = true
    public var fragmentDuration: UInt64
    /// Whether it was written with 64 bits (version 1).
    public var isWide: Bool
    public init(fragmentDuration: UInt64, isWide: Bool) { self.fragmentDuration = fragmentDuration; self.isWide = isWide }
    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> MovieExtendsHeaderBox {
        MovieExtendsHeaderBox(fragmentDuration: try reader.readUInt(wide: version == 1), isWide: version == 1)
    }
    public var fields: [(name: String, value: FieldValue)] { [("fragmentDuration", .uint(fragmentDuration))] }
    public func write(to writer: inout ByteWriter) { writer.uint(fragmentDuration, wide: isWide) }
}
