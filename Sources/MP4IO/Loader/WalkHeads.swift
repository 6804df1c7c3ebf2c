/// The fragment heads the walk ahead read from the origin itself (``Prefetcher``), held for
/// the player that reads them next, and the head it is reading now. A player's request at a
/// head's start gets the held bytes at once, or waits for the walk's read of that head
/// instead of asking the cache for it (which would fetch it a second time or follow a fetch
/// that does not exist yet); the cache gets every head too (``CachedByteSource/adopt(_:)``),
/// for the next start.
///
/// Measured before it existed (a 300-fragment film, ffmpeg's start through `serve`): heads
/// fetched through the cache cost about 150 µs and 3 thread switches a step against 45 µs
/// read directly, and on two cores the walk fell behind the player's own requests.
final class WalkHeads: Sendable {
    /// The most heads held (the walk's depth twice: those the player has not read yet and
    /// the ones it just read), and the most bytes (a head may be up to
    /// ``FragmentWalkAhead/maxHeadSpan``; most are 4 KiB): a proxy holds up to 64 open
    /// resources, so 128 MiB at most in all.
    static let maxHeads = 2 * FragmentWalkAhead.depth
    static let maxBytes = 2 << 20

    private struct Held {
        var start: UInt64
        var bytes: [UInt8]
        var range: Range<UInt64> { start..<(start + UInt64(bytes.count)) }
    }
    private struct State {
        /// Oldest first.
        var held: [Held] = []
        var heldBytes = 0
        var reading: UInt64?
        var waiters: [(id: UInt64, continuation: CheckedContinuation<Void, Never>)] = []
        var nextWaiter: UInt64 = 0
    }
    private let state = Locked(State())

    init() {}

    /// The walk is about to read the head that starts at `start`.
    func expect(_ start: UInt64) {
        state.withLock { $0.reading = start }
    }

    /// The walk read `bytes` at `start`: held (the oldest go past the bounds), and the players
    /// waiting for it go on.
    func landed(_ start: UInt64, _ bytes: [UInt8]) {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            if !bytes.isEmpty && bytes.count <= Self.maxBytes {
                state.held.removeAll { $0.start == start }
                state.held.append(Held(start: start, bytes: bytes))
                state.heldBytes = state.held.reduce(0) { $0 + $1.bytes.count }
                while state.held.count > Self.maxHeads || state.heldBytes > Self.maxBytes {
                    state.heldBytes -= state.held.removeFirst().bytes.count
                }
            }
            if state.reading == start { state.reading = nil }
            return Self.takeWaiters(&state)
        }
        for continuation in ready { continuation.resume() }
    }

    /// The walk does not read the head at `start` after all (it is cached, another fetch
    /// has it, the read failed) or, with nil, stops: players waiting for it go to the cache.
    func cancel(_ start: UInt64? = nil) {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard start == nil || state.reading == start else { return [] }
            state.reading = nil
            return Self.takeWaiters(&state)
        }
        for continuation in ready { continuation.resume() }
    }

    /// The held bytes from `offset` to the end of the held head it is in; when the walk is
    /// reading the head that starts at `offset`, after that read. Nil when no held head has
    /// `offset` (or the waiting task is cancelled).
    func bytes(from offset: UInt64) async -> ArraySlice<UInt8>? {
        while true {
            let (found, reading) = state.withLock { state in
                (state.held.last { $0.range.contains(offset) }.map { $0.bytes[Int(offset - $0.start)...] }, state.reading == offset)
            }
            if let found { return found }
            guard reading, !Task.isCancelled else { return nil }
            await wait(while: offset)
        }
    }

    private func wait(while offset: UInt64) async {
        let id = state.withLock { state -> UInt64 in state.nextWaiter += 1; return state.nextWaiter }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    guard state.reading == offset, !Task.isCancelled else { return true }
                    state.waiters.append((id, continuation))
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index).continuation
            }
            waiter?.resume()
        }
    }

    private static func takeWaiters(_ state: inout State) -> [CheckedContinuation<Void, Never>] {
        defer { state.waiters = [] }
        return state.waiters.map(\.continuation)
    }

    /// For tests: the starts of the heads held, oldest first.
    var heldStarts: [UInt64] { state.withLock { $0.held.map(\.start) } }
}
