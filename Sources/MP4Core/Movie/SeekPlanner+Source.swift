/// The seek API over a ``ByteSource``: what reads a fragmented file's `moof`s (all of them,
/// or only those around the seek time when `sidx`/`mfra` locate them).
extension SeekPlanner {
    /// Indexes every track of `file`: progressive files from `moov` (no read), fragmented
    /// files from every `moof` (one read per fragment, never the media data).
    public static func index(_ file: MP4File, from source: some ByteSource, limits: ParseLimits = .default) async throws -> SeekPlanner {
        guard file.isFragmented else { return SeekPlanner(file: file, limits: limits) }
        let fragments = try await FragmentIndex.load(file, from: source, limits: limits)
        return SeekPlanner(file: file, fragments: fragments, limits: limits)
    }

    /// Opens `source` and plans one seek (see ``plan(_:from:at:duration:alignment:limits:)``).
    public static func plan(_ source: some ByteSource, at time: Double, duration: Double = 0, alignment: SeekPlan.Alignment = .previousSync, limits: ParseLimits = .default) async throws -> SeekPlan {
        let file = try await MP4File.open(source, options: MP4File.Options(limits: limits, facts: .structure))
        return try await plan(file, from: source, at: time, duration: duration, alignment: alignment, limits: limits)
    }

    /// Plans one seek in `file`, reading as little as possible: nothing more for a progressive
    /// file; for a fragmented file with `sidx` or `mfra`, only the `moof`s of the fragments
    /// around the window (widened one fragment at a time until they cover it); otherwise every
    /// `moof`.
    ///
    /// With a partial load, sample indices count from the first loaded fragment
    /// (``SeekPlan/sampleIndicesCountFromFileStart`` is `false`); offsets and times are absolute.
    public static func plan(_ file: MP4File, from source: some ByteSource, at time: Double, duration: Double = 0, alignment: SeekPlan.Alignment = .previousSync, limits: ParseLimits = .default) async throws -> SeekPlan {
        guard file.isFragmented else {
            return try SeekPlanner(file: file, limits: limits).plan(at: time, duration: duration, alignment: alignment)
        }
        let tracks = file.movie?.tracks ?? []
        var loader = SourceLoader(source: source, limits: limits)
        guard time.isFinite, time >= 0, duration.isFinite, duration >= 0,
              let main = tracks.mainTrack(kind: \.kind),
              let locator = try await FragmentLocator.load(file, with: &loader, trackID: main.trackID),
              var search = FragmentSeekSearch(file: file, locator: locator, time: time, duration: duration, alignment: alignment, limits: limits)
        else {
            return try await index(file, from: source, limits: limits).plan(at: time, duration: duration, alignment: alignment)
        }
        // The driver: the search says which fragments it needs, this reads them (each moof once).
        var cache = FragmentIndex.Cache()
        var step = search.start()
        while true {
            switch step {
            case .load(let range):
                step = try search.feed(try await FragmentIndex.load(file, with: &loader, byteRange: range, cache: &cache))
            case .planned(let plan):
                return plan
            case .indexWholeFile:
                return try await index(file, from: source, limits: limits).plan(at: time, duration: duration, alignment: alignment)
            }
        }
    }
}

/// The search for the fragments a seek in a fragmented file needs, when `sidx` or `mfra`
/// locate them: a state machine without I/O. It says which byte range of fragments it needs
/// next (``Step/load(_:)``), is fed the ``FragmentIndex`` of that range, and ends with a plan,
/// or with ``Step/indexWholeFile`` when partial loads cannot answer (no `tfdt`, or still
/// uncertain after 8 widenings). Any driver can run it: ``SeekPlanner/plan(_:from:at:duration:alignment:limits:)``
/// over a source, or a proxy that prefetches what a seek will need.
public struct FragmentSeekSearch: Sendable {
    /// What the search needs next, or its answer.
    public enum Step: Sendable {
        /// The index of the fragments whose `moof` starts in this byte range.
        case load(Range<UInt64>)
        /// Partial loads cannot answer: index every fragment.
        case indexWholeFile
        /// The plan.
        case planned(SeekPlan)
    }

    let file: MP4File
    let locator: FragmentLocator
    let time: Double, duration: Double
    let alignment: SeekPlan.Alignment
    let limits: ParseLimits
    /// The window in the locator's time scale.
    let startTime: Int64, endTime: Int64
    /// Fragments added before and after the window's own.
    var before = 0, after: Int
    var attempts = 0
    /// The entries of the load asked for last.
    var entries = 0...0

    /// Each widening adds one fragment on one side; a few are enough for real files.
    static let maximumAttempts = 8

    /// A search for the window `[time, time + duration]`, or `nil` when the locator cannot
    /// narrow it (one entry, no main track time scale).
    public init?(file: MP4File, locator: FragmentLocator, time: Double, duration: Double, alignment: SeekPlan.Alignment, limits: ParseLimits) {
        let tracks = file.movie?.tracks ?? []
        guard locator.entries.count > 1,
              let main = tracks.mainTrack(kind: \.kind),
              let timescale = main.timescale, timescale > 0
        else { return nil }
        let timeline = Timeline(editList: main.editList, movieTimescale: file.movie?.header?.timescale ?? 0, mediaTimescale: timescale)
        func locatorTime(_ seconds: Double) -> Int64 {
            Timeline.clampedInt64(Double(timeline.mediaTime(atPresentation: seconds)) * Double(locator.timescale) / Double(timescale))
        }
        self.file = file
        self.locator = locator
        self.time = time
        self.duration = duration
        self.alignment = alignment
        self.limits = limits
        self.startTime = locatorTime(time)
        self.endTime = locatorTime(time + duration)
        self.after = alignment == .nextSync ? 1 : 0
    }

    /// The first step.
    public mutating func start() -> Step { request() }

    private var atFirst: Bool { entries.lowerBound == 0 }
    private var atLast: Bool { entries.upperBound == locator.entries.count - 1 }

    private mutating func request() -> Step {
        guard attempts < Self.maximumAttempts else { return .indexWholeFile }
        attempts += 1
        entries = locator.entryRange(from: startTime, to: endTime, extraBefore: before, extraAfter: after)
        // The first and last entries extend to the ends of the file: an index need not cover
        // every fragment (another track's last fragment, say).
        let lower = atFirst ? 0 : locator.entries[entries.lowerBound].byteRange.lowerBound
        let upper = atLast ? file.layout.fileSize : locator.entries[entries.upperBound].byteRange.upperBound
        return .load(lower..<max(lower, upper))
    }

    /// Takes the index of the range asked for and says what comes next.
    public mutating func feed(_ fragments: FragmentIndex) throws -> Step {
        guard fragments.hasAbsoluteTimes else { return .indexWholeFile }
        if fragments.coversWholeFile { return .planned(try SeekPlanner(file: file, fragments: fragments, limits: limits).plan(at: time, duration: duration, alignment: alignment)) }
        let planner = SeekPlanner(file: file, fragments: fragments, limits: limits)
        let plan: SeekPlan
        do {
            plan = try planner.plan(at: time, duration: duration, alignment: alignment)
        } catch let error as MP4Error where error.kind != .limitExceeded {
            // No sync sample, or the time past the loaded samples: widen, or give up.
            if atFirst && atLast { throw error }
            if !atFirst { before += 1 }
            if !atLast { after += 1 }
            return request()
        }
        // The loaded fragments must hold everything the plan needs: the keyframe at or
        // before the time, and on every track the samples from the keyframe's decode time
        // until past the window. A track without loaded samples may have some just outside.
        var needsEarlier = !atFirst && alignment != .nextSync && plan.keyframeTime > time + 1e-9
        var needsLater = false
        // The sample shown at the time may have been decoded in an earlier fragment (B
        // frames): an exact start needs the load to begin at a sync sample shown no later.
        if alignment == .exactSample, !atFirst, let main = planner.mainTrack,
           !main.samples.isSync(0) || main.presentationTime(of: 0) > plan.keyframeTime + 1e-9 {
            needsEarlier = true
        }
        // A track whose needed samples touch the first (or last) loaded sample may need
        // samples from the fragment before (after): its pre-roll, the sample playing at
        // the keyframe time, or the samples presented until the window end.
        var planned: [UInt32: SeekPlan.TrackRange] = [:]
        for range in plan.tracks { planned[range.trackID] = range }
        for indexed in planner.tracks {
            let count = indexed.samples.sampleCount
            guard count > 0 else {
                needsEarlier = needsEarlier || !atFirst
                needsLater = needsLater || !atLast
                continue
            }
            if let range = planned[indexed.track.trackID] {
                if !atFirst && range.firstSampleIndex == 0 { needsEarlier = true }
                if !atLast && range.lastSampleIndex == count - 1 { needsLater = true }
            } else {
                // Not in the plan: all its loaded samples are after the window, or before
                // the keyframe time; a track that may be playing then must be proven.
                if !atFirst && indexed.presentationTime(of: 0) > plan.keyframeTime + 1e-9 { needsEarlier = true }
                if !atLast && indexed.decodePresentationTime(of: count - 1) <= plan.windowEnd + 1e-9 { needsLater = true }
            }
        }
        if !needsEarlier && !needsLater { return .planned(plan) }
        if needsEarlier { before += 1 }
        if needsLater { after += 1 }
        return request()
    }
}
