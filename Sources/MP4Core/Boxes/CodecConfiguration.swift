/// Decoder configuration read from the boxes inside a sample entry (`avcC`, `hvcC`, `av1C`,
/// `vpcC`, `esds`, `dOps`, `dac3`, `dec3`, `alac`, `dfLa`), reduced to what a person or a
/// player needs to identify the stream, and its RFC 6381 codec string.
public enum CodecConfiguration: Sendable, Hashable {
    /// H.264 `avcC` (ISO/IEC 14496-15 §5.3.3).
    case avc(profile: UInt8, compatibility: UInt8, level: UInt8)
    /// H.265 `hvcC` (ISO/IEC 14496-15 §8.3.3).
    case hevc(profileSpace: UInt8, tierFlag: Bool, profile: UInt8, compatibilityFlags: UInt32, constraintFlags: [UInt8], level: UInt8)
    /// AV1 `av1C` (AV1 codec ISOBMFF binding §2.3).
    case av1(profile: UInt8, level: UInt8, tier: UInt8, bitDepth: UInt8, monochrome: Bool)
    /// VP8/VP9 `vpcC` (VP codec ISOBMFF binding).
    case vp(profile: UInt8, level: UInt8, bitDepth: UInt8)
    /// MPEG-4 `esds` (ISO/IEC 14496-1 §7.2.6.5): object type, and for AAC the audio object
    /// type and channel configuration of the AudioSpecificConfig.
    /// `parametricStereo`: the AudioSpecificConfig signals PS explicitly (object type 29, or
    /// the backward-compatible sync extensions with SBR and PS present), so a decoder makes
    /// two channels of a mono core.
    case mpeg4(objectTypeIndication: UInt8, audioObjectType: UInt8?, channelConfiguration: UInt8?, samplingFrequency: UInt32?, averageBitRate: UInt32, maxBitRate: UInt32, parametricStereo: Bool = false)
    /// Opus `dOps`.
    case opus(outputChannelCount: UInt8, preSkip: UInt16, inputSampleRate: UInt32)
    /// AC-3 `dac3` (ETSI TS 102 366 Annex F).
    case ac3(channelCount: UInt8, hasLFE: Bool, bitRateKbps: UInt32?)
    /// E-AC-3 `dec3`.
    case eac3(dataRateKbps: UInt16, independentSubstreams: UInt8, channelCount: UInt8?)
    /// ALAC magic cookie.
    case alac(bitDepth: UInt8, channelCount: UInt8, sampleRate: UInt32)
    /// FLAC `dfLa` STREAMINFO.
    case flac(sampleRate: UInt32, channelCount: UInt8, bitsPerSample: UInt8)
    /// Dolby TrueHD `dmlp` (Dolby TrueHD in ISOBMFF): sample rate and channel count from its
    /// `format_info`, peak data rate.
    case trueHD(sampleRate: UInt32?, channelCount: UInt8, peakDataRate: UInt16)
    /// IAMF `iacb` (Immersive Audio Model and Formats §6.3): the profiles of its sequence
    /// header and its first codec configuration (`Opus`, `mp4a`, `fLaC`, `ipcm`) with the
    /// sample rate it decodes at.
    case iamf(primaryProfile: UInt8, additionalProfile: UInt8, codecID: FourCC, sampleRate: UInt32?)

    /// Parses the configuration box `type` from its payload (after the box header, and after
    /// version and flags for the full boxes `vpcC`, `esds`, `alac`, `dfLa`), or returns `nil`
    /// for a type that is not a codec configuration.
    /// - Throws: ``MP4Error`` when the payload is too short or inconsistent.
    public static func parse(_ type: FourCC, _ reader: inout ByteReader) throws -> CodecConfiguration? {
        switch type {
        case .avcC:
            try reader.skip(1)
            return .avc(profile: try reader.readUInt8(), compatibility: try reader.readUInt8(), level: try reader.readUInt8())
        case .hvcC:
            try reader.skip(1)
            let b = try reader.readUInt8()
            let compat = try reader.readUInt32()
            let constraints = Array(try reader.readBytes(6))
            let level = try reader.readUInt8()
            return .hevc(profileSpace: b >> 6, tierFlag: b & 0x20 != 0, profile: b & 0x1F, compatibilityFlags: compat, constraintFlags: constraints, level: level)
        case .av1C:
            try reader.skip(1)
            let b1 = try reader.readUInt8()
            let b2 = try reader.readUInt8()
            let high = b2 & 0x40 != 0, twelve = b2 & 0x20 != 0
            return .av1(profile: b1 >> 5, level: b1 & 0x1F, tier: b2 >> 7, bitDepth: twelve ? 12 : (high ? 10 : 8), monochrome: b2 & 0x10 != 0)
        case .vpcC:
            let profile = try reader.readUInt8()
            let level = try reader.readUInt8()
            let b = try reader.readUInt8()
            return .vp(profile: profile, level: level, bitDepth: b >> 4)
        case .esds:
            return try parseESDescriptor(&reader)
        case .dOps:
            try reader.skip(1)
            let channels = try reader.readUInt8()
            let preSkip = try reader.readUInt16()
            let rate = try reader.readUInt32()
            return .opus(outputChannelCount: channels, preSkip: preSkip, inputSampleRate: rate)
        case .dac3:
            let bits = UInt32(try reader.readUInt24())
            let acmod = Int((bits >> 11) & 0x7)
            let lfe = (bits >> 10) & 1 == 1
            let rateCode = Int((bits >> 5) & 0x1F)
            let channels: [UInt8] = [2, 1, 2, 3, 3, 4, 4, 5]
            let rates: [UInt32] = [32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384, 448, 512, 576, 640]
            return .ac3(channelCount: channels[acmod] + (lfe ? 1 : 0), hasLFE: lfe, bitRateKbps: rateCode < rates.count ? rates[rateCode] : nil)
        case .dec3:
            let word = try reader.readUInt16()
            // The first independent substream (ETSI TS 102 366 F.6): fscod(2) bsid(5)
            // reserved(1) | asvc(1) bsmod(3) acmod(3) lfeon(1) | reserved(3) num_dep_sub(4) ...
            var channels: UInt8?
            if reader.remaining >= 3 {
                let substream = try reader.readBytes(3)
                let b1 = substream[substream.startIndex + 1], b2 = substream[substream.startIndex + 2]
                let acmod = Int((b1 >> 1) & 0x7), lfe: UInt8 = b1 & 1
                let dependentSubstreams = (b2 >> 1) & 0xF
                let base = [2, 1, 2, 3, 3, 4, 4, 5][acmod] + lfe
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
                try reader.skip(reader.remaining)
            }
            return .eac3(dataRateKbps: word >> 3, independentSubstreams: UInt8(word & 0x7) + 1, channelCount: channels)
        case .alac:
            try reader.skip(4 + 1)  // frameLength, compatibleVersion
            let depth = try reader.readUInt8()
            try reader.skip(3)
            let channels = try reader.readUInt8()
            try reader.skip(2 + 4 + 4)
            return .alac(bitDepth: depth, channelCount: channels, sampleRate: try reader.readUInt32())
        case "dmlp":
            let formatInfo = try reader.readUInt32()
            let peak = try reader.readUInt16() >> 1
            // ffmpeg's mlp_samplerate: 0xF is invalid; bit 3 picks the 44.1 kHz family.
            let code = formatInfo >> 28
            let rate: UInt32? = code == 0xF || code & 7 > 2 ? nil : (code & 8 != 0 ? 44100 : 48000) << (code & 7)
            // 8ch_presentation_channel_assignment: each bit a group of 1 or 2 channels.
            let groups: [UInt8] = [2, 1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 1, 1]
            var channels: UInt8 = 0
            for (bit, count) in groups.enumerated() where formatInfo & (1 << UInt32(bit)) != 0 { channels += count }
            return .trueHD(sampleRate: rate, channelCount: channels, peakDataRate: peak)
        case "iacb":
            return try parseIAMF(&reader)
        case .dfLa:
            let blockHeader = try reader.readUInt32()
            guard blockHeader >> 24 & 0x7F == 0, blockHeader & 0xFF_FFFF >= 18 else {
                throw MP4Error(.malformed, "dfLa does not start with a STREAMINFO block", offset: reader.fileOffset)
            }
            try reader.skip(10)
            let packed = try reader.readUInt32()
            return .flac(sampleRate: packed >> 12, channelCount: UInt8((packed >> 9) & 7) + 1, bitsPerSample: UInt8((packed >> 4) & 0x1F) + 1)
        default:
            return nil
        }
    }

    /// Reads a LEB128 value (at most 8 bytes, as IAMF allows).
    private static func leb128(_ reader: inout ByteReader) throws -> UInt64 {
        var value: UInt64 = 0
        for i in 0..<8 {
            let byte = try reader.readUInt8()
            value |= UInt64(byte & 0x7F) << UInt64(7 * i)
            if byte & 0x80 == 0 { return value }
        }
        throw MP4Error(.malformed, "a LEB128 value is longer than 8 bytes", offset: reader.fileOffset)
    }

    /// `iacb`: version, then the configuration OBUs; the sequence header's profiles and the
    /// first codec configuration OBU's codec and sample rate.
    private static func parseIAMF(_ reader: inout ByteReader) throws -> CodecConfiguration {
        try reader.skip(1)  // configurationVersion
        let size = try leb128(&reader)
        var obus = try reader.slice(count: Int(min(size, UInt64(reader.remaining))))
        var profiles: (UInt8, UInt8) = (0, 0)
        // Each OBU takes at least two bytes: the loop ends with the bytes.
        while obus.remaining >= 2 {
            let header = try obus.readUInt8()
            let obuSize = try leb128(&obus)
            guard obuSize <= UInt64(obus.remaining) else { break }
            var obu = try obus.slice(count: Int(obuSize))
            let type = header >> 3
            if header & 2 != 0 { _ = try leb128(&obu); _ = try leb128(&obu) }  // trimming
            if header & 1 != 0 { try obu.skip(Int(min(try leb128(&obu), UInt64(obu.remaining)))) }  // extension
            if type == 31 {  // IA sequence header: 'iamf', primary and additional profile
                try obu.skip(4)
                profiles = (try obu.readUInt8(), try obu.readUInt8())
            } else if type == 0 {  // codec config
                _ = try leb128(&obu)  // codec_config_id
                let codec = try obu.readFourCC()
                _ = try leb128(&obu)  // num_samples_per_frame
                try obu.skip(2)  // audio_roll_distance
                var rate: UInt32?
                switch codec {
                case .opus: rate = 48000  // Opus decodes at 48 kHz
                case "ipcm":
                    try obu.skip(2)  // sample_format_flags, sample_size
                    rate = try obu.readUInt32()
                case .flac:
                    try obu.skip(4)  // METADATA_BLOCK_HEADER of STREAMINFO
                    try obu.skip(10)
                    rate = try obu.readUInt32() >> 12
                case .mp4a:
                    if case .mpeg4(_, _, _, let frequency, _, _, _) = try parseDecoderConfig(&obu) { rate = frequency }
                default: break
                }
                return .iamf(primaryProfile: profiles.0, additionalProfile: profiles.1, codecID: codec, sampleRate: rate)
            }
        }
        throw MP4Error(.malformed, "iacb has no codec configuration OBU", offset: reader.fileOffset)
    }

    /// Reads an expandable descriptor length (up to four 7-bit groups).
    private static func descriptorLength(_ reader: inout ByteReader) throws -> Int {
        var length = 0
        for _ in 0..<4 {
            let b = try reader.readUInt8()
            length = length << 7 | Int(b & 0x7F)
            if b & 0x80 == 0 { break }
        }
        return length
    }

    /// Parses an ES_Descriptor down to its DecoderConfigDescriptor and AudioSpecificConfig.
    private static func parseESDescriptor(_ outer: inout ByteReader) throws -> CodecConfiguration {
        guard try outer.readUInt8() == 0x03 else {
            throw MP4Error(.malformed, "esds does not start with an ES_Descriptor (tag 3)", offset: outer.fileOffset)
        }
        var es = try outer.slice(count: min(try descriptorLength(&outer), outer.remaining))
        try es.skip(2)
        let esFlags = try es.readUInt8()
        if esFlags & 0x80 != 0 { try es.skip(2) }
        if esFlags & 0x40 != 0 { try es.skip(Int(try es.readUInt8())) }
        if esFlags & 0x20 != 0 { try es.skip(2) }
        return try parseDecoderConfig(&es)
    }

    /// Parses a DecoderConfigDescriptor (tag 4) and its AudioSpecificConfig.
    private static func parseDecoderConfig(_ es: inout ByteReader) throws -> CodecConfiguration {
        guard try es.readUInt8() == 0x04 else {
            throw MP4Error(.malformed, "ES_Descriptor lacks a DecoderConfigDescriptor (tag 4)", offset: es.fileOffset)
        }
        var dc = try es.slice(count: min(try descriptorLength(&es), es.remaining))
        let oti = try dc.readUInt8()
        try dc.skip(4)
        let maxRate = try dc.readUInt32()
        let avgRate = try dc.readUInt32()
        var aot: UInt8?
        var channels: UInt8?
        var frequency: UInt32?
        var parametricStereo = false
        if dc.remaining >= 2, try dc.readUInt8() == 0x05 {
            var dsi = try dc.slice(count: min(try descriptorLength(&dc), dc.remaining))
            if oti == 0x40 || oti == 0x66 || oti == 0x67 || oti == 0x68, dsi.remaining >= 2 {
                var bits = BitReader(Array(dsi.remainingBytes))
                var objectType = bits.read(5)
                if objectType == 31 { objectType = 32 + bits.read(6) }
                let frequencyIndex = bits.read(4)
                let frequencies: [UInt32] = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]
                if frequencyIndex == 15 { frequency = bits.read(24) } else if Int(frequencyIndex) < frequencies.count { frequency = frequencies[Int(frequencyIndex)] }
                channels = UInt8(truncatingIfNeeded: bits.read(4))
                aot = bits.isOverrun ? nil : UInt8(truncatingIfNeeded: objectType)
                if bits.isOverrun { channels = nil; frequency = nil }
                parametricStereo = !bits.isOverrun && Self.signalsParametricStereo(objectType: objectType, channels: channels ?? 0, &bits)
            }
            try dsi.skip(dsi.remaining)
        }
        return .mpeg4(objectTypeIndication: oti, audioObjectType: aot, channelConfiguration: channels, samplingFrequency: frequency, averageBitRate: avgRate, maxBitRate: maxRate, parametricStereo: parametricStereo)
    }

    /// Whether the rest of an AudioSpecificConfig (after the channel configuration) signals
    /// parametric stereo (ISO/IEC 14496-3, 1.6.2.1 and 1.6.5): explicitly hierarchical (object
    /// type 29), or backward compatible: an AAC LC core whose GASpecificConfig is followed by
    /// the sync extension 0x2B7 with SBR (object type 5, sbrPresentFlag) and then 0x548 with
    /// psPresentFlag. Implicit signalling (none of this; PS found only in the audio) is not
    /// seen: only decoding finds it.
    static func signalsParametricStereo(objectType: UInt32, channels: UInt8, _ bits: inout BitReader) -> Bool {
        if objectType == 29 { return channels == 1 }
        guard objectType == 2, channels == 1 else { return false }
        // GASpecificConfig: frameLengthFlag, dependsOnCoreCoder (+ 14-bit delay), extensionFlag.
        _ = bits.read(1)
        if bits.read(1) == 1 { _ = bits.read(14) }
        guard bits.read(1) == 0, bits.remainingBits >= 16, bits.read(11) == 0x2B7, bits.read(5) == 5, bits.read(1) == 1 else { return false }
        if bits.read(4) == 15 { _ = bits.read(24) }   // the extension sampling frequency
        guard bits.remainingBits >= 12, bits.read(11) == 0x548 else { return false }
        return bits.read(1) == 1 && !bits.isOverrun
    }

    /// The RFC 6381 codec string for a sample entry of `format` with this configuration,
    /// e.g. `avc1.64001F`, `hvc1.1.6.L93.B0`, `av01.0.04M.08`, `vp09.00.10.08`, `mp4a.40.2`.
    public func codecString(format: FourCC) -> String {
        func hex2(_ v: UInt8) -> String { (v < 16 ? "0" : "") + String(v, radix: 16, uppercase: true) }
        func dec2(_ v: UInt8) -> String { (v < 10 ? "0" : "") + String(v) }
        switch self {
        case let .avc(profile, compatibility, level):
            return "\(format).\(hex2(profile))\(hex2(compatibility))\(hex2(level))"
        case let .hevc(space, tier, profile, compat, constraints, level):
            let spaceLetter = ["", "A", "B", "C"][Int(space & 3)]
            var reversed: UInt32 = 0
            for bit in 0..<32 where compat & (1 << bit) != 0 { reversed |= 1 << (31 - bit) }
            var text = "\(format).\(spaceLetter)\(profile).\(String(reversed, radix: 16, uppercase: true)).\(tier ? "H" : "L")\(level)"
            var trimmed = constraints
            while let last = trimmed.last, last == 0 { trimmed.removeLast() }
            for byte in trimmed { text += "." + String(byte, radix: 16, uppercase: true) }
            return text
        case let .av1(profile, level, tier, depth, _):
            return "av01.\(profile).\(dec2(level))\(tier == 0 ? "M" : "H").\(dec2(depth))"
        case let .vp(profile, level, depth):
            return "\(format).\(dec2(profile)).\(dec2(level)).\(dec2(depth))"
        case let .mpeg4(oti, aot, _, _, _, _, _):
            if format == .mp4v { return "mp4v.\(String(oti, radix: 16, uppercase: true))" }
            if let aot, oti == 0x40 { return "mp4a.40.\(aot)" }
            return "mp4a.\(String(oti, radix: 16, uppercase: true))"
        case .opus: return "opus"
        case .ac3: return "ac-3"
        case .eac3: return "ec-3"
        case .alac: return "alac"
        case .flac: return "flac"
        case .trueHD: return "mlpa"
        case let .iamf(primary, additional, codec, _):
            func pad3(_ v: UInt8) -> String { String(repeating: "0", count: 3 - String(v).count) + String(v) }
            return "iamf.\(pad3(primary)).\(pad3(additional)).\(codec.description.trimmingTrailingSpaces)"
        }
    }
}

/// Reads bits most-significant first; reading past the end yields zeros and sets
/// ``isOverrun``.
struct BitReader {
    private let bytes: [UInt8]
    private var bitPosition = 0
    private(set) var isOverrun = false

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// Bits not read yet.
    var remainingBits: Int { max(0, bytes.count * 8 - bitPosition) }

    mutating func read(_ count: Int) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<count {
            let byteIndex = bitPosition / 8
            var bit: UInt32 = 0
            if byteIndex < bytes.count {
                bit = UInt32(bytes[byteIndex] >> (7 - UInt8(bitPosition % 8))) & 1
            } else {
                isOverrun = true
            }
            value = value << 1 | bit
            bitPosition += 1
        }
        return value
    }
}
