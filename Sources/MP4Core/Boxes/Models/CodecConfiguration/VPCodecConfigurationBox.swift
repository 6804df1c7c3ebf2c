/// `vpcC` (VP codec ISOBMFF binding): the VP8/VP9 profile, level and bit depth.
public struct VPCodecConfigurationBox: CodecConfigurationBoxModel {
    public static let type: FourCC = "vpcC"
    public static let specName = "VPCodecConfigurationBox"
    public static let isFullBox = true

    public var profile: UInt8
    public var level: UInt8
    public var bitDepth: UInt8
    /// `chromaSubsampling` (0, 1: 4:2:0; 2: 4:2:2; 3: 4:4:4).
    public var chromaSubsampling: UInt8

    public init(profile: UInt8, level: UInt8, bitDepth: UInt8, chromaSubsampling: UInt8 = 1) {
        self.chromaSubsampling = chromaSubsampling
        self.profile = profile
        self.level = level
        self.bitDepth = bitDepth
    }

    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> VPCodecConfigurationBox {
        let profile = try reader.readUInt8()
        let level = try reader.readUInt8()
        let b = try reader.readUInt8()
        try reader.skip(reader.remaining)
        return VPCodecConfigurationBox(profile: profile, level: level, bitDepth: b >> 4, chromaSubsampling: (b >> 1) & 7)
    }

    /// `level` / 10 (`31`: 3.1); 0 is undefined.
    public var levelNumber: Double? { level == 0 ? nil : Double(level) / 10 }

    /// VP8 and VP9 code frames only.
    public var pictureFormat: PictureFormat? {
        let chroma: PictureFormat.Chroma = chromaSubsampling == 2 ? .yuv422 : chromaSubsampling == 3 ? .yuv444 : .yuv420
        return PictureFormat(bitDepth: bitDepth, chroma: chroma, interlaced: false)
    }

    public var fields: [(name: String, value: FieldValue)] {
        [("profile", .uint(UInt64(profile))), ("level", .uint(UInt64(level))), ("bitDepth", .uint(UInt64(bitDepth)))]
    }

    /// `vp09.00.10.08`: profile, level, bit depth.
    public func codecString(format: FourCC) -> String {
        "\(format).\(CodecString.dec2(profile)).\(CodecString.dec2(level)).\(CodecString.dec2(bitDepth))"
    }
}
