import Foundation
import MP4Core

/// How far one fetch got, shared by the fetch (which advances it piece by piece) and the
/// readers that follow it (which wait for `written` to pass their position, then read those
/// bytes back from the data file, from the page cache). Keeping the latest 256 KiB in memory
/// for them instead was measured and not kept: in one run of serve-benchmark.sh on loopback, a
/// 256 MB uncached read took 977 ms with it and 726 ms without.
final class FetchProgress: Sendable {
    /// The range being fetched.
    let part: Range<UInt64>
    /// The data file descriptor the fetch writes to.
    let fd: Int32
    /// When the fetch was started.
    let startedAt = ContinuousClock.now
    static let rateWindow: Duration = .milliseconds(200)

    private typealias Waiter = (offset: UInt64, id: UInt64, continuation: CheckedContinuation<Void, Never>)
    private struct State {
        var written: UInt64
        var committed: UInt64
        var valid = true
        var end: UInt64
        var finished = false
        /// When the first byte was written.
        var firstByteAt: ContinuousClock.Instant?
        /// The rate is measured over windows of ``rateWindow``: where the current one began,
        /// and the rate of the last complete one. A server's first burst (nginx with
        /// `sendfile` writes a socket buffer's worth at once, then paces) says nothing of the
        /// rate after it.
        var window: (start: ContinuousClock.Instant, written: UInt64)?
        var lastWindowRate: Double?
        var waiters: [Waiter] = []
        var nextWaiter: UInt64 = 0
        var commitWaiters: [Waiter] = []
        /// Waiters whose patience ran out (taken out when their wait returns).
        var expired: Set<UInt64> = []
    }
    private let state: Locked<State>

    init(_ part: Range<UInt64>, fd: Int32) {
        self.part = part
        self.fd = fd
        state = Locked(State(written: part.lowerBound, committed: part.lowerBound, end: part.upperBound))
    }

    /// End of the bytes written to the data file.
    var written: UInt64 { state.withLock { $0.written } }
    /// End of the bytes the table claims.
    var committed: UInt64 { state.withLock { $0.committed } }
    /// Where the fetch stops: the end of its part, or earlier once another fetch took over.
    var end: UInt64 { state.withLock { $0.end } }
    /// False once a commit found the entry started again by another process.
    var valid: Bool { state.withLock { $0.valid } }

    /// Seconds from the start to the first byte (nil: none yet), and the bytes per second it
    /// delivers lately: over the current window once it is ``rateWindow`` long (a stall
    /// counts), else the last complete window's; nil for the first window after the first
    /// byte.
    var measures: (latency: Double?, bytesPerSecond: Double?) {
        state.withLock { state in
            guard let first = state.firstByteAt, let window = state.window else { return (nil, nil) }
            let latency = Self.seconds(first - startedAt)
            let span = ContinuousClock.now - window.start
            guard span >= Self.rateWindow else { return (latency, state.lastWindowRate) }
            return (latency, Double(state.written - window.written) / Self.seconds(span))
        }
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    /// The fetch wrote `count` more bytes: readers waiting for them wake.
    func wrote(_ count: Int) {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            let now = ContinuousClock.now
            if state.firstByteAt == nil { state.firstByteAt = now; state.window = (now, state.written) }
            if let current = state.window, now - current.start >= Self.rateWindow {
                state.lastWindowRate = Double(state.written - current.written) / Self.seconds(now - current.start)
                state.window = (now, state.written)
            }
            state.written += UInt64(count)
            let written = state.written
            let ready = state.waiters.filter { $0.offset < written }.map(\.continuation)
            state.waiters.removeAll { $0.offset < written }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }

    /// The table now claims the bytes up to `offset` (fills waiting for them wake), or, with
    /// `valid` false, the entry was started again by another process: nothing is claimed.
    func committed(through offset: UInt64, valid: Bool) {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.valid = state.valid && valid
            guard state.valid else { return [] }
            state.committed = max(state.committed, offset)
            let committed = state.committed
            let ready = state.commitWaiters.filter { $0.offset <= committed }.map(\.continuation)
            state.commitWaiters.removeAll { $0.offset <= committed }
            return ready
        }
        for continuation in ready { continuation.resume() }
    }

    /// Makes the fetch stop at `offset`, unless it has already written past it. At its own
    /// progress too: a stalled fetch is cut where a reader stands, and another fetch has the rest.
    func shrink(to offset: UInt64) {
        state.withLock { state in
            if state.written <= offset && offset < state.end { state.end = offset }
        }
    }

    /// Thrown inside the fetch's stream when it reached ``end``.
    struct ReachedEnd: Error {}

    /// The fetch ended (done, failed or cancelled): wakes every waiter.
    func finish() {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.finished = true
            defer { state.waiters = []; state.commitWaiters = [] }
            return state.waiters.map(\.continuation) + state.commitWaiters.map(\.continuation)
        }
        for continuation in ready { continuation.resume() }
    }

    /// Waits until the table claims the bytes up to `offset` or the fetch has ended, or the
    /// waiting task is cancelled (a fill whose caller went away: a cancelled preload).
    func wait(committedThrough offset: UInt64) async -> (committed: UInt64, finished: Bool) {
        await cancellableWait(newWaiterID(), ready: { $0.committed >= offset }) { $0.commitWaiters.append((offset, $1, $2)) }
        return state.withLock { ($0.committed, $0.finished) }
    }

    /// Waits until bytes past `offset` are written or the fetch has ended, or the waiting task
    /// is cancelled (its reader left: a player that went away while the origin was slow).
    func wait(beyond offset: UInt64) async -> (written: UInt64, finished: Bool) {
        await cancellableWait(newWaiterID(), ready: { $0.written > offset }) { $0.waiters.append((offset, $1, $2)) }
        return state.withLock { ($0.written, $0.finished) }
    }

    /// ``wait(beyond:)`` for at most `patience`; `stalled` when it gave up and the fetch wrote
    /// nothing at all meanwhile (a server that paces in bursts: nginx's `limit_rate` with
    /// `sendfile` sends a second's worth at once, then nothing for a second).
    func wait(beyond offset: UInt64, patience: Duration) async -> (written: UInt64, finished: Bool, stalled: Bool) {
        let before = written
        let id = newWaiterID()
        let timer = ServingClock.shared.schedule(after: patience) { [weak self] in
            self?.state.withLock { _ = $0.expired.insert(id) }
            self?.resumeWaiter(id)
        }
        await cancellableWait(id, ready: { $0.written > offset || $0.expired.contains(id) }) { $0.waiters.append((offset, $1, $2)) }
        ServingClock.shared.cancel(timer)
        return state.withLock { state in
            state.expired.remove(id)
            return (state.written, state.finished, !state.finished && state.written == before)
        }
    }

    private func newWaiterID() -> UInt64 {
        state.withLock { state in state.nextWaiter += 1; return state.nextWaiter }
    }

    /// Resumes waiter `id`, wherever it waits (nothing when it is no longer waiting).
    private func resumeWaiter(_ id: UInt64) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            if let index = state.waiters.firstIndex(where: { $0.id == id }) { return state.waiters.remove(at: index).continuation }
            if let index = state.commitWaiters.firstIndex(where: { $0.id == id }) { return state.commitWaiters.remove(at: index).continuation }
            return nil
        }
        waiter?.resume()
    }

    /// The one way both waits wait: at once when `ready`, the fetch ended or the task is
    /// cancelled; otherwise `enqueue` files the continuation under an id, which cancellation
    /// takes back out of either list and resumes.
    private func cancellableWait(_ id: UInt64, ready: (State) -> Bool, enqueue: (inout State, UInt64, CheckedContinuation<Void, Never>) -> Void) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if ready(state) || state.finished || Task.isCancelled { return true }
                    enqueue(&state, id, continuation)
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            resumeWaiter(id)
        }
    }
}

/// The executor of one fetch: streams `part` from the origin into the data file, committing
/// what arrived every `commitInterval` bytes, at the end, and when the stream fails (then
/// rethrows). It decides nothing: where it stops (``FetchProgress/end``) and whether it is
/// cancelled come from the planner, through its ``CacheEntry``.
///
/// Commits run behind the writes (``CommitQueue``): the fetch goes on receiving while the
/// data file is flushed and the table written for what came before. Waiting at each commit
/// stopped the transfer for each flush and for the entry's commit spacing (up to 100 ms
/// between two commits): a 1 GiB fill over HTTPS (64 commits of 16 MiB) took 2.28-3.51 s,
/// against 1.67-1.93 s with the commits behind (docs/cache.md).
enum OriginFetch {
    /// The most one write takes: what the size limit is taken in (``CacheBudget``), so a
    /// large piece from the origin is cached up to the limit, not refused whole.
    static let writeSize: UInt64 = 256 << 10

    /// Runs the fetch. `commit` claims a written range, with the checksums of the whole blocks
    /// (``CacheTable/blockSize``) this fetch wrote from their first byte, by block index (false:
    /// the entry was started again by another process; nothing more is claimed). Returns
    /// false in that case.
    static func run(_ part: Range<UInt64>, from origin: any ByteSource, into progress: FetchProgress, dataPath: String, name: String,
                    commitInterval: UInt64, budget: CacheBudget? = nil,
                    commit: @escaping @Sendable (Range<UInt64>, [UInt64: UInt64]) async throws -> Bool) async throws -> Bool {
        let fd = progress.fd
        let interval = max(commitInterval, 1)
        let hashes = Locked(BlockHashes(start: part.lowerBound))
        let commits = CommitQueue(from: progress.committed, commit: commit)
        var failure: (any Error)?
        do {
            try await origin.read(part, into: { @Sendable bytes in
                guard progress.valid, !Task.isCancelled else { throw CancellationError() }
                // Never past the part, whatever the origin sends.
                guard UInt64(bytes.count) <= part.upperBound - progress.written else {
                    throw MP4Error(.io, "\(name): upstream sent more than the \(part.count) bytes asked for at \(part.lowerBound)", offset: part.lowerBound)
                }
                // A piece may span several commit points (`--block` smaller than a piece), and
                // the fetch stops where a later fetch (a reader's seek ahead) took over.
                var rest = bytes.prefix(Int(min(UInt64(bytes.count), progress.end - min(progress.end, progress.written))))
                while !rest.isEmpty && progress.valid {
                    let written = progress.written, asked = commits.asked
                    let due = written - asked < interval ? interval - (written - asked) : writeSize
                    let chunk = rest.prefix(Int(min(UInt64(rest.count), due, writeSize)))
                    // Within the cache's size limit, or not at all (the reader passes bytes through).
                    // A fetch writes from its start on, each write where the one before ended.
                    let charge = CacheBudget.charge(writing: UInt64(chunk.count), at: written, continues: written > part.lowerBound)
                    if let budget, charge > 0, !(await budget.take(charge)) {
                        throw CacheBudget.Exhausted(directory: budget.directory, limit: budget.limit)
                    }
                    defer { if charge > 0 { budget?.landed(charge) } }
                    try EntryStore.writeFetched(chunk, to: fd, at: written, path: dataPath)
                    hashes.withLock { $0.wrote(chunk, at: written) }
                    progress.wrote(chunk.count)
                    ServingTask.endBriefInlineWaits()   // its readers go on now: the rest is waited for off their queue
                    rest = rest.dropFirst(chunk.count)
                    if progress.written - asked >= interval && commits.idle {
                        try commits.start(through: progress.written, hashes: hashes.withLock { $0.take() }, progress: progress)
                    }
                }
                if progress.written >= progress.end && progress.end < part.upperBound { throw FetchProgress.ReachedEnd() }
            })
            if progress.written != part.upperBound {
                failure = MP4Error(.io, "\(name): upstream returned \(progress.written - part.lowerBound) of \(part.count) bytes at \(part.lowerBound)", offset: part.lowerBound)
            }
        } catch is FetchProgress.ReachedEnd {
            // Stopped where another fetch begins: this one is complete.
        } catch {
            failure = error
        }
        // The commit still running ends first; then what arrived is claimed even when the
        // stream failed: the next read asks for the rest.
        do {
            try await commits.settle()
        } catch {
            failure = failure ?? error
        }
        let committed = progress.committed, written = progress.written
        if progress.valid && written > committed {
            do {
                let valid = try await commit(committed..<written, hashes.withLock { $0.take() })
                progress.committed(through: written, valid: valid)
            } catch {
                failure = failure ?? error
            }
        }
        guard progress.valid else { return false }
        if let failure { throw failure }
        return true
    }
}

/// A fetch's commits, one at a time, behind its writes: the fetch starts one when
/// ``OriginFetch/run`` finds one due (``start(through:hashes:progress:)``) and none running
/// (``idle``), and writes on meanwhile; a commit that ends tells the fetch's progress what it
/// claimed (or that the entry was started again). A commit due while another runs waits for
/// the next write after that one has ended, and then takes everything written since: commits
/// are as large as they need to be to keep up, never a reason to stop the transfer.
/// ``settle()`` waits for the last. Bytes are claimed only by a commit that ended, so a
/// reader or another process sees no more than before, a little later.
final class CommitQueue: Sendable {
    private let commit: @Sendable (Range<UInt64>, [UInt64: UInt64]) async throws -> Bool
    private struct State {
        /// Where the last commit started ends: the next one starts there.
        var asked: UInt64
        var busy = false
        var task: Task<Void, Never>?
        var failure: (any Error)?
    }
    private let state: Locked<State>

    init(from start: UInt64, commit: @escaping @Sendable (Range<UInt64>, [UInt64: UInt64]) async throws -> Bool) {
        self.commit = commit
        state = Locked(State(asked: start))
    }

    /// Where the last commit started ends.
    var asked: UInt64 { state.withLock { $0.asked } }
    /// Whether no commit runs now.
    var idle: Bool { state.withLock { !$0.busy } }

    /// Starts a commit of the bytes from ``asked`` to `through` (call when ``idle``); rethrows
    /// the failure of the commit before, if it failed.
    func start(through: UInt64, hashes: [UInt64: UInt64], progress: FetchProgress) throws {
        let start = try state.withLock { state -> UInt64? in
            if let failure = state.failure { state.failure = nil; throw failure }
            guard !state.busy, state.asked < through else { return nil }
            defer { state.asked = through }
            state.busy = true
            return state.asked
        }
        guard let start else { return }
        let commit = self.commit, state = self.state
        // On a queue of its own: the flush it waits for must not hold the fetch's queue.
        let task = ServingTask.start {
            do {
                progress.committed(through: through, valid: try await commit(start..<through, hashes))
            } catch {
                state.withLock { $0.failure = error }
            }
            state.withLock { $0.busy = false }
        }
        state.withLock { $0.task = task }
    }

    /// Waits for the commit running, if any; rethrows its failure.
    func settle() async throws {
        if let task = state.withLock({ $0.task }) { await task.value }
        try state.withLock { state in
            if let failure = state.failure { state.failure = nil; throw failure }
        }
    }
}

/// The checksums (``FNV1a/Words``) of the whole blocks one fetch writes, computed from the
/// bytes as they are written: a block is hashed only when the fetch wrote it from its first
/// byte, and handed to the commit that claims it, which then need not read it back.
struct BlockHashes {
    private var hasher: FNV1a.Words?
    private var done: [UInt64: UInt64] = [:]

    init(start: UInt64) {
        if start % CacheTable.blockSize == 0 { hasher = FNV1a.Words() }
    }

    /// `bytes` were written at `offset` (right after the previous piece).
    mutating func wrote(_ bytes: ArraySlice<UInt8>, at offset: UInt64) {
        var rest = bytes, position = offset
        while !rest.isEmpty {
            let blockEnd = (position / CacheTable.blockSize + 1) * CacheTable.blockSize
            let piece = rest.prefix(Int(min(UInt64(rest.count), blockEnd - position)))
            hasher?.update(piece)
            position += UInt64(piece.count)
            rest = rest.dropFirst(piece.count)
            if position == blockEnd {
                if let hasher { done[position / CacheTable.blockSize - 1] = hasher.value }
                hasher = FNV1a.Words()
            }
        }
    }

    /// The blocks completed since the last call.
    mutating func take() -> [UInt64: UInt64] {
        defer { done = [:] }
        return done
    }
}
