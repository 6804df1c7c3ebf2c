/// The decoder configuration boxes of sample entries as ``BoxModel``s: one declaration each
/// below; parsing (``CodecConfiguration/parse(_:_:)``), the dump and the sample entry's use of
/// them (``SampleEntry/configuration``) come from this protocol.
///
/// They are summaries: they read what identifies the stream and skip the rest of the payload
/// (parameter sets, channel layouts), so they have no writer.
public protocol CodecConfigurationBoxModel: BoxModel {
    /// What the box says about the stream.
    var configuration: CodecConfiguration { get }
    init(configuration: CodecConfiguration)
}

extension CodecConfigurationBoxModel {
    public var asCodecConfigurationBox: (any CodecConfigurationBoxModel)? { self }
    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> Self {
        guard let configuration = try CodecConfiguration.parse(type, &reader) else {
            throw MP4Error(.unsupported, "'\(type)' is not a codec configuration", offset: reader.fileOffset)
        }
        try reader.skip(reader.remaining)
        return Self(configuration: configuration)
    }

    public var fields: [(name: String, value: FieldValue)] { configuration.fields }
}

/// `avcC` (ISO/IEC 14496-15 §5.3.3).
public struct AVCConfigurationBox: CodecConfigurationBoxModel {
    public static let type: FourCC = "avcC"
    public static let specName = "AVCConfigurationBox"
    public static let isFullBox = false
    public var configuration: CodecConfiguration
    public init(configuration: CodecConfiguration) { self.configuration = configuration }
}

/// `hvcC` (ISO/IEC 14496-15 §8.3.3).
public struct HEVCConfigurationBox: CodecConfigurationBoxModel {
    public static let type: FourCC = "hvcC"
    public static let specName = "HEVCConfigurationBox"
    public static let isFullBox = false
    public var configuration: CodecConfiguration
    public init(configuration: CodecConfiguration) { self.configuration = configuration }
}

/// `av1C` (AV1 codec ISOBMFF binding §2.3).
public struct AV1CodecConfigurationBox: CodecConfigurationBoxModel {
    public static let type: FourCC = "av1C"
    public static let specName = "AV1CodecConfigurationBox"
    public static let isFullBox = false
    public var configuration: CodecConfiguration
    public init(configuration: CodecConfiguration) { self.configuration = configuration }
}

/// `vpcC` (VP codec ISOBMFF binding).
public struct VPCodecConfigurationBox: CodecConfigurationBoxModel {
    public static let type: FourCC = "vpcC"
    public static let specName = "VPCodecConfigurationBox"
    public static let isFullBox = true
    public var configuration: CodecConfiguration
    public init(configuration: CodecConfiguration) { self.configuration = configuration }
}

/// `esds` (ISO/IEC 14496-14 §5.6): the MPEG-4 ES_Descriptor.
public struct ESDBox: CodecConfigurationBoxModel {
    public static let type: FourCC = "esds"
    public static let specName = "ESDBox"
    public static let isFullBox = true
    public var configuration: CodecConfiguration
    public init(configuration: CodecConfiguration) { self.configuration = configuration }
}

/// `dOps` (Opus in ISOBMFF §4.3.2).
public struct OpusSpecificBox: CodecConfigurationBoxModel {
    public static let type: FourCC = "dOps"
    public static let specName = "OpusSpecificBox"
    public static let isFullBox = false
    public var configuration: CodecConfiguration
    public init(configuration: CodecConfiguration) { self.configuration = configuration }
}

/// `dac3` (ETSI TS 102 366 Annex F.4).
public struct AC3SpecificBox: CodecConfigurationBoxModel {
    public static let type: FourCC = "dac3"
    public static let specName = "AC3SpecificBox"
    public static let isFullBox = false
    public var configuration: CodecConfiguration
    public init(configuration: CodecConfiguration) { self.configuration = configuration }
}

/// `dec3` (ETSI TS 102 366 Annex F.6).
public struct EC3SpecificBox: CodecConfigurationBoxModel {
    public static let type: FourCC = "dec3"
    public static let specName = "EC3SpecificBox"
    public static let isFullBox = false
    public var configuration: CodecConfiguration
    public init(configuration: CodecConfiguration) { self.configuration = configuration }
}

/// `alac` inside an ALAC sample entry: the ALACSpecificConfig ("magic cookie").
public struct ALACSpecificBox: CodecConfigurationBoxModel {
    public static let type: FourCC = "alac"
    public static let specName = "ALACSpecificBox"
    public static let isFullBox = true
    public var configuration: CodecConfiguration
    public init(configuration: CodecConfiguration) { self.configuration = configuration }
}

/// `dfLa` (FLAC in ISOBMFF §3.3.2): the STREAMINFO block.
public struct FLACSpecificBox: CodecConfigurationBoxModel {
    public static let type: FourCC = "dfLa"
    public static let specName = "FLACSpecificBox"
    public static let isFullBox = true
    public var configuration: CodecConfiguration
    public init(configuration: CodecConfiguration) { self.configuration = configuration }
}

/// `dmlp` (Dolby TrueHD in ISOBMFF): the MLP specific box of an `mlpa` sample entry.
public struct MLPSpecificBox: CodecConfigurationBoxModel {
    public static let type: FourCC = "dmlp"
    public static let specName = "MLPSpecificBox"
    public static let isFullBox = false
    public var configuration: CodecConfiguration
    public init(configuration: CodecConfiguration) { self.configuration = configuration }
}

/// `iacb` (IAMF §6.3): the IA configuration of an `iamf` sample entry.
public struct IAConfigurationBox: CodecConfigurationBoxModel {
    public static let type: FourCC = "iacb"
    public static let specName = "IAConfigurationBox"
    public static let isFullBox = false
    public var configuration: CodecConfiguration
    public init(configuration: CodecConfiguration) { self.configuration = configuration }
}

extension CodecConfiguration {
    /// The fields a dump shows, in order.
    public var fields: [(name: String, value: FieldValue)] {
        func u<T: BinaryInteger>(_ v: T) -> FieldValue { .uint(UInt64(v)) }
        switch self {
        case let .avc(profile, compatibility, level):
            return [("profile", u(profile)), ("compatibility", u(compatibility)), ("level", u(level))]
        case let .hevc(space, tier, profile, compat, _, level):
            return [("profileSpace", u(space)), ("tier", .string(tier ? "high" : "main")), ("profile", u(profile)), ("compatibilityFlags", u(compat)), ("level", u(level))]
        case let .av1(profile, level, tier, depth, mono):
            return [("profile", u(profile)), ("level", u(level)), ("tier", u(tier)), ("bitDepth", u(depth)), ("monochrome", .bool(mono))]
        case let .vp(profile, level, depth):
            return [("profile", u(profile)), ("level", u(level)), ("bitDepth", u(depth))]
        case let .mpeg4(oti, aot, channels, frequency, avg, max, parametricStereo):
            let fields: [(name: String, value: FieldValue)] = [("objectTypeIndication", u(oti)), ("audioObjectType", .optional(aot, u)), ("channelConfiguration", .optional(channels, u)), ("samplingFrequency", .optional(frequency, u)), ("averageBitRate", u(avg)), ("maxBitRate", u(max))]
            return fields + (parametricStereo ? [("parametricStereo", .bool(true))] : [])
        case let .opus(channels, preSkip, rate):
            return [("outputChannelCount", u(channels)), ("preSkip", u(preSkip)), ("inputSampleRate", u(rate))]
        case let .ac3(channels, lfe, rate):
            return [("channelCount", u(channels)), ("lfe", .bool(lfe)), ("bitRateKbps", .optional(rate, u))]
        case let .eac3(rate, substreams, channels):
            var fields: [(name: String, value: FieldValue)] = [("dataRateKbps", u(rate)), ("independentSubstreams", u(substreams))]
            if let channels { fields.append(("channelCount", u(channels))) }
            return fields
        case let .alac(depth, channels, rate):
            return [("bitDepth", u(depth)), ("channelCount", u(channels)), ("sampleRate", u(rate))]
        case let .flac(rate, channels, bits):
            return [("sampleRate", u(rate)), ("channelCount", u(channels)), ("bitsPerSample", u(bits))]
        case let .trueHD(rate, channels, peak):
            return [("sampleRate", .optional(rate, u)), ("channelCount", u(channels)), ("peakDataRate", u(peak))]
        case let .iamf(primary, additional, codec, rate):
            return [("primaryProfile", u(primary)), ("additionalProfile", u(additional)), ("codecID", .string(codec.description)), ("sampleRate", .optional(rate, u))]
        }
    }
}
