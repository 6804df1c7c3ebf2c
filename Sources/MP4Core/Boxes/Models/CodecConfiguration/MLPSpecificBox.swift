/// `dmlp` (Dolby TrueHD in ISOBMFF): the MLP specific box of an `mlpa` sample entry; sample
/// rate and channel count from its `format_info`, and the peak data rate.
public struct MLPSpecificBox: CodecConfigurationBoxModel {
    public static let type: FourCC = "dmlp"
    public static let specName = "MLPSpecificBox"
    public static let isFullBox = false

    /// `nil` for an invalid rate code.
    public var sampleRate: UInt32?
    public var channelCount: UInt8
    public var peakDataRate: UInt16

    public init(sampleRate: UInt32?, channelCount: UInt8, peakDataRate: UInt16) {
        self.sampleRate = sampleRate
        self.channelCount = channelCount
        self.peakDataRate = peakDataRate
    }

    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> MLPSpecificBox {
        let formatInfo = try reader.readUInt32()
        let peak = try reader.readUInt16() >> 1
        try reader.skip(reader.remaining)
        // ffmpeg's mlp_samplerate: 0xF is invalid; bit 3 picks the 44.1 kHz family.
        let code = formatInfo >> 28
        let rate: UInt32? = code == 0xF || code & 7 > 2 ? nil : (code & 8 != 0 ? 44100 : 48000) << (code & 7)
        // 8ch_presentation_channel_assignment: each bit a group of 1 or 2 channels.
        let groups: [UInt8] = [2, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 1, 1]
        var channels: UInt8 = 0
        for (bit, count) in groups.enumerated() where formatInfo & (1 << UInt32(bit)) != 0 { channels += count }
        return MLPSpecificBox(sampleRate: rate, channelCount: channels, peakDataRate: peak)
    }

    public var fields: [(name: String, value: FieldValue)] {
        [("sampleRate", .optional(sampleRate) { .uint(UInt64($0)) }), ("channelCount", .uint(UInt64(channelCount))), ("peakDataRate", .uint(UInt64(peakDataRate)))]
    }

    public func codecString(format: FourCC) -> String { "mlpa" }
    public var decoderChannelCount: UInt32? { channelCount > 0 ? UInt32(channelCount) : nil }
    /// The entry's rate is a placeholder; this is the stream's.
    public var decoderSampleRate: UInt32? { sampleRate }
}
