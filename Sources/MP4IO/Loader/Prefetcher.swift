import Foundation
import MP4Core

/// Moov first and seek-aware prefetch for one ``MediaResource`` (see ``MediaLoader``).
///
/// At creation it loads the origin's `moov` through the cache (for a moov-at-end file: the
/// head, then the end; reads past the head wait for it). Then each player read that lands in
/// the media is mapped to the time the player is seeking to (``ByteTimeMap``) and the seek
/// plan of the next seconds, on every track, is fetched ahead (``CachedByteSource/prefetch(_:maxRequests:)``).
/// Fragmented files are not mapped: their fragments follow each other, and what a player
/// reads sequentially is fetched by its own request. A fragmented film without an index is
/// walked a few fragment heads ahead of a player that reads its headers one request each
/// (``FragmentWalkAhead``).
actor Prefetcher {
    /// What a reader gets at once, before `moov` is known: what the movie load reads first.
    static let headBytes: UInt64 = 64 << 10

    /// The parsed movie, ready for seeks.
    struct MediaMap: Sendable {
        var planner: SeekPlanner
        var times: ByteTimeMap
        /// Where `moov` is in the origin: reads there are not seeks.
        var movieRange: Range<UInt64>?
    }

    let cache: CachedByteSource
    let view: FaststartView?
    let seconds: Double
    let maxBytes: UInt64
    let maxRequests: Int
    /// Whether the movie load has ended (with or without a map), and whether it made a map
    /// (no map: a fragmented film, a file without a movie, prefetch off; its reads start no
    /// prefetch, and no task is started to find that out). Under a lock: a player's read asks
    /// without a hop to the actor.
    private let loaded = Locked((settled: false, mapped: false))
    nonisolated var isSettled: Bool { loaded.withLock { $0.settled } }
    nonisolated var mapsReads: Bool { loaded.withLock { !$0.settled || $0.mapped } }
    private var map: MediaMap?
    /// A fragmented film without an index: its walk ahead, and whether a walker runs now.
    /// Under a lock, not on the actor: every player read of such a film tells it where it
    /// reads, and a task (a thread's wake-up) for each cost as much as the read.
    private let walkState = Locked<(walk: FragmentWalkAhead?, walking: Bool)>((nil, false))
    private var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
    private var nextWaiter: UInt64 = 0
    /// The time the last prefetch was planned for.
    private var lastTime: Double?
    /// The parts the latest prefetches started, in order (for tests and benchmarks; the last
    /// 256, so a long-running proxy does not grow it without bound).
    private(set) var started: [Range<UInt64>] = []

    /// Hands planned ranges to the cache (``CachedByteSource/prefetch(_:maxRequests:)``; a
    /// test may slow it down), which answers what it started.
    typealias Issue = @Sendable (_ ranges: [Range<UInt64>], _ maxRequests: Int) async -> [Range<UInt64>]
    private let issue: Issue
    /// The prefetch last handed to the cache. The next one waits for it, so the cache gets
    /// them in the order they were planned and the newest is the one that stands (a prefetch
    /// supersedes the one before). Without it the two calls raced on their way to the cache:
    /// a probe planned before a seek arrived after it, and the seek's window was never fetched
    /// (seen in CI's ASan suite).
    private var lastIssued: Task<[Range<UInt64>], Never>?
    /// Prefetches planned so far: one that a newer plan follows by the time its turn comes is
    /// not handed on (the newer would stop the fetches it started at once).
    private(set) var planned: UInt64 = 0

    private func isNewest(_ plan: UInt64) -> Bool { plan == planned }

    init(cache: CachedByteSource, view: FaststartView?, policy: ReadAheadPolicy, issue: Issue? = nil) {
        self.cache = cache
        self.view = view
        self.seconds = policy.prefetchSeconds
        self.maxBytes = policy.maxPrefetchBytes
        self.maxRequests = policy.maxPrefetchRequests
        self.issue = issue ?? { ranges, maxRequests in await cache.prefetch(ranges, maxRequests: maxRequests) }
    }

    /// Where players' requests began while the movie loaded (at most 64): a player that reads
    /// a fragment header and goes before then (ffmpeg's first request is one) sets where the
    /// walk ahead begins.
    private let earlyReads = Locked<[UInt64]>([])

    /// A player's request from `offset` came before the movie load ended.
    nonisolated func noteEarlyRead(_ offset: UInt64) {
        earlyReads.withLock { reads in if reads.count < 64 { reads.append(offset) } }
    }

    /// Loads the movie (through the cache, so its bytes are kept) and builds the map, or the
    /// walk ahead of a fragmented film, which starts at once when a player already read.
    func load() async {
        await loadMovie()
        settle()
        if startsWalker() { await startWalker().value }
    }

    private func loadMovie() async {
        let file: MP4File?
        if let view {
            file = view.inputFile
        } else {
            var options = MP4File.Options(facts: .structure)
            options.stopsAtFirstFragment = true
            // Its reads return as their bytes are written, not claimed (a commit's flush took
            // 2-3 ms of each fragmented start here); the `moov` is waited for below.
            file = try? await MP4File.open(ReadsBeforeCommit(cache: cache), options: options)
        }
        if seconds > 0, view == nil, let file, file.isFragmented, let first = Preload.walkStart(file),
           !file.layout.boxes.contains(where: { $0.type == .sidx }) {
            // A walked film's media past the head is its fragments, whose heads the walk
            // reads from the origin itself: its players go on at once.
            var walk = FragmentWalkAhead(first: first, length: file.layout.fileSize)
            for offset in earlyReads.withLock({ reads in defer { reads = [] }; return reads }) { _ = walk.playerRead(at: offset) }
            walkState.withLock { $0.walk = walk }
            return
        }
        // A player's media past the head waits for this load, and so goes out after the `moov`
        // is in the cache's table (``MediaLoaderTests``), not only in its data file.
        if view == nil, let movie = file?.layout.movieBox {
            try? await cache.fill(movie.offset..<(movie.offset + movie.availableSize))
        }
        guard seconds > 0, let file, !file.isFragmented, file.movie != nil else { return }
        let planner = SeekPlanner(file: file)
        guard planner.mainTrack != nil else { return }
        let movieRange = file.layout.movieBox.map { $0.offset..<($0.offset + $0.availableSize) }
        map = MediaMap(planner: planner, times: ByteTimeMap(planner), movieRange: movieRange)
    }

    private func settle() {
        loaded.withLock { $0 = (true, map != nil) }
        let ready = waiters.values
        waiters = [:]
        for continuation in ready { continuation.resume() }
    }

    /// Waits until the movie load has ended, at most `timeout` seconds.
    func waitForMovie(timeout: Double) async {
        guard !isSettled, timeout > 0 else { return }
        nextWaiter += 1
        let id = nextWaiter
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                guard !Task.isCancelled else { return continuation.resume() }
                waiters[id] = continuation
                ServingTask.start { [weak self] in
                    try? await Task.sleep(for: .seconds(timeout))
                    await self?.giveUp(id)
                }
            }
        } onCancel: {
            ServingTask.start { await self.giveUp(id) }   // the reader went away
        }
    }

    private func giveUp(_ id: UInt64) {
        waiters.removeValue(forKey: id)?.resume()
    }

    /// The order of player reads: each read takes a ticket in its own task, in the order the
    /// reads come, before its prefetch is started in the background. Under a lock, not on the
    /// actor: a player's read takes one and must not wait for the actor (a hop to the shared
    /// pool, where the actor may be planning a prefetch or the pool be held).
    private let issued = Locked<UInt64>(0)
    private var handled: UInt64 = 0

    nonisolated func ticket() -> UInt64 {
        issued.withLock { count in
            count += 1
            return count
        }
    }

    /// A player reads from `offset` of the served resource: when that is in the media, fetch
    /// the next seconds of every track from the time it belongs to. A read older than one
    /// already handled is ignored: the background tasks that carry them may run in any order,
    /// and AVPlayer's probe of bytes 0-1 handled after its seek superseded the seek's prefetch
    /// with one from 0 (seen under CI load: the window was never fetched).
    func playerReads(at offset: UInt64, ticket: UInt64) async {
        guard ticket > handled else { return }
        handled = ticket
        guard let map else { return }
        let time: Double
        if let view {
            // Generated bytes (ftyp, moov) come first: a player reading them plays from 0.
            guard let input = view.inputOffset(at: offset) else { return await prefetch(at: 0, map: map) }
            time = map.times.time(at: input) ?? 0
        } else {
            if let movie = map.movieRange, movie.contains(offset) { return }
            time = map.times.time(at: offset) ?? 0
        }
        await prefetch(at: time, map: map)
    }

    /// Whether the film is walked ahead of its players (a fragmented film without an index).
    nonisolated var walksAhead: Bool { walkState.withLock { $0.walk != nil } }

    /// A player's request begins at `offset` of a film walked ahead: the walk's anchor moves
    /// (``FragmentWalkAhead/playerRead(at:)``). Returns whether the caller must start a walker
    /// (``runWalker()``: there is a head to read and none runs), and the head the walk reads at
    /// `offset` when it is a fragment's known start or past every start known
    /// (``FragmentWalkAhead/headSize(at:)``: what the player's read fetches first there).
    nonisolated func playerRead(at offset: UInt64) -> (startsWalker: Bool, headSize: UInt64?) {
        walkState.withLock { state in
            let wanted = state.walk?.playerRead(at: offset) == true
            let starts = wanted && !state.walking
            if starts { state.walking = true }
            return (starts, state.walk?.headSize(at: offset))
        }
    }

    /// ``playerRead(at:)`` without a read: after the movie load, for the reads
    /// that came before it.
    private func startsWalker() -> Bool {
        walkState.withLock { state in
            guard state.walk?.wanted != nil, !state.walking else { return false }
            state.walking = true
            return true
        }
    }

    /// The walker: reads the heads the walk wants, one after the other (each gives the next
    /// one's place), until it wants none; reads that come meanwhile move its anchor. Started
    /// by whoever was told to (one at a time).
    ///
    /// A head neither cached nor being fetched is read from the origin on the walker's own
    /// task (``CachedByteSource/readOrigin(_:)``), held for the player that reads it
    /// next (``heads``) and handed to the cache with others (``CachedByteSource/adopt(_:)``,
    /// ``adoptionBatch``), whose fetches of them run on this queue when the walker yields. A head being
    /// fetched (a player's request got there first) is followed; a cached one is read. A
    /// read that fails (the origin is down) stops this walker, not the walk: the next player
    /// read starts another.
    /// Starts the walker (``runWalker()``) on the film's walk queue, which its fetches share.
    @discardableResult
    nonisolated func startWalker() -> Task<Void, Never> {
        ServingTask.startSharing(walkQueue) { [self] in await runWalker() }
    }

    /// The queue of this film's walkers (one at a time) and their fetches.
    private nonisolated let walkQueue = ServingTask.SharedQueue()

    /// The heads the walk read from the origin, held for the players that read them next.
    nonisolated let heads = WalkHeads()

    /// How many heads read from the origin the walker hands to the cache at once
    /// (``CachedByteSource/adopt(_:)``): one call on the entry's actor for them all, and their
    /// fetches run when the walker yields after it, on its queue. The heads are held for
    /// the players meanwhile (``WalkHeads/maxHeads`` is twice as many).
    static let adoptionBatch = WalkHeads.maxHeads / 2
    /// The most bytes read from the origin the walker keeps before it hands them to the cache.
    static let adoptionBytes = 1 << 20

    nonisolated func runWalker() async {
        // The head this walker told `heads` it reads next (players wait for it).
        var expected: UInt64?
        // What it read from the origin and has not handed to the cache yet.
        var adopting: [(offset: UInt64, bytes: [UInt8])] = []
        var adoptingBytes = 0
        func handOver() async {
            guard !adopting.isEmpty else { return }
            await cache.adopt(adopting)
            adopting = []
            adoptingBytes = 0
            await Task.yield()   // the cache's fetches of them run now, on this queue
        }
        func stop() async {
            if let expected { heads.cancel(expected) }
            await handOver()
            walkState.withLock { $0.walking = false }
        }
        while true {
            let next = walkState.withLock { state -> (start: UInt64, length: UInt64, size: UInt64)? in
                guard !Task.isCancelled, let walk = state.walk, let start = walk.wanted else { return nil }
                return (start, walk.length, walk.nextHeadSize)
            }
            guard let next else { return await stop() }
            if let previous = expected, previous != next.start { heads.cancel(previous) }
            expected = next.start
            var head = next.start..<min(next.length, next.start + next.size)
            var bytes: [UInt8] = []
            var found: FragmentWalkAhead.Head = .none
            // A `moof` longer than its head is read on (at most a few times: each reads to the
            // next box's header, within FragmentWalkAhead.maxHeadSpan).
            for _ in 0..<8 {
                let part = (head.lowerBound + UInt64(bytes.count))..<head.upperBound
                guard let more = await readHeadPart(part, atStart: bytes.isEmpty) else { return await stop() }
                if more.fromOrigin {
                    adopting.append((part.lowerBound, more.bytes))
                    adoptingBytes += more.bytes.count
                }
                bytes += more.bytes
                found = FragmentWalkAhead.head(bytes[...], at: head.lowerBound, headEnd: head.upperBound, length: next.length)
                guard case .longer(let through) = found, through > head.upperBound else { break }
                head = head.lowerBound..<through
            }
            var end: UInt64?, headerEnd: UInt64?
            if case .fragment(let fragmentEnd, let headersEnd) = found { (end, headerEnd) = (fragmentEnd, headersEnd) }
            // The next head is expected as soon as its place is known: a player that reads it
            // before the next step begins waits for the walk's read, not the cache.
            let following = walkState.withLock { state -> UInt64? in
                state.walk?.learned(next.start, end: end, headerEnd: headerEnd)
                return state.walk?.wanted
            }
            if let following {
                heads.expect(following)
                expected = following
            }
            if adopting.count >= Self.adoptionBatch || adoptingBytes >= Self.adoptionBytes { await handOver() }
        }
    }

    /// One part of a head: read from the cache or the fetch that has it, or else from the
    /// origin (then held for players when it is the head's start). Nil when the origin failed.
    private nonisolated func readHeadPart(_ part: Range<UInt64>, atStart: Bool) async -> (bytes: [UInt8], fromOrigin: Bool)? {
        switch await cache.headState(part) {
        case .cached(let bytes):
            if atStart { heads.cancel(part.lowerBound) }
            return (bytes, false)
        case .fetching(let progress):
            if atStart { heads.cancel(part.lowerBound) }
            if let bytes = try? await cache.follow(progress, part), bytes.count >= part.count { return (bytes, false) }
            // The fetch ended before (stopped or failed): the origin is asked below.
        case .absent:
            break
        }
        if atStart { heads.expect(part.lowerBound) }
        guard let bytes = try? await cache.readOrigin(part) else {
            if atStart { heads.cancel(part.lowerBound) }
            return nil
        }
        if atStart { heads.landed(part.lowerBound, bytes) }
        return (bytes, true)
    }

    private func prefetch(at time: Double, map: MediaMap) async {
        // Reads within the window already asked for do not ask again.
        if let lastTime, time >= lastTime, time < lastTime + seconds / 2 { return }
        guard let plan = try? map.planner.plan(at: time, duration: seconds) else { return }
        lastTime = time
        var budget = maxBytes
        var ranges: [Range<UInt64>] = []
        for range in plan.ranges.sorted(by: { $0.lowerBound < $1.lowerBound }) where budget > 0 {
            let count = min(UInt64(range.count), budget)
            ranges.append(range.lowerBound..<(range.lowerBound + count))
            budget -= count
        }
        // Handed on in the order planned: nothing above suspended since this read's ticket
        // was checked, so the chain's order is the tickets' order.
        planned += 1
        let previous = lastIssued, issue = self.issue, maxRequests = self.maxRequests, number = planned
        let handing = ServingTask.start { [weak self] () -> [Range<UInt64>] in
            _ = await previous?.value
            guard await self?.isNewest(number) == true else { return [] }
            return await issue(ranges, maxRequests)
        }
        lastIssued = handing
        started += await handing.value
        if started.count > 256 { started.removeFirst(started.count - 256) }
    }
}

/// The cache read as a player reads it: each read returns once its bytes are handed on, not
/// once the table claims them (``CachedByteSource/Request/returnsBeforeCommit``).
private struct ReadsBeforeCommit: WrappingSource {
    let cache: CachedByteSource
    var base: any ByteSource { cache }
    func length() async throws -> UInt64 { try await cache.length() }
    func read(_ range: Range<UInt64>) async throws -> [UInt8] {
        try await cache.read(whole: CachedByteSource.Request(range, returnsBeforeCommit: true))
    }
    func read(_ range: Range<UInt64>, into consume: (ArraySlice<UInt8>) async throws -> Void) async throws {
        try await cache.read(CachedByteSource.Request(range, returnsBeforeCommit: true), into: consume)
    }
}
