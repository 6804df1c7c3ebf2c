/// `dac3` (ETSI TS 102 366 Annex F.4): the AC-3 stream's channels (acmod, lfeon) and bit rate.
public struct AC3SpecificBox: CodecConfigurationBoxModel {
    public static let type: FourCC = "dac3"
    public static let specName = "AC3SpecificBox"
    public static let isFullBox = false

    /// The channels of acmod, plus one for the LFE.
    public var channelCount: UInt8
    public var hasLFE: Bool
    /// The bit rate of bit_rate_code, `nil` for a code past the table.
    public var bitRateKbps: UInt32?

    public init(channelCount: UInt8, hasLFE: Bool, bitRateKbps: UInt32?) {
        self.channelCount = channelCount
        self.hasLFE = hasLFE
        self.bitRateKbps = bitRateKbps
    }

    /// The channels of each audio coding mode (acmod, ETSI TS 102 366 Table 4.3), without LFE.
    static let channelsOfCodingMode: [UInt8] = [2, 1, 2, 3, 3, 4, 4, 5]

    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> AC3SpecificBox {
        // fscod(2) bsid(5) bsmod(3) acmod(3) lfeon(1) bit_rate_code(5) reserved(5)
        let bits = UInt32(try reader.readUInt24())
        try reader.skip(reader.remaining)
        let acmod = Int((bits >> 11) & 0x7)
        let lfe = (bits >> 10) & 1 == 1
        let rateCode = Int((bits >> 5) & 0x1F)
        let rates: [UInt32] = [32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384, 448, 512, 576, 640]
        return AC3SpecificBox(channelCount: channelsOfCodingMode[acmod] + (lfe ? 1 : 0), hasLFE: lfe, bitRateKbps: rateCode < rates.count ? rates[rateCode] : nil)
    }

    public var fields: [(name: String, value: FieldValue)] {
        [("channelCount", .uint(UInt64(channelCount))), ("lfe", .bool(hasLFE)), ("bitRateKbps", .optional(bitRateKbps) { .uint(UInt64($0)) })]
    }

    public func codecString(format: FourCC) -> String { "ac-3" }
    public var decoderChannelCount: UInt32? { UInt32(channelCount) }
}
