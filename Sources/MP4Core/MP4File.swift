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
        /// then lists the boxes up to that `moof`.
        public var stopsAtFirstFragment: Bool = false

        /// Creates options.
        public init(limits: ParseLimits = .default, loadsAllBoxes: Bool = false) {
            self.limits = limits
            self.loadsAllBoxes = loadsAllBoxes
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

    /// Whether the movie is fragmented (`mvex` in `moov`, or fragment boxes at top level).
    public var isFragmented: Bool { (movie?.hasMovieExtends ?? false) || layout.hasFragmentBoxes }

    /// What the file is.
    public var kind: Kind {
        let hasMoof = !layout.indexedRanges.isEmpty || layout.boxes.contains { $0.type == .moof }
        guard let movie else { return hasMoof ? .mediaSegment : .unknown }
        if movie.hasMovieExtends || hasMoof {
            return hasMoof || layout.firstMediaDataBox != nil ? .fragmented : .initSegment
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
        return MP4File(name: source.name, layout: layout, fileType: fileType, topLevelNodes: nodes, movie: movie, findings: findings, statistics: window.statistics, movieBytes: movieBytes)
    }

    /// A copy with `movie` and, in its statistics, what `loader` read.
    private func replacing(_ movie: Movie, after loader: SourceLoader?) -> MP4File {
        var copy = self
        copy.movie = movie
        copy.statistics.readCount += loader?.statistics.readCount ?? 0
        copy.statistics.byteCount += loader?.statistics.byteCount ?? 0
        return copy
    }

    /// A copy whose chapters are the titles of its QuickTime chapter track (`tref/chap`), when
    /// it has one and no `chpl`: each title is a text sample (a 16-bit length, then UTF-8 or
    /// UTF-16 with a byte-order mark). One read when the samples lie within 256 KiB of each
    /// other (as writers place them), else one per title; at most
    /// ``MovieMetadata/maximumChapters`` titles of at most 1 KiB.
    public func readingChapterTitles(from source: some ByteSource, limits: ParseLimits = .default) async throws -> MP4File {
        guard var movie, movie.metadata.chapters.isEmpty, let id = movie.metadata.chapterTrackID,
              let track = movie.tracks.first(where: { $0.trackID == id }), let stbl = track.sampleTableBox,
              let timescale = track.timescale, timescale > 0 else { return self }
        let table = SampleTable(stbl: stbl, path: track.sampleTablePath)
        var samples: [(start: Double, range: Range<UInt64>)] = []
        for index in 0..<min(table.sampleCount, MovieMetadata.maximumChapters) {
            guard let sample = table.sample(at: index), sample.byteOffset < layout.fileSize else { continue }
            // At least the 16-bit length must be there (a sample at the very end of a
            // truncated file may have one byte).
            let count = min(UInt64(sample.byteCount), 1024, layout.fileSize - sample.byteOffset)
            guard count >= 2 else { continue }
            samples.append((Double(sample.decodeTime) / Double(timescale), sample.byteOffset..<(sample.byteOffset + count)))
        }
        guard let lowest = samples.map(\.range.lowerBound).min(), let highest = samples.map(\.range.upperBound).max() else { return self }
        var loader = SourceLoader(source: source, limits: limits)
        let span: [UInt8]? = highest - lowest <= 256 << 10 ? try await loader.read(lowest..<highest) : nil
        var chapters: [MovieMetadata.Chapter] = []
        for sample in samples {
            let bytes: ArraySlice<UInt8>
            if let span { bytes = span[Int(sample.range.lowerBound - lowest)..<Int(sample.range.upperBound - lowest)] } else { bytes = try await loader.read(sample.range)[...] }
            let length = Int(bytes[bytes.startIndex]) << 8 | Int(bytes[bytes.startIndex + 1])
            let text = bytes.dropFirst(2).prefix(length)
            let title = text.starts(with: [0xFE, 0xFF]) ? MetadataValueBox.utf16BigEndian(text.dropFirst(2)) : String(decoding: text, as: UTF8.self)
            chapters.append(MovieMetadata.Chapter(startSeconds: sample.start, title: title))
        }
        movie.metadata.chapters = chapters.sorted { $0.startSeconds < $1.startSeconds }
        movie.metadata.chapterSource = .chapterTrack
        return replacing(movie, after: loader)
    }

    /// A copy whose MP3 tracks carry the channel mode of their first frame header: MP4
    /// writers often leave the sample entry's channel count at the placeholder 2 for mono MP3,
    /// and `esds` says nothing about channels for MPEG-1/2 audio. One read of 4 bytes per such
    /// track (counted in ``statistics``).
    public func probingFirstFrames(from source: some ByteSource, limits: ParseLimits = .default) async throws -> MP4File {
        guard var movie else { return self }
        var loader = SourceLoader(source: source, limits: limits)
        for (position, track) in movie.tracks.enumerated() {
            // The first sample starts its chunk: the first chunk offset is all it takes (no
            // sample table is built for it).
            guard var entry = track.sampleEntries.first, entry.isMPEGAudio, track.sampleCount > 0,
                  let offsets = track.sampleTableBox.flatMap({ $0.table(.stco) ?? $0.table(.co64) }), offsets.entryCount > 0 else { continue }
            let first = UInt64(bitPattern: offsets.field(0, 0))
            guard first <= layout.fileSize, layout.fileSize - first >= 4 else { continue }
            let header = try await loader.read(first..<(first + 4))
            // 11 sync bits, then version, layer, ...; the channel mode is the top two bits of
            // the fourth byte (3: single channel).
            guard header[0] == 0xFF, header[1] & 0xE0 == 0xE0, header[1] & 0x06 != 0 else { continue }
            entry.frameHeaderChannelCount = header[3] >> 6 == 3 ? 1 : 2
            movie.tracks[position].sampleEntries[0] = entry
        }
        guard loader.statistics.readCount > 0 else { return self }
        return replacing(movie, after: loader)
    }

    /// A copy whose duration, when neither `mvhd` nor `mehd` gives one, is what the segment
    /// index (`sidx`) declares: an initialisation segment with an index (DASH on-demand) has
    /// no fragments to measure. One read of the index; nothing when it is absent.
    public func completingDuration(from source: some ByteSource, limits: ParseLimits = .default) async throws -> MP4File {
        guard var movie, isFragmented, (movie.durationSeconds ?? 0) == 0, layout.boxes.contains(where: { $0.type == .sidx }) else { return self }
        // The scan already read the index when it followed it.
        if let indexed = layout.indexedRanges.first, indexed.timescale > 0 {
            movie.indexedDurationSeconds = Double(indexed.duration) / Double(indexed.timescale)
            return replacing(movie, after: nil)
        }
        let main = movie.tracks.first { $0.kind == .video } ?? movie.tracks.first { $0.kind == .audio } ?? movie.tracks.first
        var loader = SourceLoader(source: source, limits: limits)
        var parser = BoxTreeParser(limits: limits)
        // The first top-level index of the main track (or the first index): its subsegment
        // durations cover the presentation, wherever their bytes are (an init segment's index
        // points into other files).
        let indexes = layout.boxes.filter { $0.type == .sidx }
        var chosen: SegmentIndexBox?
        for box in indexes {
            guard let sidx = try await loader.loadBox(box.offset..<box.availableEnd, path: .top(.sidx), what: "the index boxes (sidx)", parser: &parser).model(SegmentIndexBox.self), sidx.timescale > 0 else { continue }
            if chosen == nil || sidx.referenceID == main?.trackID { chosen = sidx }
            if sidx.referenceID == main?.trackID { break }
        }
        guard let chosen else { return self }
        movie.indexedDurationSeconds = Double(chosen.totalDuration) / Double(chosen.timescale)
        return replacing(movie, after: loader)
    }

    /// A copy whose fragmented tracks carry the facts their movie fragments hold: sample count,
    /// bytes, sync samples and duration (the presentation span of their samples), as ffprobe
    /// reports them. `planner` is ``SeekPlanner/index(_:from:limits:)`` of this file (it read
    /// every `moof`). Tracks whose samples are in `moov` are unchanged.
    public func completingFragments(with planner: SeekPlanner) -> MP4File {
        guard var movie, isFragmented else { return self }
        for (position, track) in movie.tracks.enumerated() where track.sampleCount == 0 {
            guard let indexed = planner.tracks.first(where: { $0.track.trackID == track.trackID }), indexed.samples.sampleCount > 0 else { continue }
            var completed = track
            let samples = indexed.samples
            completed.sampleCount = UInt64(samples.sampleCount)
            var bytes: UInt64 = 0, syncs = 0
            samples.forEachSample { sample in
                bytes &+= UInt64(sample.byteCount)
                if sample.isSync { syncs += 1 }
                return true
            }
            completed.sampleByteCount = bytes
            completed.syncSampleCount = syncs
            completed.fragmentDurationSeconds = indexed.presentationSpan
            completed.factsFromFragments = true
            movie.tracks[position] = completed
        }
        var copy = self
        // mehd declares the whole movie's duration; a file that holds only part of it (a
        // segment cut from a longer stream) says so.
        if let declared = movie.fragmentDuration, let scale = movie.header?.timescale, scale > 0, declared > 0,
           let measured = movie.tracks.compactMap(\.fragmentDurationSeconds).max() {
            let seconds = Double(declared) / Double(scale)
            if abs(seconds - measured) > max(1, 0.1 * measured) {
                copy.findings.append(Finding(.fragmentDurationMismatch, message: "mehd declares \(seconds) s but the movie fragments hold \((measured * 1000).rounded() / 1000) s of samples; the duration shown is what they hold", path: .top(.moov).appending(.mvex).appending(.mehd)))
            }
        }
        copy.movie = movie
        return copy
    }
}
