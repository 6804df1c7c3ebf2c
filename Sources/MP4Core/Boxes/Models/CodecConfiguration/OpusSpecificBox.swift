/// `dOps` (Opus in ISOBMFF §4.3.2): output channels, pre-skip and the input sample rate;
/// the channel mapping after them is skipped.
public struct OpusSpecificBox: CodecConfigurationBoxModel {
    public static let type: FourCC = "dOps"
    public static let specName = "OpusSpecificBox"
    public static let isFullBox = false

    public var outputChannelCount: UInt8
    public var preSkip: UInt16
    /// The rate of the source before encoding; decoders run at 48 kHz whatever it says.
    public var inputSampleRate: UInt32

    public init(outputChannelCount: UInt8, preSkip: UInt16, inputSampleRate: UInt32) {
        self.outputChannelCount = outputChannelCount
        self.preSkip = preSkip
        self.inputSampleRate = inputSampleRate
    }

    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> OpusSpecificBox {
        try reader.skip(1)  // Version
        let box = OpusSpecificBox(outputChannelCount: try reader.readUInt8(), preSkip: try reader.readUInt16(), inputSampleRate: try reader.readUInt32())
        try reader.skip(reader.remaining)
        return box
    }

    public var fields: [(name: String, value: FieldValue)] {
        [("outputChannelCount", .uint(UInt64(outputChannelCount))), ("preSkip", .uint(UInt64(preSkip))), ("inputSampleRate", .uint(UInt64(inputSampleRate)))]
    }

    public func codecString(format: FourCC) -> String { "opus" }
    public var decoderChannelCount: UInt32? { UInt32(outputChannelCount) }
}
