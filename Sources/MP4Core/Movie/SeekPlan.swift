/// What a player needs to start showing a progressive file at a time: the sync sample to
/// decode from and the exact byte ranges of every track's samples from there to the end of
/// the requested window.
public struct SeekPlan: Sendable, Hashable {
    /// How the start is aligned to sync samples.
    public enum Alignment: String, Sendable, Hashable, Codable {
        /// The last sync sample at or before the time (what players do).
        case previousSync = "previous-sync"
        /// The first sync sample at or after the time.
        case nextSync = "next-sync"
        /// The sample shown at the time, without sync alignment.
        case exactSample = "exact"
    }

    /// The part of one track in the plan.
    public struct TrackRange: Sendable, Hashable {
        public var trackID: UInt32
        /// First sample needed (0-based, decode order).
        public var firstSampleIndex: Int
        /// Last sample needed (inclusive).
        public var lastSampleIndex: Int
        /// Presentation time of the first sample needed, seconds.
        public var firstSampleTime: Double
        /// Smallest file offset among the needed samples.
        public var startOffset: UInt64
        /// Largest end offset among the needed samples.
        public var endOffset: UInt64
        /// Bytes of the needed samples.
        public var byteCount: UInt64
    }

    /// The time asked for, seconds.
    public var requestedTime: Double
    /// End of the window (requested time + duration), seconds.
    public var windowEnd: Double
    /// The alignment used.
    public var alignment: Alignment
    /// The track whose sync samples decide the start (video, else the main audio track).
    public var keyframeTrackID: UInt32
    /// The chosen (sync) sample on that track.
    public var keyframeSampleIndex: Int
    /// Its presentation time, seconds.
    public var keyframeTime: Double
    /// Smallest offset any track needs: where reading must start.
    public var startOffset: UInt64
    /// Where the window's data ends (exclusive).
    public var endOffset: UInt64
    /// Merged `[start, end)` byte ranges that hold exactly the needed samples, ascending.
    public var ranges: [Range<UInt64>]
    /// Per-track details, for tracks alive in the window.
    public var tracks: [TrackRange]
    /// Whether sample indices count from the start of the file. They count from the first
    /// loaded fragment instead when a fragmented file was planned from its `sidx`/`mfra`
    /// without reading every `moof`.
    public var sampleIndicesCountFromFileStart: Bool = true

    /// Total bytes in ``ranges``.
    public var byteCount: UInt64 { ranges.reduce(0) { $0 + $1.upperBound - $1.lowerBound } }
}

/// Plans seeks over a parsed progressive file.
public struct SeekPlanner: Sendable {
    /// A track ready for seeking: its samples and timeline.
    public struct IndexedTrack: Sendable {
        public var track: Track
        public var samples: SampleTable
        public var timeline: Timeline

        /// Presentation time (seconds) of sample `index`'s composition time.
        public func presentationTime(of index: Int) -> Double {
            timeline.presentationTime(ofMediaTime: samples.decodeTime(of: index) &+ samples.compositionOffset(of: index))
        }

        /// Presentation-adjusted decode time (seconds) of sample `index`.
        public func decodePresentationTime(of index: Int) -> Double {
            timeline.presentationTime(ofMediaTime: samples.decodeTime(of: index))
        }
    }

    /// How far decode order and presentation order can differ, in samples: H.264 and HEVC
    /// allow at most 16 reordered pictures; searches look this far around a decode position.
    static let reorderWindow = 20

    /// Tracks with samples, in file order.
    public let tracks: [IndexedTrack]
    /// Findings from building the sample tables.
    public let findings: [Finding]
    /// Bounds; ``ParseLimits/maxSamplesPerQuery`` bounds the samples one plan walks.
    public let limits: ParseLimits

    /// Indexes every track of `file` from its `moov` sample tables. Fragmented files have no
    /// samples there: use ``index(_:from:limits:)`` or ``plan(_:from:at:duration:alignment:limits:)``.
    public init(file: MP4File, limits: ParseLimits = .default) {
        self.init(file: file, fragments: nil, limits: limits)
    }

    /// Indexes every track of `file`, taking the samples of `fragments` for tracks whose
    /// `moov` tables are empty.
    public init(file: MP4File, fragments: FragmentIndex?, limits: ParseLimits = .default) {
        self.limits = limits
        var tracks: [IndexedTrack] = []
        var findings: [Finding] = fragments?.findings ?? []
        let movieTimescale = file.movie?.header?.timescale ?? 0
        guard let moov = file.movieBox, let movie = file.movie else {
            self.tracks = []
            self.findings = findings
            self.coversFileStart = true
            return
        }
        let traks = moov.all(.trak)
        for (trak, track) in zip(traks, movie.tracks) {
            guard let timescale = track.timescale, timescale > 0 else { continue }
            var table: SampleTable
            if let fragmentTable = fragments?.tables[track.trackID], track.sampleCount == 0 {
                table = fragmentTable
            } else {
                guard let stbl = trak.descendant(.mdia, .minf, .stbl) else { continue }
                table = SampleTable(stbl: stbl, path: track.path.appending(.mdia).appending(.minf).appending(.stbl))
                // An empty stbl is normal in a fragmented movie.
                if !(fragments != nil && track.sampleCount == 0) { findings += table.findings }
            }
            tracks.append(IndexedTrack(track: track, samples: table, timeline: Timeline(editList: track.editList, movieTimescale: movieTimescale, mediaTimescale: timescale)))
        }
        self.tracks = tracks
        self.findings = findings
        self.coversFileStart = fragments?.coversWholeFile ?? true
    }

    /// Whether sample indices count from the start of the file (see
    /// ``SeekPlan/sampleIndicesCountFromFileStart``).
    public let coversFileStart: Bool

    /// The track that decides sync alignment: the first video track with samples, else the
    /// first audio track, else the first track with samples.
    public var mainTrack: IndexedTrack? {
        let usable = tracks.filter { $0.samples.sampleCount > 0 }
        return usable.first { $0.track.kind == .video } ?? usable.first { $0.track.kind == .audio } ?? usable.first
    }

    /// Plans a seek to `time` seconds with a window of `duration` seconds.
    /// - Throws: ``MP4Error`` `.unsupported` when no track has samples (e.g. fragmented files),
    ///   `.malformed` for a time outside the movie.
    /// - Complexity: O(log n) per track to find the window, plus O(samples in the window) to
    ///   list the byte ranges.
    public func plan(at time: Double, duration: Double = 0, alignment: SeekPlan.Alignment = .previousSync) throws -> SeekPlan {
        guard let main = mainTrack else {
            throw MP4Error(.unsupported, "no track has samples (a fragmented file's samples are in its fragments: index it with SeekPlanner.index(_:from:))")
        }
        guard time.isFinite, time >= 0, duration.isFinite, duration >= 0 else {
            throw MP4Error(.malformed, "seek time \(time) and duration \(duration) must be finite and not negative")
        }
        let lastIndex = main.samples.sampleCount - 1
        let end = main.presentationTime(of: lastIndex) + Double(main.samples.duration(of: lastIndex)) / Double(max(main.timeline.mediaTimescale, 1))
        if time >= end {
            throw MP4Error(.malformed, "seek time \(time) s is at or past the end of track \(main.track.trackID) (\(end) s)")
        }
        let keyframe = try chooseStart(main, time: time, alignment: alignment)
        let keyframeTime = main.presentationTime(of: keyframe)
        let windowStartDecode = main.decodePresentationTime(of: keyframe)
        let windowEnd = max(time, keyframeTime) + duration
        // First decide each track's window (O(log n) each), then check the work it implies
        // against the limit before walking any sample.
        var windows: [(indexed: IndexedTrack, first: Int, last: Int)] = []
        for indexed in tracks where indexed.samples.sampleCount > 0 {
            let isMain = indexed.track.path == main.track.path
            let first: Int
            if isMain {
                first = keyframe
            } else {
                guard let f = firstSample(indexed, decodedAtOrAfter: windowStartDecode) else { continue }
                first = f
            }
            let last = lastSample(indexed, presentedAtOrBefore: windowEnd)
            // The main track always contributes its keyframe; another track whose samples in
            // the window all come before the start needs nothing.
            if last < first && !isMain { continue }
            windows.append((indexed, first, max(first, last)))
        }
        // Constant-size samples (PCM) are walked a chunk at a time, so only the others count.
        let work = windows.reduce(0) { $0 + ($1.indexed.samples.hasConstantSampleSize ? 0 : $1.last - $1.first + 1) }
        if work > limits.maxSamplesPerQuery {
            throw MP4Error(.limitExceeded, "the window holds \(work) samples, more than \(limits.maxSamplesPerQuery) (ParseLimits.maxSamplesPerQuery); ask for a shorter duration")
        }
        var trackRanges: [SeekPlan.TrackRange] = []
        var ranges: [Range<UInt64>] = []
        for (indexed, first, last) in windows {
            var trackRange = SeekPlan.TrackRange(trackID: indexed.track.trackID, firstSampleIndex: first, lastSampleIndex: last, firstSampleTime: indexed.presentationTime(of: first), startOffset: UInt64.max, endOffset: 0, byteCount: 0)
            indexed.samples.forEachChunkSpan(in: first..<(last + 1)) { span, _ in
                trackRange.startOffset = min(trackRange.startOffset, span.lowerBound)
                trackRange.endOffset = max(trackRange.endOffset, span.upperBound)
                trackRange.byteCount += UInt64(span.count)
                if let previous = ranges.last, previous.upperBound == span.lowerBound {
                    ranges[ranges.count - 1] = previous.lowerBound..<span.upperBound
                } else if !span.isEmpty {
                    ranges.append(span)
                }
            }
            trackRanges.append(trackRange)
        }
        let merged = Self.merge(ranges)
        return SeekPlan(requestedTime: time, windowEnd: windowEnd, alignment: alignment, keyframeTrackID: main.track.trackID, keyframeSampleIndex: keyframe, keyframeTime: keyframeTime, startOffset: merged.first?.lowerBound ?? 0, endOffset: merged.last?.upperBound ?? 0, ranges: merged, tracks: trackRanges, sampleIndicesCountFromFileStart: coversFileStart)
    }

    /// Sorts and merges overlapping or touching ranges.
    public static func merge(_ ranges: [Range<UInt64>]) -> [Range<UInt64>] {
        var result: [Range<UInt64>] = []
        for range in ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) {
            if let last = result.last, range.lowerBound <= last.upperBound {
                result[result.count - 1] = last.lowerBound..<max(last.upperBound, range.upperBound)
            } else {
                result.append(range)
            }
        }
        return result
    }

    /// The sample the plan starts from on the main track.
    func chooseStart(_ main: IndexedTrack, time: Double, alignment: SeekPlan.Alignment) throws -> Int {
        let samples = main.samples
        // The sample shown at `time`: the largest presentation time ≤ time, searched around
        // the decode-order position (composition reordering is local).
        let media = main.timeline.mediaTime(atPresentation: time)
        let around = samples.lastSample(decodedAtOrBefore: media) ?? 0
        var shown = 0
        var best = -Double.infinity
        for index in max(0, around - Self.reorderWindow)...min(samples.sampleCount - 1, around + Self.reorderWindow) {
            let t = main.presentationTime(of: index)
            if t <= time + 1e-9 && t > best { best = t; shown = index }
        }
        switch alignment {
        case .exactSample:
            return shown
        case .previousSync, .nextSync:
            guard let syncs = samples.syncSampleIndices else {
                return alignment == .previousSync ? shown : (best >= time - 1e-9 ? shown : min(shown + 1, samples.sampleCount - 1))
            }
            guard !syncs.isEmpty else { throw MP4Error(.malformed, "track \(main.track.trackID) lists no usable sync samples") }
            // Sync samples are in presentation order: binary search on their presentation times.
            var low = 0, high = syncs.count
            while low < high {
                let mid = (low + high) / 2
                if main.presentationTime(of: syncs[mid]) <= time + 1e-9 { low = mid + 1 } else { high = mid }
            }
            if alignment == .previousSync { return syncs[max(low - 1, 0)] }
            if low > 0, abs(main.presentationTime(of: syncs[low - 1]) - time) < 1e-9 { return syncs[low - 1] }
            guard low < syncs.count else { throw MP4Error(.malformed, "no sync sample at or after \(time) s on track \(main.track.trackID)") }
            return syncs[low]
        }
    }

    /// The first sample whose presentation-adjusted decode time is ≥ `seconds`.
    func firstSample(_ indexed: IndexedTrack, decodedAtOrAfter seconds: Double) -> Int? {
        var low = 0, high = indexed.samples.sampleCount
        while low < high {
            let mid = (low + high) / 2
            if indexed.decodePresentationTime(of: mid) < seconds - 1e-9 { low = mid + 1 } else { high = mid }
        }
        return low < indexed.samples.sampleCount ? low : nil
    }

    /// The last sample in decode order that must be decoded to present everything up to
    /// `seconds`: the largest index whose presentation time is ≤ `seconds` (everything before
    /// it in decode order is needed too; a reference frame decoded earlier but presented later
    /// is included that way, one decoded later is not).
    func lastSample(_ indexed: IndexedTrack, presentedAtOrBefore seconds: Double) -> Int {
        let count = indexed.samples.sampleCount
        var low = 0, high = count
        while low < high {
            let mid = (low + high) / 2
            if indexed.decodePresentationTime(of: mid) <= seconds + 1e-9 { low = mid + 1 } else { high = mid }
        }
        // Samples presented by `seconds` are decoded by then, except with negative composition
        // offsets: look a little past `low` too, then take the last one presented in time.
        let upper = min(count, low + Self.reorderWindow)
        var index = upper - 1
        let floor = max(0, low - 4 * Self.reorderWindow)
        while index >= floor {
            if indexed.presentationTime(of: index) <= seconds + 1e-9 { return index }
            index -= 1
        }
        return max(low - 1, 0)
    }
}
