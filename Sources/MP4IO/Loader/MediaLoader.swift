import Foundation
import MP4Core
import MP4ProbeSystem

/// The loader core of serving: media at origin URLs, read the way players ask for it, from
/// the on-disk cache and the origin. ``CachingProxy`` puts HTTP in front of it; an app that
/// feeds its player itself (an `AVAssetResourceLoaderDelegate`, an ExoPlayer `DataSource`)
/// calls it directly (docs/serving.md has an adapter).
///
/// - **Content information before data**: ``MediaResource/contentInformation()`` (type,
///   length, entity tag: computed here; a server only renders them).
/// - **Requests shaped like a player's**: ``MediaResource/load(offset:length:into:)`` streams
///   an offset and a length, or everything to the end, in pieces as they arrive; memory is
///   one piece per request; cancelling the calling task stops the work.
/// - **One origin fetch per byte**: requests for one resource share its cache entry, so bytes
///   already being fetched for one request are followed by the others.
/// - **Moov first**: a resource whose `moov` is not loaded yet loads it before serving media
///   past the first 64 KiB (bounded by ``Options/movieWait``); a moov-at-end file thus gets
///   its `moov` fetched before anything else.
/// - **Seek-aware prefetch**: a read that lands in the media is mapped back to the time the
///   player is seeking to (``ByteTimeMap``), and the next ``ReadAheadPolicy/prefetchSeconds`` of every
///   track (the seek plan's byte ranges) are fetched ahead, so what the player asks next is
///   already in flight.
///
/// ```swift
/// let loader = MediaLoader(options: .init(cacheDirectory: "/tmp/mp4probe-cache"))
/// let resource = try await loader.resource(for: "https://cdn.example.com/v.mp4")
/// let info = try await resource.contentInformation()      // length, type, ETag
/// try await resource.load(offset: 0, length: 2) { bytes in /* hand to the player */ }
/// ```
public final class MediaLoader: Sendable {
    public struct Options: Sendable {
        /// The cache: directory, entry rules, read-ahead and prefetch (``ReadAheadPolicy``),
        /// size bound.
        public var cache: CacheConfiguration
        /// How origins are read (headers, timeouts, retries).
        public var http = HTTPByteSource.Options()
        /// How long a read past the head of a resource waits for its `moov` to load (moov
        /// first); a read goes on without it after that.
        public var movieWait: Double = 10
        /// How long a player's read waits for an unreachable origin, trying again, before it
        /// fails (``OriginOutage``): the player sees a stall, as on a slow network, not an
        /// error; 0 fails at once.
        public var originWait: Double = 30
        /// Seconds a resource nobody asks for stays open (its learned length, connections,
        /// prefetcher and movie index) before it is dropped; a request after that opens it
        /// again from the cache.
        public var idleLifetime: Double = 30
        /// Preloads (``MediaLoader/preload(_:seconds:)``, `serve`'s `_/preload`) that fetch at
        /// once; more wait their turn. Each also pauses while a player's or a prefetch's fetch
        /// runs at the origin (not while a player reads from the cache).
        public var preloadJobs = 2

        public init(cache: CacheConfiguration) { self.cache = cache }
        /// A cache in `cacheDirectory` with the default rules.
        public init(cacheDirectory: String) { self.cache = CacheConfiguration(directory: cacheDirectory) }
    }

    public let options: Options
    private let resources = ResourceTable()
    private let preloads: PreloadTable
    /// Fetches for players and prefetches: preloads yield to them.
    private let activity = OriginActivity()
    /// Origins read since they were preloaded.
    private let played = PlayedOrigins()
    /// Sample indexes for ``status(of:)`` polls.
    private let indexes = MovieIndexes()
    /// Origins whose last player read failed for want of them (``OriginOutage``).
    private let reachability = OriginReachability()
    private let eviction: Task<Void, Never>?

    /// A loader; with ``CacheConfiguration/maxBytes`` set, the cache is kept within it as
    /// bytes are written (``CacheBudget``) and by an eviction pass at start and then
    /// ``CacheConfiguration/evictionInterval`` seconds after this loader's writes (an idle
    /// loader does not wake).
    public init(options: Options) {
        self.options = options
        preloads = PreloadTable(limit: options.preloadJobs)
        if let limit = options.cache.maxBytes {
            let budget = CacheBudget.for(options.cache.directory, limit: limit), interval = max(options.cache.evictionInterval, 0.1)
            eviction = ServingTask.start {
                var seen: UInt64 = 0
                while !Task.isCancelled {
                    await budget.evict()
                    // The next pass once this process wrote again: no timer while idle (another
                    // process's writes are seen at the next pass after one of ours).
                    seen = await budget.waitForWrites(after: seen)
                    try? await Task.sleep(for: .seconds(interval))
                }
            }
        } else {
            eviction = nil
        }
    }

    deinit { eviction?.cancel() }

    /// Stops the background eviction (the loader stops evicting before it goes).
    public func stopEvicting() { eviction?.cancel() }

    /// Preloads `origin` by time: its headers, `moov` and first `seconds` of every track
    /// (``Preload``), into the cache, and returns when they are there. Cancelling the calling
    /// task (or ``cancelPreload(_:)``) stops it, keeping what arrived. A preload of an origin
    /// already preloading joins it.
    @discardableResult
    public func preload(_ origin: String, seconds: Double) async throws -> Preload.Outcome {
        guard SourceFactory.isURL(origin), URL(string: origin) != nil else {
            throw MP4Error(.invalidRequest, "only http and https origins are preloaded: \(origin)")
        }
        let body = preloading(seconds: seconds)
        return try await preloads.run(origin) { try await body(origin) }
    }

    /// Starts preloads of `origins` in the background, unless more than `maxPending` would
    /// then run or wait (false: none started). `serve`'s `_/preload`.
    func preloadInBackground(_ origins: [String], seconds: Double, maxPending: Int) async -> Bool {
        await preloads.startAll(origins.filter { SourceFactory.isURL($0) && URL(string: $0) != nil }, maxPending: maxPending, preloading(seconds: seconds))
    }

    /// What one preload does: opens the origin through the cache at preload priority and runs
    /// ``Preload/run(_:seconds:limits:yieldingWhile:)``, standing aside for players.
    private func preloading(seconds: Double) -> @Sendable (String) async throws -> Preload.Outcome {
        let options = self.options, activity = self.activity, played = self.played
        return { origin in
            var opening = SourceFactory.Options(http: options.http, cache: options.cache)
            // Its fetches are reported like a player's, at preload priority: they make nothing wait.
            (opening.activity, opening.readPriority) = (activity, .preload)
            // Opening may ask the origin (a new or stale entry: its head window): not while a
            // player fetches.
            try await Preload.wait { activity.isBusy }
            guard let cached = try await SourceFactory.opened(origin, options: opening).cache else {
                throw MP4Error(.io, "\(origin): the cache in \(options.cache.directory) cannot take a new entry; nothing was preloaded")
            }
            played.preloading(origin)
            return try await Preload.run(cached, seconds: seconds) { activity.isBusy }
        }
    }

    /// Stops the preload of `origin`, if one is running (what arrived stays cached).
    public func cancelPreload(_ origin: String) async { await preloads.cancel(origin) }

    /// What the cache holds of `origin`, in bytes and seconds (``CacheStatus``; `nil`: no
    /// entry), whether a preload of it runs (or waits its turn), and why the last one failed
    /// (`nil`: it did not). Read from disk; the origin is not asked. The movie's sample index
    /// is kept between calls (the last 8 movies asked about), so a poll costs the table read
    /// and ``PlayableTime``, not a parse of the `moov`.
    public func status(of origin: String) async -> (cache: CacheStatus?, isPreloading: Bool, preloadFailure: String?) {
        let cache = await CacheStatus.of(origin, in: options.cache.directory, limits: .default, indexes: indexes)
        let preload = await preloads.state(of: origin)
        return (cache, preload.isRunning, preload.failure)
    }

    /// Preloads running or waiting their turn.
    public var preloadCount: Int { get async { await preloads.count } }

    /// The resource at `origin` (`http`/`https`), as it is or as its faststart view (`moov`
    /// first; files the rewrite leaves alone are served unchanged). Requests for one resource
    /// share one opening, one cache entry and one prefetcher; a resource whose origin changed
    /// is opened again by the next call.
    /// - Throws: ``MP4Error`` `.invalidRequest` for other schemes, or what opening the origin
    ///   throws.
    public func resource(for origin: String, faststart: Bool = false) async throws -> MediaResource {
        try await resources.resource(for: origin, faststart: faststart, options: options, activity: activity, played: played, reachability: reachability)
    }
}

/// One resource of a ``MediaLoader``: a ``ByteSource`` whose reads come from the cache and
/// the origin, and which moves `moov` first and prefetches ahead of them.
public struct MediaResource: WrappingSource, TallyingSource {
    /// The origin URL.
    public let origin: String
    /// Whether this is the faststart view of the origin.
    public let faststart: Bool
    let source: WatchedSource
    /// The faststart view the resource serves, over the cache (nil: the origin as it is).
    let view: FaststartView?
    let prefetcher: Prefetcher?
    let movieWait: Double
    /// The origins the loader's players have read (a preloaded entry is unmarked at its
    /// first read), and the cache entry they read.
    var played: PlayedOrigins?
    var cache: CachedByteSource?
    var reachability: OriginReachability?
    var originWait: Double = 0

    /// The source it serves (``WrappingSource``): its name, read size, remoteness (an
    /// `MP4File` opened over a remote resource does not walk every `moof`, a request each,
    /// unless asked), validator and attributes are the resource's.
    public var base: any ByteSource { source }
    /// Whether the cache holds every byte of the origin (the faststart view is then whole
    /// on the device too).
    public var isEntirelyCached: Bool {
        get async {
            guard let cache, let length = try? await cache.length() else { return false }
            return await cache.cachedRanges.contains(0..<length)
        }
    }
    public func length() async throws -> UInt64 { try await source.length() }

    /// Length, type, validators, before any data: what a server renders as headers and an
    /// `AVAssetResourceLoadingContentInformationRequest` is answered with.
    public func contentInformation() async throws -> ContentInformation {
        try await ContentInformation.of(source, fallbackType: ContentInformation.nameType(of: origin))
    }


    /// A player's request: `length` bytes from `offset` (`nil`: to the end), streamed to
    /// `consume` as they arrive. Reading past the end delivers what there is.
    public func load(offset: UInt64, length: UInt64?, into consume: (ArraySlice<UInt8>) async throws -> Void) async throws {
        let total = try await self.length()
        let end = length.map { offset.addingReportingOverflow($0).overflow ? total : min(offset + $0, total) } ?? total
        guard offset < end else { return }
        try await read(offset..<end, into: consume)
    }

    public func read(_ range: Range<UInt64>) async throws -> [UInt8] {
        var bytes: [UInt8] = []
        try await read(range, streamed: false) { bytes += $0 }
        return bytes
    }

    /// A player's read: waits for an unreachable origin (``OriginOutage``), trying again
    /// from the first byte not yet delivered, for up to ``MediaLoader/Options/originWait``.
    public func read(_ range: Range<UInt64>, into consume: (ArraySlice<UInt8>) async throws -> Void) async throws {
        try await read(range, streamed: true, into: consume)
    }

    /// A player's read whose bytes are counted by where they came from (a server's answer).
    func read(_ range: Range<UInt64>, tally: ReadTally, into consume: (ArraySlice<UInt8>) async throws -> Void) async throws {
        try await read(range, streamed: true, tally: tally, into: consume)
    }

    /// `streamed`: a player's request (a server's response, a resource loader's), which moves
    /// a fragmented film's walk ahead, and returns as its last byte is handed on, not after the
    /// commit of what it fetched (a keep-alive player's next request would wait for it); a
    /// parser's whole read (the inspector's) does neither.
    private func read(_ range: Range<UInt64>, streamed: Bool, tally: ReadTally? = nil, into consume: (ArraySlice<UInt8>) async throws -> Void) async throws {
        var position = range.lowerBound
        var outage = OriginOutage(patience: originWait)
        var playerFailed = false, failedBefore = false
        let request = CachedByteSource.Request(range, returnsBeforeCommit: streamed, tally: tally)
        while true {
            do {
                let wasCached = await cache?.cachedRanges.contains(position..<range.upperBound) ?? true
                try await readOnce(position..<range.upperBound, streamed: streamed, request) { piece in
                    do { try await consume(piece) } catch { playerFailed = true; throw error }
                    position += UInt64(piece.count)
                }
                // The origin answered (this read needed it, or a try after a failure).
                if failedBefore || !wasCached { reachability?.reached(origin) }
                return
            } catch where !playerFailed && !Task.isCancelled && OriginOutage.isWorthWaiting(error) {
                reachability?.failed(origin)
                failedBefore = true
                guard let delay = outage.delayAfterFailure(at: .now) else { throw error }
                try await Task.sleep(for: delay)   // the player leaving cancels the wait
            }
        }
    }

    /// Reads `range` of what the resource serves (through its faststart view when it has one),
    /// the cache's reads carried out as `request` says (its range aside). The one road of a
    /// read's bytes: cache or origin, view or not.
    private func readServed(_ range: Range<UInt64>, _ request: CachedByteSource.Request, into consume: (ArraySlice<UInt8>) async throws -> Void) async throws {
        guard let cache else { return try await source.read(range, into: consume) }
        let segments: [FaststartView.Segment] = view?.segments(of: range) ?? [.input(range)]
        try await source.watching {
            for segment in segments {
                switch segment {
                case .bytes(let bytes):
                    try await consume(bytes)
                case .input(let part):
                    var shaped = request, delivered: UInt64 = 0
                    shaped.range = part
                    try await cache.read(shaped) { piece in
                        delivered += UInt64(piece.count)
                        try await consume(piece)
                    }
                    if view != nil { try FaststartView.checkInput(part, delivered: delivered, name: cache.name) }
                }
            }
        }
    }

    /// While the origin is unreachable, the cached runs (what a response may promise:
    /// ``OriginOutage/deliverable(_:cached:)``); `nil` when it is reachable, or for the
    /// faststart view and uncached resources (their ranges are promised whole).
    public func cachedRunsWhileUnreachable() async -> [Range<UInt64>]? {
        guard !faststart, let cache, reachability?.isUnreachable(origin) == true else { return nil }
        return await cache.cachedRanges.ranges
    }

    private func readOnce(_ range: Range<UInt64>, streamed: Bool, _ request: CachedByteSource.Request, into consume: (ArraySlice<UInt8>) async throws -> Void) async throws {
        if played?.firstRead(origin) == true, let cache { await cache.markPlayed() }
        guard let prefetcher, !range.isEmpty else { return try await readServed(range, request, into: consume) }
        var position = range.lowerBound
        if streamed && !prefetcher.isSettled { prefetcher.noteEarlyRead(range.lowerBound) }
        if !prefetcher.isSettled {
            // Moov first: the head goes at once (it is what the movie load reads first);
            // media past it waits until `moov` is in (bounded).
            if position < Prefetcher.headBytes {
                let head = position..<min(range.upperBound, Prefetcher.headBytes)
                try await readServed(head, request, into: consume)
                position = head.upperBound
                if position == range.upperBound { return }
            }
            await prefetcher.waitForMovie(timeout: movieWait)
            try Task.checkCancellation()   // the player left while `moov` loaded
        }
        if prefetcher.walksAhead {
            // A header read, which the walk may not have reached: a first piece (no more than
            // the fragment's head when it begins at a fragment's known start or past every
            // start known), then windows.
            if streamed {
                let read = prefetcher.playerRead(at: range.lowerBound)
                if read.startsWalker { prefetcher.startWalker() }
                // A head the walk read from the origin (or is reading now) goes from memory;
                // the rest of the request goes through the cache, as every read does, and
                // starts short, as a read past a cached head does (a player that read the
                // header may be about to go: its first fetch past the head is a first piece,
                // not a window; ``HeldHeadReadTests``).
                if let held = await prefetcher.heads.bytes(from: position) {
                    let piece = held.prefix(Int(clamping: range.upperBound - position))
                    request.tally?.fromCache(piece.count)
                    try await consume(piece)
                    position += UInt64(piece.count)
                    if position == range.upperBound { return }
                    var startsShort = request
                    startsShort.firstPiece = .max
                    return try await readServed(position..<range.upperBound, startsShort, into: consume)
                }
                var startsShort = request
                startsShort.firstPiece = read.headSize ?? .max
                return try await readServed(position..<range.upperBound, startsShort, into: consume)
            }
        } else if prefetcher.mapsReads {
            // The seek's prefetch starts once the player's first bytes are on their way (its
            // ticket is taken now, in the order of the reads), not before: it took the link
            // from the player's first bytes (Tests/Benchmarks/phone-link.sh).
            let start = position, ticket = prefetcher.ticket()
            var started = false
            return try await readServed(position..<range.upperBound, request) { piece in
                try await consume(piece)
                if !started {
                    started = true
                    ServingTask.start { await prefetcher.playerReads(at: start, ticket: ticket) }
                }
            }
        }
        try await readServed(position..<range.upperBound, request, into: consume)
    }

    /// The ranges prefetches started (of the origin, in order).
    public var prefetchedRanges: [Range<UInt64>] { get async { await prefetcher?.started ?? [] } }
}

/// The open resources by origin (and view), so that every request for one resource shares its
/// learned length, validator, connections and prefetcher; bounded, least recently used dropped
/// first. Requests that arrive while a resource is being opened wait for that opening instead
/// of opening it again (players often start with two connections).
///
/// A resource nobody asked for in ``MediaLoader/Options/idleLifetime`` seconds is dropped (its
/// cache entry's files, origin connections and movie index go with the last request that
/// still holds it): after 300 origins, an idle `serve` held 324 descriptors and 99 MB for as
/// long as it ran. The sweep runs only while resources are open (an idle loader does not wake).
actor ResourceTable {
    private var entries: [String: (opening: Task<MediaResource, any Error>, used: UInt64, generation: UInt64, lastUse: ContinuousClock.Instant)] = [:]
    private var clock: UInt64 = 0
    private let capacity = 64
    private var sweeping = false

    /// Drops the entries idle for `lifetime`; returns when the next one would expire (`nil`:
    /// none left).
    func dropIdle(lifetime: Duration, now: ContinuousClock.Instant = .now) -> ContinuousClock.Instant? {
        let before = entries.count
        entries = entries.filter { now - $0.value.lastUse < lifetime }
        guard let oldest = entries.values.map(\.lastUse).min() else {
            sweeping = false
            // The last resources went: what their requests allocated goes back to the system
            // (glibc keeps freed blocks resident otherwise: 51 MB after 300 origins).
            if before > 0 {
                ServingTask.start {
                    for delay in [1, 4] {
                        try? await Task.sleep(for: .seconds(delay))
                        mp4probe_release_free_memory()
                    }
                }
            }
            return nil
        }
        return oldest + lifetime
    }

    /// The number of open resources.
    var count: Int { entries.count }

    /// Starts the sweep when it is not running: it sleeps until the oldest entry would expire,
    /// drops what has, and ends when the table is empty.
    private func sweepWhileOpen(lifetime: Duration) {
        guard !sweeping, lifetime > .zero else { return }
        sweeping = true
        ServingTask.start { [weak self] in
            var next: ContinuousClock.Instant? = .now + lifetime
            while let wake = next {
                try? await Task.sleep(until: wake, clock: .continuous)
                guard let self else { return }
                next = await self.dropIdle(lifetime: lifetime)
            }
        }
    }

    func resource(for origin: String, faststart: Bool, options: MediaLoader.Options, activity: OriginActivity? = nil, played: PlayedOrigins? = nil, reachability: OriginReachability? = nil) async throws -> MediaResource {
        let key = (faststart ? "faststart " : "") + origin
        clock += 1
        let now = ContinuousClock.now
        sweepWhileOpen(lifetime: .seconds(max(options.idleLifetime, 0)))
        if let entry = entries[key] {
            entries[key]?.used = clock
            entries[key]?.lastUse = now
            return try await entry.opening.value
        }
        // Checked when it opens (a URL parse was 1 % of each cached request's CPU).
        guard SourceFactory.isURL(origin), URL(string: origin) != nil else {
            throw MP4Error(.invalidRequest, "only http and https origins are served: \(origin)")
        }
        if entries.count >= capacity, let oldest = entries.min(by: { $0.value.used < $1.value.used })?.key {
            entries.removeValue(forKey: oldest)
        }
        let generation = clock
        let opening = ServingTask.startThrowing {
            try await Self.open(origin, faststart: faststart, options: options, activity: activity, played: played, reachability: reachability) { [weak self] in
                // When a read finds the origin changed, the next request opens the new version
                // (a new length, plan and ETag) instead of failing against the old one forever.
                await self?.forget(key, generation: generation)
            }
        }
        entries[key] = (opening, clock, generation, now)
        do {
            return try await opening.value
        } catch {
            forget(key, generation: generation)  // the next request tries again
            throw error
        }
    }

    /// Drops `key` if it is still the entry opened as `generation`.
    func forget(_ key: String, generation: UInt64) {
        if entries[key]?.generation == generation { entries.removeValue(forKey: key) }
    }

    private static func open(_ origin: String, faststart: Bool, options: MediaLoader.Options, activity: OriginActivity?, played: PlayedOrigins?, reachability: OriginReachability?, changed: @escaping @Sendable () async -> Void) async throws -> MediaResource {
        var opening = SourceFactory.Options(http: options.http, cache: options.cache)
        opening.activity = activity
        let layers = try await SourceFactory.opened(origin, options: opening)
        let opened = layers.source, cache = layers.cache
        var served: any ByteSource = opened
        var view: FaststartView?
        if faststart {
            do {
                view = try await FaststartView.make(opened)
                served = view ?? opened
            } catch let error as MP4Error where error.kind == .unsupported {
                // A file the rewrite refuses (cmov, several moov...) is served unchanged.
            }
        }
        let prefetcher = cache.map { Prefetcher(cache: $0, view: view, policy: options.cache.entries.readAhead) }
        if let prefetcher { ServingTask.start { await prefetcher.load() } }
        return MediaResource(origin: origin, faststart: faststart, source: WatchedSource(base: served, changed: changed), view: view,
                             prefetcher: prefetcher, movieWait: options.movieWait, played: played, cache: cache,
                             reachability: reachability, originWait: options.originWait)
    }
}

/// A source that calls `changed` when a read finds that its origin is no longer the version
/// it opened (``MP4Error/Cause/sourceChanged``); the error itself still reaches the reader, so
/// no byte of the new version is mixed into a response about the old one.
struct WatchedSource: WrappingSource {
    let base: any ByteSource
    let changed: @Sendable () async -> Void

    func length() async throws -> UInt64 { try await watching { try await base.length() } }
    func validator() async throws -> String? { try await watching { try await base.validator() } }
    func attributes() async throws -> ResourceAttributes { try await watching { try await base.attributes() } }
    func read(_ range: Range<UInt64>) async throws -> [UInt8] { try await watching { try await base.read(range) } }
    func read(_ range: Range<UInt64>, into consume: (ArraySlice<UInt8>) async throws -> Void) async throws {
        try await watching { try await base.read(range, into: consume) }
    }

    func watching<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as MP4Error where error.cause == .sourceChanged {
            await changed()
            throw error
        }
    }
}
