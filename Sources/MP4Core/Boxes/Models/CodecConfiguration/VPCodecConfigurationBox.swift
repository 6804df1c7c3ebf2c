/// `vpcC` (VP codec ISOBMFF binding): the VP8/VP9 profile, level and bit depth.
public struct VPCodecConfigurationBox: CodecConfigurationBoxModel {
    public static let type: FourCC = "vpcC"
    public static let specName = "VPCodecConfigurationBox"
    public static let isFullBox = true

    public var profile: UInt8
    public var level: UInt8
    public var bitDepth: UInt8

    public init(profile: UInt8, level: UInt8, bitDepth: UInt8) {
        self.profile = profile
        self.level = level
        self.bitDepth = bitDepth
    }

    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> VPCodecConfigurationBox {
        let profile = try reader.readUInt8()
        let level = try reader.readUInt8()
        let b = try reader.readUInt8()
        try reader.skip(reader.remaining)
        return VPCodecConfigurationBox(profile: profile, level: level, bitDepth: b >> 4)
    }

    public var fields: [(name: String, value: FieldValue)] {
        [("profile", .uint(UInt64(profile))), ("level", .uint(UInt64(level))), ("bitDepth", .uint(UInt64(bitDepth)))]
    }

    /// `vp09.00.10.08`: profile, level, bit depth.
    public func codecString(format: FourCC) -> String {
        "\(format).\(CodecString.dec2(profile)).\(CodecString.dec2(level)).\(CodecString.dec2(bitDepth))"
    }
}
