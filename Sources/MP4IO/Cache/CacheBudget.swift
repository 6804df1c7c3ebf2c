import Foundation
import MP4Core

/// The most a cache directory may occupy on disk (``CacheConfiguration/maxBytes``), kept as
/// bytes are written, not only by a timer: every write of a fetch first takes its bytes from
/// the budget. When they do not fit, least-recently-used entries that no reader in this
/// process is using are evicted to make room (down to 7/8 of the limit, so the next writes do
/// not evict again at once); when even that cannot make room (the entries being read fill the
/// limit), the write is refused and the entry passes bytes through from the origin without
/// caching them, as on a full disk (``FetchPlanner``), until it tries again.
///
/// One budget per directory per process (``for(_:limit:)``). What it counts: the blocks
/// written since the directory was last measured, plus that measure (the data files' allocated
/// blocks); each eviction pass measures again, and what was taken but not yet on the disk
/// while it measured, or taken meanwhile, is counted on top. Another process writing the same
/// directory is seen at the next pass.
///
/// (Counting bytes rather than blocks, and setting the count to the measure alone, let a
/// 1 MiB cache hold 1,114,112 bytes in CI: the writes of other fetches that had taken their
/// bytes but were not on the disk when a pass measured were forgotten, and a write's partial
/// blocks were not counted.)
final class CacheBudget: Sendable {
    /// A write refused: the cache is at its limit and every entry that could go is in use.
    struct Exhausted: Error, CustomStringConvertible {
        let directory: String, limit: UInt64
        /// Why nothing more is cached, as ``DiskFullNotice`` says it.
        var reason: String { "it is at its size limit of \(limit) bytes and every entry is in use" }
        var description: String { "the cache in \(directory) cannot take more: \(reason)" }
    }

    let directory: String
    private struct State {
        var limit: UInt64
        /// Bytes the directory occupies, as last measured plus what was taken since; `nil`
        /// until the first measure.
        var used: UInt64?
        /// When making room last failed: no new attempt for a second (each lists the directory).
        var failedAt: ContinuousClock.Instant?
        /// Writes taken so far, and the eviction loops waiting for the next
        /// (``waitForWrites(after:)``).
        var writes: UInt64 = 0
        /// Bytes taken in all (wrapping), and those taken whose writes have not ended
        /// (``landed(_:)``): a pass's measure adds both (``evict(toAtMost:)``).
        var taken: UInt64 = 0
        var inFlight: UInt64 = 0
        var writeWaiters: [(id: UInt64, continuation: CheckedContinuation<UInt64, Never>)] = []
        var nextWaiter: UInt64 = 0
    }
    private let state: Locked<State>
    private let evictions = Evictor()

    private init(directory: String, limit: UInt64) {
        self.directory = directory
        state = Locked(State(limit: limit))
    }

    /// The limit (the smallest asked for this directory in this process).
    var limit: UInt64 { state.withLock { $0.limit } }

    private static let budgets = Locked<[String: CacheBudget]>([:])

    /// The budget of `directory` in this process: one object, made with `limit` the first
    /// time and lowered to the smallest limit asked for after that (two loaders on one
    /// directory keep the stricter one, and count their bytes together).
    static func `for`(_ directory: String, limit: UInt64) -> CacheBudget {
        budgets.withLock { table in
            if let existing = table[directory] {
                existing.state.withLock { $0.limit = min($0.limit, limit) }
                return existing
            }
            let made = CacheBudget(directory: directory, limit: limit)
            table[directory] = made
            return made
        }
    }

    /// Forgets the budget of `directory` (the next one is made and measured afresh, as in a new
    /// process). For tests.
    static func forget(_ directory: String) { budgets.withLock { _ = $0.removeValue(forKey: directory) } }

    /// The allocation unit counted (4 KiB: ext4's, XFS's, APFS's and tmpfs's block).
    static let block: UInt64 = 4096

    /// What a write of `count` bytes at `offset` may add to the disk: the blocks it touches,
    /// less the one it shares with the write just before it when it `continues` that write
    /// (whose charge included it).
    static func charge(writing count: UInt64, at offset: UInt64, continues: Bool) -> UInt64 {
        guard count > 0 else { return 0 }
        let (end, overflow) = offset.addingReportingOverflow(count)
        guard !overflow, end <= UInt64.max - block else { return count }
        let upper = (end + block - 1) / block * block
        let lower = continues ? (offset + block - 1) / block * block : offset / block * block
        return upper > lower ? upper - lower : 0
    }

    /// Takes `count` bytes about to be written; false when they cannot fit even after
    /// evicting what may go. A write that was taken calls ``landed(_:)`` when it has ended.
    func take(_ count: UInt64) async -> Bool {
        if takeIfItFits(count) { return true }
        return await evictions.run { await self.makeRoom(for: count) }
    }

    private func takeIfItFits(_ count: UInt64) -> Bool {
        let (fits, waiters, writes) = state.withLock { state -> (Bool, [CheckedContinuation<UInt64, Never>], UInt64) in
            guard let used = state.used, used <= state.limit, count <= state.limit - used else { return (false, [], state.writes) }
            state.used = used + count
            state.taken &+= count
            state.inFlight += count
            state.writes += 1
            defer { state.writeWaiters = [] }
            return (true, state.writeWaiters.map(\.continuation), state.writes)
        }
        for waiter in waiters { waiter.resume(returning: writes) }
        return fits
    }

    /// A write of `count` taken bytes has ended (written, or failed): a measure from now on
    /// sees what of it is on the disk.
    func landed(_ count: UInt64) {
        state.withLock { $0.inFlight -= min($0.inFlight, count) }
    }

    /// Returns the number of writes taken once it is above `seen` (at once when it already is),
    /// or when the calling task is cancelled. A loader's eviction pass waits here between
    /// passes: an idle loader has no timer to wake it (a phone's energy; on Linux a pending
    /// sleep of any length wakes the process every second).
    func waitForWrites(after seen: UInt64) async -> UInt64 {
        let id = state.withLock { state -> UInt64 in state.nextWaiter += 1; return state.nextWaiter }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<UInt64, Never>) in
                let now = state.withLock { state -> UInt64? in
                    if state.writes > seen || Task.isCancelled { return state.writes }
                    state.writeWaiters.append((id, continuation))
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            let waiter = state.withLock { state -> (CheckedContinuation<UInt64, Never>, UInt64)? in
                guard let index = state.writeWaiters.firstIndex(where: { $0.id == id }) else { return nil }
                return (state.writeWaiters.remove(at: index).continuation, state.writes)
            }
            if let (continuation, count) = waiter { continuation.resume(returning: count) }
        }
    }

    /// One eviction pass to `target` (default: the limit), sparing the entries in use; the
    /// directory is measured afresh. Returns the entries removed.
    @discardableResult
    func evict(toAtMost target: UInt64? = nil) async -> [CacheDirectory.Entry] {
        let (takenBefore, inFlightBefore) = state.withLock { ($0.taken, $0.inFlight) }
        let busy = await CacheRegistry.shared.busyResources(directory: directory)
        let pass = try? CacheDirectory.evictCounting(directory, toAtMost: target ?? limit, sparing: busy)
        let removed = pass?.removed ?? []
        // Entries open here but idle hold their removed files open: they let them go.
        await CacheRegistry.shared.evicted(Set(removed.map(\.resource)), directory: directory)
        // A pass that failed midway is measured afresh.
        let measured = pass?.remaining ?? CacheDirectory.entries(directory).reduce(0) { $0 + $1.allocatedBytes }
        // Writes that were under way when the measure began, and those taken since, may not
        // be in it: counted on top (twice for some, until the next pass).
        // (Saturating: the measure is of files in a directory anyone may have written.)
        state.withLock { state in
            let (sum, overflow) = measured.addingReportingOverflow(inFlightBefore &+ (state.taken &- takenBefore))
            state.used = overflow ? UInt64.max : sum
        }
        return removed
    }

    private func makeRoom(for count: UInt64) async -> Bool {
        if takeIfItFits(count) { return true }   // another write made room meanwhile
        if state.withLock({ $0.used == nil }) {
            // Not measured yet: measure (evicting only what is over the limit), then look again;
            // a directory under its limit loses nothing to the first write.
            await evict()
            if takeIfItFits(count) { return true }
        }
        let now = ContinuousClock.now
        if let failedAt = state.withLock({ $0.failedAt }), now - failedAt < .seconds(1) { return false }
        let limit = self.limit, headroom = max(count, limit / 8)
        await evict(toAtMost: limit - min(limit, headroom))
        let fits = takeIfItFits(count)
        state.withLock { $0.failedAt = fits ? nil : ContinuousClock.now }
        return fits
    }

    /// Runs one room-making at a time (several fetches at the limit evict once): an actor
    /// alone would not, as the body suspends.
    private actor Evictor {
        private var busy = false
        private var waiting: [CheckedContinuation<Void, Never>] = []

        func run(_ body: @Sendable () async -> Bool) async -> Bool {
            if busy { await withCheckedContinuation { waiting.append($0) } }
            busy = true
            defer {
                if waiting.isEmpty { busy = false } else { waiting.removeFirst().resume() }
            }
            return await body()
        }
    }
}
