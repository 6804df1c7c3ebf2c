/// `dec3` (ETSI TS 102 366 Annex F.6): the E-AC-3 data rate, the number of independent
/// substreams, and the channels of the first one with what its dependent substreams add.
public struct EC3SpecificBox: CodecConfigurationBoxModel {
    public static let type: FourCC = "dec3"
    public static let specName = "EC3SpecificBox"
    public static let isFullBox = false

    public var dataRateKbps: UInt16
    public var independentSubstreams: UInt8
    /// The channels of the first independent substream and its dependent substreams, `nil`
    /// when the box is cut short of saying.
    public var channelCount: UInt8?

    public init(dataRateKbps: UInt16, independentSubstreams: UInt8, channelCount: UInt8?) {
        self.dataRateKbps = dataRateKbps
        self.independentSubstreams = independentSubstreams
        self.channelCount = channelCount
    }

    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> EC3SpecificBox {
        let word = try reader.readUInt16()
        // The first independent substream (ETSI TS 102 366 F.6): fscod(2) bsid(5)
        // reserved(1) | asvc(1) bsmod(3) acmod(3) lfeon(1) | reserved(3) num_dep_sub(4) ...
        var channels: UInt8?
        if reader.remaining >= 3 {
            let substream = try reader.readBytes(3)
            let b1 = substream[substream.startIndex + 1], b2 = substream[substream.startIndex + 2]
            let acmod = Int((b1 >> 1) & 0x7), lfe: UInt8 = b1 & 1
            let dependentSubstreams = (b2 >> 1) & 0xF
            let base = AC3SpecificBox.channelsOfCodingMode[acmod] + lfe
            if dependentSubstreams == 0 {
                channels = base
            } else if reader.remaining >= 1 {
                // chan_loc (9 bits, Table F.6.1 / E.1.4): the channels the dependent
                // substreams add: Lc/Rc, Lrs/Rrs, Cs, Ts, Lsd/Rsd, Lw/Rw, Lvh/Rvh, Cvh, LFE2.
                let location = UInt16(b2 & 1) << 8 | UInt16(try reader.readUInt8())
                let added: [UInt8] = [2, 2, 1, 1, 2, 2, 2, 1, 1]
                var extra: UInt8 = 0
                for bit in 0..<9 where location & (1 << UInt16(8 - bit)) != 0 { extra += added[bit] }
                channels = base + extra
            }
        }
        try reader.skip(reader.remaining)
        return EC3SpecificBox(dataRateKbps: word >> 3, independentSubstreams: UInt8(word & 0x7) + 1, channelCount: channels)
    }

    public var fields: [(name: String, value: FieldValue)] {
        var fields: [(name: String, value: FieldValue)] = [("dataRateKbps", .uint(UInt64(dataRateKbps))), ("independentSubstreams", .uint(UInt64(independentSubstreams)))]
        if let channelCount { fields.append(("channelCount", .uint(UInt64(channelCount)))) }
        return fields
    }

    public func codecString(format: FourCC) -> String { "ec-3" }
    public var decoderChannelCount: UInt32? { channelCount.map(UInt32.init) }
}
