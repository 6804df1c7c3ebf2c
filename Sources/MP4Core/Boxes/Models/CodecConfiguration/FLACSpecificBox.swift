/// `dfLa` (FLAC in ISOBMFF §3.3.2): the STREAMINFO block's sample rate, channels and bits
/// per sample.
public struct FLACSpecificBox: CodecConfigurationBoxModel {
    public static let type: FourCC = "dfLa"
    public static let specName = "FLACSpecificBox"
    public static let isFullBox = true

    public var sampleRate: UInt32
    public var channelCount: UInt8
    public var bitsPerSample: UInt8

    public init(sampleRate: UInt32, channelCount: UInt8, bitsPerSample: UInt8) {
        self.sampleRate = sampleRate
        self.channelCount = channelCount
        self.bitsPerSample = bitsPerSample
    }

    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> FLACSpecificBox {
        let blockHeader = try reader.readUInt32()
        guard blockHeader >> 24 & 0x7F == 0, blockHeader & 0xFF_FFFF >= 18 else {
            throw MP4Error(.malformed, "dfLa does not start with a STREAMINFO block", offset: reader.fileOffset)
        }
        try reader.skip(10)  // block sizes, frame sizes
        let packed = try reader.readUInt32()
        try reader.skip(reader.remaining)
        return FLACSpecificBox(sampleRate: packed >> 12, channelCount: UInt8((packed >> 9) & 7) + 1, bitsPerSample: UInt8((packed >> 4) & 0x1F) + 1)
    }

    public var fields: [(name: String, value: FieldValue)] {
        [("sampleRate", .uint(UInt64(sampleRate))), ("channelCount", .uint(UInt64(channelCount))), ("bitsPerSample", .uint(UInt64(bitsPerSample)))]
    }

    public func codecString(format: FourCC) -> String { "flac" }
    public var decoderChannelCount: UInt32? { UInt32(channelCount) }
}
