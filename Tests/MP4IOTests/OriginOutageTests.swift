import Foundation
import Testing
@testable import MP4Core
@testable import MP4IO
import MP4TestSupport

/// ``OriginOutage``'s decisions: which failures are worth waiting for, how long between tries
/// and until when, and what a response may promise while the origin is gone.
@Suite struct OriginOutageTests {
    @Test func onlyAnUnreachableOriginIsWaitedFor() {
        #expect(OriginOutage.isWorthWaiting(MP4Error(.io, "connection refused").caused(by: .system(errno: 111))))
        #expect(OriginOutage.isWorthWaiting(MP4Error(.io, "HTTP 503 (gave up after 3 retries)")))
        #expect(!OriginOutage.isWorthWaiting(MP4Error(.io, "HTTP 404").caused(by: .refused(status: 404))))
        #expect(!OriginOutage.isWorthWaiting(MP4Error(.io, "changed").caused(by: .sourceChanged)))
        #expect(!OriginOutage.isWorthWaiting(MP4Error(.malformed, "not a box")))
        #expect(!OriginOutage.isWorthWaiting(CancellationError()))
    }

    @Test func triesAgainAfterGrowingDelaysUntilPatienceIsSpent() {
        var outage = OriginOutage(patience: 10)
        let start = ContinuousClock.now
        var now = start
        var delays: [Duration] = []
        while let delay = outage.delayAfterFailure(at: now) {
            delays.append(delay)
            now += delay
        }
        #expect(delays.prefix(5) == [.milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(2.5)], "\(delays)")
        #expect(now - start == .seconds(10), "gave up after \(now - start)")
        var impatient = OriginOutage(patience: 0)
        #expect(impatient.delayAfterFailure(at: .now) == nil)
    }

    @Test func aResponsePromisesOnlyTheCachedRunItStartsIn() {
        let cached: [Range<UInt64>] = [0..<749_254, 800_000..<900_000]
        #expect(OriginOutage.deliverable(0..<3_000_000, cached: cached) == 0..<749_254)
        #expect(OriginOutage.deliverable(100..<200, cached: cached) == 100..<200)
        #expect(OriginOutage.deliverable(850_000..<3_000_000, cached: cached) == 850_000..<900_000)
        // Starting in an uncached gap: promised whole (that read waits for the origin).
        #expect(OriginOutage.deliverable(749_254..<3_000_000, cached: cached) == 749_254..<3_000_000)
    }
}
