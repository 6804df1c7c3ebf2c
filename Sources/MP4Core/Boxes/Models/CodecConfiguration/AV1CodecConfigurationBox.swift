/// `av1C` (AV1 codec ISOBMFF binding §2.3): profile, level, tier, bit depth and whether it is
/// monochrome; the configuration OBUs after them are skipped.
public struct AV1CodecConfigurationBox: CodecConfigurationBoxModel {
    public static let type: FourCC = "av1C"
    public static let specName = "AV1CodecConfigurationBox"
    public static let isFullBox = false

    public var profile: UInt8
    public var level: UInt8
    public var tier: UInt8
    public var bitDepth: UInt8
    public var monochrome: Bool
    /// `chroma_subsampling_x` and `_y`.
    public var subsampling: (x: Bool, y: Bool) { (subsamplingBits & 2 != 0, subsamplingBits & 1 != 0) }
    private var subsamplingBits: UInt8 = 3

    public init(profile: UInt8, level: UInt8, tier: UInt8, bitDepth: UInt8, monochrome: Bool, subsamplingX: Bool = true, subsamplingY: Bool = true) {
        self.subsamplingBits = (subsamplingX ? 2 : 0) | (subsamplingY ? 1 : 0)
        self.profile = profile
        self.level = level
        self.tier = tier
        self.bitDepth = bitDepth
        self.monochrome = monochrome
    }

    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> AV1CodecConfigurationBox {
        try reader.skip(1)  // marker, version
        let b1 = try reader.readUInt8()
        let b2 = try reader.readUInt8()
        try reader.skip(reader.remaining)
        let high = b2 & 0x40 != 0, twelve = b2 & 0x20 != 0
        return AV1CodecConfigurationBox(profile: b1 >> 5, level: b1 & 0x1F, tier: b2 >> 7, bitDepth: twelve ? 12 : (high ? 10 : 8), monochrome: b2 & 0x10 != 0,
                                        subsamplingX: b2 & 0x08 != 0, subsamplingY: b2 & 0x04 != 0)
    }

    /// `seq_level_idx_0` as X.Y: X = 2 + idx / 4, Y = idx % 4 (`13`: 5.1); 31 ("maximum
    /// parameters") has no level.
    public var levelNumber: Double? { level >= 24 ? nil : Double(2 + Int(level) / 4) + Double(Int(level) % 4) / 10 }

    /// AV1 codes frames only.
    public var pictureFormat: PictureFormat? {
        let chroma: PictureFormat.Chroma = monochrome ? .monochrome : subsampling.x ? (subsampling.y ? .yuv420 : .yuv422) : .yuv444
        return PictureFormat(bitDepth: bitDepth, chroma: chroma, interlaced: false)
    }

    public var fields: [(name: String, value: FieldValue)] {
        [("profile", .uint(UInt64(profile))), ("level", .uint(UInt64(level))), ("tier", .uint(UInt64(tier))),
         ("bitDepth", .uint(UInt64(bitDepth))), ("monochrome", .bool(monochrome))]
    }

    /// `av01.0.04M.08`: profile, level and tier, bit depth.
    public func codecString(format: FourCC) -> String {
        "av01.\(profile).\(CodecString.dec2(level))\(tier == 0 ? "M" : "H").\(CodecString.dec2(bitDepth))"
    }
}
