import Foundation
import Testing
@testable import MP4IO

/// Preloads yield to players (issue 33 item 2): the loader's player reads say when a preload
/// may fetch (no read in flight for a short grace after the last), and which origins have
/// been read since they were last preloaded (their entries are unmarked at that first read).
@Suite struct PlayerActivityTests {
    @Test func busyWhileAReadIsInFlightAndForTheGraceAfter() async throws {
        let activity = PlayerActivity()
        #expect(!activity.isBusy)
        _ = activity.begin("https://o/a.mp4")
        _ = activity.begin("https://o/a.mp4")
        activity.end()
        #expect(activity.isBusy, "one read still in flight")
        activity.end()
        let ended = ContinuousClock.now
        #expect(activity.isBusy, "within the grace")
        while activity.isBusy { try await Task.sleep(for: .milliseconds(10)) }
        #expect(ContinuousClock.now - ended >= PlayerActivity.grace)
    }

    @Test func theFirstReadSinceAPreloadIsSaidOnce() {
        let activity = PlayerActivity()
        #expect(activity.begin("https://o/a.mp4"), "the first read since the loader started")
        #expect(!activity.begin("https://o/a.mp4"))
        #expect(activity.begin("https://o/b.mp4"))
        activity.preloading("https://o/a.mp4")
        #expect(activity.begin("https://o/a.mp4"), "preloaded again: its next read unmarks it again")
        #expect(!activity.begin("https://o/b.mp4"))
    }
}
