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

    /// Why a track's part of the plan starts where it does.
    public enum StartReason: String, Sendable, Hashable, Codable {
        /// The sync sample decoding starts from (the keyframe track, or another video track's
        /// own sync sample before the keyframe time).
        case keyframe
        /// The sample playing at the keyframe's presentation time, which decodes on its own.
        case overlap
        /// Moved back before the sample playing at the keyframe time by the codec's pre-roll
        /// (see ``DecoderNeeds``).
        case preroll
        /// The sample decoded at the keyframe's decode time: demuxers that seek every track
        /// to the keyframe's decode timestamp (ffmpeg) start decoding this track there, and
        /// decoders with state (AAC noise substitution) reproduce the original output only
        /// from there.
        case decodeAlignment = "decode-alignment"
        /// The track starts after the keyframe time: its first sample.
        case trackStart = "track-start"
    }

    /// Why a track's part of the plan ends where it does.
    public enum EndReason: String, Sendable, Hashable, Codable {
        /// The last sample (in decode order) presented in the window; samples decoded before
        /// it and presented after the window (reference frames) are included.
        case window
        /// One sample past the window: stream parsers close a frame at the next frame's sync
        /// word (see ``DecoderNeeds/needsFollowingSample``).
        case nextSample = "next-sample"
        /// The track's last sample.
        case trackEnd = "track-end"
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
        /// Why the range starts at ``firstSampleIndex``.
        public var startReason: StartReason = .keyframe
        /// Why the range ends at ``lastSampleIndex``.
        public var endReason: EndReason = .window
        /// Samples decoded before the sample playing at the keyframe time (pre-roll), 0 when
        /// none.
        public var prerollSampleCount: Int = 0
        /// Where the track's pre-roll comes from (``DecoderNeeds/prerollSource``).
        public var prerollSource: String = "none"
    }

    /// The time asked for, seconds.
    public var requestedTime: Double
    /// End of the window: the requested time (or the keyframe time, when later) plus the
    /// duration, clamped to ``movieEnd``; seconds.
    public var windowEnd: Double
    /// Where the movie's last presented sample ends, seconds: times at or after it cannot be
    /// sought.
    public var movieEnd: Double = 0
    /// Whether the window was cut at ``movieEnd``.
    public var windowClampedToMovieEnd: Bool = false
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
        /// What its decoder needs around a seek.
        public var needs: DecoderNeeds = .nothing

        /// Where the track's presentation ends, seconds: the latest presentation end of its
        /// last samples in decode order (reordering is local), cut at the end of its edit
        /// list. `nil` without samples.
        public var presentationEnd: Double? {
            let count = samples.sampleCount
            guard count > 0 else { return nil }
            let scale = Double(max(timeline.mediaTimescale, 1))
            var end = -Double.infinity
            for index in max(0, count - 4 * SeekPlanner.reorderWindow)..<count {
                end = max(end, presentationTime(of: index) + Double(samples.duration(of: index)) / scale)
            }
            if let editEnd = timeline.presentationEnd { end = min(end, editEnd) }
            return end
        }

        /// How long the track presents, seconds: from its earliest presented sample (among the
        /// first in decode order: reordering is local) to ``presentationEnd``. What ffprobe
        /// reports as a stream's duration. `nil` without samples.
        public var presentationSpan: Double? {
            guard let end = presentationEnd else { return nil }
            var start = Double.infinity
            for index in 0..<min(samples.sampleCount, 4 * SeekPlanner.reorderWindow) { start = min(start, presentationTime(of: index)) }
            return start.isFinite && end > start ? end - start : nil
        }

        /// Presentation time (seconds) of sample `index`'s composition time.
        public func presentationTime(of index: Int) -> Double {
            timeline.presentationTime(ofMediaTime: samples.decodeTime(of: index) &+ samples.compositionOffset(of: index))
        }

        /// How far decode times are moved back so that no sample is presented before it is
        /// decoded: the negation of the most negative composition offset (`ctts` v1), else 0.
        /// Demuxers do the same (ffmpeg's `dts_shift`).
        public var decodeTimeShift: Int64 = 0

        /// Presentation-adjusted decode time (seconds) of sample `index`: its decode time,
        /// moved back by ``decodeTimeShift``, through the edit list.
        public func decodePresentationTime(of index: Int) -> Double {
            timeline.presentationTime(ofMediaTime: samples.decodeTime(of: index) &- decodeTimeShift)
        }

        /// A track ready for seeking.
        public init(track: Track, samples: SampleTable, timeline: Timeline, needs: DecoderNeeds = .nothing) {
            self.track = track
            self.samples = samples
            self.timeline = timeline
            self.needs = needs
            let smallest = samples.smallestCompositionOffset
            self.decodeTimeShift = smallest < 0 && smallest != Int64.min ? -smallest : 0
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
        guard let movie = file.movie else {
            self.tracks = []
            self.findings = findings
            self.coversFileStart = true
            self.movieEnd = nil
            return
        }
        for track in movie.tracks {
            guard let timescale = track.timescale, timescale > 0 else { continue }
            var table: SampleTable
            // Fragment tables hold the moov's samples too when the load began at the first
            // fragment (hybrid files); a partial load of a hybrid file has only fragments.
            if let fragmentTable = fragments?.tables[track.trackID], track.sampleCount == 0 || fragmentTable.sampleCount > 0 {
                table = fragmentTable
            } else {
                guard let stbl = track.sampleTableBox else { continue }
                table = SampleTable(stbl: stbl, path: track.sampleTablePath)
                // An empty stbl is normal in a fragmented movie.
                if !(fragments != nil && track.sampleCount == 0) { findings += table.findings }
            }
            let needs = DecoderNeeds.of(track, stbl: track.sampleTableBox)
            tracks.append(IndexedTrack(track: track, samples: table, timeline: Timeline(editList: track.editList, movieTimescale: movieTimescale, mediaTimescale: timescale), needs: needs))
        }
        self.tracks = tracks
        self.findings = findings
        self.coversFileStart = fragments?.coversWholeFile ?? true
        self.movieEnd = tracks.compactMap(\.presentationEnd).max()
    }

    /// Whether sample indices count from the start of the file (see
    /// ``SeekPlan/sampleIndicesCountFromFileStart``).
    public let coversFileStart: Bool

    /// Where the movie's presentation ends, seconds: the latest end over its tracks (see
    /// ``IndexedTrack/presentationEnd``); `nil` when no track has samples. Computed once.
    public let movieEnd: Double?

    /// The track that decides sync alignment: the first video track with samples, else the
    /// first audio track, else the first track with samples.
    public var mainTrack: IndexedTrack? {
        let usable = tracks.filter { $0.samples.sampleCount > 0 }
        return usable.mainTrack { $0.track.kind }
    }


    /// Plans a seek to `time` seconds with a window of `duration` seconds: on every track, the
    /// samples a decoder given only those bytes needs to present `[keyframe time, window end]`
    /// exactly as it would from the whole file (rules in docs/seeking.md).
    /// - Throws: ``MP4Error`` `.unsupported` when no track has samples (e.g. fragmented files),
    ///   `.invalidRequest` for a negative or non-finite time, or a time at or past the end of
    ///   the movie.
    /// - Complexity: O(log n) per track to find the window, plus O(samples in the window) to
    ///   list the byte ranges.
    public func plan(at time: Double, duration: Double = 0, alignment: SeekPlan.Alignment = .previousSync) throws -> SeekPlan {
        guard let main = mainTrack, let movieEnd else {
            throw MP4Error(.unsupported, "no track has samples: the movie header lists none and no fragments were indexed")
        }
        guard time.isFinite, time >= 0, duration.isFinite, duration >= 0 else {
            throw MP4Error(.invalidRequest, "seek time \(time) and duration \(duration) must be finite and not negative")
        }
        if time >= movieEnd {
            throw MP4Error(.invalidRequest, "seek time \(Self.seconds(time)) s is at or past the end of the movie (\(Self.seconds(movieEnd)) s); times from 0 to before \(Self.seconds(movieEnd)) s can be sought")
        }
        let keyframe = try chooseStart(main, time: time, alignment: alignment)
        let keyframeTime = main.presentationTime(of: keyframe)
        let keyframeDecode = main.decodePresentationTime(of: keyframe)
        let unclampedEnd = max(time, keyframeTime) + duration
        let windowEnd = min(unclampedEnd, movieEnd)
        // First decide each track's window (O(log n) each), then check the work it implies
        // against the limit before walking any sample.
        var windows: [(indexed: IndexedTrack, first: Int, last: Int, start: SeekPlan.StartReason, end: SeekPlan.EndReason, preroll: Int)] = []
        for indexed in tracks where indexed.samples.sampleCount > 0 {
            let isMain = indexed.track.path == main.track.path
            let count = indexed.samples.sampleCount
            var first: Int
            var reason: SeekPlan.StartReason
            var preroll = 0
            if isMain {
                first = keyframe
                reason = .keyframe
                if indexed.samples.syncSampleIndices == nil {
                    // Audio (every sample is a sync sample): the codec's pre-roll applies.
                    let rolled = prerollStart(indexed, from: keyframe)
                    preroll = keyframe - rolled
                    if preroll > 0 { first = rolled; reason = .preroll }
                }
            } else if let shown = shownSample(indexed, at: keyframeTime) {
                // The sample playing at the keyframe time: for a track with sync samples, the
                // sync sample at or before it; otherwise moved back by the pre-roll.
                if indexed.samples.syncSampleIndices != nil {
                    first = indexed.samples.syncSample(atOrBefore: shown) ?? 0
                    reason = .keyframe
                } else {
                    first = prerollStart(indexed, from: shown)
                    preroll = shown - first
                    reason = preroll > 0 ? .preroll : .overlap
                }
                // Where a demuxer that aligns every track to the keyframe's decode time starts.
                if let aligned = lastSample(indexed, decodedAtOrBefore: keyframeDecode), aligned < first {
                    // Moved back by the pre-roll as well: ffmpeg was measured starting an
                    // AC-3 track one frame before the one holding the keyframe's decode time.
                    let alignedStart = indexed.samples.syncSampleIndices != nil ? (indexed.samples.syncSample(atOrBefore: aligned) ?? 0) : prerollStart(indexed, from: aligned)
                    if alignedStart < first { first = alignedStart; reason = .decodeAlignment }
                }
            } else {
                first = 0
                reason = .trackStart
                if indexed.presentationTime(of: 0) > windowEnd + 1e-9 { continue }
            }
            // A window that reaches the end of the movie takes every track to its last sample:
            // players and ffmpeg present the samples past the end of a track's edit too.
            var last = windowEnd >= movieEnd - 1e-9 ? count - 1 : lastSample(indexed, presentedAtOrBefore: windowEnd)
            var endReason: SeekPlan.EndReason = last == count - 1 ? .trackEnd : .window
            // The main track always contributes its keyframe; another track whose samples in
            // the window all come before the start needs nothing.
            if last < first && !isMain {
                // A track that has ended before the keyframe time presents nothing.
                if indexed.presentationEnd.map({ $0 <= keyframeTime + 1e-9 }) ?? true { continue }
            }
            last = max(first, last)
            if indexed.needs.needsFollowingSample && last < count - 1 {
                last += 1
                endReason = .nextSample
            }
            windows.append((indexed, first, last, reason, endReason, preroll))
        }
        // Constant-size samples (PCM) are walked a chunk at a time, so only the others count.
        let work = windows.reduce(0) { $0 + ($1.indexed.samples.hasConstantSampleSize ? 0 : $1.last - $1.first + 1) }
        if work > limits.maxSamplesPerQuery {
            throw MP4Error(.limitExceeded, "the window holds \(work) samples, more than \(limits.maxSamplesPerQuery); ask for a shorter duration", limit: .maxSamplesPerQuery)
        }
        var trackRanges: [SeekPlan.TrackRange] = []
        var ranges: [Range<UInt64>] = []
        for window in windows {
            let indexed = window.indexed
            var trackRange = SeekPlan.TrackRange(trackID: indexed.track.trackID, firstSampleIndex: window.first, lastSampleIndex: window.last, firstSampleTime: indexed.presentationTime(of: window.first), startOffset: UInt64.max, endOffset: 0, byteCount: 0, startReason: window.start, endReason: window.end, prerollSampleCount: window.preroll, prerollSource: indexed.needs.prerollSource)
            indexed.samples.forEachChunkSpan(in: window.first..<(window.last + 1)) { span, _ in
                trackRange.startOffset = min(trackRange.startOffset, span.lowerBound)
                trackRange.endOffset = max(trackRange.endOffset, span.upperBound)
                trackRange.byteCount += UInt64(span.count)
                if let previous = ranges.last, previous.upperBound == span.lowerBound {
                    ranges[ranges.count - 1] = previous.lowerBound..<span.upperBound
                } else if !span.isEmpty {
                    ranges.append(span)
                }
            }
            if trackRange.startOffset == UInt64.max { trackRange.startOffset = 0 }
            trackRanges.append(trackRange)
        }
        let merged = Self.merge(ranges)
        return SeekPlan(requestedTime: time, windowEnd: windowEnd, movieEnd: movieEnd, windowClampedToMovieEnd: unclampedEnd > movieEnd, alignment: alignment, keyframeTrackID: main.track.trackID, keyframeSampleIndex: keyframe, keyframeTime: keyframeTime, startOffset: merged.first?.lowerBound ?? 0, endOffset: merged.last?.upperBound ?? 0, ranges: merged, tracks: trackRanges, sampleIndicesCountFromFileStart: coversFileStart)
    }

    /// Seconds printed with at most 6 decimals (no binary noise in messages).
    static func seconds(_ value: Double) -> String {
        let rounded = (value * 1_000_000).rounded() / 1_000_000
        return rounded == rounded.rounded() ? String(Int64(rounded)) + ".0" : String(rounded)
    }

    /// The first sample decoding must start from so that sample `index` decodes exactly: moved
    /// back by the track's pre-roll (in samples, or in seconds of presentation time).
    func prerollStart(_ indexed: IndexedTrack, from index: Int) -> Int {
        switch indexed.needs.preroll {
        case .none:
            return index
        case .samples(let count):
            return max(0, index - count)
        case .seconds(let seconds):
            // The sample playing `seconds` before this one starts (decode order = presentation
            // order for the audio tracks that have such a pre-roll).
            let target = indexed.presentationTime(of: index) - seconds
            guard let shown = lastSample(indexed, decodedAtOrBefore: target) else { return 0 }
            return min(shown, index)
        }
    }

    /// The sample presented at `seconds`: the largest presentation time ≤ `seconds`, searched
    /// around the decode-order position (composition reordering is local). `nil` when every
    /// sample is presented later.
    func shownSample(_ indexed: IndexedTrack, at seconds: Double) -> Int? {
        let samples = indexed.samples
        guard samples.sampleCount > 0 else { return nil }
        let media = indexed.timeline.mediaTime(atPresentation: seconds)
        let around = samples.lastSample(decodedAtOrBefore: media) ?? 0
        var shown: Int?
        var best = -Double.infinity
        for index in max(0, around - Self.reorderWindow)...min(samples.sampleCount - 1, around + Self.reorderWindow) {
            let t = indexed.presentationTime(of: index)
            if t <= seconds + 1e-9 && t > best { best = t; shown = index }
        }
        return shown
    }

    /// The last sample whose presentation-adjusted decode time is ≤ `seconds`, or `nil`.
    func lastSample(_ indexed: IndexedTrack, decodedAtOrBefore seconds: Double) -> Int? {
        var low = 0, high = indexed.samples.sampleCount
        while low < high {
            let mid = (low + high) / 2
            if indexed.decodePresentationTime(of: mid) <= seconds + 1e-9 { low = mid + 1 } else { high = mid }
        }
        return low > 0 ? low - 1 : nil
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
        let shownAtTime = shownSample(main, at: time)
        let shown = shownAtTime ?? 0
        let best = shownAtTime.map { main.presentationTime(of: $0) } ?? -Double.infinity
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
            guard low < syncs.count else { throw MP4Error(.invalidRequest, "no sync sample at or after \(time) s on track \(main.track.trackID) (--align next): the last one is at \(Self.seconds(main.presentationTime(of: syncs[syncs.count - 1]))) s") }
            return syncs[low]
        }
    }

    /// The last sample in decode order that must be decoded to present everything up to
    /// `seconds`: the largest index whose presentation time is ≤ `seconds` (everything before
    /// it in decode order is needed too; a reference frame decoded earlier but presented later
    /// is included that way, one decoded later is not).
    func lastSample(_ indexed: IndexedTrack, presentedAtOrBefore seconds: Double) -> Int {
        let count = indexed.samples.sampleCount
        let low = (lastSample(indexed, decodedAtOrBefore: seconds) ?? -1) + 1
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
