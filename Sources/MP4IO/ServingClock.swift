import Foundation

/// The timers of serving (the server's look whether a client has gone, a reader's patience
/// with a fetch, the spacing of commits), kept by one thread of their own.
///
/// `Task.sleep` on Linux arms a dispatch timer through libdispatch's manager thread, and a
/// sleep that is cancelled still fires later: a player that opens a request per fragment
/// header (ffmpeg: 300 in a fraction of a second) woke three threads a request for timers that
/// were cancelled a millisecond after they were armed. Here a timer is an entry in a table: the
/// clock's thread is woken only when a new timer is due before the one it waits for, a
/// cancelled timer is taken out without a wake, and the thread sleeps until the earliest
/// timer left.
/// (`@unchecked Sendable`: its state is guarded by `condition`.)
final class ServingClock: @unchecked Sendable {
    static let shared = ServingClock()

    typealias TimerID = UInt64

    private let condition = NSCondition()
    private var timers: [TimerID: (deadline: ContinuousClock.Instant, action: @Sendable () -> Void)] = [:]
    private var nextID: TimerID = 0
    /// What the thread waits for now (nil: it waits for a timer to be added).
    private var waitingUntil: ContinuousClock.Instant?
    private var started = false

    /// Calls `action` on the clock's thread after `delay` (it must not wait), unless
    /// ``cancel(_:)`` comes first.
    @discardableResult
    func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> TimerID {
        let deadline = ContinuousClock.now + delay
        condition.lock()
        defer { condition.unlock() }
        nextID += 1
        timers[nextID] = (deadline, action)
        if !started {
            started = true
            let thread = Thread { [self] in run() }
            thread.name = "mp4probe.clock"
            thread.start()
        } else if waitingUntil.map({ deadline < $0 }) ?? true {
            condition.signal()
        }
        return nextID
    }

    /// Takes a timer out; returns whether it had not fired yet.
    @discardableResult
    func cancel(_ id: TimerID) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        return timers.removeValue(forKey: id) != nil
    }

    /// Sleeps for `duration`; throws `CancellationError` when the task is cancelled (at once,
    /// without waiting for the timer).
    func sleep(for duration: Duration) async throws {
        let state = Locked<(timer: TimerID?, continuation: CheckedContinuation<Void, Never>?, done: Bool)>((nil, nil, false))
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let fire: @Sendable () -> Void = {
                    let waiting = state.withLock { state -> CheckedContinuation<Void, Never>? in
                        guard !state.done else { return nil }
                        state.done = true
                        return state.continuation
                    }
                    waiting?.resume()
                }
                state.withLock { $0.continuation = continuation }
                let timer = schedule(after: duration, fire)
                state.withLock { $0.timer = timer }
                // Cancelled before the timer was in the table: the handler may have missed it.
                if Task.isCancelled {
                    cancel(timer)
                    fire()
                }
            }
        } onCancel: {
            let (timer, waiting) = state.withLock { state -> (TimerID?, CheckedContinuation<Void, Never>?) in
                guard !state.done, state.continuation != nil else { return (nil, nil) }   // the operation sees the cancellation
                state.done = true
                return (state.timer, state.continuation)
            }
            if let timer { cancel(timer) }
            waiting?.resume()
        }
        try Task.checkCancellation()
    }

    private func run() {
        condition.lock()
        while true {
            let now = ContinuousClock.now
            let due = timers.filter { $0.value.deadline <= now }
            for id in due.keys { timers[id] = nil }
            if !due.isEmpty {
                condition.unlock()
                for (_, timer) in due.sorted(by: { $0.value.deadline < $1.value.deadline }) { timer.action() }
                condition.lock()
                continue
            }
            waitingUntil = timers.values.map(\.deadline).min()
            if let until = waitingUntil {
                let left = until - now
                let seconds = Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18
                _ = condition.wait(until: Date(timeIntervalSinceNow: seconds))
            } else {
                condition.wait()
            }
        }
    }
}
