import Foundation
import Testing
@testable import MP4IO
import MP4TestSupport

/// The preloads of one loader (``PreloadTable``): at most `limit` run at once, a second
/// preload of an origin joins the first, and background starts are bounded as one decision
/// (`_/preload`'s 429): requests that arrive together cannot each pass a check made before
/// the others have started.
@Suite(.hangGuard) struct PreloadTableTests {
    static let outcome = Preload.Outcome(seconds: 1, windowEnd: 1, ranges: [], fetchedBytes: 0, cachedBytes: 0)

    @Test func backgroundStartsAreBoundedAllOrNone() async throws {
        let table = PreloadTable(limit: 1)
        let started = Locked(0)
        let body: @Sendable (String) async throws -> Preload.Outcome = { _ in
            started.withLock { $0 += 1 }
            // Until cancelled, however long the test takes: a sleep of 60 s ended in CI's
            // AddressSanitizer suite before the test had looked (485 tests share two cores),
            // and the next preload started (2 started, 1 expected).
            while true { try await Task.sleep(for: .seconds(1)) }

        }
        #expect(await table.startAll(["a", "b"], maxPending: 3, body))
        #expect(await table.count == 2)
        #expect(!(await table.startAll(["c", "d"], maxPending: 3, body)), "4 pending would pass 3")
        #expect(await table.count == 2, "none of the refused were started")
        #expect(await table.startAll(["a", "c"], maxPending: 3, body), "a joins its preload: one new")
        #expect(await table.count == 3)
        // Many requests at once: together they never pass the bound.
        await withTaskGroup(of: Bool.self) { group in
            for i in 0..<20 { group.addTask { await table.startAll(["x\(i)"], maxPending: 8, body) } }
        }
        #expect(await table.count == 8)
        // One runs at a time (limit 1); the others wait their turn.
        for _ in 0..<100 where started.withLock({ $0 }) == 0 { try await Task.sleep(for: .milliseconds(10)) }
        try await Task.sleep(for: .milliseconds(100))
        #expect(started.withLock { $0 } == 1)
        for origin in ["a", "b", "c"] + (0..<20).map({ "x\($0)" }) { await table.cancel(origin) }
        #expect(await table.count == 0)
    }
}
