/// `esds` (ISO/IEC 14496-14 §5.6): the MPEG-4 ES_Descriptor, read down to its
/// DecoderConfigDescriptor (object type, bit rates) and, for AAC, the AudioSpecificConfig
/// (audio object type, sampling frequency, channel configuration, parametric stereo).
public struct ESDBox: CodecConfigurationBoxModel {
    public static let type: FourCC = "esds"
    public static let specName = "ESDBox"
    public static let isFullBox = true

    /// The DecoderConfigDescriptor's objectTypeIndication (0x40 MPEG-4 audio, 0x6B MP3...).
    public var objectTypeIndication: UInt8
    /// The AudioSpecificConfig's audio object type (2 AAC LC, 5 SBR, 29 PS), when present.
    public var audioObjectType: UInt8?
    public var channelConfiguration: UInt8?
    public var samplingFrequency: UInt32?
    public var averageBitRate: UInt32
    public var maxBitRate: UInt32
    /// The AudioSpecificConfig signals PS explicitly (object type 29, or the backward
    /// compatible sync extensions with SBR and PS present), so a decoder makes two channels of
    /// a mono core.
    public var parametricStereo: Bool

    public init(objectTypeIndication: UInt8, audioObjectType: UInt8? = nil, channelConfiguration: UInt8? = nil, samplingFrequency: UInt32? = nil,
                averageBitRate: UInt32, maxBitRate: UInt32, parametricStereo: Bool = false) {
        self.objectTypeIndication = objectTypeIndication
        self.audioObjectType = audioObjectType
        self.channelConfiguration = channelConfiguration
        self.samplingFrequency = samplingFrequency
        self.averageBitRate = averageBitRate
        self.maxBitRate = maxBitRate
        self.parametricStereo = parametricStereo
    }

    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> ESDBox {
        guard try reader.readUInt8() == 0x03 else {
            throw MP4Error(.malformed, "esds does not start with an ES_Descriptor (tag 3)", offset: reader.fileOffset)
        }
        var es = try reader.slice(count: min(try descriptorLength(&reader), reader.remaining))
        try es.skip(2)  // ES_ID
        let esFlags = try es.readUInt8()
        if esFlags & 0x80 != 0 { try es.skip(2) }  // dependsOn_ES_ID
        if esFlags & 0x40 != 0 { try es.skip(Int(try es.readUInt8())) }  // URL
        if esFlags & 0x20 != 0 { try es.skip(2) }  // OCR_ES_ID
        let box = try parseDecoderConfig(&es)
        try reader.skip(reader.remaining)
        return box
    }

    /// Reads a DecoderConfigDescriptor (tag 4) and its AudioSpecificConfig: the part of an
    /// ES_Descriptor an IAMF `mp4a` codec configuration carries too.
    static func parseDecoderConfig(_ es: inout ByteReader) throws -> ESDBox {
        guard try es.readUInt8() == 0x04 else {
            throw MP4Error(.malformed, "ES_Descriptor lacks a DecoderConfigDescriptor (tag 4)", offset: es.fileOffset)
        }
        var dc = try es.slice(count: min(try descriptorLength(&es), es.remaining))
        var box = ESDBox(objectTypeIndication: try dc.readUInt8(), averageBitRate: 0, maxBitRate: 0)
        try dc.skip(4)  // streamType, upStream, bufferSizeDB
        box.maxBitRate = try dc.readUInt32()
        box.averageBitRate = try dc.readUInt32()
        let oti = box.objectTypeIndication
        if dc.remaining >= 2, try dc.readUInt8() == 0x05 {
            var dsi = try dc.slice(count: min(try descriptorLength(&dc), dc.remaining))
            if oti == 0x40 || oti == 0x66 || oti == 0x67 || oti == 0x68, dsi.remaining >= 2 {
                box.readAudioSpecificConfig(Array(dsi.remainingBytes))
            }
            try dsi.skip(dsi.remaining)
        }
        return box
    }

    /// Reads an AudioSpecificConfig's object type, frequency and channels (ISO/IEC 14496-3
    /// 1.6.2.1), and whether it signals parametric stereo. A config cut short says nothing.
    private mutating func readAudioSpecificConfig(_ bytes: [UInt8]) {
        var bits = BitReader(bytes)
        var objectType = bits.read(5)
        if objectType == 31 { objectType = 32 + bits.read(6) }
        let frequencyIndex = bits.read(4)
        let frequencies: [UInt32] = [96000, 88200, 64000, 48000, 44100, 32000, 24000, 22050, 16000, 12000, 11025, 8000, 7350]
        var frequency: UInt32?
        if frequencyIndex == 15 { frequency = bits.read(24) } else if Int(frequencyIndex) < frequencies.count { frequency = frequencies[Int(frequencyIndex)] }
        let channels = UInt8(truncatingIfNeeded: bits.read(4))
        guard !bits.isOverrun else { return }
        audioObjectType = UInt8(truncatingIfNeeded: objectType)
        channelConfiguration = channels
        samplingFrequency = frequency
        parametricStereo = Self.signalsParametricStereo(objectType: objectType, channels: channels, &bits)
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

    public var fields: [(name: String, value: FieldValue)] {
        func u<T: BinaryInteger>(_ v: T) -> FieldValue { .uint(UInt64(v)) }
        let fields: [(name: String, value: FieldValue)] = [
            ("objectTypeIndication", u(objectTypeIndication)), ("audioObjectType", .optional(audioObjectType, u)),
            ("channelConfiguration", .optional(channelConfiguration, u)), ("samplingFrequency", .optional(samplingFrequency, u)),
            ("averageBitRate", u(averageBitRate)), ("maxBitRate", u(maxBitRate)),
        ]
        return fields + (parametricStereo ? [("parametricStereo", .bool(true))] : [])
    }

    /// `mp4a.40.2` (RFC 6381 §3.3): the object type in hex, and for MPEG-4 audio the audio
    /// object type; `mp4v.20` for MPEG-4 visual.
    public func codecString(format: FourCC) -> String {
        if format == .mp4v { return "mp4v.\(String(objectTypeIndication, radix: 16, uppercase: true))" }
        if let audioObjectType, objectTypeIndication == 0x40 { return "mp4a.40.\(audioObjectType)" }
        return "mp4a.\(String(objectTypeIndication, radix: 16, uppercase: true))"
    }

    /// Two for parametric stereo on a mono core; the channel configuration 1 to 6, and 8 for
    /// configuration 7 (7.1); otherwise unknown here (0: the program config element says).
    public var decoderChannelCount: UInt32? {
        guard let channelConfiguration else { return nil }
        if channelConfiguration == 1 && parametricStereo { return 2 }
        guard channelConfiguration > 0 && channelConfiguration < 8 else { return nil }
        return UInt32(channelConfiguration == 7 ? 8 : channelConfiguration)
    }

    /// MPEG-1/2 audio (MP3, MP2) carried as `mp4a`: object types 0x69 and 0x6B.
    public var isMPEGAudio: Bool { objectTypeIndication == 0x69 || objectTypeIndication == 0x6B }
    /// DTS carried as `mp4a`: object types 0xA9 to 0xAC.
    public var isDTS: Bool { (0xA9...0xAC).contains(objectTypeIndication) }
}
