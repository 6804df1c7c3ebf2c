/// What `mp4probe check` requires of a file. Every rule has a default; all of them can be set
/// from a JSON policy file (the property names are the JSON keys) and from flags.
public struct CheckPolicy: Sendable, Hashable, Codable {
    /// `moov` must precede the first `mdat` (default `true`).
    public var requireFaststart: Bool
    /// Most bytes a progressive player may need before it can start (`nil`: no limit).
    public var maxStartupBytes: UInt64?
    /// Longest gap between sync samples of a video track, seconds (`nil`: report only).
    public var maxKeyframeInterval: Double?
    /// Most seconds one track may run ahead of another in file order (`nil`: report only).
    public var maxInterleave: Double?
    /// Allowed sample entry formats or RFC 6381 codec prefixes (`avc1`, `mp4a.40.2`);
    /// `nil` allows all.
    public var allowCodecs: [String]?
    /// Allowed major brands (`nil` allows all).
    public var allowBrands: [String]?
    /// Whether fragmented files pass (default `true`).
    public var allowFragmented: Bool
    /// Longest allowed duration, seconds.
    public var maxDuration: Double?
    /// Smallest and largest allowed video size, `WIDTHxHEIGHT` (both dimensions checked).
    public var minResolution: String?
    public var maxResolution: String?
    /// Every "shall" of ISO/IEC 14496-12 that the boxes show fails the check (``Conformance``;
    /// default `false`: the check asks whether the file will play and transcode).
    public var conformance: Bool = false

    // The ingest rules of upload platforms (``IngestRules``); `nil`/`false`: not checked.
    /// Most bits per luma sample of a video track.
    public var maxBitDepth: Int?
    /// Most bits per luma sample by codec family (`avc`, `hevc`, `av1`, `vp9`), as Mux allows
    /// 10-bit HEVC and 8-bit H.264; a family not named is held to ``maxBitDepth`` if set.
    public var maxBitDepthByFamily: [String: Int]?
    /// Allowed chroma subsampling of video (`4:2:0`, `4:2:2`, `4:4:4`, `4:0:0`).
    public var allowChroma: [String]?
    /// Whether interlaced video passes (default `true`).
    public var allowInterlaced: Bool = true
    /// Whether video whose track header turns it (a rotation or another transformation in
    /// `tkhd`'s matrix, as phones record portrait video) passes (default `true`).
    public var allowRotation: Bool = true
    /// Most frames per second of a video track.
    public var maxFrameRate: Double?
    /// Video must have a constant frame rate.
    public var requireConstantFrameRate: Bool = false
    /// Most B-frames in a row.
    public var maxConsecutiveBFrames: Int?
    /// Video GOPs must be closed.
    public var requireClosedGOP: Bool = false
    /// Edit lists allowed: `none`, `offset` (one segment, possibly after a delay) or `any`.
    public var editLists: String?
    /// Most average bits per second of a video track.
    public var maxVideoBitRate: UInt64?
    /// Most bits per second over one GOP of a video track.
    public var maxGOPBitRate: UInt64?
    /// Most bytes in the file.
    public var maxFileSize: UInt64?
    /// Allowed channel counts of audio tracks.
    public var allowAudioChannels: [Int]?
    /// Allowed sample rates of audio tracks, Hz.
    public var allowAudioSampleRates: [Int]?
    /// Allowed HDR signalling of video (`HDR10`, `Dolby Vision`, `PQ`, `HLG`); SDR always passes.
    public var allowHDR: [String]?
    /// Codecs (formats or codec-string prefixes) that must come in fragmented files.
    public var fragmentedCodecs: [String]?
    /// The highest codec level allowed, by family (`avc`, `hevc`, `av1`, `vp9`): `{"avc": 4.2}`.
    public var maxLevel: [String: Double]?

    /// The defaults: faststart required, integrity always checked, everything else reported.
    public init(requireFaststart: Bool = true, maxStartupBytes: UInt64? = nil, maxKeyframeInterval: Double? = nil, maxInterleave: Double? = nil, allowCodecs: [String]? = nil, allowBrands: [String]? = nil, allowFragmented: Bool = true, maxDuration: Double? = nil, minResolution: String? = nil, maxResolution: String? = nil, conformance: Bool = false) {
        self.requireFaststart = requireFaststart
        self.maxStartupBytes = maxStartupBytes
        self.maxKeyframeInterval = maxKeyframeInterval
        self.maxInterleave = maxInterleave
        self.allowCodecs = allowCodecs
        self.allowBrands = allowBrands
        self.allowFragmented = allowFragmented
        self.maxDuration = maxDuration
        self.minResolution = minResolution
        self.maxResolution = maxResolution
        self.conformance = conformance
    }

    /// Reads a policy document; absent keys keep their defaults.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        let d = CheckPolicy()
        requireFaststart = try c.decodeIfPresent(Bool.self, forKey: .requireFaststart) ?? d.requireFaststart
        maxStartupBytes = try c.decodeIfPresent(UInt64.self, forKey: .maxStartupBytes)
        maxKeyframeInterval = try c.decodeIfPresent(Double.self, forKey: .maxKeyframeInterval)
        maxInterleave = try c.decodeIfPresent(Double.self, forKey: .maxInterleave)
        allowCodecs = try c.decodeIfPresent([String].self, forKey: .allowCodecs)
        allowBrands = try c.decodeIfPresent([String].self, forKey: .allowBrands)
        allowFragmented = try c.decodeIfPresent(Bool.self, forKey: .allowFragmented) ?? d.allowFragmented
        maxDuration = try c.decodeIfPresent(Double.self, forKey: .maxDuration)
        minResolution = try c.decodeIfPresent(String.self, forKey: .minResolution)
        maxResolution = try c.decodeIfPresent(String.self, forKey: .maxResolution)
        conformance = try c.decodeIfPresent(Bool.self, forKey: .conformance) ?? d.conformance
        maxBitDepth = try c.decodeIfPresent(Int.self, forKey: .maxBitDepth)
        maxBitDepthByFamily = try c.decodeIfPresent([String: Int].self, forKey: .maxBitDepthByFamily)
        allowChroma = try c.decodeIfPresent([String].self, forKey: .allowChroma)
        allowInterlaced = try c.decodeIfPresent(Bool.self, forKey: .allowInterlaced) ?? d.allowInterlaced
        allowRotation = try c.decodeIfPresent(Bool.self, forKey: .allowRotation) ?? d.allowRotation
        maxFrameRate = try c.decodeIfPresent(Double.self, forKey: .maxFrameRate)
        requireConstantFrameRate = try c.decodeIfPresent(Bool.self, forKey: .requireConstantFrameRate) ?? d.requireConstantFrameRate
        maxConsecutiveBFrames = try c.decodeIfPresent(Int.self, forKey: .maxConsecutiveBFrames)
        requireClosedGOP = try c.decodeIfPresent(Bool.self, forKey: .requireClosedGOP) ?? d.requireClosedGOP
        editLists = try c.decodeIfPresent(String.self, forKey: .editLists)
        maxVideoBitRate = try c.decodeIfPresent(UInt64.self, forKey: .maxVideoBitRate)
        maxGOPBitRate = try c.decodeIfPresent(UInt64.self, forKey: .maxGOPBitRate)
        maxFileSize = try c.decodeIfPresent(UInt64.self, forKey: .maxFileSize)
        allowAudioChannels = try c.decodeIfPresent([Int].self, forKey: .allowAudioChannels)
        allowAudioSampleRates = try c.decodeIfPresent([Int].self, forKey: .allowAudioSampleRates)
        allowHDR = try c.decodeIfPresent([String].self, forKey: .allowHDR)
        fragmentedCodecs = try c.decodeIfPresent([String].self, forKey: .fragmentedCodecs)
        maxLevel = try c.decodeIfPresent([String: Double].self, forKey: .maxLevel)
        for resolution in [minResolution, maxResolution].compactMap({ $0 }) where Self.parseResolution(resolution) == nil {
            throw DecodingError.dataCorrupted(.init(codingPath: c.codingPath, debugDescription: "resolution '\(resolution)' is not WIDTHxHEIGHT"))
        }
    }

    /// `1280x720` as (1280, 720).
    public static func parseResolution(_ text: String) -> (width: Int, height: Int)? {
        let parts = text.lowercased().split(separator: "x")
        guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]), w > 0, h > 0 else { return nil }
        return (w, h)
    }
}
