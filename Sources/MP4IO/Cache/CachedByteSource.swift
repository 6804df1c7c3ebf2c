import Foundation
import MP4Core

/// A ``ByteSource`` that keeps what it reads from an upstream source (HTTP in practice) in an
/// on-disk cache: one sparse data file per resource plus a persisted table of the byte ranges
/// present (``ByteRangeSet``). A read is split into cached and missing parts; only the missing
/// parts go upstream (neighbouring gaps smaller than ``ReadAheadPolicy/bridgeGap`` are fetched as one).
///
/// - **Crash safety**: data is written and flushed before the table that claims it is replaced
///   (atomically), so after a crash at any point the table never lists bytes that are not
///   durably in the data file; a torn or corrupt table is detected and the entry discarded.
/// - **Validity**: each entry records the upstream length and validator (ETag / Last-Modified /
///   size+mtime); when they change, the entry is emptied, never mixed.
/// - **Concurrency**: sources for the same resource in one process share one entry
///   (``CacheEntry``), whose ``FetchPlanner`` decides what is fetched, followed and stopped;
///   concurrent reads of the same missing range fetch it once. Between processes, every update
///   of an entry holds the table lock and merges the table on disk, and range locks say which
///   bytes a process is fetching (``EntryLocks``).
///
/// This type is the thin driver of reads: it asks its entry for the next step and carries it
/// out (serve from the data file, follow a fetch, wait for another process).
///
/// ```swift
/// let remote = try HTTPByteSource(url: url)
/// let cached = try await CachedByteSource(upstream: remote, directory: "/var/cache/videos")
/// let file = try await MP4File.open(cached)      // moov now local too
/// ```
public final class CachedByteSource: WrappingSource {
    /// Tuning.
    public struct Options: Sendable {
        /// Bytes streamed into the data file before a commit is due (data fsync, then the table
        /// that claims them): with what arrives while the commit before ends (commits run
        /// behind the writes, one at a time), what an interrupted fill can lose at most, and
        /// how far a reader in another process may wait behind this one's fetch. 16 MiB: a
        /// 1 GB `fetch --all` from nginx on loopback took the same time with 64, 16 and 8 MiB
        /// (3.1 to 4.6 s, noise, when each commit was waited for).
        public var commitInterval: UInt64 = 16 << 20
        /// How long after the origin last confirmed an entry (its length and validator) the
        /// entry is used without asking the origin again, as an HTTP cache uses a fresh
        /// response. Media at a URL rarely changes: a day by default. 0 asks every time.
        public var maxAge: TimeInterval = 24 * 3600
        /// When the origin cannot be reached (or fails) and the entry holds bytes, use it
        /// anyway (stale-if-error): cached bytes are served, uncached ones fail cleanly.
        public var servesStaleOnError = true
        /// How far fetches run ahead of readers, and when they stop (shared by every layer
        /// of serving: ``ReadAheadPolicy``).
        public var readAhead = ReadAheadPolicy()
        /// Where "the cache disk is full" is said, once per episode (``DiskFullNotice``); nil:
        /// not said.
        public var warn: (@Sendable (String) -> Void)?
        public init() {}
    }

    /// What the layers above connect a source to (not tuning: ``SourceFactory`` and
    /// ``MediaLoader`` make it; a source opened directly has none).
    struct Wiring: Sendable {
        /// The directory's size limit, kept as bytes are written (``CacheConfiguration/maxBytes``).
        var budget: CacheBudget?
        /// Where fetches above preload priority are reported (a ``MediaLoader``'s, which makes
        /// its preloads wait for them).
        var activity: OriginActivity?
        /// The priority of this source's reads and fills: a preload's source reads at
        /// ``FetchPlanner/Priority/preload``, so its fetches make nothing wait.
        var readPriority = FetchPlanner.Priority.playing
    }
    let wiring: Wiring

    /// How the entry's description (length, validator) was settled when the source opened.
    public enum Freshness: Sendable, Equatable {
        /// The origin was asked and confirmed it (or the entry was started for it).
        case revalidated
        /// Within ``Options/maxAge`` of the last confirmation: the origin was not contacted.
        case fresh
        /// The origin could not be asked (`reason`): the entry is used as it is.
        case stale(reason: String)
    }

    /// The resources of `directory` that a source in this process has open: what eviction must
    /// spare (``CacheDirectory/evict(_:toAtMost:sparing:)``).
    public static func openResources(directory: String) async -> Set<String> {
        CacheRegistry.shared.openResources(directory: directory)
    }

    /// What this source did.
    public struct Statistics: Sendable, Hashable {
        public var upstreamReads = 0
        public var upstreamBytes: UInt64 = 0
        public var cachedBytesServed: UInt64 = 0
        /// Blocks found corrupt (bytes that no longer match their checksum) and fetched again.
        public var corruptBlocksRefetched = 0
        /// Bytes read from the data file only to check block checksums (a read smaller than
        /// its blocks reads the rest of them, once per block per process).
        public var checksumBytesRead: UInt64 = 0
        /// Commits of the entry's table by this process: each one a flush of the data file and
        /// a table write. Fetches that end close together are claimed in one
        /// (`CacheEntry.commitSpacing`).
        public var tableCommits = 0
    }

    /// The origin, as given.
    public let upstream: any ByteSource
    /// What fetches go to: the origin, checked against the entry's description before the
    /// first byte is taken when the entry was opened without asking it.
    let fetchSource: any ByteSource
    let entry: CacheEntry
    let totalLength: UInt64
    private let entryValidator: String?
    private let entryAttributes: ResourceAttributes
    public let options: Options
    /// The cache directory.
    private let directory: String
    /// How the entry was settled when this source opened.
    public let freshness: Freshness

    /// Opens (or creates) the entry for `upstream` in `directory`; `key` defaults to the
    /// upstream's name.
    ///
    /// An entry the origin confirmed less than ``Options/maxAge`` ago is used without
    /// contacting the origin (``Freshness/fresh``); otherwise the origin is asked for its
    /// length and validator and the entry emptied if they changed (``Freshness/revalidated``);
    /// when it cannot be asked and the entry holds bytes, the entry is used as it is
    /// (``Freshness/stale(reason:)``, with ``Options/servesStaleOnError``). Either way a fetch
    /// of a missing part first checks that the origin is still the entry's resource: a
    /// changed origin is never mixed into an entry.
    public convenience init(upstream: any ByteSource, directory: String, key: String? = nil, options: Options = Options()) async throws {
        try await self.init(upstream: upstream, directory: directory, key: key, options: options, wiring: Wiring())
    }

    /// A source as ``init(upstream:directory:key:options:)`` makes it, connected to `wiring`.
    init(upstream: any ByteSource, directory: String, key: String? = nil, options: Options, wiring: Wiring) async throws {
        self.upstream = upstream
        self.options = options
        self.wiring = wiring
        self.directory = directory
        try CacheFiles.makeDirectory(directory)
        let entry = try CacheRegistry.shared.entry(directory: directory, resource: key ?? upstream.name, policy: options.readAhead)
        self.entry = entry
        let stored = try await entry.storedDescription()
        for trap in await entry.takeTrapsRemoved() {
            options.warn?("\(trap); it was removed and the entry started again")
        }
        let now = Int64(Date().timeIntervalSince1970)
        do {
            // The origin's word, unless the entry is fresh or the origin cannot be asked (only the
            // origin's failure counts: an error of the cache itself is thrown as it is).
            var confirmed: (length: UInt64, validator: String?, attributes: ResourceAttributes)?
            var state = Freshness.fresh
            if let stored, let validated = stored.validatedAt, options.maxAge > 0, now >= validated, Double(now - validated) < options.maxAge {
                confirmed = nil
            } else {
                do {
                    confirmed = (try await upstream.length(), try await upstream.validator(), try await upstream.attributes())
                    state = .revalidated
                } catch let error as MP4Error where options.servesStaleOnError && error.cause != .sourceChanged && (stored?.presentBytes ?? 0) > 0 {
                    state = .stale(reason: error.message)
                }
            }
            if let confirmed {
                entryAttributes = try await entry.prepare(length: confirmed.length, validator: confirmed.validator, confirmedAt: now, attributes: confirmed.attributes)
                (totalLength, entryValidator, fetchSource) = (confirmed.length, confirmed.validator, upstream)
            } else if let stored {
                // Used without asking: the first fetch checks that the origin is still this resource.
                entryAttributes = try await entry.prepare(length: stored.length, validator: stored.validator, confirmedAt: nil)
                (totalLength, entryValidator) = (stored.length, stored.validator)
                fetchSource = CheckedOrigin(base: upstream, length: stored.length, validator: stored.validator)
            } else {
                throw MP4Error(.internalError, "cache entry for \(upstream.name) is neither confirmed nor stored")
            }
            freshness = state
        } catch {
            // A new entry that learnt nothing (the origin failed) or could not be written (a
            // full disk): no files left behind ("damaged 0/0" in `cache ls`).
            if stored == nil { await entry.discardIfNeverPrepared() }
            throw error
        }
    }

    /// The upstream (``WrappingSource``): its name and remoteness (a missing byte costs what
    /// reading it there costs) are this source's.
    public var base: any ByteSource { upstream }
    /// At most 16 KiB: a scan that hops from header to header reads this much at each (a
    /// `moof` of a few KiB), and every uncached byte of it is fetched from the origin (64 KiB
    /// windows made a 3 s preload of a fragmented film fetch 64 KiB at each of its 5 `moof`s).
    public var preferredReadSize: Int { min(upstream.preferredReadSize, 16 << 10) }
    public func length() async throws -> UInt64 { totalLength }
    /// The validator of the resource the entry holds (the origin's when it was confirmed).
    public func validator() async throws -> String? { entryValidator }
    /// The origin's `Content-Type` and `Last-Modified`, as it last confirmed them (recorded in
    /// the entry, so an entry served offline still has them).
    public func attributes() async throws -> ResourceAttributes { entryAttributes }

    /// What was served from where, for this entry (shared by all sources of the resource).
    public var statistics: Statistics { get async { await entry.statistics } }
    /// Bytes this process has fetched from the origin for the entry so far, those of fetches
    /// still running included (``Statistics/upstreamBytes`` counts ended fetches): what a
    /// progress line shows.
    public var bytesFetched: UInt64 { get async { await entry.bytesFetched } }

    /// Waits until the fetches running for the entry in this process have ended, so that
    /// ``statistics`` and the HTTP source's count them: a read or fill returns once its bytes
    /// are committed, which can be a moment before the fetch that carried them ends.
    public func fetchesEnded() async { await entry.fetchesEnded() }

    /// Ranges present in the cache.
    public var cachedRanges: ByteRangeSet { get async { await entry.present } }

    /// Marks this entry as preloaded and not yet played (``CacheDirectory/preloadShare``).
    func markPreloaded() async { CacheDirectory.markPreloaded(directory, resource: await entry.resource) }

    /// A player read this entry: it is watched, no longer a preload.
    func markPlayed() async { CacheDirectory.markPlayed(directory, resource: await entry.resource) }

    public func read(_ range: Range<UInt64>) async throws -> [UInt8] {
        try await read(whole: Request(range))
    }

    /// ``read(_:)`` as `request` says (a player's: it returns before the commit).
    func read(whole request: Request) async throws -> [UInt8] {
        let range = request.range
        let upper = min(range.upperBound, totalLength)
        guard range.lowerBound < upper else { return [] }
        // Wholly cached (the common case once a file has been played): one read, one check.
        if await entry.present.contains(range.lowerBound..<upper) {
            await entry.markUsed()
            // nil: blocks failed their checksums and were dropped; the stream fetches them again.
            if let bytes = try await entry.readCached(range.lowerBound..<upper) { return bytes }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Int(min(upper - range.lowerBound, 64 << 20)))  // the length is the server's word
        var whole = request
        whole.range = range.lowerBound..<upper
        try await stream(whole, as: .stream(windowed: false)) { bytes += $0 }
        return bytes
    }

    /// One read of the entry, and how it is carried out: what a player's read asks beyond its
    /// range is said here, by the caller, not set around it.
    struct Request: Sendable {
        var range: Range<UInt64>
        /// Returns once its bytes are handed on, not once the table claims them (their commits
        /// go on, batched with others): a player's next request on the same connection does not
        /// wait for a flush.
        var returnsBeforeCommit = false
        /// Fetches a first piece before windows, as a header read of a film walked ahead
        /// (``FetchPlanner/addReader(_:_:priority:startsShort:firstPiece:)``): the planner's
        /// first piece, and no more than this (a fragment's head; `.max` elsewhere). Nil: windows.
        var firstPiece: UInt64? = nil
        /// Where its bytes came from (the cache's data file, the origin) is counted here.
        var tally: ReadTally? = nil

        init(_ range: Range<UInt64>, returnsBeforeCommit: Bool = false, firstPiece: UInt64? = nil, tally: ReadTally? = nil) {
            (self.range, self.returnsBeforeCommit, self.firstPiece, self.tally) = (range, returnsBeforeCommit, firstPiece, tally)
        }
    }

    /// Streams `range` to `consume` as it becomes available: cached runs from the data file,
    /// missing runs as they arrive from upstream (written to the cache and handed on at once,
    /// not after the whole run is in). A read that finds a run already being
    /// fetched (another player's request for the same bytes) follows that fetch instead of
    /// starting its own: one upstream fetch per byte. Missing runs are fetched in windows
    /// (``ReadAheadPolicy/window``); when the reader leaves (the player closed the
    /// connection), the fetches that were only for it stop, keeping what arrived.
    public func read(_ range: Range<UInt64>, into consume: (ArraySlice<UInt8>) async throws -> Void) async throws {
        try await read(Request(range), into: consume)
    }

    /// ``read(_:into:)`` as `request` says.
    func read(_ request: Request, into consume: (ArraySlice<UInt8>) async throws -> Void) async throws {
        try await stream(request, as: .stream(windowed: true), into: consume)
    }

    /// Makes `range` present in the cache without reading it back: missing parts stream from
    /// upstream straight to the data file (over `http:` one request per missing part, memory
    /// bounded by the socket buffer), committed every ``Options/commitInterval`` bytes, so an
    /// interrupted fill keeps what arrived. Like a read, a fill follows fetches already
    /// running over its range (another reader's, a prefetch) instead of waiting for them to
    /// end, and a fill ahead of one that is far behind starts at its own position.
    public func fill(_ range: Range<UInt64>) async throws {
        try await stream(Request(range), as: .fill) { _ in }
    }

    /// Starts fetching the missing parts of `ranges` (a prefetch: what a player will ask for
    /// next) and returns without waiting. Parts already present or being fetched are left
    /// alone; neighbours closer than ``ReadAheadPolicy/bridgeGap`` go as one request; at most
    /// `maxRequests` requests start. The previous prefetch's fetches that no reader follows and
    /// `ranges` does not want stop (keeping what arrived): a new seek supersedes them.
    /// Returns the parts started.
    @discardableResult
    public func prefetch(_ ranges: [Range<UInt64>], maxRequests: Int = 8) async -> [Range<UInt64>] {
        let clamped = ranges.compactMap { range -> Range<UInt64>? in
            let upper = min(range.upperBound, totalLength)
            return range.lowerBound < upper ? range.lowerBound..<upper : nil
        }
        return await entry.prefetch(clamped, starter: starter, maxRequests: maxRequests)
    }

    /// How many 50 ms looks a read waits for bytes another process is fetching without any
    /// of them arriving (30 s) before it fetches them itself.
    static let patienceForOthers = 600

    /// The driver of every read and fill: a reader of the entry's planner, whose steps it
    /// carries out until the reader is at its end; the reader leaves however it ends.
    private func stream(_ request: Request, as kind: FetchPlanner.ReaderKind, into consume: (ArraySlice<UInt8>) async throws -> Void) async throws {
        let range = request.range
        let upper = min(range.upperBound, totalLength)
        guard range.lowerBound < upper else { return }
        let reader = await entry.addReader(kind, range.lowerBound..<upper, priority: wiring.readPriority, startsShort: request.firstPiece != nil, firstPiece: request.firstPiece)
        do {
            // What a read returned is in the table when it returns: the fetches it read to
            // their ends have committed (most long before). A player's read does not wait.
            let waits = !request.returnsBeforeCommit
            let followed = try await drive(reader, from: range.lowerBound, fills: kind == .fill, keepsFollowed: waits, tally: request.tally, into: consume)
            for task in followed { _ = try? await task.value }
            await entry.leave(reader)
        } catch let error as MP4Error where error.cause == .sourceChanged {
            await entry.leave(reader)
            await entry.originChanged()
            throw error
        } catch {
            await entry.leave(reader)
            throw error
        }
    }

    /// Where fetches this source starts read from, and how often they commit.
    var starter: CacheEntry.Starter { CacheEntry.Starter(origin: fetchSource, commitInterval: max(options.commitInterval, 1), budget: wiring.budget, activity: wiring.activity) }

    /// Carries out the reader's steps from `start`; the position it has got to is its own
    /// (handed to the entry with each step, not after each piece). With `keepsFollowed`,
    /// returns the fetches it read to their ends, whose commits may still be under way (the
    /// latest ``maxFollowedKept``; an older one is waited for as it is dropped, by then long
    /// committed).
    ///
    /// A step that reads a fetch to its end goes on at once: the next bytes are past that
    /// fetch, and the bytes it wrote are in the data file. Waiting there for its commit (a
    /// group commit every 10 ms or more, ``CacheEntry/commitSpacing``) held a player's
    /// `moov` 2 to 17 ms in each fragmented start, at every fetch it crossed.
    private func drive(_ reader: FetchPlanner.ReaderID, from start: UInt64, fills: Bool, keepsFollowed: Bool, tally: ReadTally?,
                       into consume: (ArraySlice<UInt8>) async throws -> Void) async throws -> [Task<Bool, any Error>] {
        let starter = starter
        var followed: [Task<Bool, any Error>] = []
        var position = start
        var waitedForOthers = 0
        var checksumsFailed = false
        while true {
            try Task.checkCancellation()   // a reader that went away starts nothing more
            switch await entry.next(reader, at: position, starter: starter, othersAllowed: waitedForOthers < Self.patienceForOthers) {
            case .done:
                return followed
            case .stalled:
                if fills, await entry.diskIsFull {
                    throw MP4Error(.io, "\(name): the cache cannot take more (the disk is full); nothing more can be cached now")
                }
                throw checksumsFailed
                    ? MP4Error(.io, "cache data file of \(name) fails its block checksums again after a fresh fetch")
                    : MP4Error(.io, "\(name): the cache entry was started again by another process during one \(fills ? "fill" : "read")")
            case .elsewhere(let offset):
                // Another process is fetching these bytes: what it commits reaches the table on
                // disk. Look again shortly; after a long wait without progress, fetch them here.
                try await Task.sleep(nanoseconds: 50_000_000)
                waitedForOthers = try await entry.reload(checking: offset) ? 0 : waitedForOthers + 1
            case .passThrough(let range):
                // The disk cannot take more: the bytes go from the origin to the reader only.
                DiskFullNotice.full(directory, because: await entry.fullReason, warn: options.warn)
                try await fetchSource.read(range) { piece in
                    tally?.fromOrigin(piece.count)
                    try await consume(piece)
                    position += UInt64(piece.count)
                }
            case .serve(let run):
                checksumsFailed = false
                if !fills {
                    // nil: corrupt blocks were dropped from the table; the next step fetches them.
                    guard let bytes = try await entry.readCached(run) else { checksumsFailed = true; continue }
                    tally?.fromCache(bytes.count)
                    try await consume(bytes[...])
                }
                position = run.upperBound
            case .follow(let fetch, let progress, let task, let through, let aheadAt, let patience):
                checksumsFailed = false
                if fills {
                    // Done with the run once the table claims it (or the fetch ended: failed,
                    // superseded, reset by another process; then look again).
                    let (committed, finished) = await progress.wait(committedThrough: through)
                    position = max(position, min(committed, through))
                    await entry.unfollow(reader, fetch, at: position)
                    if finished && committed < through { try await Self.failure(of: task) }
                } else {
                    position = try await follow(reader, fetch, progress, task, from: position, through: through, aheadAt: aheadAt, patience: patience,
                                               starter: starter, tally: tally, into: consume)
                    if keepsFollowed && position == progress.part.upperBound {
                        followed.append(task)
                        if followed.count > Self.maxFollowedKept { _ = try? await followed.removeFirst().value }
                    }
                }
            }
        }
    }

    /// Hands on the bytes of a running fetch from `start` up to `through`, as it writes them
    /// (read back from the data file, where they are in the page cache); returns where it got.
    private func follow(_ reader: FetchPlanner.ReaderID, _ fetch: FetchPlanner.FetchID, _ progress: FetchProgress, _ task: Task<Bool, any Error>,
                        from start: UInt64, through: UInt64, aheadAt: UInt64?, patience: Duration, starter: CacheEntry.Starter, tally: ReadTally?,
                        into consume: (ArraySlice<UInt8>) async throws -> Void) async throws -> UInt64 {
        var position = start
        var askedAhead = false
        while position < through {
            let (written, finished, stalled) = await progress.wait(beyond: position, patience: patience)
            if Task.isCancelled {
                // The reader went away while it waited (a player that left): leave now.
                await entry.unfollow(reader, fetch, at: position)
                throw CancellationError()
            }
            if written > position {
                let end = min(written, through, position + streamPieceSize)
                let bytes = try entry.readWritten(position..<end, by: progress)
                tally?.fromOrigin(bytes.count)
                try await consume(bytes[...])
                position = end
                if let aheadAt, !askedAhead, position >= aheadAt {
                    askedAhead = true
                    await entry.readAhead(reader, after: fetch, starter: starter)
                }
            } else if finished {
                try await Self.failure(of: task)   // the fetch's failure, if it failed
                break                              // reset by another process, or the disk is full: look again
            } else if stalled, await entry.followStalled(reader, fetch, at: position) {
                break                              // the server paused: the next step asks for the bytes anew
            }
        }
        await entry.unfollow(reader, fetch, at: position)
        return position
    }

    /// The fetches a read keeps, to wait for their commits when it ends.
    static let maxFollowedKept = 16

    /// Rethrows the failure of a fetch that ended, unless the disk was full or the planner
    /// stopped it while this reader followed it (the disk is full, the origin changed): the
    /// next step decides then (pass the bytes through, or find the change).
    private static func failure(of task: Task<Bool, any Error>) async throws {
        do {
            _ = try await task.value
        } catch where CacheEntry.isOutOfRoom(error) || (error is CancellationError && !Task.isCancelled) {
        }
    }

    /// Makes the next sources for `directory` reopen its entries from disk.
    public static func forgetOpenEntries(directory: String) async {
        CacheRegistry.shared.forget(directory: directory)
    }

    /// The file names of the entry for `resource` (for tools and tests).
    public static func entryPaths(directory: String, resource: String) -> (data: String, table: String, lock: String) {
        let key = String(FNV1a.hash(resource.utf8), radix: 16)
        let base = directory + "/" + key
        return (base + ".data", base + ".ranges", base + ".lock")
    }
}
