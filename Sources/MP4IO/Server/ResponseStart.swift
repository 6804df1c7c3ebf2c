/// Who writes a response's status line: the answer, or the server in its place when the
/// answer has not started within ``HTTPServer/Options/responseStartTimeout`` (504). Decided
/// once, under a lock, so the client never gets two status lines or a 504 after bytes.
final class ResponseStart: Sendable {
    private enum State { case waiting, started, expired }
    private let state = Locked(State.waiting)

    /// The answer is about to write its status line: true unless the deadline came first.
    func begin() -> Bool {
        state.withLock { state in
            guard state != .expired else { return false }
            state = .started
            return true
        }
    }

    /// The deadline: true when no answer has started (the server answers 504 instead).
    func expire() -> Bool {
        state.withLock { state in
            guard state == .waiting else { return false }
            state = .expired
            return true
        }
    }
}
