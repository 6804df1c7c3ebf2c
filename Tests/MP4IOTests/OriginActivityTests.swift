import Foundation
import Testing
@testable import MP4IO
import MP4TestSupport

/// Preloads yield to players and prefetches (issue 33 item 2): fetches above preload priority
/// say when a preload may fetch (none running for a short grace after the last), and the
/// origins read since they were last preloaded are remembered (their entries are unmarked at
/// that first read).
@Suite(.hangGuard) struct OriginActivityTests {
    @Test func busyWhileAFetchRunsAndForTheGraceAfter() async throws {
        let activity = OriginActivity()
        #expect(!activity.isBusy)
        activity.started()
        activity.started()
        activity.ended()
        #expect(activity.isBusy, "one fetch still running")
        activity.ended()
        let ended = ContinuousClock.now
        #expect(activity.isBusy, "within the grace")
        while activity.isBusy { try await Task.sleep(for: .milliseconds(10)) }
        #expect(ContinuousClock.now - ended >= OriginActivity.grace)
    }

    @Test func theFirstReadSinceAPreloadIsSaidOnce() {
        let played = PlayedOrigins()
        #expect(played.firstRead("https://o/a.mp4"), "the first read since the loader started")
        #expect(!played.firstRead("https://o/a.mp4"))
        #expect(played.firstRead("https://o/b.mp4"))
        played.preloading("https://o/a.mp4")
        #expect(played.firstRead("https://o/a.mp4"), "preloaded again: its next read unmarks it again")
        #expect(!played.firstRead("https://o/b.mp4"))
    }

    /// The entry reports what the planner says: a preload's fetch makes nothing wait; a
    /// player's fetch does, and so does a preload's fetch once a player follows it.
    @Test func theEntryReportsFetchesAbovePreloadPriority() async throws {
        let size = 2 << 20
        var random = SeededRandom(seed: 35)
        let upstream = PacedUpstream(random.bytes(size))
        let directory = FileSystem.temporaryDirectory("mp4probe-origin-activity")
        defer { FileSystem.removeDirectory(directory) }
        let activity = OriginActivity()
        let options = CachedByteSource.Options()
        let preload = try await CachedByteSource(upstream: upstream, directory: directory, options: options, wiring: .init(activity: activity, readPriority: .preload))
        let player = try await CachedByteSource(upstream: upstream, directory: directory, options: options, wiring: .init(activity: activity, readPriority: .playing))

        upstream.hold(requestsFrom: 0, at: 256 << 10)
        let filling = ServingTask.startThrowing { try await preload.fill(0..<UInt64(1 << 20)) }
        while upstream.sent < 256 << 10 { try await Task.sleep(for: .milliseconds(10)) }
        #expect(!activity.isBusy, "a preload's fetch made preloads wait")

        // A player follows the preload's fetch: it is the player's now.
        let following = ServingTask.startThrowing { try await player.read(UInt64(200 << 10)..<UInt64(300 << 10)).count }
        for _ in 0..<500 where !activity.isBusy { try await Task.sleep(for: .milliseconds(10)) }
        #expect(activity.isBusy, "a player following the preload's fetch did not count")
        upstream.release()
        #expect(try await following.value == 100 << 10)
        try await filling.value
        while activity.isBusy { try await Task.sleep(for: .milliseconds(10)) }

        // A player's own fetch counts while it runs.
        upstream.hold(requestsFrom: 1 << 20, at: UInt64(1 << 20) + (64 << 10))
        let sentBefore = upstream.sent
        let reading = ServingTask.startThrowing { try await player.read(UInt64(1 << 20)..<UInt64(size)).count }
        while upstream.sent < sentBefore + (64 << 10) { try await Task.sleep(for: .milliseconds(10)) }
        #expect(activity.isBusy, "a player's fetch did not count")
        upstream.release()
        #expect(try await reading.value == 1 << 20)
    }
}
