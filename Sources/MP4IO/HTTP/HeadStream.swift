import MP4Core

/// The first response's body as it arrives (bytes from 0, at most the head window), shared by
/// every reader of an ``HTTPByteSource``: a reader of the head gets each piece as it lands,
/// not after the whole window (on a phone's link the window took two round trips more than
/// its first bytes). The length and validators are known once the first piece is here.
final class HeadStream: Sendable {
    private struct State {
        var bytes: [UInt8] = []
        /// The response's body ended (done, failed, or there was none): no more bytes come.
        var ended = false
        /// Pieces have begun to arrive, or the stream ended: the response's head was checked.
        var described: Bool { !bytes.isEmpty || ended }
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter: UInt64 = 0
    }
    private let state = Locked(State())

    /// How many bytes have arrived.
    var count: Int { state.withLock { $0.bytes.count } }
    var hasEnded: Bool { state.withLock { $0.ended } }

    func append(_ piece: ArraySlice<UInt8>) {
        wake { $0.bytes.append(contentsOf: piece) }
    }

    /// No more bytes come (the response ended, failed, or was never made).
    func end() {
        wake { $0.ended = true }
    }

    private func wake(_ change: (inout State) -> Void) {
        let ready = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            change(&state)
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for continuation in ready { continuation.resume() }
    }

    /// Waits until `ready` holds or the stream changes, once (or the task is cancelled).
    private func waitOnce(unless ready: @escaping @Sendable (State) -> Bool) async {
        let id = state.withLock { state -> UInt64 in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if ready(state) || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let waiting = state.withLock { $0.waiters.removeValue(forKey: id) }
            waiting?.resume()
        }
    }

    /// Waits until the response's head has been checked (its first piece is here) or the
    /// stream ended.
    func waitDescribed() async {
        while !state.withLock({ $0.described }) && !Task.isCancelled { await waitOnce { $0.described } }
    }

    /// Hands `consume` the bytes of `offset..<end` as they arrive; returns where it got: `end`,
    /// or where the stream ended (the caller reads the rest another way).
    func deliver(from offset: UInt64, to end: UInt64, into consume: (ArraySlice<UInt8>) async throws -> Void) async throws -> UInt64 {
        var position = offset
        while position < end {
            let (piece, ended) = state.withLock { state -> ([UInt8], Bool) in
                let available = UInt64(state.bytes.count)
                guard position < available else { return ([], state.ended) }
                return (Array(state.bytes[Int(position)..<Int(min(available, end))]), state.ended)
            }
            if !piece.isEmpty {
                try await consume(piece[...])
                position += UInt64(piece.count)
                continue
            }
            if ended { break }
            try Task.checkCancellation()
            let wanted = position
            await waitOnce { $0.ended || UInt64($0.bytes.count) > wanted }
        }
        return position
    }
}
