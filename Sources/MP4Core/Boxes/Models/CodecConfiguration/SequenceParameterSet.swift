/// A picture size in pixels.
public struct PictureSize: Sendable, Hashable {
    public var width: UInt32
    public var height: UInt32

    public init(width: UInt32, height: UInt32) {
        self.width = width
        self.height = height
    }
}

/// The picture size an H.264 or H.265 sequence parameter set gives, after its cropping
/// window: what a decoder outputs and ffprobe reports. A sample entry's width and height may
/// say otherwise (one file's entry said 12x10 for 10x12 pictures).
///
/// Only the syntax before the size is read; every count in it is an Exp-Golomb code bounded by
/// the bits present, and a set that ends early, or gives a size of 0 or over 65,535, gives none.
enum SequenceParameterSet {
    /// The NAL unit's payload without its emulation prevention bytes (0x000003 → 0x0000).
    static func rbsp(_ nal: some Collection<UInt8>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(nal.count)
        var zeros = 0
        for byte in nal {
            if zeros >= 2 && byte == 3 { zeros = 0; continue }
            zeros = byte == 0 ? zeros + 1 : 0
            out.append(byte)
        }
        return out
    }

    /// The size of an H.264 SPS NAL unit (with its 1-byte header; ITU-T H.264 7.3.2.1.1).
    static func avcPictureSize(_ nal: some Collection<UInt8>) -> PictureSize? { avcSequence(nal)?.size }

    /// The picture size (after cropping) and format of an H.264 SPS NAL unit: chroma format
    /// and luma bit depth (4:2:0 8-bit unless a High profile says otherwise), and whether
    /// fields may be coded (`frame_mbs_only_flag` 0).
    static func avcSequence(_ nal: some Collection<UInt8>) -> (size: PictureSize?, format: PictureFormat)? {
        let bytes = rbsp(nal)
        guard bytes.count > 4, bytes[0] & 0x1F == 7 else { return nil }
        var bits = BitReader(Array(bytes.dropFirst()))
        let profile = bits.read(8)
        bits.skip(16)  // constraint flags, level_idc
        _ = bits.readExpGolomb()  // seq_parameter_set_id
        var chromaFormat: UInt32 = 1
        var bitDepth: UInt32 = 8
        var separateColourPlanes = false
        if [100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135].contains(profile) {
            chromaFormat = bits.readExpGolomb()
            if chromaFormat == 3 { separateColourPlanes = bits.read(1) == 1 }
            bitDepth = min(bits.readExpGolomb(), 64) + 8  // bit_depth_luma_minus8 (any count is a code: bounded before it is added)
            _ = bits.readExpGolomb()  // bit_depth_chroma_minus8
            bits.skip(1)  // qpprime_y_zero_transform_bypass_flag
            if bits.read(1) == 1 {  // seq_scaling_matrix_present_flag
                for list in 0..<(chromaFormat != 3 ? 8 : 12) where bits.read(1) == 1 {
                    skipScalingList(&bits, size: list < 6 ? 16 : 64)
                }
            }
        }
        _ = bits.readExpGolomb()  // log2_max_frame_num_minus4
        switch bits.readExpGolomb() {  // pic_order_cnt_type
        case 0:
            _ = bits.readExpGolomb()  // log2_max_pic_order_cnt_lsb_minus4
        case 1:
            bits.skip(1)  // delta_pic_order_always_zero_flag
            _ = bits.readSignedExpGolomb()  // offset_for_non_ref_pic
            _ = bits.readSignedExpGolomb()  // offset_for_top_to_bottom_field
            let cycle = bits.readExpGolomb()
            guard cycle <= 255 else { return nil }
            for _ in 0..<cycle { _ = bits.readSignedExpGolomb() }
        default:
            break
        }
        _ = bits.readExpGolomb()  // max_num_ref_frames
        bits.skip(1)  // gaps_in_frame_num_value_allowed_flag
        let widthInMacroblocks = UInt64(bits.readExpGolomb()) + 1
        let heightInMapUnits = UInt64(bits.readExpGolomb()) + 1
        let frameMacroblocksOnly: UInt64 = UInt64(bits.read(1))
        if frameMacroblocksOnly == 0 { bits.skip(1) }  // mb_adaptive_frame_field_flag
        bits.skip(1)  // direct_8x8_inference_flag
        var crop: (left: UInt64, right: UInt64, top: UInt64, bottom: UInt64) = (0, 0, 0, 0)
        if bits.read(1) == 1 {
            crop = (UInt64(bits.readExpGolomb()), UInt64(bits.readExpGolomb()), UInt64(bits.readExpGolomb()), UInt64(bits.readExpGolomb()))
        }
        guard !bits.isOverrun, let chroma = PictureFormat.Chroma(formatIDC: chromaFormat), bitDepth <= 16 else { return nil }
        // Crop units (7.4.2.1.1): luma samples for 4:0:0 or separate planes, else the chroma
        // subsampling; twice as tall when fields may be coded.
        let monochrome = separateColourPlanes || chromaFormat == 0
        let unitX: UInt64 = monochrome || chromaFormat == 3 ? 1 : 2
        let unitY: UInt64 = (monochrome || chromaFormat != 1 ? 1 : 2) * (2 - frameMacroblocksOnly)
        let format = PictureFormat(bitDepth: UInt8(bitDepth), chroma: chroma, interlaced: frameMacroblocksOnly == 0)
        return (size(width: widthInMacroblocks * 16, height: heightInMapUnits * 16 * (2 - frameMacroblocksOnly),
                     cropX: unitX * (crop.left + crop.right), cropY: unitY * (crop.top + crop.bottom)), format)
    }

    /// Skips a scaling_list (7.3.2.1.1.1): deltas until the next scale is 0.
    private static func skipScalingList(_ bits: inout BitReader, size: Int) {
        var last: Int64 = 8, next: Int64 = 8
        for _ in 0..<size where next != 0 {
            let delta = bits.readSignedExpGolomb()
            next = ((last + delta) % 256 + 256) % 256
            last = next == 0 ? last : next
            if bits.isOverrun { return }
        }
    }

    /// The size of an H.265 SPS NAL unit (with its 2-byte header; ITU-T H.265 7.3.2.2.1).
    static func hevcPictureSize(_ nal: some Collection<UInt8>) -> PictureSize? { hevcSequence(nal)?.size }

    /// The picture size, chroma format and luma bit depth of an H.265 SPS NAL unit.
    static func hevcSequence(_ nal: some Collection<UInt8>) -> (size: PictureSize?, chroma: PictureFormat.Chroma, bitDepth: UInt8)? {
        let bytes = rbsp(nal)
        guard bytes.count > 4, (bytes[0] >> 1) & 0x3F == 33 else { return nil }
        var bits = BitReader(Array(bytes.dropFirst(2)))
        bits.skip(4)  // sps_video_parameter_set_id
        let subLayers = Int(bits.read(3))  // sps_max_sub_layers_minus1
        bits.skip(1)  // sps_temporal_id_nesting_flag
        // profile_tier_level(1, subLayers): the general profile (88 bits) and level (8).
        bits.skip(96)
        var present: [(profile: Bool, level: Bool)] = []
        for _ in 0..<subLayers { present.append((bits.read(1) == 1, bits.read(1) == 1)) }
        if subLayers > 0 { bits.skip(2 * (8 - subLayers)) }  // reserved_zero_2bits
        for layer in present {
            if layer.profile { bits.skip(88) }
            if layer.level { bits.skip(8) }
        }
        _ = bits.readExpGolomb()  // sps_seq_parameter_set_id
        let chromaFormat = bits.readExpGolomb()
        var separateColourPlanes = false
        if chromaFormat == 3 { separateColourPlanes = bits.read(1) == 1 }
        let width = UInt64(bits.readExpGolomb())
        let height = UInt64(bits.readExpGolomb())
        var window: (left: UInt64, right: UInt64, top: UInt64, bottom: UInt64) = (0, 0, 0, 0)
        if bits.read(1) == 1 {  // conformance_window_flag
            window = (UInt64(bits.readExpGolomb()), UInt64(bits.readExpGolomb()), UInt64(bits.readExpGolomb()), UInt64(bits.readExpGolomb()))
        }
        let bitDepth = min(bits.readExpGolomb(), 64) + 8  // bit_depth_luma_minus8, bounded before it is added
        guard !bits.isOverrun, let chroma = PictureFormat.Chroma(formatIDC: chromaFormat), bitDepth <= 16 else { return nil }
        // SubWidthC and SubHeightC (Table 6-1): 2x2 for 4:2:0, 2x1 for 4:2:2, else 1x1.
        let single = separateColourPlanes || chromaFormat == 0 || chromaFormat == 3
        let unitX: UInt64 = single ? 1 : 2
        let unitY: UInt64 = chromaFormat == 1 && !separateColourPlanes ? 2 : 1
        return (size(width: width, height: height, cropX: unitX * (window.left + window.right), cropY: unitY * (window.top + window.bottom)), chroma, UInt8(bitDepth))
    }

    /// The cropped size, when it is a picture (1 to 65,535 each way).
    private static func size(width: UInt64, height: UInt64, cropX: UInt64, cropY: UInt64) -> PictureSize? {
        guard cropX < width, cropY < height, width - cropX <= 65535, height - cropY <= 65535 else { return nil }
        return PictureSize(width: UInt32(width - cropX), height: UInt32(height - cropY))
    }
}
