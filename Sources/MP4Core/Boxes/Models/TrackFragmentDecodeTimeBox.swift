/// `tfdt` (8.8.12): the decode time of a track fragment's first sample.
public struct TrackFragmentDecodeTimeBox: WritableBoxModel {
    public static let type: FourCC = .tfdt
    public static let specName = "TrackFragmentBaseMediaDecodeTimeBox"
    public static let isFullBox = true
    public var baseMediaDecodeTime: UInt64
    /// Whether it was written with 64 bits (version 1).
    public var isWide: Bool
    public init(baseMediaDecodeTime: UInt64, isWide: Bool = true) { self.baseMediaDecodeTime = baseMediaDecodeTime; self.isWide = isWide }
    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> TrackFragmentDecodeTimeBox {
        TrackFragmentDecodeTimeBox(baseMediaDecodeTime: try reader.readUInt(wide: version == 1), isWide: version == 1)
    }
    public var fields: [(name: String, value: FieldValue)] { [("baseMediaDecodeTime", .uint(baseMediaDecodeTime))] }
    public func write(to writer: inout ByteWriter) { writer.uint(baseMediaDecodeTime, wide: isWide) }
}
