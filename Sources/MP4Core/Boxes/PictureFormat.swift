/// What a video decoder's pictures are, as the codec configuration says: bit depth, chroma
/// subsampling, and whether the stream may code fields (interlaced). What ingest rules ask
/// (8-bit 4:2:0 only; no interlaced video) and what ffprobe's `pix_fmt` and `field_order`
/// report.
public struct PictureFormat: Sendable, Hashable, Codable {
    /// Chroma subsampling.
    public enum Chroma: String, Sendable, Hashable, Codable {
        case monochrome = "4:0:0", yuv420 = "4:2:0", yuv422 = "4:2:2", yuv444 = "4:4:4"

        /// From a `chroma_format_idc` (H.264, H.265: 0 to 3).
        init?(formatIDC: UInt32) {
            switch formatIDC {
            case 0: self = .monochrome
            case 1: self = .yuv420
            case 2: self = .yuv422
            case 3: self = .yuv444
            default: return nil
            }
        }
    }

    /// Bits per luma sample.
    public var bitDepth: UInt8
    public var chroma: Chroma
    /// True when the stream may hold fields (H.264 without `frame_mbs_only_flag`, H.265 with
    /// its interlaced source flag), false when it holds frames only; nil when it does not say.
    public var interlaced: Bool?

    public init(bitDepth: UInt8, chroma: Chroma, interlaced: Bool?) {
        self.bitDepth = bitDepth
        self.chroma = chroma
        self.interlaced = interlaced
    }
}
