/// `alac` inside an ALAC sample entry: the ALACSpecificConfig ("magic cookie"), read for its
/// bit depth, channels and sample rate.
public struct ALACSpecificBox: CodecConfigurationBoxModel {
    public static let type: FourCC = "alac"
    public static let specName = "ALACSpecificBox"
    public static let isFullBox = true

    public var bitDepth: UInt8
    public var channelCount: UInt8
    public var sampleRate: UInt32

    public init(bitDepth: UInt8, channelCount: UInt8, sampleRate: UInt32) {
        self.bitDepth = bitDepth
        self.channelCount = channelCount
        self.sampleRate = sampleRate
    }

    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> ALACSpecificBox {
        try reader.skip(4 + 1)  // frameLength, compatibleVersion
        let depth = try reader.readUInt8()
        try reader.skip(3)  // pb, mb, kb
        let channels = try reader.readUInt8()
        try reader.skip(2 + 4 + 4)  // maxRun, maxFrameBytes, avgBitRate
        let box = ALACSpecificBox(bitDepth: depth, channelCount: channels, sampleRate: try reader.readUInt32())
        try reader.skip(reader.remaining)
        return box
    }

    public var fields: [(name: String, value: FieldValue)] {
        [("bitDepth", .uint(UInt64(bitDepth))), ("channelCount", .uint(UInt64(channelCount))), ("sampleRate", .uint(UInt64(sampleRate)))]
    }

    public func codecString(format: FourCC) -> String { "alac" }
    public var decoderChannelCount: UInt32? { UInt32(channelCount) }
}
