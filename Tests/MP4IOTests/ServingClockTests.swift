import Foundation
import Testing
@testable import MP4IO

/// The serving timers' thread: timers fire in order and not before their time, a cancelled one
/// never fires, and a cancelled sleep returns at once.
@Suite struct ServingClockTests {
    @Test func timersFireInOrderAndCancelledOnesNever() async throws {
        let clock = ServingClock()
        let fired = Locked<[Int]>([])
        let started = ContinuousClock.now
        // Each at its time after `started`, however late this thread schedules it (CI's
        // AddressSanitizer suite held it long enough between two calls that the timer of 20 ms
        // came due after the one of 60: [0, 1, 2]). Hundreds of milliseconds apart: only a
        // hold of 600 ms between two calls lets the first fire before the others are in.
        for (index, milliseconds) in [600, 200, 400].enumerated() {
            clock.schedule(after: .milliseconds(milliseconds) - (ContinuousClock.now - started)) { fired.withLock { $0.append(index) } }
        }
        let cancelled = clock.schedule(after: .milliseconds(300)) { fired.withLock { $0.append(99) } }
        #expect(clock.cancel(cancelled))
        try await clock.sleep(for: .milliseconds(1_000))
        #expect(ContinuousClock.now - started >= .milliseconds(1_000))
        #expect(fired.withLock { $0 } == [1, 2, 0])
        #expect(!clock.cancel(cancelled), "a timer is cancelled once")
    }

    /// Run off the shared pool (`ServingTask`), which the suite's synchronous tests hold: the
    /// bound is on the clock, not on the pool.
    @Test func aCancelledSleepReturnsAtOnce() async throws {
        let clock = ServingClock()
        let (elapsed, threw) = await ServingTask.start { () -> (Duration, Bool) in
            let started = ContinuousClock.now
            let sleeper = ServingTask.startThrowing { try await clock.sleep(for: .seconds(30)) }
            try? await clock.sleep(for: .milliseconds(20))
            sleeper.cancel()
            let threw = (try? await sleeper.value) == nil
            return (ContinuousClock.now - started, threw)
        }.value
        #expect(threw && elapsed < .seconds(5), "\(elapsed)")
        let (elapsedAgain, threwAgain) = await ServingTask.start { () -> (Duration, Bool) in
            let started = ContinuousClock.now
            withUnsafeCurrentTask { $0?.cancel() }
            let threw = (try? await clock.sleep(for: .seconds(30))) == nil
            return (ContinuousClock.now - started, threw)
        }.value
        #expect(threwAgain && elapsedAgain < .seconds(5), "a sleep begun cancelled: \(elapsedAgain)")
    }
}
