/// Resource bounds for parsing untrusted files.
///
/// Every size, count and offset in a file is attacker-controlled. These limits bound the memory
/// and work any input can cause; they are documented with their defaults in
/// `docs/robustness.md`. Reaching one gives an ``MP4Error`` of kind
/// ``MP4Error/Kind/limitExceeded`` (or, for the top-level scan, a finding and a stop).
public struct ParseLimits: Sendable, Hashable {
    /// The largest `moov` box that is loaded into memory (default 256 MiB; a two-hour
    /// progressive file with audio and video has a `moov` of about 8 MiB).
    public var maxMovieBoxSize: UInt64
    /// The largest other top-level box (e.g. `ftyp`, `sidx`, `moof`) loaded for the box tree
    /// (default 16 MiB).
    public var maxOtherBoxSize: UInt64
    /// Total bytes of top-level boxes other than `moov` loaded for the box tree
    /// (default 256 MiB).
    public var maxMetadataBytes: UInt64
    /// Maximum nesting depth of boxes (default 32; real files stay below 12).
    public var maxDepth: Int
    /// Maximum number of boxes parsed into trees, over the whole file (default 2,000,000).
    public var maxBoxCount: Int
    /// Maximum number of top-level boxes the scan records (default 1,000,000); the scan stops
    /// with a finding beyond it.
    public var maxTopLevelBoxes: Int
    /// Maximum number of samples one query may walk, e.g. the samples in a seek plan's
    /// window (default 50,000,000, about a second of work); tables themselves are never
    /// expanded.
    public var maxSamplesPerQuery: Int
    /// Maximum number of fragment samples (`trun` entries) indexed for one file (default
    /// 20,000,000; the index costs about 4 bytes per sample). A `trun` without per-sample
    /// fields claims samples without paying for them in bytes; this bounds what it can cost.
    public var maxFragmentSamples: Int

    /// Creates limits; every parameter has the documented default.
    public init(
        maxMovieBoxSize: UInt64 = 256 << 20,
        maxOtherBoxSize: UInt64 = 16 << 20,
        maxMetadataBytes: UInt64 = 256 << 20,
        maxDepth: Int = 32,
        maxBoxCount: Int = 2_000_000,
        maxTopLevelBoxes: Int = 1_000_000,
        maxSamplesPerQuery: Int = 50_000_000,
        maxFragmentSamples: Int = 20_000_000
    ) {
        self.maxMovieBoxSize = maxMovieBoxSize
        self.maxOtherBoxSize = maxOtherBoxSize
        self.maxMetadataBytes = maxMetadataBytes
        self.maxDepth = maxDepth
        self.maxBoxCount = maxBoxCount
        self.maxTopLevelBoxes = maxTopLevelBoxes
        self.maxSamplesPerQuery = maxSamplesPerQuery
        self.maxFragmentSamples = maxFragmentSamples
    }

    /// The defaults.
    public static let `default` = ParseLimits()

    /// The name of one bound, carried by ``MP4Error/limit`` so that a message can say which
    /// bound was reached and how to raise it.
    public enum Name: String, Sendable, Hashable, Codable, CaseIterable {
        case maxMovieBoxSize, maxOtherBoxSize, maxMetadataBytes, maxDepth, maxBoxCount
        case maxTopLevelBoxes, maxSamplesPerQuery, maxFragmentSamples
    }

    /// The value of the bound `name` (set: clamped to what the bound's type holds).
    public subscript(name: Name) -> UInt64 {
        get { value(of: name) }
        set {
            let count = Int(clamping: newValue)
            switch name {
            case .maxMovieBoxSize: maxMovieBoxSize = newValue
            case .maxOtherBoxSize: maxOtherBoxSize = newValue
            case .maxMetadataBytes: maxMetadataBytes = newValue
            case .maxDepth: maxDepth = count
            case .maxBoxCount: maxBoxCount = count
            case .maxTopLevelBoxes: maxTopLevelBoxes = count
            case .maxSamplesPerQuery: maxSamplesPerQuery = count
            case .maxFragmentSamples: maxFragmentSamples = count
            }
        }
    }

    private func value(of name: Name) -> UInt64 {
        switch name {
        case .maxMovieBoxSize: return maxMovieBoxSize
        case .maxOtherBoxSize: return maxOtherBoxSize
        case .maxMetadataBytes: return maxMetadataBytes
        case .maxDepth: return UInt64(clamping: maxDepth)
        case .maxBoxCount: return UInt64(clamping: maxBoxCount)
        case .maxTopLevelBoxes: return UInt64(clamping: maxTopLevelBoxes)
        case .maxSamplesPerQuery: return UInt64(clamping: maxSamplesPerQuery)
        case .maxFragmentSamples: return UInt64(clamping: maxFragmentSamples)
        }
    }
}
