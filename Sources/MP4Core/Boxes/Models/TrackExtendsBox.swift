/// `trex` (ISO/IEC 14496-12 8.8.3): a track's defaults for its movie fragments.
public struct TrackExtendsBox: WritableBoxModel, Codable {
    public static let type: FourCC = .trex
    public static let specName = "TrackExtendsBox"
    public static let isFullBox = true

    public var trackID: UInt32
    public var defaultSampleDescriptionIndex: UInt32
    public var defaultSampleDuration: UInt32
    public var defaultSampleSize: UInt32
    public var defaultSampleFlags: UInt32

    public init(trackID: UInt32, defaultSampleDescriptionIndex: UInt32, defaultSampleDuration: UInt32, defaultSampleSize: UInt32, defaultSampleFlags: UInt32) {
        self.trackID = trackID
        self.defaultSampleDescriptionIndex = defaultSampleDescriptionIndex
        self.defaultSampleDuration = defaultSampleDuration
        self.defaultSampleSize = defaultSampleSize
        self.defaultSampleFlags = defaultSampleFlags
    }

    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> TrackExtendsBox {
        TrackExtendsBox(trackID: try reader.readUInt32(), defaultSampleDescriptionIndex: try reader.readUInt32(), defaultSampleDuration: try reader.readUInt32(),
                        defaultSampleSize: try reader.readUInt32(), defaultSampleFlags: try reader.readUInt32())
    }

    public var fields: [(name: String, value: FieldValue)] {
        [("trackID", .uint(UInt64(trackID))), ("defaultSampleDescriptionIndex", .uint(UInt64(defaultSampleDescriptionIndex))), ("defaultSampleDuration", .uint(UInt64(defaultSampleDuration))),
         ("defaultSampleSize", .uint(UInt64(defaultSampleSize))), ("defaultSampleFlags", .hexFlags(defaultSampleFlags))]
    }

    public func write(to writer: inout ByteWriter) {
        for value in [trackID, defaultSampleDescriptionIndex, defaultSampleDuration, defaultSampleSize, defaultSampleFlags] { writer.u32(value) }
    }
}
