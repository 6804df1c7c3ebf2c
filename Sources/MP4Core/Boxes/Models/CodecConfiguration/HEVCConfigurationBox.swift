/// `hvcC` (ISO/IEC 14496-15 §8.3.3): the H.265 profile, tier, compatibility and constraint
/// flags and level, and the picture size of its first sequence parameter set.
public struct HEVCConfigurationBox: CodecConfigurationBoxModel {
    public static let type: FourCC = "hvcC"
    public static let specName = "HEVCConfigurationBox"
    public static let isFullBox = false

    public var profileSpace: UInt8
    public var tierFlag: Bool
    public var profile: UInt8
    public var compatibilityFlags: UInt32
    /// The six bytes of general constraint indicator flags.
    public var constraintFlags: [UInt8]
    public var level: UInt8
    /// The size the first SPS gives, after its conformance window (``codedPictureSize``).
    public var pictureSize: PictureSize?
    /// The chroma format (`chroma_format_idc`) and luma bit depth: the first SPS's, else the
    /// record's `chromaFormat` and `bitDepthLumaMinus8` + 8 (nil when it has neither).
    public var chromaFormatIDC: UInt8?
    public var bitDepthLuma: UInt8?

    public init(profileSpace: UInt8, tierFlag: Bool, profile: UInt8, compatibilityFlags: UInt32, constraintFlags: [UInt8], level: UInt8, pictureSize: PictureSize? = nil,
                chromaFormatIDC: UInt8? = nil, bitDepthLuma: UInt8? = nil) {
        self.chromaFormatIDC = chromaFormatIDC
        self.bitDepthLuma = bitDepthLuma
        self.pictureSize = pictureSize
        self.profileSpace = profileSpace
        self.tierFlag = tierFlag
        self.profile = profile
        self.compatibilityFlags = compatibilityFlags
        self.constraintFlags = constraintFlags
        self.level = level
    }

    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> HEVCConfigurationBox {
        try reader.skip(1)  // configurationVersion
        let b = try reader.readUInt8()
        let compatibility = try reader.readUInt32()
        let constraints = Array(try reader.readBytes(6))
        let level = try reader.readUInt8()
        var format: (chroma: UInt8, depth: UInt8)?
        if reader.remaining >= 5 {
            let fields = Array(reader.remainingBytes.prefix(5))  // segmentation (2), parallelism, chroma, luma depth
            format = (fields[3] & 3, (fields[4] & 7) + 8)
        }
        // The SPS's chroma format and bit depth when it parses (an Android encoder's record
        // said 4:0:0 for a 4:2:0 stream), else the record's.
        let sequence = try firstSequenceParameterSet(&reader).flatMap(SequenceParameterSet.hevcSequence)
        if let sequence {
            format = (UInt8(truncatingIfNeeded: ["4:0:0", "4:2:0", "4:2:2", "4:4:4"].firstIndex(of: sequence.chroma.rawValue) ?? 1), sequence.bitDepth)
        }
        try reader.skip(reader.remaining)
        return HEVCConfigurationBox(profileSpace: b >> 6, tierFlag: b & 0x20 != 0, profile: b & 0x1F, compatibilityFlags: compatibility, constraintFlags: constraints, level: level, pictureSize: sequence?.size,
                                    chromaFormatIDC: format?.chroma, bitDepthLuma: format?.depth)
    }

    /// From the record's chroma format and bit depth; interlaced from the general profile's
    /// source flags (progressive only, interlaced only; both or neither: not said).
    public var pictureFormat: PictureFormat? {
        guard let chromaFormatIDC, let bitDepthLuma, let chroma = PictureFormat.Chroma(formatIDC: UInt32(chromaFormatIDC)) else { return nil }
        let progressive = (constraintFlags.first ?? 0) & 0x80 != 0, interlaced = (constraintFlags.first ?? 0) & 0x40 != 0
        return PictureFormat(bitDepth: bitDepthLuma, chroma: chroma, interlaced: progressive == interlaced ? nil : interlaced)
    }

    /// The first SPS (NAL unit type 33) of the arrays after the level, when they hold one.
    private static func firstSequenceParameterSet(_ reader: inout ByteReader) throws -> ArraySlice<UInt8>? {
        // min_spatial_segmentation_idc (2), parallelismType, chromaFormat, the two bit depths,
        // avgFrameRate (2), the frame rate and length size byte: 9 bytes, then numOfArrays.
        guard reader.remaining >= 10 else { return nil }
        try reader.skip(9)
        let arrays = try reader.readUInt8()
        for _ in 0..<arrays {
            guard reader.remaining >= 3 else { return nil }
            let type = try reader.readUInt8() & 0x3F
            let count = try reader.readUInt16()
            for _ in 0..<count {
                guard reader.remaining >= 2 else { return nil }
                let length = Int(try reader.readUInt16())
                guard length <= reader.remaining else { return nil }
                let nal = try reader.readBytes(length)
                if type == 33 { return nal }
            }
        }
        return nil
    }

    public var fields: [(name: String, value: FieldValue)] {
        [("profileSpace", .uint(UInt64(profileSpace))), ("tier", .string(tierFlag ? "high" : "main")), ("profile", .uint(UInt64(profile))),
         ("compatibilityFlags", .uint(UInt64(compatibilityFlags))), ("level", .uint(UInt64(level)))]
    }

    public var codedPictureSize: PictureSize? { pictureSize }

    /// `general_level_idc` / 30 (`153`: 5.1), to one decimal.
    public var levelNumber: Double? { (Double(level) / 3).rounded() / 10 }

    /// `hvc1.1.6.L93.B0` (ISO/IEC 14496-15 Annex E.3): profile space letter and profile, the
    /// compatibility flags bit-reversed in hex, tier and level, the constraint bytes without
    /// trailing zeros.
    public func codecString(format: FourCC) -> String {
        let spaceLetter = ["", "A", "B", "C"][Int(profileSpace & 3)]
        var reversed: UInt32 = 0
        for bit in 0..<32 where compatibilityFlags & (1 << bit) != 0 { reversed |= 1 << (31 - bit) }
        var text = "\(format).\(spaceLetter)\(profile).\(String(reversed, radix: 16, uppercase: true)).\(tierFlag ? "H" : "L")\(level)"
        var trimmed = constraintFlags
        while let last = trimmed.last, last == 0 { trimmed.removeLast() }
        for byte in trimmed { text += "." + String(byte, radix: 16, uppercase: true) }
        return text
    }
}
