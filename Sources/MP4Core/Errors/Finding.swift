/// A non-fatal observation about a file: an oddity, a tolerated defect, or a hint.
///
/// Findings never stop parsing. Each has a stable ``id`` (kebab-case, part of the JSON schema)
/// so that tools can match on it, a ``severity``, and a message that says what is wrong and,
/// where there is one, what to do about it.
public struct Finding: Sendable, Hashable, Codable, CustomStringConvertible {
    /// How much a finding matters.
    public enum Severity: String, Sendable, Hashable, Codable, Comparable {
        /// Worth knowing; nothing is wrong.
        case info
        /// Tolerated, but players or tools may misbehave.
        case warning
        /// Part of the file is broken or unreadable.
        case error

        private var rank: Int {
            switch self {
            case .info: return 0
            case .warning: return 1
            case .error: return 2
            }
        }

        public static func < (lhs: Severity, rhs: Severity) -> Bool { lhs.rank < rhs.rank }
    }

    /// A stable identifier such as `box-truncated` or `trailing-bytes`.
    public var id: String
    /// How much it matters.
    public var severity: Severity
    /// What was found, in a sentence.
    public var message: String
    /// Absolute file offset, when the finding is about a place in the file.
    public var offset: UInt64?
    /// Box path, when the finding is about a box.
    public var path: String?

    /// Creates a finding with a raw id (decoding, tests); code uses ``init(_:severity:message:offset:path:)``.
    public init(id: String, severity: Severity, message: String, offset: UInt64? = nil, path: BoxPath? = nil) {
        self.id = id
        self.severity = severity
        self.message = message
        self.offset = offset
        self.path = path?.description
    }

    public var description: String {
        var location = ""
        if let path { location += " [\(path)]" }
        if let offset { location += " @\(offset)" }
        return "\(severity.rawValue) \(id)\(location): \(message)"
    }
}

extension Finding {
    /// Every finding the library and the CLI emit: one id per condition, with its default
    /// severity and its category. The raw value is the stable kebab-case id of the JSON schema.
    /// A check policy raises severities by category (a layout warning becomes a failure when
    /// faststart is required).
    public enum Kind: String, Sendable, Hashable, Codable, CaseIterable {
        case badStscEntry = "bad-stsc-entry"
        case boxExtraBytes = "box-extra-bytes"
        case boxNotLoaded = "box-not-loaded"
        case boxOverrunsParent = "box-overruns-parent"
        case boxTruncated = "box-truncated"
        case brandNotAllowed = "brand-not-allowed"
        case checkLimit = "check-limit"
        case chunkOutsideMdat = "chunk-outside-mdat"
        case codecNotAllowed = "codec-not-allowed"
        case duplicateTrackId = "duplicate-track-id"
        case duration = "duration"
        case entryCountMismatch = "entry-count-mismatch"
        case fixFailed = "fix-failed"
        case fragmentSampleLimit = "fragment-sample-limit"
        case fragmentTimeBackwards = "fragment-time-backwards"
        case fragmentTimeOverlap = "fragment-time-overlap"
        case fragmentDurationMismatch = "fragment-duration-mismatch"
        case fragmented = "fragmented"
        case fragmentsUnreadable = "fragments-unreadable"
        case freeSpace = "free-space"
        case ftypNotFirst = "ftyp-not-first"
        case garbageBoxType = "garbage-box-type"
        case interleave = "interleave"
        case invalidBox = "invalid-box"
        case invalidBoxHeader = "invalid-box-header"
        case invalidBoxSize = "invalid-box-size"
        case truncatedBoxHeader = "truncated-box-header"
        case ioError = "io-error"
        case keyframeInterval = "keyframe-interval"
        case limitExceeded = "limit-exceeded"
        case mdatPastEof = "mdat-past-eof"
        case missingChunkOffsets = "missing-chunk-offsets"
        case missingMdhd = "missing-mdhd"
        case missingMvhd = "missing-mvhd"
        case missingSampleDescription = "missing-sample-description"
        case missingSampleSizes = "missing-sample-sizes"
        case missingStsc = "missing-stsc"
        case missingStts = "missing-stts"
        case missingTkhd = "missing-tkhd"
        case missingTrex = "missing-trex"
        case moovTruncated = "moov-truncated"
        case multipleMdat = "multiple-mdat"
        case multipleMoov = "multiple-moov"
        case noMoov = "no-moov"
        case noTracks = "no-tracks"
        case notFaststart = "not-faststart"
        case notMP4 = "not-mp4"
        case resolution = "resolution"
        case sampleCountMismatch = "sample-count-mismatch"
        case samplesWithoutChunk = "samples-without-chunk"
        case scanLimit = "scan-limit"
        case sizeZeroBox = "size-zero-box"
        case startupBytes = "startup-bytes"
        case stscPastChunks = "stsc-past-chunks"
        case timeOverflow = "time-overflow"
        case trafUnknownTrack = "traf-unknown-track"
        case trafWithoutTfhd = "traf-without-tfhd"
        case trailingBytes = "trailing-bytes"
        case trailingPadding = "trailing-padding"
        case trunOffsetInvalid = "trun-offset-invalid"
        case trunPastEnd = "trun-past-end"
        case unreadable = "unreadable"
        case unsortedStss = "unsorted-stss"
        case unusedChunks = "unused-chunks"
        case zeroTimescale = "zero-timescale"

        /// The severity a finding of this kind has unless the caller raises it.
        public var defaultSeverity: Severity {
            switch self {
            case .badStscEntry: return .warning
            case .boxExtraBytes: return .info
            case .boxNotLoaded: return .info
            case .boxOverrunsParent: return .error
            case .boxTruncated: return .error
            case .brandNotAllowed: return .error
            case .checkLimit: return .warning
            case .chunkOutsideMdat: return .error
            case .codecNotAllowed: return .error
            case .duplicateTrackId: return .warning
            case .duration: return .error
            case .entryCountMismatch: return .warning
            case .fixFailed: return .error
            case .fragmentSampleLimit: return .error
            case .fragmentTimeBackwards: return .warning
            case .fragmentTimeOverlap: return .info
            case .fragmentDurationMismatch: return .info
            case .fragmented: return .error
            case .fragmentsUnreadable: return .error
            case .freeSpace: return .info
            case .ftypNotFirst: return .info
            case .garbageBoxType: return .warning
            case .interleave: return .error
            case .invalidBox: return .error
            case .invalidBoxHeader: return .error
            case .invalidBoxSize: return .error
            case .truncatedBoxHeader: return .error
            case .ioError: return .error
            case .keyframeInterval: return .error
            case .limitExceeded: return .error
            case .mdatPastEof: return .error
            case .missingChunkOffsets: return .error
            case .missingMdhd: return .error
            case .missingMvhd: return .error
            case .missingSampleDescription: return .error
            case .missingSampleSizes: return .error
            case .missingStsc: return .error
            case .missingStts: return .error
            case .missingTkhd: return .error
            case .missingTrex: return .warning
            case .moovTruncated: return .error
            case .multipleMdat: return .info
            case .multipleMoov: return .warning
            case .noMoov: return .error
            case .noTracks: return .warning
            case .notFaststart: return .warning
            case .notMP4: return .error
            case .resolution: return .error
            case .sampleCountMismatch: return .warning
            case .samplesWithoutChunk: return .warning
            case .scanLimit: return .error
            case .sizeZeroBox: return .info
            case .startupBytes: return .error
            case .stscPastChunks: return .warning
            case .timeOverflow: return .error
            case .trafUnknownTrack: return .warning
            case .trafWithoutTfhd: return .error
            case .trailingBytes: return .warning
            case .trailingPadding: return .info
            case .trunOffsetInvalid: return .error
            case .trunPastEnd: return .warning
            case .unreadable: return .error
            case .unsortedStss: return .warning
            case .unusedChunks: return .info
            case .zeroTimescale: return .error
            }
        }

        /// What part of a file (or of a check) the finding is about.
        public var category: Category {
            switch self {
            case .badStscEntry: return .sampleTable
            case .boxExtraBytes: return .structure
            case .boxNotLoaded: return .structure
            case .boxOverrunsParent: return .structure
            case .boxTruncated: return .structure
            case .brandNotAllowed: return .policy
            case .checkLimit: return .limits
            case .chunkOutsideMdat: return .sampleTable
            case .codecNotAllowed: return .policy
            case .duplicateTrackId: return .movie
            case .duration: return .policy
            case .entryCountMismatch: return .structure
            case .fixFailed: return .policy
            case .fragmentSampleLimit: return .limits
            case .fragmentTimeBackwards: return .fragments
            case .fragmentTimeOverlap: return .fragments
            case .fragmentDurationMismatch: return .fragments
            case .fragmented: return .layout
            case .fragmentsUnreadable: return .fragments
            case .freeSpace: return .layout
            case .ftypNotFirst: return .layout
            case .garbageBoxType: return .structure
            case .interleave: return .policy
            case .invalidBox: return .structure
            case .invalidBoxHeader: return .structure
            case .invalidBoxSize: return .structure
            case .truncatedBoxHeader: return .structure
            case .ioError: return .input
            case .keyframeInterval: return .policy
            case .limitExceeded: return .limits
            case .mdatPastEof: return .structure
            case .missingChunkOffsets: return .sampleTable
            case .missingMdhd: return .movie
            case .missingMvhd: return .movie
            case .missingSampleDescription: return .sampleTable
            case .missingSampleSizes: return .sampleTable
            case .missingStsc: return .sampleTable
            case .missingStts: return .sampleTable
            case .missingTkhd: return .movie
            case .missingTrex: return .fragments
            case .moovTruncated: return .structure
            case .multipleMdat: return .layout
            case .multipleMoov: return .layout
            case .noMoov: return .layout
            case .noTracks: return .movie
            case .notFaststart: return .layout
            case .notMP4: return .input
            case .resolution: return .policy
            case .sampleCountMismatch: return .sampleTable
            case .samplesWithoutChunk: return .sampleTable
            case .scanLimit: return .limits
            case .sizeZeroBox: return .structure
            case .startupBytes: return .layout
            case .stscPastChunks: return .sampleTable
            case .timeOverflow: return .movie
            case .trafUnknownTrack: return .fragments
            case .trafWithoutTfhd: return .fragments
            case .trailingBytes: return .structure
            case .trailingPadding: return .structure
            case .trunOffsetInvalid: return .fragments
            case .trunPastEnd: return .fragments
            case .unreadable: return .input
            case .unsortedStss: return .sampleTable
            case .unusedChunks: return .sampleTable
            case .zeroTimescale: return .movie
            }
        }
    }

    /// Groups of finding kinds.
    public enum Category: String, Sendable, Hashable, Codable, CaseIterable {
        /// Box headers and sizes, the tree.
        case structure
        /// Where the boxes are: faststart, padding, several `moov`/`mdat`.
        case layout
        /// Movie and track headers.
        case movie
        /// The sample tables of a progressive file.
        case sampleTable
        /// Movie fragments.
        case fragments
        /// A resource bound was reached (``ParseLimits``).
        case limits
        /// A rule of a check policy.
        case policy
        /// The input could not be read or is not MP4.
        case input
    }

    /// A finding of `kind`, at its default severity unless `severity` raises (or lowers) it.
    public init(_ kind: Kind, severity: Severity? = nil, message: String, offset: UInt64? = nil, path: BoxPath? = nil) {
        self.init(id: kind.rawValue, severity: severity ?? kind.defaultSeverity, message: message, offset: offset, path: path)
    }

    /// The kind, for ids of the catalogue (nil for a finding decoded from elsewhere).
    public var kind: Kind? { Kind(rawValue: id) }
}
