import Foundation
import Testing
@testable import MP4IO

/// "The cache cannot take more" is said once per episode: not per read, not each time a film
/// larger than the limit makes the cache fill, evict and fill again (a `serve` run under
/// `--max-size 1M` said it twice in one playback before the repeat interval).
@Suite struct DiskFullNoticeTests {
    @Test func saidOncePerEpisodeAndAgainOnlyAfterRoomAndTheInterval() {
        let directory = "/nonexistent/notice-\(UInt64.random(in: 0...UInt64.max))"
        let said = Locked<[String]>([])
        let warn: @Sendable (String) -> Void = { line in said.withLock { $0.append(line) } }
        let start = ContinuousClock.now
        DiskFullNotice.full(directory, warn: warn)
        DiskFullNotice.full(directory, warn: warn)
        #expect(said.withLock { $0.count } == 1, "a second refusal of one episode")
        DiskFullNotice.room(directory)
        DiskFullNotice.full(directory, now: start + .seconds(5), warn: warn)
        #expect(said.withLock { $0.count } == 1, "full again 5 s after it was said (eviction made room, then filled)")
        DiskFullNotice.full(directory, now: start + DiskFullNotice.repeatInterval + .seconds(1), warn: warn)
        #expect(said.withLock { $0.count } == 1, "no commit succeeded since: the same episode")
        DiskFullNotice.room(directory)
        DiskFullNotice.full(directory, because: "it is at its size limit", now: start + DiskFullNotice.repeatInterval + .seconds(2), warn: warn)
        #expect(said.withLock { $0.count } == 2, "room, then full after the interval: a new episode")
        #expect(said.withLock { $0.last?.contains("it is at its size limit") } == true)
        #expect(said.withLock { $0.allSatisfy { $0.contains(directory) } })
    }
}
