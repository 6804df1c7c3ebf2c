import MP4Core

/// Preloading by time: the `moov` and the bytes of the first seconds of every track, as the
/// seek plan says (pre-roll and the decoder's needs included), whatever the layout. A byte
/// preload of a moov-at-end file caches bytes that hold no index, and nothing plays; this
/// caches what a player needs to start (`fetch --seconds`, ``MediaLoader/preload(_:seconds:)``,
/// `serve`'s `_/preload`).
public enum Preload {
    /// What one preload did.
    public struct Outcome: Sendable, Equatable {
        /// The seconds asked for, and the seek plan's window end (at least that, unless the
        /// film is shorter).
        public var seconds: Double
        public var windowEnd: Double
        /// The byte ranges filled besides the headers and `moov`: the plan's, and in a
        /// fragmented file the fragments they are in (``fragments(_:for:)``).
        public var ranges: [Range<UInt64>]
        /// Bytes the origin sent for this resource's cache entry while the preload ran (0: all
        /// were cached): the preload's fetches, and those of a player of this process that read
        /// the same resource meanwhile (the entry counts fetches, not who asked).
        public var fetchedBytes: UInt64
        /// Bytes of the resource present afterwards.
        public var cachedBytes: UInt64
    }

    /// How far past the seconds asked the plan reaches: a decoder that reorders frames
    /// (B-frames) shows the last frames before N only once it has the next reference, and
    /// ffmpeg playing the first 3 s of a preload without it lacked its last video and audio
    /// frame (218 of 220 frame lines; the seek-plan decode tests plan 0.2 s more for the same
    /// reason).
    public static let reorderMargin = 0.25

    /// The byte ranges a player needs besides the samples of `plan` in a fragmented file:
    /// each fragment (its `moof` to the next) whose media the plan reads, whole. A player
    /// reads a fragment as a unit: ffmpeg reads its samples in file order across tracks, so
    /// with the `moof`s alone it reached uncached video past 3 s before the audio of 2.5 s,
    /// and played 84 of 127 audio frames of a 3 s preload.
    static func fragments(_ layout: FileLayout, for ranges: [Range<UInt64>]) -> [Range<UInt64>] {
        let boxes = layout.boxes
        var needed: [Range<UInt64>] = []
        for (index, box) in boxes.enumerated() where box.type == .moof {
            let next = boxes[(index + 1)...].first { $0.type == .moof || $0.type == .mfra }?.offset ?? layout.fileSize
            let fragment = box.offset..<max(box.offset, next)
            if ranges.contains(where: { $0.overlaps(fragment) }) { needed.append(fragment) }
        }
        return needed
    }

    /// Makes the headers, the `moov` and the first `seconds` of every track of `source`
    /// present in its cache. While `busy` says a player or a prefetch fetches (a
    /// ``MediaLoader`` passes its ``OriginActivity``), the preload stands aside
    /// (``fill(_:of:yieldingWhile:)``). Cancelling the calling task stops it, keeping what
    /// arrived.
    public static func run(_ source: CachedByteSource, seconds: Double, limits: ParseLimits = .default,
                           yieldingWhile busy: (@Sendable () -> Bool)? = nil) async throws -> Outcome {
        guard seconds.isFinite, seconds >= 0 else { throw MP4Error(.invalidRequest, "preload seconds must be a finite number >= 0, not \(seconds)") }
        let before = await source.statistics.upstreamBytes
        // The parser's reads (headers, the moov, each fragment's head) stand aside too.
        let reads = YieldingReads(source: source, busy: busy)
        var options = MP4File.Options(limits: limits, facts: .structure)
        options.stopsAtFirstFragment = true   // a fragmented file's other fragments are not scanned
        let head = try await MP4File.open(reads, options: options)
        let target = seconds + reorderMargin
        let wanted: ByteRangeSet, windowEnd: Double
        if let first = walkStart(head) {
            await source.markPreloaded()   // before the fill: a player that reads meanwhile unmarks it
            // Fragments from the first until the decode times reach the target; then, as long
            // as what the walked prefix plays (presentation times: edit lists, reordering) falls
            // short of it, one more fragment.
            var end = try await walkFragments(head, from: first, of: reads, seconds: target, limits: limits)
            var prefix = try await prefixIndex(of: source, length: end, limits: limits)
            var playable = PlayableTime.of(prefix, present: ByteRangeSet([0..<end]))
            for _ in 0..<maxExtraFragments where end < head.layout.fileSize && playable.prefixSeconds < target {
                guard let next = try await takeFragment(at: end, length: head.layout.fileSize, of: reads)?.end, next > end else { break }
                end = next
                prefix = try await prefixIndex(of: source, length: end, limits: limits)
                playable = PlayableTime.of(prefix, present: ByteRangeSet([0..<end]))
            }
            // What the plan reads besides the fragments (samples that some files keep before
            // their first moof) is filled too.
            let plan = try prefix.plan(at: 0, duration: target)
            var ranges = ByteRangeSet([first..<end])
            for range in plan.ranges where !ranges.contains(range) {
                try await fill(range, of: source, yieldingWhile: busy)
                ranges.insert(range)
            }
            (wanted, windowEnd) = (ranges, min(plan.windowEnd, playable.prefixSeconds))
        } else {
            // Progressive (the layout is whole), or a hybrid fragmented file (samples in `moov`
            // and in fragments): the seek plan of the whole file.
            let file = head.layout.boxes.contains { $0.type == .moof } ? try await MP4File.open(reads, options: MP4File.Options(limits: limits, facts: .structure)) : head
            let plan = try await SeekPlanner.plan(file, from: reads, at: 0, duration: target, limits: limits)
            await source.markPreloaded()
            var ranges = ByteRangeSet(plan.ranges + fragments(file.layout, for: plan.ranges))
            if let moov = file.layout.boxes.first(where: { $0.type == .moov }) {
                // A player that jumps to a moov at the end may read from a block boundary
                // before it: Chromium asked for bytes=1343488- (a multiple of 32 KiB) to read a
                // moov at 1,348,486, and those 4,998 uncached bytes cost a preloaded film two
                // round trips to the origin.
                ranges.insert((moov.offset / playerBlock * playerBlock)..<moov.offset)
            }
            for range in ranges.ranges { try await fill(range, of: source, yieldingWhile: busy) }
            (wanted, windowEnd) = (ranges, plan.windowEnd)
        }
        let after = await source.statistics.upstreamBytes
        return Outcome(seconds: seconds, windowEnd: windowEnd, ranges: wanted.ranges, fetchedBytes: after - min(after, before),
                       cachedBytes: await source.cachedRanges.byteCount)
    }

    /// Where a fragment walk starts: the first `moof` of a fragmented file whose samples are
    /// all in fragments (none in `moov`); nil for any other file. (A `sidx` is not followed:
    /// the walk needs no index.)
    static func walkStart(_ head: MP4File) -> UInt64? {
        guard let movie = head.movie, movie.hasMovieExtends, movie.tracks.allSatisfy({ $0.sampleCount == 0 }),
              let moof = head.layout.boxes.first(where: { $0.type == .moof }) else { return nil }
        return moof.offset
    }

    /// The index of `source`'s first `length` bytes, read as if the file ended there (the
    /// walked fragments; their bytes are cached, so this reads nothing from the origin).
    static func prefixIndex(of source: CachedByteSource, length: UInt64, limits: ParseLimits) async throws -> SeekPlanner {
        let prefix = PrefixSource(base: source, length: length)
        let file = try await MP4File.open(prefix, options: MP4File.Options(limits: limits, facts: .structure))
        return try await SeekPlanner.index(file, from: prefix, limits: limits)
    }

    /// The block a player reads in (Chromium's media cache: 32 KiB).
    static let playerBlock: UInt64 = 32 << 10

    /// The most fragments walked past the decode-time target.
    static let maxExtraFragments = 8
    /// The most fragments a walk takes.
    static let maxWalkedFragments = 100_000
    /// The first read of each fragment: its `moof` and the next header are in it (one origin
    /// request), and it is part of the fragment that is fetched whole anyway.
    static let fragmentHead: UInt64 = 16 << 10

    /// Takes whole fragments of a fragmented file in file order from `start` (the first
    /// `moof`, ``takeFragment(at:length:of:yieldingWhile:)``) until every track that has had
    /// samples reaches `seconds` past its first sample (decode times), and every audio and
    /// video track has had samples (waiting for one at most ``maxExtraFragments`` fragments).
    /// Each `moof` is indexed from the cache. The other fragments are never scanned (a scan of
    /// the file read 16 KiB at every `moof`: a 3 s preload of a 10 s fragmented film cost
    /// 242,655 of 444,921 B). Returns where the walk ended.
    static func walkFragments(_ head: MP4File, from start: UInt64, of source: YieldingReads, seconds: Double, limits: ParseLimits) async throws -> UInt64 {
        let length = head.layout.fileSize
        var timescales: [UInt32: UInt32] = [:]
        for track in head.movie?.tracks ?? [] { timescales[track.trackID] = track.timescale ?? 0 }
        var first: [UInt32: Int64] = [:], last: [UInt32: Int64] = [:]
        let required = Set((head.movie?.tracks ?? []).filter { $0.kind == .video || $0.kind == .audio }.map(\.trackID))
        var waiting = 0
        var position = start
        for _ in 0..<maxWalkedFragments where position < length {
            guard let (moof, end) = try await takeFragment(at: position, length: length, of: source) else { break }
            position = end
            let index = try await FragmentIndex.load(head, moofAt: moof, from: source, limits: limits)
            for (trackID, table) in index.tables where table.sampleCount > 0 {
                guard let lastSample = table.sample(at: table.sampleCount - 1) else { continue }
                let firstTime = table.decodeTime(of: 0), endTime = lastSample.decodeTime &+ lastSample.duration
                if index.hasAbsoluteTimes {
                    first[trackID] = min(first[trackID] ?? firstTime, firstTime)
                    last[trackID] = max(last[trackID] ?? endTime, endTime)
                } else {
                    // Without tfdt the fragment counts from 0: it follows the ones before.
                    first[trackID] = first[trackID] ?? 0
                    last[trackID] = (last[trackID] ?? 0) &+ (endTime &- firstTime)
                }
            }
            var spans: [UInt32: Double] = [:]
            for (trackID, end) in last {
                guard let scale = timescales[trackID], scale > 0, let begin = first[trackID] else { continue }
                spans[trackID] = Double(end &- begin) / Double(scale)
            }
            guard let reached = spans.values.min(), reached >= seconds else { continue }
            // Every track seen so far has reached the target. An audio or video track not seen
            // yet (a file whose first fragments hold one track only) is waited for a few more
            // fragments.
            if required.isSubset(of: spans.keys) { break }
            waiting += 1
            if waiting > maxExtraFragments { break }
        }
        return position
    }

    /// Makes the fragment at `position` present: its head is read (the `moof` and the
    /// headers after it, one request), the rest filled in one more. Its `moof` and end; nil
    /// when no `moof` is there (what follows is not walked).
    static func takeFragment(at position: UInt64, length: UInt64, of source: YieldingReads) async throws -> (moof: Range<UInt64>, end: UInt64)? {
        let (moof, end) = try await fragment(at: position, length: length, of: source)
        guard let moof else { return nil }
        try await fill(position..<end, of: source.source, yieldingWhile: source.busy)
        return (moof, end)
    }

    /// The fragment at `offset`: the boxes before its `moof` (`styp`, `sidx`, `emsg`...), the
    /// `moof` (nil when none comes within 64 boxes) and the boxes after it whose headers are
    /// in the fragment's head (its `mdat`), up to the next `moof` or `mfra`. One read (the
    /// head), plus a header read for each leading box past it.
    static func fragment(at offset: UInt64, length: UInt64, of source: any ByteSource) async throws -> (moof: Range<UInt64>?, end: UInt64) {
        let bytes = try await source.read(offset..<min(length, offset + fragmentHead))
        let headEnd = offset + UInt64(bytes.count)
        var position = offset
        var moof: Range<UInt64>?
        for _ in 0..<64 where position < length {
            let header: BoxHeader
            if position + 16 <= headEnd || (headEnd == length && position + 8 <= headEnd) {
                guard let parsed = try? BoxHeader.parse(bytes[Int(position - offset)...], at: position, containerEnd: length) else { break }
                header = parsed
            } else if moof != nil {
                break   // past the head after the moof: the next step of the walk reads on from here
            } else {
                let more = try await source.read(position..<min(length, position + 16))
                guard let parsed = try? BoxHeader.parse(more[...], at: position, containerEnd: length) else { break }
                header = parsed
            }
            if header.type == .mfra || (header.type == .moof && moof != nil) { break }
            let end = position + min(header.size, length - position)
            if header.type == .moof { moof = position..<end }
            guard end > position else { break }
            position = end
        }
        return (moof, position)
    }

    /// How often a preload looks whether a player reads.
    static let look: Duration = .milliseconds(50)

    /// Fills `range` of `source` in one request when no player reads. It starts only while
    /// `busy` is false; when a player starts reading meanwhile, the fill stops within a look
    /// (what arrived is kept) and goes on from there once the player is quiet again. (Pieces
    /// of 256 KiB with a look between each, the first design, cost one origin request per
    /// piece, a round trip each on a phone.)
    static func fill(_ range: Range<UInt64>, of source: CachedByteSource, yieldingWhile busy: (@Sendable () -> Bool)?) async throws {
        guard let busy else { return try await source.fill(range) }
        while true {
            try await wait(while: busy)
            let interrupted = try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask { try await source.fill(range); return false }
                group.addTask {
                    while !busy() { try await Task.sleep(for: look) }
                    return true
                }
                let first = try await group.next() ?? false
                group.cancelAll()
                return first
            }
            if !interrupted { return }
        }
    }
}

extension Preload {
    /// Returns once `busy` is false (looking every ``look``); throws when cancelled.
    static func wait(while busy: (@Sendable () -> Bool)?) async throws {
        guard let busy else { return }
        while busy() { try await Task.sleep(for: look) }
    }

    /// Reads of a preload's parser (headers, the `moov`, each fragment's head), standing aside
    /// for players like its fills: a read that needs the origin waits while `busy`; one of more
    /// than ``YieldingReads/stoppable`` bytes (a long film's `moov`: 7.4 MB for two hours) is
    /// filled first as a fill is, stopping when a player starts. Reads of cached bytes go at once.
    struct YieldingReads: WrappingSource {
        /// Missing bytes above which a read is filled first, stoppable.
        static let stoppable: UInt64 = 256 << 10
        let source: CachedByteSource
        let busy: (@Sendable () -> Bool)?

        var base: any ByteSource { source }
        func length() async throws -> UInt64 { try await source.length() }

        /// Waits for the origin to be free when `range` is not all cached.
        private func standAside(_ range: Range<UInt64>) async throws {
            guard let busy else { return }
            let upper = min(range.upperBound, try await source.length())
            guard range.lowerBound < upper else { return }
            let missing = await source.cachedRanges.missing(in: range.lowerBound..<upper)
            guard !missing.isEmpty else { return }
            if missing.reduce(0, { $0 + UInt64($1.count) }) > Self.stoppable {
                for gap in missing { try await Preload.fill(gap, of: source, yieldingWhile: busy) }
            } else {
                try await Preload.wait(while: busy)
            }
        }

        func read(_ range: Range<UInt64>) async throws -> [UInt8] {
            try await standAside(range)
            return try await source.read(range)
        }

        func read(_ range: Range<UInt64>, into consume: (ArraySlice<UInt8>) async throws -> Void) async throws {
            try await standAside(range)
            try await source.read(range, into: consume)
        }
    }
}

/// The origins a loader's players have read since the loader last preloaded them, so that a
/// preloaded entry is unmarked at its first read (``CacheDirectory/preloadShare``). (Whether a
/// preload may fetch is ``OriginActivity``'s.)
final class PlayedOrigins: Sendable {
    /// The most origins remembered (forgetting them costs only a repeated unmark).
    static let remembered = 4096
    private let read = Locked(Set<String>())

    /// A player reads `origin`: true when it is the first read since the loader started or
    /// last preloaded `origin` (the caller unmarks its entry then).
    func firstRead(_ origin: String) -> Bool {
        read.withLock { read in
            if read.count >= Self.remembered { read.removeAll() }
            return read.insert(origin).inserted
        }
    }

    /// `origin` is being preloaded (and marked): its next read unmarks it again.
    func preloading(_ origin: String) { read.withLock { _ = $0.remove(origin) } }
}

/// The preloads of one loader, by origin: a second preload of one origin joins the first,
/// `cancel` stops it, and at most `limit` fetch at once (the others wait their turn, first
/// come first served). Why the last preload of an origin failed is kept until it is
/// preloaded again (at most ``keptFailures`` origins).
actor PreloadTable {
    static let keptFailures = 256
    private var running: [String: (id: UInt64, task: Task<Preload.Outcome, any Error>)] = [:]
    private var failures: [String: String] = [:]
    private var nextID: UInt64 = 0
    private let limit: Int
    private var active = 0
    private var queue: [CheckedContinuation<Void, Never>] = []

    init(limit: Int) { self.limit = max(limit, 1) }

    /// Preloads `origin` with `body` (or joins the preload of it that runs) and returns its
    /// outcome; cancelling the caller cancels the preload.
    func run(_ origin: String, _ body: @escaping @Sendable () async throws -> Preload.Outcome) async throws -> Preload.Outcome {
        let task = start(origin, body)
        return try await withTaskCancellationHandler { try await task.value } onCancel: { task.cancel() }
    }

    /// Starts preloads of `origins` in the background (`body` makes each), all or none: none
    /// when more than `maxPending` would then run or wait (origins already preloading join
    /// theirs). Decided and registered in one step of this actor, so requests that arrive
    /// together cannot pass the bound between a check and a start.
    func startAll(_ origins: [String], maxPending: Int, _ body: @escaping @Sendable (String) async throws -> Preload.Outcome) -> Bool {
        let new = Set(origins).filter { running[$0] == nil }
        guard running.count + new.count <= maxPending else { return false }
        for origin in origins { _ = start(origin) { try await body(origin) } }
        return true
    }

    /// The preload of `origin`: the one running, or a new one, registered at once and
    /// forgotten when it ends.
    private func start(_ origin: String, _ body: @escaping @Sendable () async throws -> Preload.Outcome) -> Task<Preload.Outcome, any Error> {
        if let existing = running[origin] { return existing.task }
        nextID += 1
        let id = nextID
        failures[origin] = nil
        // The task's first step needs this actor, which is busy until `running` holds it.
        let task = ServingTask.startThrowing { [self] in
            await acquire()
            do {
                try Task.checkCancellation()
                let outcome = try await body()
                await release()
                await finish(origin, id)
                return outcome
            } catch {
                await release()
                if !(error is CancellationError) { await failed(origin, error) }
                await finish(origin, id)
                throw error
            }
        }
        running[origin] = (id, task)
        return task
    }

    private func acquire() async {
        if active < limit {
            active += 1
            return
        }
        await withCheckedContinuation { queue.append($0) }   // the slot is handed over on release
    }

    private func release() {
        if queue.isEmpty { active -= 1 } else { queue.removeFirst().resume() }
    }

    private func finish(_ origin: String, _ id: UInt64) {
        if running[origin]?.id == id { running.removeValue(forKey: origin) }
    }

    private func failed(_ origin: String, _ error: any Error) {
        if failures.count >= Self.keptFailures { failures.removeAll() }
        failures[origin] = (error as? MP4Error)?.message ?? "\(error)"
    }

    func cancel(_ origin: String) { running.removeValue(forKey: origin)?.task.cancel() }

    /// Whether a preload of `origin` runs (or waits its turn), and why its last one failed.
    func state(of origin: String) -> (isRunning: Bool, failure: String?) { (running[origin] != nil, failures[origin]) }

    /// Preloads running or waiting their turn.
    var count: Int { running.count }
}
