/// A decoder configuration box of a sample entry (`avcC`, `hvcC`, `av1C`, `vpcC`, `esds`,
/// `dOps`, `dac3`, `dec3`, `alac`, `dfLa`, `dmlp`, `iacb`): each type, one file under
/// `Boxes/Models/CodecConfiguration`, parses itself and answers its fields, its RFC 6381
/// codec string and what it says of the decoded audio.
///
/// They are summaries: they read what identifies the stream and skip the rest of the payload
/// (parameter sets, channel layouts), so they have no writer.
public protocol CodecConfigurationBoxModel: BoxModel {
    /// The RFC 6381 codec string of a sample entry of `format` with this configuration:
    /// `avc1.64001F`, `hvc1.1.6.L93.B0`, `av01.0.04M.08`, `vp09.00.10.08`, `mp4a.40.2`.
    func codecString(format: FourCC) -> String
    /// The channels a decoder produces, when the configuration says (the sample entry's
    /// field is often a placeholder 2).
    var decoderChannelCount: UInt32? { get }
    /// The sample rate a decoder produces, for the configurations whose entry holds a
    /// placeholder rate (TrueHD, IAMF).
    var decoderSampleRate: UInt32? { get }
    /// The picture size a decoder outputs, when the configuration's parameter sets say
    /// (H.264, H.265).
    var codedPictureSize: PictureSize? { get }
    /// Bit depth, chroma subsampling and scan, when the configuration says (H.264, H.265,
    /// AV1, VP9).
    var pictureFormat: PictureFormat? { get }
    /// The codec level as its specification writes it (H.264 `4.2`, H.265 `5.1`, AV1 `5.1`,
    /// VP9 `4.0`), when the configuration says.
    var levelNumber: Double? { get }
}

extension CodecConfigurationBoxModel {
    public var asCodecConfigurationBox: (any CodecConfigurationBoxModel)? { self }
    public var decoderChannelCount: UInt32? { nil }
    public var decoderSampleRate: UInt32? { nil }
    public var codedPictureSize: PictureSize? { nil }
    public var pictureFormat: PictureFormat? { nil }
    public var levelNumber: Double? { nil }
}

/// The decoder configuration of a sample entry (``SampleEntry/configuration``): the parsed
/// configuration box, of any ``CodecConfigurationBoxModel`` type.
public struct CodecConfiguration: Sendable, Hashable {
    /// The configuration box.
    public let box: any CodecConfigurationBoxModel

    public init(_ box: any CodecConfigurationBoxModel) { self.box = box }

    /// The box as `T` (`configuration.as(ESDBox.self)?.objectTypeIndication`), when it is one.
    public func `as`<T: CodecConfigurationBoxModel>(_ type: T.Type) -> T? { box as? T }

    /// The box's RFC 6381 codec string for an entry of `format`.
    public func codecString(format: FourCC) -> String { box.codecString(format: format) }
    /// The fields a dump shows, in order.
    public var fields: [(name: String, value: FieldValue)] { box.fields }

    public static func == (a: CodecConfiguration, b: CodecConfiguration) -> Bool { AnyHashable(a.box) == AnyHashable(b.box) }
    public func hash(into hasher: inout Hasher) { hasher.combine(AnyHashable(box)) }
}

/// The number forms of RFC 6381 codec strings.
enum CodecString {
    /// Two uppercase hex digits.
    static func hex2(_ v: UInt8) -> String { (v < 16 ? "0" : "") + String(v, radix: 16, uppercase: true) }
    /// Two decimal digits.
    static func dec2(_ v: UInt8) -> String { (v < 10 ? "0" : "") + String(v) }
}
