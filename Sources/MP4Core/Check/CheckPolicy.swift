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
