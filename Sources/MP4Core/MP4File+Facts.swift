/// The facts an opened file's `ftyp` and `moov` leave open, read in the same pass as the
/// parse, through the same loader (one read budget, one count of reads): what `mp4probe info`
/// shows is what ``MP4File/open(_:options:)`` returns.
extension MP4File {
    /// What ``MP4File/open(_:options:)`` reads beyond `ftyp` and `moov`.
    public struct Facts: OptionSet, Sendable, Hashable {
        public let rawValue: Int
        public init(rawValue: Int) { self.rawValue = rawValue }

        /// A fragmented file's tracks: sample counts, bytes, sync samples and durations from
        /// every `moof` (as ffprobe reports them); the header of every `moof` is read.
        public static let fragmentTables = Facts(rawValue: 1 << 0)
        /// The duration a segment index (`sidx`) declares, when neither `mvhd` nor `mehd`
        /// gives one (an initialisation segment with an index: no fragments to measure).
        public static let indexDuration = Facts(rawValue: 1 << 1)
        /// An MP3 track's channel mode from its first frame header (4 bytes per track).
        public static let frameHeaders = Facts(rawValue: 1 << 2)
        /// The titles of a QuickTime chapter track (`tref/chap`).
        public static let chapterTitles = Facts(rawValue: 1 << 3)
        /// A fragmented file's duration from its last movie fragment, when nothing else gives
        /// one (the fragments were not all read: a remote file): one read of the file's end
        /// (``LastFragment/tailBytes``).
        public static let lastFragmentDuration = Facts(rawValue: 1 << 4)

        /// Nothing beyond `ftyp` and `moov`.
        public static let structure: Facts = []
        /// Every fact.
        public static let all: Facts = [.fragmentTables, .indexDuration, .frameHeaders, .chapterTitles, .lastFragmentDuration]

        /// What `info` reads from `source`: everything, but no walk of every `moof` over a
        /// remote source.
        public static func `default`(for source: some ByteSource) -> Facts {
            source.isRemote ? all.subtracting(.fragmentTables) : all
        }
    }

    /// Reads `facts` through `loader` and records them.
    mutating func completeFacts(_ facts: Facts, loader: inout SourceLoader) async throws {
        guard movie != nil, !facts.isEmpty else { return }
        if facts.contains(.fragmentTables) { await completeFragments(loader: &loader) }
        if facts.contains(.indexDuration) { try await completeDuration(loader: &loader) }
        if facts.contains(.lastFragmentDuration) { try await completeDurationFromLastFragment(loader: &loader) }
        if facts.contains(.frameHeaders) { try await probeFirstFrames(loader: &loader) }
        if facts.contains(.chapterTitles) { try await readChapterTitles(loader: &loader) }
    }

    /// A fragmented file's tracks, completed from every `moof`: those whose samples are all in
    /// fragments, and a hybrid file's (samples in `moov`, then more in fragments). An index
    /// that cannot be built leaves them as they are.
    private mutating func completeFragments(loader: inout SourceLoader) async {
        guard movie != nil, isFragmented, !layout.indexedRanges.isEmpty || layout.boxes.contains(where: { $0.type == .moof }) else { return }
        var cache = FragmentIndex.Cache()
        guard let fragments = try? await FragmentIndex.load(self, with: &loader, byteRange: nil, cache: &cache) else { return }
        self = completingFragments(with: SeekPlanner(file: self, fragments: fragments, limits: loader.limits))
    }

    /// The titles of the QuickTime chapter track (`tref/chap`), when there is one and no
    /// `chpl`: each title is a text sample (a 16-bit length, then UTF-8 or UTF-16 with a
    /// byte-order mark). One read when the samples lie within 256 KiB of each other (as
    /// writers place them), else one per title; at most ``MovieMetadata/maximumChapters``
    /// titles of at most 1 KiB.
    private mutating func readChapterTitles(loader: inout SourceLoader) async throws {
        guard var movie, movie.metadata.chapters.isEmpty, let id = movie.metadata.chapterTrackID,
              let track = movie.tracks.first(where: { $0.trackID == id }), let stbl = track.sampleTableBox,
              let timescale = track.timescale, timescale > 0 else { return }
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
        guard let lowest = samples.map(\.range.lowerBound).min(), let highest = samples.map(\.range.upperBound).max() else { return }
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
        self.movie = movie
    }

    /// MP3 and DTS tracks carry what their first frame header says. MP4 writers often leave
    /// the sample entry's channel count at the placeholder 2 for mono MP3, and `esds` says
    /// nothing about channels for MPEG-1/2 audio; a DTS entry's rate and channels may not be
    /// its core's. One read per such track: 4 bytes (MP3), 11 (DTS).
    private mutating func probeFirstFrames(loader: inout SourceLoader) async throws {
        guard var movie else { return }
        for (position, track) in movie.tracks.enumerated() {
            // The first sample starts its chunk: the first chunk offset is all it takes (no
            // sample table is built for it).
            guard var entry = track.sampleEntries.first, entry.isMPEGAudio || entry.isDTS, track.sampleCount > 0,
                  let offsets = track.sampleTableBox.flatMap({ $0.table(.stco) ?? $0.table(.co64) }), offsets.entryCount > 0 else { continue }
            let first = UInt64(bitPattern: offsets.field(0, 0)), count: UInt64 = entry.isDTS ? 11 : 4
            guard first <= layout.fileSize, layout.fileSize - first >= count else { continue }
            let header = try await loader.read(first..<(first + count))
            if entry.isDTS {
                guard let core = DTSCoreHeader(header[...]) else { continue }
                entry.frameHeaderSampleRate = core.sampleRate
                entry.frameHeaderChannelCount = core.channelCount
            } else {
                // 11 sync bits, then version, layer, ...; the channel mode is the top two bits
                // of the fourth byte (3: single channel).
                guard header[0] == 0xFF, header[1] & 0xE0 == 0xE0, header[1] & 0x06 != 0 else { continue }
                entry.frameHeaderChannelCount = header[3] >> 6 == 3 ? 1 : 2
            }
            movie.tracks[position].sampleEntries[0] = entry
        }
        self.movie = movie
    }

    /// The duration, when neither `mvhd` nor `mehd` gives one, is what the segment index
    /// (`sidx`) declares: the first top-level index of the main track (or the first index),
    /// whose subsegment durations cover the presentation wherever their bytes are (an init
    /// segment's index points into other files). Each index is read once: those the scan
    /// followed are in the layout; those read here are kept there for a seek.
    private mutating func completeDuration(loader: inout SourceLoader) async throws {
        guard var movie, isFragmented, (movie.durationSeconds ?? 0) == 0 else { return }
        let main = movie.mainTrack
        var chosen: SegmentIndexBox?
        for box in layout.boxes where box.type == .sidx {
            guard let sidx = try await layout.segmentIndex(box, loader: &loader) else { continue }
            if chosen == nil || sidx.referenceID == main?.trackID { chosen = sidx }
            if sidx.referenceID == main?.trackID { break }
        }
        guard let chosen else { return }
        movie.indexedDurationSeconds = Double(chosen.totalDuration) / Double(chosen.timescale)
        self.movie = movie
    }

    /// The duration, when nothing else gives one, from the last movie fragment
    /// (``LastFragment``): one read of the file's last ``LastFragment/tailBytes``.
    private mutating func completeDurationFromLastFragment(loader: inout SourceLoader) async throws {
        guard var movie, isFragmented, (movie.durationSeconds ?? 0) == 0, let first = layout.boxes.first(where: { $0.type == .moof }) else { return }
        let size = layout.fileSize
        let start = max(first.offset, size - min(size, LastFragment.tailBytes))
        guard start < size else { return }
        let tail = try await loader.read(start..<size)
        guard let range = LastFragment.lastMovieFragment(in: tail[...], start: start, fileSize: size),
              range.upperBound - range.lowerBound <= loader.limits.maxOtherBoxSize else { return }
        var parser = BoxTreeParser(limits: loader.limits)
        guard let moof = try? parser.parse(Array(tail[Int(range.lowerBound - start)..<Int(range.upperBound - start)]), at: range.lowerBound, path: .top(.moof)) else { return }
        var defaults: [UInt32: TrackExtendsBox] = [:]
        for trex in movieBox?.first(.mvex)?.all(.trex) ?? [] {
            if let box = trex.model(TrackExtendsBox.self) { defaults[box.trackID] = box }
        }
        let ends = LastFragment.endTimes(of: moof, defaults: defaults, fileSize: size, limits: loader.limits)
        var longest = 0.0
        for track in movie.tracks {
            guard let end = ends[track.trackID], end > 0, let timescale = track.timescale, timescale > 0 else { continue }
            longest = max(longest, Double(end) / Double(timescale))
        }
        guard longest > 0, longest.isFinite else { return }
        movie.lastFragmentDurationSeconds = longest
        self.movie = movie
    }

    /// A copy whose fragmented tracks carry the facts their samples hold, those of `moov` and
    /// of every movie fragment: sample count, bytes, sync samples and duration (the
    /// presentation span of their samples), as ffprobe reports them. `planner` is
    /// ``SeekPlanner/index(_:from:limits:)`` of this file (it read every `moof`). Tracks with
    /// no samples in fragments are unchanged; a hybrid file's `mvhd` and `mdhd` count only the
    /// samples in `moov` (one file said 0.134 s of a 1.156 s film).
    public func completingFragments(with planner: SeekPlanner) -> MP4File {
        guard var movie, isFragmented else { return self }
        for (position, track) in movie.tracks.enumerated() {
            guard let indexed = planner.tracks.first(where: { $0.track.trackID == track.trackID }),
                  indexed.samples.sampleCount > 0, UInt64(indexed.samples.sampleCount) > track.sampleCount else { continue }
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
            if completed.kind == .video, let timescale = completed.timescale {
                completed.fragmentFrames = FrameStructure.measure(samples, timescale: timescale)
            }
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
