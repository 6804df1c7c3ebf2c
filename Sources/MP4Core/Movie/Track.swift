/// A summary of one `trak`: identity, timing, codec and table sizes, read from the parsed
/// tree without expanding any table.
public struct Track: Sendable, Hashable {
    /// What kind of media a track carries, from its handler type.
    public enum Kind: String, Sendable, Hashable, Codable {
        case video, audio, subtitle, text, metadata, hint, timecode, other
    }

    /// `tkhd` track ID.
    public var trackID: UInt32
    /// The kind, from `hdlr` (and the sample entry when the handler is unusual).
    public var kind: Kind
    /// `hdlr` handler type.
    public var handlerType: FourCC?
    /// `hdlr` name.
    public var handlerName: String?
    /// The track header.
    public var header: TrackHeaderBox?
    /// The media header (time scale, duration, language).
    public var mediaHeader: MediaHeaderBox?
    /// The edit list, when present.
    public var editList: EditListBox?
    /// The sample entries of `stsd`.
    public var sampleEntries: [SampleEntry]
    /// Samples in the `moov` tables (0 for fragmented tracks, whose samples are in `moof`s).
    public var sampleCount: UInt64
    /// Total bytes of those samples, when the size table is readable.
    public var sampleByteCount: UInt64?
    /// Chunks (`stco`/`co64` entries).
    public var chunkCount: Int
    /// Sync samples listed in `stss`, or `nil` when every sample is a sync sample.
    public var syncSampleCount: Int?
    /// Whether chunk offsets are 64-bit (`co64`).
    public var usesLargeChunkOffsets: Bool
    /// The box path of the `trak`.
    public var path: BoxPath
    /// The track's `stbl` box (nil when it has none): the sample tables, kept with the track
    /// so that nothing pairs tracks with `trak` boxes by position.
    public var sampleTableBox: BoxNode?
    /// The path of ``sampleTableBox``.
    public var sampleTablePath: BoxPath { path.appending(.mdia).appending(.minf).appending(.stbl) }

    /// The duration measured from the samples of `moov` and the movie fragments (their
    /// presentation span); set by ``MP4File/completingFragments(with:)``.
    public var fragmentDurationSeconds: Double?
    /// Whether the sample facts (count, bytes, sync samples, duration) were measured from the
    /// movie fragments rather than read from `moov`.
    public var factsFromFragments = false

    /// Media duration in seconds: `mdhd`, unless the span measured from its samples in `moov`
    /// and fragments (``factsFromFragments``) runs past it (a hybrid file's `mdhd` counts only
    /// the samples in `moov`); for a track whose `mdhd` says 0, the span measured.
    public var durationSeconds: Double? {
        let measured = factsFromFragments ? fragmentDurationSeconds ?? 0 : 0
        if let seconds = mediaHeader?.durationSeconds, seconds > 0 { return max(seconds, measured) }
        return fragmentDurationSeconds ?? mediaHeader?.durationSeconds
    }

    /// Average bit rate over the media duration, when sizes and duration are known.
    public var bitRate: UInt64? {
        guard let bytes = sampleByteCount, let seconds = durationSeconds else { return nil }
        return CheckedMath.bitRate(byteCount: bytes, seconds: seconds)
    }

    /// Media time scale.
    public var timescale: UInt32? { mediaHeader?.timescale }

    /// The picture width in pixels: the first sample entry's (its parameter set's when that
    /// says, ``SampleEntry/pictureWidth``); for a subtitle or text track without one (VobSub's
    /// `mp4s`), the track header's, as ffmpeg reports it.
    public var width: UInt16? { sampleEntries.first?.pictureWidth ?? headerSize?.width }
    /// The picture height in pixels (see ``width``).
    public var height: UInt16? { sampleEntries.first?.pictureHeight ?? headerSize?.height }

    private var headerSize: (width: UInt16, height: UInt16)? {
        guard kind == .subtitle || kind == .text, let header, header.width >= 1, header.height >= 1,
              header.width < 65536, header.height < 65536 else { return nil }
        return (UInt16(header.width), UInt16(header.height))
    }
    /// Language code.
    public var language: String? { mediaHeader?.language }

    /// Bit depth, chroma subsampling and scan of a video track, from its first sample entry's
    /// codec configuration; a QuickTime `fiel` box says the scan when the configuration does
    /// not.
    public var pictureFormat: PictureFormat? {
        guard kind == .video, let entry = sampleEntries.first, var format = entry.configuration?.box.pictureFormat else { return nil }
        if format.interlaced == nil, let fields = entry.fieldHandling { format.interlaced = fields.fieldCount == 2 }
        return format
    }

    /// The codec family ingest rules name levels by (`avc`, `hevc`, `av1`, `vp9`), and the
    /// level of the first sample entry's configuration.
    public var codecLevel: (family: String, level: Double)? {
        guard let family = codingFamily, let level = sampleEntries.first?.configuration?.box.levelNumber else { return nil }
        return (family, level)
    }

    /// The codec family of the first sample entry that ingest rules name (`avc`, `hevc`, `av1`,
    /// `vp9`), or `nil` for any other coding.
    public var codingFamily: String? {
        sampleEntries.first.flatMap { Self.codingFamilies[$0.codingFormat.description] }
    }

    /// The codec family of each coding format ingest rules name (policy keys such as
    /// `maxLevel` take these families).
    public static let codingFamilies: [String: String] = ["avc1": "avc", "avc3": "avc", "hvc1": "hevc", "hev1": "hevc", "dvh1": "hevc", "dvhe": "hevc", "av01": "av1", "vp09": "vp9"]

    /// What the samples of a fragmented video track say of its frames, measured when the
    /// fragments were read (``MP4File/completingFragments(with:)``).
    public var fragmentFrames: FrameStructure?

    /// The frame rate, B-frame runs, GOPs and peak GOP bit rate of a video track: its sample
    /// table in `moov` (one pass over it), or, when its samples are in movie fragments that
    /// were read, theirs (``fragmentFrames``); nil for other tracks.
    public func frameStructure() -> FrameStructure? {
        if factsFromFragments { return fragmentFrames }
        guard kind == .video, sampleCount > 0, let stbl = sampleTableBox, let timescale else { return nil }
        return FrameStructure.measure(SampleTable(stbl: stbl, path: sampleTablePath), timescale: timescale)
    }

    /// Builds the summary of `trak` at `path`, adding inconsistencies to `findings`.
    init(trak: BoxNode, path: BoxPath, findings: inout [Finding]) {
        var header: TrackHeaderBox?
        if let h = trak.first(.tkhd)?.model(TrackHeaderBox.self) { header = h }
        var mediaHeader: MediaHeaderBox?
        if let h = trak.descendant(.mdia, .mdhd)?.model(MediaHeaderBox.self) { mediaHeader = h }
        var handler: HandlerBox?
        if let h = trak.descendant(.mdia, .hdlr)?.model(HandlerBox.self) { handler = h }
        var editList: EditListBox?
        if let e = trak.descendant(.edts, .elst)?.model(EditListBox.self) { editList = e }
        let stbl = trak.descendant(.mdia, .minf, .stbl)
        var entries: [SampleEntry] = []
        for child in stbl?.first(.stsd)?.children ?? [] {
            if case .sampleEntry(let entry) = child.content { entries.append(entry) }
        }
        func table(_ type: FourCC) -> SampleTableData? { stbl?.table(type) }
        var sampleCount: UInt64 = 0
        var byteCount: UInt64?
        if let sizes = table(.stsz) ?? table(.stz2) {
            sampleCount = UInt64(sizes.sampleCount)
            if sizes.kind == .sampleSize && sizes.constantSampleSize != 0 {
                byteCount = CheckedMath.multiply(UInt64(sizes.constantSampleSize), UInt64(sizes.sampleCount))
            } else {
                byteCount = sizes.sumOfFirstFields
            }
        }
        let offsets = table(.stco) ?? table(.co64)
        self.trackID = header?.trackID ?? 0
        self.handlerType = handler?.handlerType
        self.handlerName = handler?.name
        self.header = header
        self.mediaHeader = mediaHeader
        self.editList = editList
        self.sampleEntries = entries
        self.sampleCount = sampleCount
        self.sampleByteCount = byteCount
        self.chunkCount = offsets?.entryCount ?? 0
        self.syncSampleCount = table(.stss)?.entryCount
        self.usesLargeChunkOffsets = offsets?.kind == .chunkLargeOffset
        self.path = path
        self.sampleTableBox = stbl
        self.kind = Self.kind(handler: handler?.handlerType, entry: entries.first)

        if header == nil { findings.append(Finding(.missingTkhd, message: "track has no tkhd", path: path)) }
        if mediaHeader == nil { findings.append(Finding(.missingMdhd, message: "track has no mdhd", path: path)) }
        if let mediaHeader, mediaHeader.timescale == 0 {
            findings.append(Finding(.zeroTimescale, message: "mdhd time scale is 0: the track's times are undefined", path: path.appending(.mdia).appending(.mdhd)))
        }
        if stbl != nil && entries.isEmpty {
            findings.append(Finding(.missingSampleDescription, message: "track has no sample entries (stsd missing or empty)", path: path))
        }
        if let stts = table(.stts)?.describedSampleCount, sampleCount > 0 || stts > 0, stts != sampleCount {
            findings.append(Finding(.sampleCountMismatch, message: "stts describes \(stts) samples but the size table has \(sampleCount)", path: path))
        }
    }

    static func kind(handler: FourCC?, entry: SampleEntry?) -> Kind {
        switch handler {
        case .vide?: return .video
        case .soun?: return .audio
        case .sbtl?, .subt?, .clcp?, "subp"?: return .subtitle
        case .text?: return .text
        case "meta"?: return .metadata
        case .hint?: return .hint
        case .tmcd?: return .timecode
        default:
            switch entry?.kind {
            case .video?: return .video
            case .audio?: return .audio
            case .text?: return .text
            case .metadata?: return .metadata
            default: return .other
            }
        }
    }
}

extension Sequence {
    /// The main one of these tracks, the one rule every part follows (seek alignment, the
    /// fragment locator, a segment index's duration): the first video track, else the first
    /// audio track, else the first. `kind` says what each element is.
    public func mainTrack(kind: (Element) -> Track.Kind) -> Element? {
        var audio: Element?, first: Element?
        for element in self {
            switch kind(element) {
            case .video: return element
            case .audio: audio = audio ?? element
            default: break
            }
            first = first ?? element
        }
        return audio ?? first
    }
}

extension Movie {
    /// The main track (``Swift/Sequence/mainTrack(kind:)``): video, else audio, else the first.
    public var mainTrack: Track? { tracks.mainTrack(kind: \.kind) }
}

