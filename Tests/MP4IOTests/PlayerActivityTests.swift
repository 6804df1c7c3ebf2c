import Foundation
import Testing
@testable import MP4IO

/// Preloads yield to players (issue 33 item 2): a preload's gate stays shut while a player
/// reads and for a short grace after, so that it does not slip in between a player's requests.
@Suite struct PlayerActivityTests {
    @Test func theGateOpensOnlyAfterTheLastReadAndTheGrace() async throws {
        let activity = PlayerActivity()
        #expect(!activity.isBusy)
        try await activity.waitUntilQuiet()   // nobody reads: at once
        activity.begin()
        activity.begin()
        activity.end()
        #expect(activity.isBusy, "one read still in flight")
        let opened = Locked<ContinuousClock.Instant?>(nil)
        let waiter = Task {
            try await activity.waitUntilQuiet()
            opened.withLock { $0 = .now }
        }
        try await Task.sleep(for: .milliseconds(400))
        #expect(opened.withLock { $0 } == nil, "the gate opened while a player read")
        let ended = ContinuousClock.now
        activity.end()
        try await waiter.value
        let waited = try #require(opened.withLock { $0 }) - ended
        #expect(waited >= PlayerActivity.grace, "opened \(waited) after the last read")
    }

    @Test func aCancelledWaitEnds() async throws {
        let activity = PlayerActivity()
        activity.begin()
        let waiter = Task { try await activity.waitUntilQuiet() }
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        activity.end()
    }
}
