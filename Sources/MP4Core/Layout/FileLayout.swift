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
public struct FileLayout: Sendable, Hashable {
    /// Total bytes in the file.
    public var fileSize: UInt64
    /// Top-level boxes in file order.
    public var boxes: [TopLevelBox]
    /// Oddities found by the scan.
    public var findings: [Finding]
    /// Bytes after the last box that do not form a box (0 when the boxes cover the file).
    public var unparsedTailByteCount: UInt64

    /// Creates a layout.
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

    /// Where `moov` sits relative to the first `mdat`.
    public var moviePlacement: MoviePlacement {
        guard let moov = movieBox else { return .noMovie }
        guard let mdat = firstMediaDataBox else { return .noMediaData }
        return moov.offset < mdat.offset ? .beforeMediaData : .afterMediaData
    }

    /// Whether `moov` precedes the first `mdat` (a file without both is not faststart).
    public var isFastStart: Bool { moviePlacement == .beforeMediaData }

    /// Whether top-level fragment boxes (`moof`, `sidx`, `mfra`, `styp`) are present.
    public var hasFragmentBoxes: Bool {
        boxes.contains { [.moof, .sidx, .mfra, .styp].contains($0.type) }
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
