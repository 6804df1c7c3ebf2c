/// An opened MP4 / QuickTime file: its top-level layout, `ftyp`, the parsed `moov` and a
/// summary of the movie, read with as few and as small reads as the layout allows.
///
/// ```swift
/// let file = try await MP4File.open(FileSource(path: "movie.mp4"))
/// print(file.layout.isFastStart, file.movie?.tracks.map(\.kind) ?? [])
/// ```
public struct MP4File: Sendable {
    /// How a file is opened.
    public struct Options: Sendable, Hashable {
        /// Resource bounds.
        public var limits: ParseLimits
        /// Load and parse every top-level box except media data and padding (for a full box
        /// tree), not only `ftyp` and `moov`.
        public var loadsAllBoxes: Bool
        /// Take the fragments a top-level `sidx` describes from the index instead of walking
        /// their box headers (``FileLayout/indexedRanges``): for remote sources, where each
        /// header would cost a request. Whoever needs the fragments scans the part it needs.
        public var followsSegmentIndex: Bool = false
        /// Stop the top-level walk at the first `moof`: for readers that need `moov` only (a
        /// proxy's prefetcher) and must not walk every fragment of a remote file. The layout
        /// then lists the boxes up to that `moof` (and ``Facts/fragmentTables`` is not read).
        public var stopsAtFirstFragment: Bool = false
        /// The facts read beyond `ftyp` and `moov` (``Facts``). `nil`, the default, is what
        /// `mp4probe info` shows: all of them, except ``Facts/fragmentTables`` from a
        /// ``ByteSource/isRemote`` source (a request per `moof`). ``Facts/structure`` reads
        /// nothing more: for callers that need only the index (a proxy, a seek, a rewrite).
        public var facts: Facts?

        /// Creates options.
        public init(limits: ParseLimits = .default, loadsAllBoxes: Bool = false, facts: Facts? = nil) {
            self.limits = limits
            self.loadsAllBoxes = loadsAllBoxes
            self.facts = facts
        }
    }

    /// What a file is, from its structure.
    public enum Kind: String, Sendable, Hashable, Codable {
        /// `moov` with sample tables and `mdat`: a regular progressive file.
        case progressive
        /// `moov` with `mvex` plus movie fragments in the same file.
        case fragmented
        /// `moov` with `mvex` and no media: a DASH/HLS/CMAF initialization segment.
        case initSegment = "init-segment"
        /// Movie fragments without `moov`: a media segment, playable only with an init segment.
        case mediaSegment = "media-segment"
        /// `moov` without `mvex` and no `mdat`: the header of a progressive file.
        case headerOnly = "header-only"
        /// Neither `moov` nor fragments.
        case unknown
    }

    /// The source's name (path or URL).
    public var name: String
    /// The top-level structure.
    public var layout: FileLayout
    /// The first `ftyp`, when present and readable.
    public var fileType: FileTypeBox?
    /// One node per top-level box, in file order. Boxes that were not loaded (`mdat`, padding,
    /// and without ``Options/loadsAllBoxes`` everything but `ftyp` and `moov`) have no payload
    /// and no children.
    public var topLevelNodes: [BoxNode]
    /// The summary of the first `moov`.
    public var movie: Movie?
    /// All findings: layout, box tree and movie.
    public var findings: [Finding]
    /// What opening the file read from the source.
    public var statistics: ReadStatistics
    /// The bytes of the first `moov` as read (what ``movieBox`` was parsed from, shared with
    /// its payloads, not a copy): a rewrite patches them without reading `moov` again.
    public var movieBytes: [UInt8]?

    /// The parsed first `moov`.
    public var movieBox: BoxNode? { topLevelNodes.first { $0.type == .moov } }

    /// Whether the file holds movie fragments: `moof` boxes (or fragments a segment index
    /// stands for) that a `moov` with `mvex` declares, or that stand alone (a media segment);
    /// also an initialization segment (`mvex`, no media). Decided by what the boxes are, not
    /// by index boxes: a `sidx`, `mfra` or `styp` appended to a progressive film does not make
    /// it fragmented (it made a moov-at-end film pass the faststart gate), nor do `moof` boxes
    /// a `moov` without `mvex` does not declare (players ignore them).
    public var isFragmented: Bool { [.fragmented, .initSegment, .mediaSegment].contains(kind) }

    /// Whether top-level `moof` boxes, or fragments a followed segment index stands for, are
    /// present.
    var hasMovieFragmentBoxes: Bool { !layout.indexedRanges.isEmpty || layout.boxes.contains { $0.type == .moof } }

    /// What the file is.
    public var kind: Kind {
        guard let movie else { return hasMovieFragmentBoxes ? .mediaSegment : .unknown }
        if movie.hasMovieExtends {
            if hasMovieFragmentBoxes { return .fragmented }
            if layout.firstMediaDataBox == nil { return .initSegment }
            // `mvex` and media but no fragment: the movie's own tables describe the media.
        }
        return layout.firstMediaDataBox == nil ? .headerOnly : .progressive
    }

    /// Opens `source`: scans box headers, loads `ftyp` and `moov` (each in one read, reusing
    /// bytes the header reads already brought) and parses them.
    ///
    /// Reads: the first ``ByteSource/preferredReadSize`` bytes, one header read per top-level
    /// box outside the window, and the part of `moov` not yet read. Media data is never read.
    /// - Throws: ``MP4Error`` — `.io` when the source fails, `.notMP4` when no top-level box
    ///   is of a known type, `.limitExceeded` when `moov` is larger than
    ///   ``ParseLimits/maxMovieBoxSize`` or the tree exceeds a bound.
    public static func open(_ source: some ByteSource, options: Options = Options()) async throws -> MP4File {
        let length = try await source.length()
        if length == 0 {
            var error = MP4Error(.notMP4, "the file is empty (0 bytes)")
            error.leadingBytes = []
            throw error
        }
        var window = ReadWindow(loader: SourceLoader(source: source, limits: options.limits), length: length)
        let layout = try await TopLevelScanner.scan(&window, range: 0..<length, limits: options.limits, followsSegmentIndex: options.followsSegmentIndex, stopsAtFirstFragment: options.stopsAtFirstFragment)
        guard layout.boxes.contains(where: { BoxCatalog.descriptor(for: $0.type) != nil }) else {
            let prefix = Array(try await window.load(0..<min(length, UInt64(FileSignature.prefixLength))))
            var error = MP4Error(.notMP4, FileSignature.identify(prefix).map { "it looks like \($0), not an MP4 or QuickTime file" } ?? "no MP4 or QuickTime box was found at its start", offset: 0)
            error.leadingBytes = prefix
            throw error
        }
        var parser = BoxTreeParser(limits: options.limits)
        var nodes: [BoxNode] = []
        var findings = layout.findings
        var seenTypes: [FourCC: Int] = [:]
        var fileType: FileTypeBox?
        var movieBytes: [UInt8]?
        for box in layout.boxes {
            seenTypes[box.type, default: 0] += 1
            let path = BoxPath.top(box.type)
            let isFirstMoov = box.type == .moov && seenTypes[.moov] == 1
            let isFirstFtyp = box.type == .ftyp && seenTypes[.ftyp] == 1
            var shouldLoad = isFirstMoov || isFirstFtyp
            if options.loadsAllBoxes && !shouldLoad && ![.mdat, .free, .skip, .wide].contains(box.type) {
                // Over the budget, a box is left out with a finding rather than failing the open.
                do {
                    try window.charge(box.availableSize, what: "'\(box.type)'", offset: box.offset, path: path)
                    shouldLoad = true
                } catch {
                    findings.append(Finding(.boxNotLoaded, message: "'\(box.type)' (\(box.size) bytes) was not loaded: larger than the limit for boxes other than moov (\(options.limits.maxOtherBoxSize) bytes each, \(options.limits.maxMetadataBytes) in all)", offset: box.offset, path: path))
                }
            }
            if isFirstMoov && box.availableSize > options.limits.maxMovieBoxSize {
                throw MP4Error(.limitExceeded, "moov is \(box.size) bytes, above the \(options.limits.maxMovieBoxSize)-byte limit", offset: box.offset, path: path, limit: .maxMovieBoxSize)
            }
            if isFirstFtyp && box.availableSize > options.limits.maxOtherBoxSize { shouldLoad = false }
            guard shouldLoad else {
                nodes.append(BoxNode(header: box.header, content: .raw, isTruncated: box.isTruncated))
                continue
            }
            let bytes = try await window.load(box.offset..<box.availableEnd)
            let node = try parser.parse(bytes, at: box.offset, path: path)
            if isFirstMoov { movieBytes = bytes }
            if isFirstFtyp, let ftyp = node.model(FileTypeBox.self) { fileType = ftyp }
            nodes.append(node)
        }
        findings += parser.findings
        for (i, ordinal) in BoxNode.ordinalNumbers(of: nodes.map(\.type)).enumerated() { nodes[i].ordinalNumber = ordinal }
        var movie: Movie?
        if let moov = nodes.first(where: { $0.type == .moov }) {
            if moov.isTruncated {
                findings.append(Finding(.moovTruncated, message: "moov is cut short by the end of the file: tracks may be missing or incomplete", offset: moov.header.offset, path: .top(.moov)))
            }
            let summary = Movie(moov: moov)
            findings += summary.findings
            movie = summary
        }
        var file = MP4File(name: source.name, layout: layout, fileType: fileType, topLevelNodes: nodes, movie: movie, findings: findings, statistics: window.statistics, movieBytes: movieBytes)
        // The facts pass reads through the same loader: one budget, one count of reads.
        var loader = window.loader
        var facts = options.facts ?? Facts.default(for: source)
        if options.stopsAtFirstFragment { facts.remove(.fragmentTables) }   // the layout ends at the first moof
        try await file.completeFacts(facts, loader: &loader)
        file.statistics = loader.statistics
        return file
    }
}
