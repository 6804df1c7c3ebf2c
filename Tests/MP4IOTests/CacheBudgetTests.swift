import Foundation
import Testing
@testable import MP4Core
@testable import MP4IO
import MP4TestSupport

/// The cache's size limit kept as bytes are written (issue 32 item 1): `--max-size 15M` did
/// not stop a 20 MiB disk from filling, because eviction only ran every 10 s and never
/// removed an entry the loader still had open.
@Suite(.serialized) struct CacheBudgetTests {
    static let body: [UInt8] = (0..<1_000_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) }

    static func options(_ directory: String, limit: UInt64, warn: (@Sendable (String) -> Void)? = nil) -> CachedByteSource.Options {
        var options = CachedByteSource.Options()
        options.warn = warn
        return options
    }

    static func wiring(_ directory: String, limit: UInt64) -> CachedByteSource.Wiring {
        CachedByteSource.Wiring(budget: CacheBudget.for(directory, limit: limit))
    }

    static func allocated(_ directory: String) -> UInt64 {
        CacheDirectory.entries(directory).reduce(0) { $0 + $1.allocatedBytes }
    }

    /// Fills entries `keys` (1 MB each) one after the other and lets their sources go.
    static func fill(_ keys: [String], _ directory: String, limit: UInt64, body: [UInt8] = body) async throws {
        for key in keys {
            let source = try await CachedByteSource(upstream: FlakyUpstream(body, seed: 1), directory: directory, key: key, options: options(directory, limit: limit), wiring: wiring(directory, limit: limit))
            #expect(try await source.read(0..<UInt64(body.count)) == body)
            try await Task.sleep(for: .milliseconds(20))   // distinct last-use times
        }
    }

    @Test func aWriteThatNeedsRoomEvictsTheLeastRecentlyUsedEntriesAtOnce() async throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-budget")
        defer { FileSystem.removeDirectory(directory) }
        let limit: UInt64 = 2_500_000
        try await Self.fill(["oldest", "older", "newest"], directory, limit: limit)
        // No eviction pass ran: the third entry's writes made room by evicting the oldest.
        #expect(CacheDirectory.entries(directory).map(\.resource) == ["newest", "older"])
        #expect(Self.allocated(directory) <= limit, "\(Self.allocated(directory))")
        let newest = try #require(CacheDirectory.entries(directory).first)
        #expect(newest.isComplete)
    }

    @Test func aReadLargerThanTheLimitPassesThroughAndTheLimitHolds() async throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-budget")
        defer { FileSystem.removeDirectory(directory) }
        let limit: UInt64 = 600_000
        let big = Array((0..<3).map { _ in Self.body }.joined())
        let said = Locked<[String]>([])
        let source = try await CachedByteSource(upstream: FlakyUpstream(big, seed: 2), directory: directory, key: "film",
                                                options: Self.options(directory, limit: limit) { message in said.withLock { $0.append(message) } },
                                                wiring: Self.wiring(directory, limit: limit))
        var received: [UInt8] = []
        var peak: UInt64 = 0
        try await source.read(0..<UInt64(big.count)) { piece in
            received += piece
            peak = max(peak, Self.allocated(directory))
        }
        #expect(received == big, "every byte reached the reader, cached or passed through")
        #expect(peak <= limit, "the directory held \(peak) bytes while the read ran")
        #expect(await source.cachedRanges.byteCount > 0, "what fitted was cached")
        let messages = said.withLock { $0 }
        #expect(messages.count == 1 && messages[0].contains("size limit"), "\(messages)")
    }

    /// A loader keeps the resources it served open (64 of them): an entry open but not being
    /// read is evicted like any other, and the blocks its descriptors held are freed at once.
    @Test func anOpenButIdleEntryIsEvictedAndItsBlocksFreed() async throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-budget")
        defer { FileSystem.removeDirectory(directory) }
        let limit: UInt64 = 1_500_000
        let upstream = FlakyUpstream(Self.body, seed: 3)
        let kept = try await CachedByteSource(upstream: upstream, directory: directory, key: "kept-open", options: Self.options(directory, limit: limit), wiring: Self.wiring(directory, limit: limit))
        #expect(try await kept.read(0..<UInt64(Self.body.count)) == Self.body)
        try await Self.fill(["next"], directory, limit: limit)
        #expect(!CacheDirectory.entries(directory).contains { $0.resource == "kept-open" && $0.cachedBytes > 0 }, "the idle open entry was evicted")
        #expect(Self.allocated(directory) <= limit)
        if FileSystem.isDirectory("/proc/self/fd") {
            let held = FileSystem.list("/proc/self/fd").compactMap { try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0) }
            #expect(!held.contains { $0.hasPrefix(directory) && $0.hasSuffix("(deleted)") }, "\(held.filter { $0.hasPrefix(directory) })")
        }
        // Still usable: it starts again empty and fetches what it is asked for.
        #expect(try await kept.read(0..<1000) == Array(Self.body[0..<1000]))
    }

    /// The first write of a process measures the directory before it evicts: a directory
    /// under its limit loses nothing (it used to be evicted down to 7/8 of the limit at once).
    @Test func theFirstWriteEvictsNothingUnderTheLimit() async throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-budget")
        defer { FileSystem.removeDirectory(directory) }
        let limit: UInt64 = 3_300_000
        try await Self.fill(["a", "b", "c"], directory, limit: limit)   // about 3.01 MB: above 7/8 of the limit
        // A new process (its budget not measured yet) writes 200 KB: 3.21 MB still fits.
        CacheBudget.forget(directory)
        try await Self.fill(["small"], directory, limit: limit, body: Array(Self.body.prefix(200_000)))
        #expect(Set(CacheDirectory.entries(directory).map(\.resource)) == ["a", "b", "c", "small"])
    }

    /// A pass that measures the directory while another fetch's write is under way (taken, not
    /// yet on the disk) keeps counting that write: CI's 1 MiB cache held 1,114,112 bytes when
    /// a pass set the count to its measure alone (`CacheFullDiskTests`).
    @Test func aMeasureKeepsCountingTheWritesUnderWay() async throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-budget")
        defer { FileSystem.removeDirectory(directory) }
        CacheBudget.forget(directory)
        defer { CacheBudget.forget(directory) }
        let budget = CacheBudget.for(directory, limit: 1_000_000)
        #expect(await budget.take(600_000), "a write under way")
        await budget.evict()   // a pass measures the empty directory meanwhile
        #expect(!(await budget.take(600_000)), "1.2 MB would be under way in a 1 MB cache")
        budget.landed(600_000)
        await budget.evict()   // the write failed: nothing of it is on the disk
        #expect(await budget.take(600_000))
    }

    /// A write is charged the blocks it touches, less the one the write before it in the same
    /// fetch already paid for.
    @Test func writesAreChargedWholeBlocks() {
        #expect(CacheBudget.charge(writing: 1, at: 4095, continues: false) == 4096)
        #expect(CacheBudget.charge(writing: 2, at: 4095, continues: false) == 8192)
        #expect(CacheBudget.charge(writing: 2, at: 4095, continues: true) == 4096)
        #expect(CacheBudget.charge(writing: 1, at: 4095, continues: true) == 0)
        #expect(CacheBudget.charge(writing: 16_384, at: 0, continues: false) == 16_384)
        #expect(CacheBudget.charge(writing: 16_384, at: 100, continues: false) == 20_480)
        #expect(CacheBudget.charge(writing: 0, at: 100, continues: false) == 0)
        #expect(CacheBudget.charge(writing: 10, at: UInt64.max - 5, continues: false) == 10, "no trap near the top")
        // A fetch written in pieces of odd sizes is charged its blocks once.
        var offset: UInt64 = 1234, charged: UInt64 = 0, first = true
        for size: UInt64 in [5000, 7, 16_384, 1, 65_536, 3333] {
            charged += CacheBudget.charge(writing: size, at: offset, continues: !first)
            offset += size
            first = false
        }
        #expect(charged == (offset + 4095) / 4096 * 4096 - 1234 / 4096 * 4096)
    }

    /// Two loaders on one directory share one budget, at the stricter limit.
    @Test func oneBudgetPerDirectoryAtTheSmallestLimit() {
        let directory = "/nonexistent/mp4probe-budget-" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
        let first = CacheBudget.for(directory, limit: 2_000_000)
        let second = CacheBudget.for(directory, limit: 1_000_000)
        let third = CacheBudget.for(directory, limit: 3_000_000)
        #expect(first === second && second === third)
        #expect(first.limit == 1_000_000)
    }
}
