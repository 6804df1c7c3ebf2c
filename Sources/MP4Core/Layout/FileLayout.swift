/// One top-level box as the scan found it.
public struct TopLevelBox: Sendable, Hashable {
    /// The header as read.
    public var header: BoxHeader
    /// Bytes of the box that exist in the file (less than ``BoxHeader/size`` when truncated).
    public var availableSize: UInt64

    /// The box type.
    public var type: FourCC { header.type }
    /// File offset of the box.
    public var offset: UInt64 { header.offset }
    /// The size the header declares.
    public var size: UInt64 { header.size }
    /// Whether the file ends before the box does.
    public var isTruncated: Bool { availableSize < header.size }
    /// File offset one past the last byte of the box that exists.
    public var availableEnd: UInt64 { header.offset + availableSize }
}

/// Where `moov` sits relative to the media data: the faststart verdict.
public enum MoviePlacement: String, Sendable, Hashable, Codable {
    /// `moov` comes before the first `mdat`: progressive playback can start early.
    case beforeMediaData = "moov-before-mdat"
    /// `moov` comes after the first `mdat`: a progressive player needs the file up to the end
    /// of `moov` before it can start.
    case afterMediaData = "moov-after-mdat"
    /// There is a `moov` but no `mdat` (init segment, header-only file).
    case noMediaData = "no-mdat"
    /// There is no `moov` (media segment, or not a movie).
    case noMovie = "no-moov"
}

/// The ordered top-level structure of a file, from headers alone.
/// A byte range of movie fragments that a segment index (`sidx`) describes and that the scan
/// did not walk (``MP4File/Options/followsSegmentIndex``): over HTTP each fragment's header
/// would cost a request; the index already says how many there are and how long they last.
/// Whoever needs the fragments themselves (an index of samples, a seek) scans the part it needs
/// (``TopLevelScanner/scan(_:in:limits:)``).
public struct IndexedRange: Sendable, Hashable {
    /// The bytes the index's references cover.
    public var range: Range<UInt64>
    /// The byte ranges of the referenced subsegments, in order.
    public var subsegments: [Range<UInt64>]
    /// The index's reference ID (usually the track ID) and time scale.
    public var referenceID: UInt32
    public var timescale: UInt32
    /// The sum of the subsegment durations, in ``timescale`` units.
    public var duration: UInt64
    /// Where the `sidx` is.
    public var indexOffset: UInt64
}

public struct FileLayout: Sendable, Hashable {
    /// Total bytes in the file.
    public var fileSize: UInt64
    /// Top-level boxes in file order.
    public var boxes: [TopLevelBox]
    /// Oddities found by the scan.
    public var findings: [Finding]
    /// Bytes after the last box that do not form a box (0 when the boxes cover the file).
    public var unparsedTailByteCount: UInt64
    /// Ranges of fragments the scan took from a segment index instead of walking them; their
    /// boxes are not in ``boxes``. Empty unless the file was opened with
    /// ``MP4File/Options/followsSegmentIndex``.
    public var indexedRanges: [IndexedRange] = []
    /// The top-level segment indexes (`sidx`) read so far, by offset: each is read once per
    /// open, by the scan when it followed the index (``indexedRanges``), else by the first
    /// fact that needs it (the duration); a seek's ``FragmentLocator`` takes them from here.
    public var segmentIndexes: [UInt64: SegmentIndexBox] = [:]

    /// Creates a layout.
    /// Where the top-level walk stopped at the first `moof` (``MP4File/Options/stopsAtFirstFragment``),
    /// when boxes follow it: the fragments after it were not walked (nil: the walk went to the end).
    public var walkStoppedAt: UInt64?

    public init(fileSize: UInt64, boxes: [TopLevelBox], findings: [Finding], unparsedTailByteCount: UInt64) {
        self.fileSize = fileSize
        self.boxes = boxes
        self.findings = findings
        self.unparsedTailByteCount = unparsedTailByteCount
    }

    /// The first `moov`.
    public var movieBox: TopLevelBox? { boxes.first { $0.type == .moov } }
    /// The first `mdat`.
    public var firstMediaDataBox: TopLevelBox? { boxes.first { $0.type == .mdat } }
    /// All `mdat` boxes.
    public var mediaDataBoxes: [TopLevelBox] { boxes.filter { $0.type == .mdat } }

    /// Where `moov` sits relative to the first `mdat` (or the first indexed fragments).
    public var moviePlacement: MoviePlacement {
        guard let moov = movieBox else { return .noMovie }
        // A walk stopped at the first `moof` (its media follow it) counts that `moof` as where
        // the media begin.
        let stoppedFragment = walkStoppedAt != nil ? boxes.last(where: { $0.type == .moof })?.offset : nil
        let media = [firstMediaDataBox?.offset, indexedRanges.first?.range.lowerBound, stoppedFragment].compactMap { $0 }.min()
        guard let media else { return .noMediaData }
        return moov.offset < media ? .beforeMediaData : .afterMediaData
    }

    /// Whether `moov` precedes the first `mdat` (a file without both is not faststart).
    public var isFastStart: Bool { moviePlacement == .beforeMediaData }

    /// Whether top-level fragment boxes (`moof`, `sidx`, `mfra`, `styp`) are present. Not what
    /// makes a file fragmented: an index box can be appended to any film (see
    /// ``MP4File/isFragmented``, decided by movie fragments); kept for callers that list boxes.
    public var hasFragmentBoxes: Bool {
        !indexedRanges.isEmpty || boxes.contains { [.moof, .sidx, .mfra, .styp].contains($0.type) }
    }

    /// Whether any top-level box is cut short by the end of the file.
    public var isTruncated: Bool { boxes.contains { $0.isTruncated } }

    /// Bytes a progressive player must have before it can start: everything up to the end of
    /// `moov` (for a moov-at-end file that is nearly the whole file), never more than the file
    /// holds. `nil` without `moov`.
    public var startupByteCount: UInt64? { movieBox.map { $0.availableEnd } }

    /// Total bytes of `mdat` payload present in the file.
    public var mediaDataByteCount: UInt64 {
        mediaDataBoxes.reduce(0) { $0 + ($1.availableSize - min($1.availableSize, UInt64($1.header.headerSize))) }
    }
}

extension FileLayout {
    /// The top-level `sidx` in `box`: the one already read (``segmentIndexes``), else read
    /// whole through `loader` (charged to its budget) and kept. `nil` when it has no time
    /// scale.
    mutating func segmentIndex(_ box: TopLevelBox, loader: inout SourceLoader) async throws -> SegmentIndexBox? {
        if let read = segmentIndexes[box.offset] { return read }
        var parser = BoxTreeParser(limits: loader.limits)
        guard let sidx = try await loader.loadBox(box.offset..<box.availableEnd, path: .top(.sidx), what: "the index boxes (sidx)", parser: &parser).model(SegmentIndexBox.self), sidx.timescale > 0 else { return nil }
        segmentIndexes[box.offset] = sidx
        return sidx
    }
}
