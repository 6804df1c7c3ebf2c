/// `avcC` (ISO/IEC 14496-15 §5.3.3): the H.264 profile, compatibility and level, and the
/// picture size of its first sequence parameter set; the rest is skipped.
public struct AVCConfigurationBox: CodecConfigurationBoxModel {
    public static let type: FourCC = "avcC"
    public static let specName = "AVCConfigurationBox"
    public static let isFullBox = false

    public var profile: UInt8
    public var compatibility: UInt8
    public var level: UInt8
    /// The size the first SPS gives, after cropping (``codedPictureSize``).
    public var pictureSize: PictureSize?
    /// Bit depth, chroma format and scan of the first SPS.
    public var pictureFormat: PictureFormat?

    public init(profile: UInt8, compatibility: UInt8, level: UInt8, pictureSize: PictureSize? = nil, pictureFormat: PictureFormat? = nil) {
        self.pictureFormat = pictureFormat
        self.profile = profile
        self.compatibility = compatibility
        self.level = level
        self.pictureSize = pictureSize
    }

    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> AVCConfigurationBox {
        try reader.skip(1)  // configurationVersion
        var box = AVCConfigurationBox(profile: try reader.readUInt8(), compatibility: try reader.readUInt8(), level: try reader.readUInt8())
        // lengthSizeMinusOne, numOfSequenceParameterSets, then each set with a 16-bit length.
        if reader.remaining >= 4 {
            try reader.skip(1)
            if try reader.readUInt8() & 0x1F > 0 {
                let length = Int(try reader.readUInt16())
                if length <= reader.remaining, let sequence = SequenceParameterSet.avcSequence(try reader.readBytes(length)) {
                    (box.pictureSize, box.pictureFormat) = sequence
                }
            }
        }
        try reader.skip(reader.remaining)
        return box
    }

    public var fields: [(name: String, value: FieldValue)] {
        [("profile", .uint(UInt64(profile))), ("compatibility", .uint(UInt64(compatibility))), ("level", .uint(UInt64(level)))]
    }

    public var codedPictureSize: PictureSize? { pictureSize }

    /// `level_idc` / 10 (`42`: 4.2; `9`, level 1b, as 1.0).
    public var levelNumber: Double? { level == 9 ? 1.0 : Double(level) / 10 }

    /// `avc1.64001F`: profile, compatibility and level in hex.
    public func codecString(format: FourCC) -> String {
        "\(format).\(CodecString.hex2(profile))\(CodecString.hex2(compatibility))\(CodecString.hex2(level))"
    }
}
