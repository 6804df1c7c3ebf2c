import Foundation
import MP4Core

/// The shared state of one cached resource in this process: its on-disk entry
/// (``EntryStore``), the decisions about its fetches (``FetchPlanner``) and the fetches
/// running (``OriginFetch``). It is the planner's driver: every decision is the planner's,
/// and this actor carries out its effects (claim range locks, start, shrink and stop fetches,
/// release locks) and reads the data file.
actor CacheEntry {
    typealias FetchID = FetchPlanner.FetchID
    typealias ReaderID = FetchPlanner.ReaderID

    let store: EntryStore
    private var planner: FetchPlanner
    /// The fetches running, and where each is reported as a player's or a prefetch's
    /// (``OriginActivity``: preloads wait for it).
    private var running: [FetchID: (task: Task<Bool, any Error>, progress: FetchProgress, reported: OriginActivity?, latencyReported: Bool)] = [:]
    private var upstreamReads = 0
    /// When a write last failed for want of space (the planner passes bytes through since).
    private var diskFullSince: ContinuousClock.Instant?
    /// How long after a write failed for want of space the entry tries to cache again.
    static let diskFullRetry: Duration = .seconds(10)
    private var upstreamBytes: UInt64 = 0

    /// The cache directory (for ``DiskFullNotice``).
    private let directory: String

    /// Traps found in place of the entry's files and removed since the last call
    /// (``CacheFiles``): each reported once.
    func takeTrapsRemoved() -> [String] { store.takeTrapsRemoved() }

    /// The data file's descriptor and path, and the resource's name, for reads off the actor.
    nonisolated let data: DataDescriptor
    nonisolated let dataPath: String
    nonisolated let resourceName: String

    init(directory: String, resource: String, policy: ReadAheadPolicy) throws {
        self.directory = directory
        store = try EntryStore(directory: directory, resource: resource)
        data = store.data
        dataPath = store.dataPath
        resourceName = resource
        planner = FetchPlanner(policy: policy, piece: streamPieceSize)
    }

    var resource: String { store.resource }
    /// Bytes fetched from the origin so far: the ended fetches' and what the running ones
    /// have written (not only what was committed), for a progress line.
    var bytesFetched: UInt64 {
        running.values.reduce(upstreamBytes) { $0 + ($1.progress.written - $1.progress.part.lowerBound) }
    }
    var present: ByteRangeSet { store.present }

    /// Waits until the fetches running now have ended: a reader is done when its bytes are
    /// committed, a little before the fetch that carried them has ended and been counted.
    func fetchesEnded() async {
        for fetch in running.values { _ = try? await fetch.task.value }
    }

    var statistics: CachedByteSource.Statistics {
        CachedByteSource.Statistics(upstreamReads: upstreamReads, upstreamBytes: upstreamBytes, cachedBytesServed: store.cachedBytesServed,
                                    corruptBlocksRefetched: store.corruptBlocksRefetched, checksumBytesRead: store.checksumBytesRead,
                                    tableCommits: store.tableCommits)
    }

    // MARK: The entry on disk

    func storedDescription() throws -> (length: UInt64, validator: String?, validatedAt: Int64?, presentBytes: UInt64)? {
        try store.storedDescription()
    }

    func prepare(length: UInt64, validator: String?, confirmedAt: Int64?, attributes: ResourceAttributes? = nil) throws -> ResourceAttributes {
        try store.prepare(length: length, validator: validator, confirmedAt: confirmedAt, attributes: attributes)
    }

    func markUsed() { store.markUsed() }

    /// Removes the entry's files when it was never prepared (the origin failed before it said
    /// what the resource is, or its table could not be written): no table. Such files are "damaged 0/0" in
    /// `cache ls` and hold a name for nothing.
    func discardIfNeverPrepared() { store.discardIfNeverPrepared() }

    func readCached(_ range: Range<UInt64>) throws -> [UInt8]? { try store.readCached(range) }

    func reload(checking offset: UInt64) throws -> Bool { try store.reload(checking: offset) }

    /// Bytes a running fetch has written to the data file (not necessarily committed yet),
    /// read back for the readers that follow it.
    /// Not on the actor: a commit's flushes there must not hold a player's bytes back.
    nonisolated func readWritten(_ range: Range<UInt64>, by progress: FetchProgress) throws -> [UInt8] {
        // The descriptor the fetch writes to must still be this entry's (not reopened since).
        guard progress.valid, let bytes = try data.read(through: progress.fd, offset: range.lowerBound, count: Int(range.count), path: dataPath) else {
            throw MP4Error(.io, "\(resourceName): the cache entry was started again during a read", offset: range.lowerBound)
        }
        guard bytes.count == Int(range.count) else {
            throw MP4Error(.io, "cache data file \(dataPath) is shorter than the bytes written to it", offset: range.lowerBound)
        }
        return bytes
    }

    /// Whether a reader, the prefetch or a fetch uses the entry now (eviction spares it).
    var isBusy: Bool { !running.isEmpty || planner.readers.keys.contains { $0 != FetchPlanner.prefetchReader } }

    /// Its files were removed (evicted): when idle, the entry starts again empty on disk now
    /// and closes the removed files' descriptors, so their blocks are freed at once rather
    /// than when the entry goes.
    func filesRemoved() {
        guard running.isEmpty else { return }
        _ = try? store.reload(checking: 0)
        store.closeRetiredDescriptors()
    }

    /// Whether nothing new is cached now (a write failed for want of space).
    var diskIsFull: Bool { planner.diskIsFull }

    /// Why nothing new is cached now, for ``DiskFullNotice``.
    private(set) var fullReason = "the disk is full"

    /// Whether `error` says the disk (or the user's quota) is full, or the cache at its size
    /// limit (``CacheBudget``).
    static func isOutOfRoom(_ error: any Error) -> Bool {
        if error is CacheBudget.Exhausted { return true }
        guard case .system(let code)? = (error as? MP4Error)?.cause else { return false }
        return code == ENOSPC || code == EDQUOT
    }

    /// The origin is no longer the entry's resource: the planner stops every fetch, and the
    /// entry forgets that the origin confirmed it (the next open asks).
    func originChanged() {
        planner.originChanged()
        apply()
        store.invalidateFreshness()
    }

    // MARK: Readers (the driver's side of the planner)

    /// What a reader does next, as the driver in ``CachedByteSource`` sees it.
    enum Next: Sendable {
        case serve(Range<UInt64>)
        /// Take the bytes of a fetch up to `through`; at `aheadAt`, call
        /// ``readAhead(_:after:starter:)``; when it writes nothing for `patience`, call
        /// ``followStalled(_:_:at:)``.
        case follow(FetchID, FetchProgress, Task<Bool, any Error>, through: UInt64, aheadAt: UInt64?, patience: Duration)
        /// Read this range from the origin and hand it on without caching it.
        case passThrough(Range<UInt64>)
        /// Another process is fetching the bytes at `position`: wait for its commits.
        case elsewhere(UInt64)
        case done
        case stalled
    }

    func addReader(_ kind: FetchPlanner.ReaderKind, _ range: Range<UInt64>, priority: FetchPlanner.Priority, startsShort: Bool = false, firstPiece: UInt64? = nil) -> ReaderID {
        store.markUsed()
        return planner.addReader(kind, range, priority: priority, startsShort: startsShort, firstPiece: firstPiece)
    }

    /// Where started fetches read from and how often they commit (each source of the entry
    /// passes its own: the origin, or the origin checked against the entry).
    struct Starter {
        var origin: any ByteSource
        var commitInterval: UInt64
        /// The directory's size limit, when it has one.
        var budget: CacheBudget?
        /// Told when a fetch above preload priority starts and ends.
        var activity: OriginActivity?
        /// Whether its fetches' commits may wait for ``maxCommitSpacing`` (the walk's heads,
        /// which the walk holds for the players meanwhile: ``adopt(_:)``).
        var patientCommits = false
    }

    /// The reader's next step from `position` (where the driver has got to): the planner's,
    /// with a claim carried out (and the fetch it starts) before it is returned.
    func next(_ reader: ReaderID, at position: UInt64, starter: Starter, othersAllowed: Bool) -> Next {
        planner.advanced(reader, to: position)
        refreshProgress()
        if let since = diskFullSince, ContinuousClock.now - since > Self.diskFullRetry {
            diskFullSince = nil
            planner.diskHasRoom()
        }
        let step = planner.next(reader, present: store.present)
        apply(starter)
        switch step {
        case .serve(let run): return .serve(run)
        case .passThrough(let range): return .passThrough(range)
        case .done: return .done
        case .stalled: return .stalled
        case .follow(let id, let through, let aheadAt): return follow(id, through: through, aheadAt: aheadAt)
        case .claim(let range):
            // Decided on the table as this process last read it: when another process has
            // committed since, decide again on the table as it is.
            if (try? store.refreshIfChanged()) == true { return next(reader, at: position, starter: starter, othersAllowed: othersAllowed) }
            let claim = store.claim(range, othersAllowed: othersAllowed)
            let followed = planner.claimed(claim?.0, for: reader, lockToken: claim?.lockToken ?? -1)
            apply(starter)
            guard case .follow(let id, let through, let aheadAt)? = followed else { return .elsewhere(range.lowerBound) }
            return follow(id, through: through, aheadAt: aheadAt)
        }
    }

    private func follow(_ id: FetchID, through: UInt64, aheadAt: UInt64?) -> Next {
        guard let fetch = running[id] else { return .stalled }
        return .follow(id, fetch.progress, fetch.task, through: through, aheadAt: aheadAt, patience: .seconds(planner.followPatience))
    }

    /// The fetch a reader follows wrote nothing for its patience: true when the reader stops
    /// following it (its next step starts a request at its position).
    func followStalled(_ reader: ReaderID, _ fetch: FetchID, at position: UInt64) -> Bool {
        guard let progress = running[fetch]?.progress else { return false }
        return planner.followStalled(fetch, by: reader, written: progress.written, at: position)
    }

    /// A windowed reader is half-way through the fetch it follows: the next window starts.
    func readAhead(_ reader: ReaderID, after fetch: FetchID, starter: Starter) {
        refreshProgress()
        _ = try? store.refreshIfChanged()
        guard let range = planner.readAhead(reader, after: fetch, present: store.present) else { return }
        let claim = store.claim(range, othersAllowed: true)
        planner.claimedAhead(claim?.0, for: reader, lockToken: claim?.lockToken ?? -1)
        apply(starter)
    }

    func unfollow(_ reader: ReaderID, _ fetch: FetchID, at position: UInt64) {
        refreshProgress()
        planner.unfollow(reader, fetch, at: position)
        apply()
    }

    /// The reader is gone: what it alone wanted stops.
    func leave(_ reader: ReaderID) {
        refreshProgress()
        planner.leave(reader)
        apply()
    }

    /// Starts fetches for the parts of `ranges` neither present nor being fetched (see
    /// ``FetchPlanner/prefetch(_:present:maxRequests:)``); returns the parts started.
    func prefetch(_ ranges: [Range<UInt64>], starter: Starter, maxRequests: Int) -> [Range<UInt64>] {
        refreshProgress()
        _ = try? store.refreshIfChanged()
        let parts = planner.prefetch(ranges, present: store.present, maxRequests: maxRequests)
        var started: [Range<UInt64>] = []
        for part in parts {
            guard let claim = store.claim(part, othersAllowed: true) else { continue }
            planner.claimedAhead(claim.0, for: FetchPlanner.prefetchReader, lockToken: claim.lockToken)
            started.append(claim.0)
        }
        apply(starter)
        return started
    }

    /// Where a fragment head the walk ahead is at is: cached whole, being written by a
    /// running fetch (its progress, to follow without a reader of the planner), or neither.
    enum HeadState: Sendable {
        case cached([UInt8])
        case fetching(FetchProgress)
        case absent
    }

    /// ``HeadState`` of `range`, in one call on the actor.
    func headState(_ range: Range<UInt64>) -> HeadState {
        refreshProgress()
        _ = try? store.refreshIfChanged()
        if store.present.contains(range), let bytes = try? store.readCached(range) { return .cached(bytes) }
        if let (id, _) = planner.runningFetch(covering: range.lowerBound), let progress = running[id]?.progress { return .fetching(progress) }
        // A fetch being stopped (its reader left: a player that read a head and went) still
        // holds what it wrote, and commits it.
        if let fetch = running.values.first(where: { $0.progress.part.contains(range.lowerBound) && $0.progress.written > range.lowerBound }) {
            return .fetching(fetch.progress)
        }
        return .absent
    }

    /// Takes each range, whose bytes the caller read from the origin itself and its starter's
    /// origin holds (``HeldBytes``), as a fetch of the prefetch: the parts neither present nor
    /// being fetched are claimed and fetched from those bytes, written and committed as any
    /// fetch (no fetch is stopped, as a prefetch stops the last one's). Returns the parts taken.
    @discardableResult
    func adopt(_ held: [(range: Range<UInt64>, starter: Starter)]) -> [Range<UInt64>] {
        refreshProgress()
        _ = try? store.refreshIfChanged()
        var taken: [Range<UInt64>] = []
        for (range, starter) in held {
            for part in planner.adoptable(range, present: store.present) {
                guard let claim = store.claim(part, othersAllowed: true) else { continue }
                planner.claimedAhead(claim.0, for: FetchPlanner.prefetchReader, lockToken: claim.lockToken)
                taken.append(claim.0)
            }
            apply(starter)
        }
        return taken
    }

    // MARK: Effects

    /// The planner's latest view of the progress of each fetch still writing. A fetch that
    /// has written its part waits only for its commit and nothing of it changes (its rate no
    /// longer matters): once the planner has its last byte it leaves ``writing``. The walk
    /// ahead keeps a few dozen such fetches, which every refresh went through (one for each
    /// step of every reader: 5 % of the proxy's CPU in a fragmented film's start).
    private func refreshProgress() {
        for id in writing {
            guard let fetch = running[id] else { writing.remove(id); continue }
            let written = fetch.progress.written
            let measures = fetch.progress.measures
            planner.progressed(id, written: written, bytesPerSecond: measures.bytesPerSecond)
            if let latency = measures.latency, !fetch.latencyReported {
                running[id]?.latencyReported = true
                planner.measuredLatency(latency)
            }
            if written >= fetch.progress.end { writing.remove(id) }
        }
    }
    /// The running fetches that have not written their part yet (``refreshProgress()``).
    private var writing: Set<FetchID> = []

    /// Carries out the planner's effects. Only calls that may start fetches pass a
    /// `starter`; a start without one (never decided) is dropped.
    private func apply(_ starter: Starter? = nil) {
        for effect in planner.takeEffects() {
            switch effect {
            case .start(let id, let range, let priority):
                guard let starter else { planner.ended(id); continue }
                start(id, range, starter)
                if priority > .preload { report(id, to: starter.activity) }
            case .raise(let id, let priority):
                if priority > .preload { report(id, to: starter?.activity) }
            case .stop(let id):
                running[id]?.task.cancel()
            case .shrink(let id, let offset):
                running[id]?.progress.shrink(to: offset)
            case .release(let token, let ranges):
                for range in ranges { EntryLocks.release(token, range) }
            }
        }
    }

    /// A player's or a prefetch's fetch makes the loader's preloads wait until it ends.
    private func report(_ id: FetchID, to activity: OriginActivity?) {
        guard let activity, running[id] != nil, running[id]?.reported == nil else { return }
        activity.started()
        running[id]?.reported = activity
    }

    private func start(_ id: FetchID, _ range: Range<UInt64>, _ starter: Starter) {
        let origin = starter.origin, commitInterval = starter.commitInterval, budget = starter.budget
        upstreamReads += 1
        let progress = FetchProgress(range, fd: store.dataFD)
        let generation = store.table.generation, fd = store.dataFD, path = store.dataPath, name = store.resource, patient = starter.patientCommits
        // Off the shared pool (ServingTask); it ends on the actor (below) right after the
        // fetch, and `running` has it by then (this method is on the actor).
        let task = ServingTask.startThrowing(sharingCallersQueue: true) { [self] in
            do {
                // The fetch owns its queue: its socket waits run there, with no thread switch.
                let result = try await SocketConnection.$waitsInlineInTask.withValue(true) { try await OriginFetch.run(range, from: origin, into: progress, dataPath: path, name: name, commitInterval: commitInterval, budget: budget) { written, hashes in
                    try await self.commitBatched(PendingCommit(range: written, hashes: hashes, fd: fd, generation: generation, path: path, patient: patient))
                } }
                await ended(id)
                return result
            } catch {
                await ended(id)
                if Self.isOutOfRoom(error) { await diskFull(error) }
                throw error
            }
        }
        running[id] = (task, progress, nil, false)
        writing.insert(id)
    }

    /// A write failed for want of space: the planner stops caching for a while.
    private func diskFull(_ error: any Error) {
        fullReason = (error as? CacheBudget.Exhausted)?.reason ?? "the disk is full"
        diskFullSince = ContinuousClock.now
        planner.diskFull()
        apply()
    }

    // MARK: Commits

    /// A fetch's written range, waiting to be claimed by the table.
    struct PendingCommit: Sendable {
        var range: Range<UInt64>
        var hashes: [UInt64: UInt64]
        var fd: Int32
        var generation: String?
        var path: String
        /// Whether it may wait for ``maxCommitSpacing`` (``Starter/patientCommits``).
        var patient = false
    }
    private var pendingCommits: [(commit: PendingCommit, continuation: CheckedContinuation<Bool, any Error>)] = []
    private var committing = false
    private var lastBatchAt: ContinuousClock.Instant?
    /// The time between two commits now: ``commitSpacing``, or ten times as long as the last
    /// table write held the actor (at most ``maxCommitSpacing``), so that commits hold the
    /// actor, where every reader of the entry goes, a tenth of the time at most. A table write
    /// flushes the file: 1 to 3 ms on this machine's virtual disk, where 10 ms commits held
    /// the walk ahead's steps (their 90th percentile went from 1.0 to 1.2-3.0 ms).
    private var spacing = commitSpacing
    /// The longest time between two commits of an entry: another process that reads bytes
    /// this one fetches waits for their commit.
    static let maxCommitSpacing: Duration = .milliseconds(100)
    /// The shortest time between two commits of the entry: commits asked for sooner wait and
    /// go together, one flush of the data file and one table write for all of them. A player
    /// that reads a fragmented film's headers one request each has its walk ahead fetch a
    /// small head every fraction of a millisecond; a commit each (two flushes, 0.3 ms each on
    /// this machine's disk, and the table written on the entry's actor, where the player's
    /// requests wait) cost more than the fetches. A fetch that commits less often than this
    /// (a long download, every ``CachedByteSource/Options/commitInterval`` bytes) never waits.
    static let commitSpacing: Duration = .milliseconds(10)

    /// Claims `commit.range` in the table, with the commits asked for meanwhile (group commit:
    /// ``commitSpacing``). False when the entry was started again by another process.
    private func commitBatched(_ commit: PendingCommit) async throws -> Bool {
        try await withCheckedThrowingContinuation { continuation in
            pendingCommits.append((commit, continuation))
            guard !committing else { return }
            committing = true
            ServingTask.start { [self] in await commitPending() }
        }
    }

    /// Commits what is pending, batch after batch, until nothing is: each batch flushes the
    /// data files its ranges were written through (off the actor: readers of the entry do not
    /// wait for it), then claims them all in one table write.
    private func commitPending() async {
        while !pendingCommits.isEmpty {
            if let last = lastBatchAt {
                // Commits nobody waits for wait for the longest spacing, looking again each
                // spacing whether another came: the walk ahead of a fragmented film's player
                // adopts a head every fraction of a millisecond, and each batch flushes the
                // data file and writes the table (a fifth of the walk's CPU with 10 ms batches).
                while pendingCommits.allSatisfy(\.commit.patient), ContinuousClock.now < last + Self.maxCommitSpacing {
                    try? await ServingClock.shared.sleep(for: min(spacing, last + Self.maxCommitSpacing - ContinuousClock.now))
                }
                if ContinuousClock.now < last + spacing {
                    try? await ServingClock.shared.sleep(for: last + spacing - ContinuousClock.now)
                }
            }
            let batch = pendingCommits
            pendingCommits = []
            var flushed: [Int32: any Error] = [:]
            for fd in Set(batch.map(\.commit.fd)) {
                let path = batch.first { $0.commit.fd == fd }?.commit.path ?? ""
                do {
                    try await ServingTask.offPool { try EntryStore.flushBeforeCommit(fd, path: path) }
                } catch {
                    flushed[fd] = error
                }
            }
            // One table write for each data file and generation (almost always one).
            var groups: [String: [Int]] = [:]
            for (index, pending) in batch.enumerated() where flushed[pending.commit.fd] == nil {
                groups["\(pending.commit.fd) \(pending.commit.generation ?? "")", default: []].append(index)
            }
            var outcome = [Result<Bool, any Error>?](repeating: nil, count: batch.count)
            for (index, pending) in batch.enumerated() {
                if let error = flushed[pending.commit.fd] { outcome[index] = .failure(error) }
            }
            let writing = ContinuousClock.now
            defer { spacing = min(Self.maxCommitSpacing, max(Self.commitSpacing, (ContinuousClock.now - writing) * 10)) }
            for indexes in groups.values {
                let first = batch[indexes[0]].commit
                let result = Result {
                    try store.commit(indexes.map { (batch[$0].commit.range, batch[$0].commit.hashes) }, writtenThrough: first.fd, generation: first.generation)
                }
                if case .success = result { DiskFullNotice.room(directory) }   // the disk took it: a later failure is said again
                for index in indexes { outcome[index] = result }
            }
            lastBatchAt = ContinuousClock.now
            for (index, pending) in batch.enumerated() {
                pending.continuation.resume(with: outcome[index] ?? .success(false))
            }
        }
        committing = false
    }

    /// A fetch ended: counted, forgotten, its locks released, its readers woken.
    private func ended(_ id: FetchID) {
        guard let fetch = running.removeValue(forKey: id) else { return }
        writing.remove(id)
        fetch.reported?.ended()
        upstreamBytes += fetch.progress.written - fetch.progress.part.lowerBound
        planner.ended(id)
        apply()
        fetch.progress.finish()
        // Descriptors of files evicted or reset meanwhile: no fetch writes or locks through them now.
        if running.isEmpty { store.closeRetiredDescriptors() }
    }
}
