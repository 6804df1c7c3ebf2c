import Foundation
import Testing
@testable import MP4Core
@testable import MP4IO
import MP4TestSupport

/// Serving does not wait for Swift's shared cooperative pool: with every pool thread held by
/// busy tasks, the server, the caching proxy (opening, origin fetch, cache) and its faststart
/// view (movie load, prefetcher) still answer a player. CI's ASan suite had the in-process
/// servers answer nothing for 60 s while two long corpus tests held the pool's two threads.
@Suite(.serialized) struct ServingTaskTests {
    /// What `PoolHold.during` saw: the body's value, and whether it returned while the pool
    /// was still held (a probe task queued behind the busy ones had not yet run).
    struct Held<T: Sendable>: Sendable {
        var value: T
        var answeredWhileHeld: Bool
        var seconds: Double
    }

    /// Holds every thread of the cooperative pool with busy tasks while `body` runs (on the
    /// calling thread, which must not be one of the pool's), at most `limit` seconds.
    static func duringHeldPool<T: Sendable>(limit: Double = 10, _ body: () -> T) -> Held<T> {
        let released = Locked(false), probeRan = Locked(false)
        let deadline = Date().addingTimeInterval(limit)
        let width = ProcessInfo.processInfo.activeProcessorCount
        for _ in 0..<(width * 4) {
            Task.detached {
                while !released.withLock({ $0 }) && Date() < deadline {}
            }
        }
        usleep(200_000)
        Task.detached { probeRan.withLock { $0 = true } }
        let start = Date()
        let value = body()
        let seconds = Date().timeIntervalSince(start)
        let held = !probeRan.withLock { $0 }
        released.withLock { $0 = true }
        return Held(value: value, answeredWhileHeld: held, seconds: seconds)
    }

    static func get(_ port: Int, _ path: String) -> Int {
        (try? HTTPServerTests.blockingExchange(port, "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nRange: bytes=0-99\r\nConnection: close\r\n\r\n"))?.status ?? 0
    }

    @Test func theServerAnswersWhileThePoolIsHeld() async throws {
        let server = try HTTPServerTests.server()
        defer { server.stop() }
        let port = server.port
        let held = await Executables.offPool { Self.duringHeldPool { Self.get(port, "/x.mp4") } }
        #expect(held.value == 206)
        #expect(held.answeredWhileHeld, "answered only after the pool was let go (\(held.seconds) s)")
    }

    /// A new origin through the proxy (its opening, the origin's head, a fetch into the
    /// cache), plain and as the faststart view of a moov-at-end film (the movie load, the
    /// prefetcher, the moov-first wait).
    @Test(arguments: [false, true])
    func theProxyAnswersANewOriginWhileThePoolIsHeld(faststart: Bool) async throws {
        let film = try #require(FileSystem.read(Fixtures.sample("moov-at-end.mp4")))
        let origin = try #require(LoopbackHTTPServer(body: film, behavior: .keepsAlive))
        defer { origin.stop() }
        let (proxy, directory) = try CachingProxyTests.proxy()
        defer { proxy.stop(); FileSystem.removeDirectory(directory) }
        let url = try #require(URL(string: proxy.url(for: origin.url.absoluteString, faststart: faststart)))
        let port = try #require(url.port), path = url.path + "?" + (url.query ?? "")
        // Other code on the pool uses the cache meanwhile, as the other suites of a test run
        // do (an app's tasks would): what the proxy shares with it process-wide must not
        // run on the held pool (CacheRegistry was an actor, and a job of it queued there made
        // the proxy wait 10 s in two CI runs).
        let stop = Locked(false)
        for _ in 0..<4 {
            Task.detached {
                while !stop.withLock({ $0 }) {
                    _ = await CachedByteSource.openResources(directory: directory + "/elsewhere")
                    await Task.yield()
                }
            }
        }
        defer { stop.withLock { $0 = true } }
        let held = await Executables.offPool { Self.duringHeldPool { Self.get(port, path) } }
        #expect(held.value == 206)
        #expect(held.answeredWhileHeld, "answered only after the pool was let go (\(held.seconds) s)")
    }

    /// The walk ahead's fetches run on its own queue (`ServingTask.startSharing`, one queue a walked film): a
    /// fetch on a queue of its own cost two thread wake-ups a step. Only the fetch shares it
    /// (a task the fetch starts, as its commit, does not), only briefly waits there for a
    /// socket (until it has written its first bytes), and a task started outside a walk gets a
    /// queue of its own.
    @Test func aWalksFetchesShareItsQueueAndNothingElseDoes() async throws {
        guard #available(macOS 15.0, iOS 18.0, tvOS 18.0, watchOS 11.0, *) else { return }
        struct Seen: Sendable { var walk: Int?; var fetch: Int?; var fetchMayWait: Bool?; var afterFirstBytes: Bool?; var started: Int?; var startedShared: Int?; var plain: Int? }
        let walkQueue = ServingTask.SharedQueue()
        let seen = await ServingTask.startSharing(walkQueue) { () -> Seen in
            var seen = Seen(walk: QueueExecutor.current)
            let fetch = ServingTask.startThrowing(sharingCallersQueue: true) { () -> Seen in
                var inner = Seen(fetch: QueueExecutor.current, fetchMayWait: ServingTask.mayWaitBrieflyInline)
                ServingTask.endBriefInlineWaits()
                inner.afterFirstBytes = ServingTask.mayWaitBrieflyInline
                inner.started = await ServingTask.start { QueueExecutor.current }.value
                inner.startedShared = try await ServingTask.startThrowing(sharingCallersQueue: true) { QueueExecutor.current }.value
                return inner
            }
            let inner = (try? await fetch.value) ?? Seen()
            seen.fetch = inner.fetch; seen.fetchMayWait = inner.fetchMayWait; seen.afterFirstBytes = inner.afterFirstBytes
            seen.started = inner.started; seen.startedShared = inner.startedShared
            seen.plain = ServingTask.mayWaitBrieflyInline == nil ? 0 : 1
            return seen
        }.value
        let elsewhere = try await ServingTask.startThrowing(sharingCallersQueue: true) { QueueExecutor.current }.value
        let again = await ServingTask.startSharing(walkQueue) { QueueExecutor.current }.value
        #expect(again == seen.walk, "the film's next walker ran on another queue")
        #expect(seen.walk != nil && seen.fetch == seen.walk, "the fetch ran on queue \(String(describing: seen.fetch)), the walk on \(String(describing: seen.walk))")
        #expect(seen.fetchMayWait == true && seen.afterFirstBytes == false)
        #expect(seen.plain == 0, "the walk itself is not limited to brief waits")
        #expect(seen.started != nil && seen.started != seen.walk, "a task the fetch started shared the walk's queue")
        #expect(seen.startedShared != nil && seen.startedShared != seen.walk, "a fetch's own fetch shared the walk's queue")
        #expect(elsewhere != nil && elsewhere != seen.walk)
    }
}
