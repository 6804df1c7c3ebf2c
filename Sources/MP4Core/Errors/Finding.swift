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
    /// severity and its category, each kind declared once, as one case whose raw value says
    /// all three (`"id: severity, category"`; ``KindTraits``). The id is the stable kebab-case id of
    /// the JSON schema. A check policy raises severities by category (a layout warning becomes
    /// a failure when faststart is required).
    public enum Kind: KindTraits, Sendable, Hashable, CaseIterable, Codable {
        case audioChannels = "audio-channels: error, policy"
        case audioSampleRate = "audio-sample-rate: error, policy"
        case bFrames = "b-frames: error, policy"
        case badStscEntry = "bad-stsc-entry: warning, sampleTable"
        case bitDepth = "bit-depth: error, policy"
        case chromaNotAllowed = "chroma-not-allowed: error, policy"
        case editList = "edit-list: error, policy"
        case fileSize = "file-size: error, policy"
        case frameRate = "frame-rate: error, policy"
        case gopBitRate = "gop-bit-rate: error, policy"
        case hdrNotAllowed = "hdr-not-allowed: error, policy"
        case notFragmented = "not-fragmented: error, policy"
        case interlaced = "interlaced: error, policy"
        case openGOP = "open-gop: error, policy"
        case rotated = "rotated: error, policy"
        case variableFrameRate = "variable-frame-rate: error, policy"
        case videoBitRate = "video-bit-rate: error, policy"
        case boxExtraBytes = "box-extra-bytes: info, structure"
        case boxNotLoaded = "box-not-loaded: info, structure"
        case boxOverrunsParent = "box-overruns-parent: error, structure"
        case boxShort = "box-short: warning, structure"
        case boxTruncated = "box-truncated: error, structure"
        case brandNotAllowed = "brand-not-allowed: error, policy"
        case checkLimit = "check-limit: warning, limits"
        case chunkOutsideMdat = "chunk-outside-mdat: error, sampleTable"
        case codecNotAllowed = "codec-not-allowed: error, policy"
        case duplicateTrackId = "duplicate-track-id: warning, movie"
        case duration = "duration: error, policy"
        case entryCountMismatch = "entry-count-mismatch: warning, structure"
        case fixFailed = "fix-failed: error, policy"
        case fragmentSampleLimit = "fragment-sample-limit: error, limits"
        case fragmentTimeBackwards = "fragment-time-backwards: warning, fragments"
        case fragmentTimeOverlap = "fragment-time-overlap: info, fragments"
        case fragmentDurationMismatch = "fragment-duration-mismatch: info, fragments"
        case fragmented = "fragmented: error, layout"
        case fragmentsUnreadable = "fragments-unreadable: error, fragments"
        case fragmentsUndeclared = "fragments-undeclared: error, fragments"
        case freeSpace = "free-space: info, layout"
        case ftypNotFirst = "ftyp-not-first: info, layout"
        case garbageBoxType = "garbage-box-type: warning, structure"
        case interleave = "interleave: error, policy"
        case isoBoxCount = "iso-box-count: warning, conformance"
        case isoDataReference = "iso-data-reference: warning, conformance"
        case isoFileType = "iso-file-type: warning, conformance"
        case isoHandlerFields = "iso-handler-fields: warning, conformance"
        case isoMovieCount = "iso-movie-count: warning, conformance"
        case isoNextTrackID = "iso-next-track-id: warning, conformance"
        case isoSizeZero = "iso-size-zero: warning, conformance"
        case isoTrackID = "iso-track-id: warning, conformance"
        case invalidBox = "invalid-box: error, structure"
        case invalidBoxHeader = "invalid-box-header: error, structure"
        case invalidBoxSize = "invalid-box-size: error, structure"
        case truncatedBoxHeader = "truncated-box-header: error, structure"
        case ioError = "io-error: error, input"
        case keyframeInterval = "keyframe-interval: error, policy"
        case level = "level: error, policy"
        case limitExceeded = "limit-exceeded: error, limits"
        case mdatPastEof = "mdat-past-eof: error, structure"
        case missingChunkOffsets = "missing-chunk-offsets: error, sampleTable"
        case missingMdhd = "missing-mdhd: error, movie"
        case missingMvhd = "missing-mvhd: error, movie"
        case missingSampleDescription = "missing-sample-description: error, sampleTable"
        case missingSampleSizes = "missing-sample-sizes: error, sampleTable"
        case missingStsc = "missing-stsc: error, sampleTable"
        case missingStts = "missing-stts: error, sampleTable"
        case missingTkhd = "missing-tkhd: error, movie"
        case missingTrex = "missing-trex: warning, fragments"
        case moovTruncated = "moov-truncated: error, structure"
        case multipleMdat = "multiple-mdat: info, layout"
        case multipleMoov = "multiple-moov: warning, layout"
        case noMoov = "no-moov: error, layout"
        case noTracks = "no-tracks: warning, movie"
        case notFaststart = "not-faststart: warning, layout"
        case notMP4 = "not-mp4: error, input"
        case resolution = "resolution: error, policy"
        case sampleCountMismatch = "sample-count-mismatch: warning, sampleTable"
        case samplesWithoutChunk = "samples-without-chunk: warning, sampleTable"
        case scanLimit = "scan-limit: error, limits"
        case sizeZeroBox = "size-zero-box: info, structure"
        case startupBytes = "startup-bytes: error, layout"
        case stscPastChunks = "stsc-past-chunks: warning, sampleTable"
        case timeOverflow = "time-overflow: error, movie"
        case trafUnknownTrack = "traf-unknown-track: warning, fragments"
        case trafWithoutTfhd = "traf-without-tfhd: error, fragments"
        case trailingBytes = "trailing-bytes: warning, structure"
        case trailingPadding = "trailing-padding: info, structure"
        case trunOffsetInvalid = "trun-offset-invalid: error, fragments"
        case trunPastEnd = "trun-past-end: warning, fragments"
        case unreadable = "unreadable: error, input"
        case unsortedStss = "unsorted-stss: warning, sampleTable"
        case unusedChunks = "unused-chunks: info, sampleTable"
        case zeroTimescale = "zero-timescale: error, movie"

        /// The stable id (`box-truncated`).
        public var id: String { rawValue.id }
        /// The severity a finding of this kind has unless the caller raises it.
        public var defaultSeverity: Severity { rawValue.severity }
        /// What part of a file (or of a check) the finding is about.
        public var category: Category { rawValue.category }

        private static let byID = Dictionary(allCases.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })

        /// The kind with this id, if the catalogue has one.
        public init?(id: String) {
            guard let kind = Self.byID[id] else { return nil }
            self = kind
        }

        public init(from decoder: any Decoder) throws {
            let id = try decoder.singleValueContainer().decode(String.self)
            guard let kind = Kind(id: id) else { throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "unknown finding kind \(id)")) }
            self = kind
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(id)
        }
    }

    /// A kind's id, default severity and category, parsed from the case's raw value
    /// `"id: severity, category"` (the catalogue's own literals; `FindingCatalogueTests`
    /// reads every one).
    public struct KindTraits: Sendable, Hashable, ExpressibleByStringLiteral {
        public let id: String
        public let severity: Severity
        public let category: Category

        public init(stringLiteral text: String) {
            let parts = text.split(separator: ":", maxSplits: 1)
            let rest = parts.count == 2 ? parts[1].split(separator: ",").map { String($0.drop { $0 == " " }) } : []
            guard parts.count == 2, rest.count == 2, let severity = Severity(rawValue: rest[0]), let category = Category(rawValue: rest[1]) else {
                preconditionFailure("a finding kind is declared as \"id: severity, category\", not \"\(text)\"")
            }
            (id, self.severity, self.category) = (String(parts[0]), severity, category)
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
        /// A "shall" of ISO/IEC 14496-12 (``Conformance``): errors with `check --conformance`.
        case conformance
    }

    /// A finding of `kind`, at its default severity unless `severity` raises (or lowers) it.
    public init(_ kind: Kind, severity: Severity? = nil, message: String, offset: UInt64? = nil, path: BoxPath? = nil) {
        // One read of the raw value, not two: each read parses the case's literal again (4.6 %
        // of the samples of a profile of the AddressSanitizer suite, whose hostile inputs make
        // findings by the thousand).
        let traits = kind.rawValue
        self.init(id: traits.id, severity: severity ?? traits.severity, message: message, offset: offset, path: path)
    }

    /// The kind, for ids of the catalogue (nil for a finding decoded from elsewhere).
    public var kind: Kind? { Kind(id: id) }
}
