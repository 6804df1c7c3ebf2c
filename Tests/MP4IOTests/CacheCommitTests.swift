import Foundation
import Testing
import MP4Core
@testable import MP4IO
import MP4TestSupport

/// Commits of a cache entry's table: fetches that end close together are claimed in one
/// (one flush of the data file and one table write), and what they claim is on disk.
@Suite struct CacheCommitTests {
    /// Forty small fetches ending together (a fragmented film's heads walked ahead of a player)
    /// are claimed in a few commits, not forty; every byte is claimed, in this process and on
    /// disk.
    @Test func fetchesEndingTogetherShareACommit() async throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-group-commit")
        defer { FileSystem.removeDirectory(directory) }
        let body = (0..<(4 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }
        let source = try await CachedByteSource(upstream: FlakyUpstream(body, seed: 1), directory: directory, key: "film")
        let heads = (0..<40).map { UInt64($0) * (100 << 10) }.map { $0..<($0 + (16 << 10)) }
        let started = await source.prefetch(heads, maxRequests: 40)
        #expect(started.count == 40)
        await source.fetchesEnded()
        let commits = await source.statistics.tableCommits
        #expect(commits >= 1 && commits < 10, "\(commits) commits for 40 fetches")
        let present = await source.cachedRanges
        #expect(heads.allSatisfy { present.contains($0) })

        await CachedByteSource.forgetOpenEntries(directory: directory)
        let reopened = try await CachedByteSource(upstream: FlakyUpstream(body, seed: 1), directory: directory, key: "film")
        let onDisk = await reopened.cachedRanges
        #expect(heads.allSatisfy { onDisk.contains($0) }, "the claims are in the table on disk")
        #expect(try await reopened.read(heads[7]) == Array(body[Int(heads[7].lowerBound)..<Int(heads[7].upperBound)]))
        #expect(await reopened.statistics.upstreamReads == 0)
    }

    /// Commits hold the entry's actor a tenth of the time at most: with table writes made slow
    /// (20 ms a flush), fetches ending every 10 ms are claimed in a handful of commits (spaced
    /// ten times a write, at most 100 ms), not one every 30 ms (the fixed 10 ms spacing:
    /// 12 or more in 0.4 s). Off the shared pool, and bounded by the time it took: a loaded
    /// run spreads the fetches out.
    @Test func slowTableWritesAreSpacedFurther() async throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-commit-spacing")
        defer { FileSystem.removeDirectory(directory) }
        let body = (0..<(4 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }
        let source = try await CachedByteSource(upstream: FlakyUpstream(body, seed: 1), directory: directory, key: "film")
        Platform.beforeSync.withLock { hooks in
            hooks[directory] = { path, _ in if path.hasPrefix(directory), path.contains(".ranges.") { Thread.sleep(forTimeInterval: 0.02) } }
        }
        defer { Platform.beforeSync.withLock { $0[directory] = nil } }
        let heads = (0..<40).map { UInt64($0) * (100 << 10) }.map { $0..<($0 + (16 << 10)) }
        let seconds = try await ServingTask.startThrowing { () -> Double in
            let started = ContinuousClock.now
            for head in heads {
                _ = try await source.read(whole: CachedByteSource.Request(head, returnsBeforeCommit: true))
                try await Task.sleep(for: .milliseconds(10))
            }
            await source.fetchesEnded()
            let took = started.duration(to: .now)
            return Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18
        }.value
        let commits = await source.statistics.tableCommits
        // At most one a write (20 ms) and the spacing's cap (100 ms) apart, however long it took.
        #expect(commits >= 1 && commits <= max(6, Int(seconds / 0.12) + 2), "\(commits) commits for 40 fetches ending over \(seconds) s")
        let present = await source.cachedRanges
        #expect(heads.allSatisfy { present.contains($0) })
    }

    /// A read that reaches the end of a fetch whose commit is under way goes on to the bytes
    /// past it at once; it returns once what it read is claimed. A player's read (the loader's,
    /// ``CachedByteSource/Request/returnsBeforeCommit``) returns without waiting for the claim. Before,
    /// every fetch end a read crossed waited for that fetch's commit (a group commit every
    /// 10 ms or more): 2 to 17 ms for a player's `moov` in each fragmented start through `serve`.
    /// Flushes of the data file are made slow here (1.5 s).
    @Test func aReadGoesOnPastAFetchWhoseCommitIsUnderWay() async throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-commit-read-on")
        defer { FileSystem.removeDirectory(directory) }
        let body = (0..<(4 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }
        let source = try await CachedByteSource(upstream: FlakyUpstream(body, seed: 1), directory: directory, key: "film")
        Platform.beforeSync.withLock { hooks in
            hooks[directory] = { path, _ in if path.hasPrefix(directory), path.hasSuffix(".data") { Thread.sleep(forTimeInterval: 1.5) } }
        }
        defer { Platform.beforeSync.withLock { $0[directory] = nil } }
        func seconds(since start: ContinuousClock.Instant) -> Double {
            let took = start.duration(to: .now)
            return Double(took.components.seconds) + Double(took.components.attoseconds) / 1e18
        }
        /// Reads `range` after a fetch of its first 64 KiB has written them (its commit is
        /// then under way): when the first byte past them came, when the read returned, and
        /// whether the bytes are the origin's.
        func read(_ range: Range<UInt64>, player: Bool) async throws -> (past: Double, returned: Double, bytes: Bool) {
            try await ServingTask.startThrowing { () -> (Double, Double, Bool) in
                let first = range.lowerBound..<(range.lowerBound + (64 << 10))
                #expect(await source.prefetch([first]) == [first])   // a fetch of these bytes alone
                _ = try await source.read(whole: CachedByteSource.Request(first, returnsBeforeCommit: true))
                let started = ContinuousClock.now
                var got: [UInt8] = [], past: Double = .infinity
                try await source.read(CachedByteSource.Request(range, returnsBeforeCommit: player)) { piece in
                    got += piece
                    if past == .infinity && got.count > first.count { past = seconds(since: started) }
                }
                return (past, seconds(since: started), got[...] == body[Int(range.lowerBound)..<Int(range.upperBound)])
            }.value
        }
        let reader = try await read(0..<(256 << 10), player: false)
        print("a read past a committing fetch: the next byte after \(reader.past) s, returned after \(reader.returned) s")
        #expect(reader.bytes)
        #expect(reader.past < 1.0, "the bytes past the fetch came after \(reader.past) s: the read waited for its commit")
        #expect(await source.cachedRanges.contains(0..<(256 << 10)), "the read returned before what it read was claimed")
        #expect(reader.returned >= 1.4, "returned after \(reader.returned) s, with its commits flushing 1.5 s each")

        let player = try await read((1 << 20)..<((1 << 20) + (256 << 10)), player: true)
        print("a player's read past a committing fetch: the next byte after \(player.past) s, returned after \(player.returned) s")
        #expect(player.bytes)
        #expect(player.past < 1.0 && player.returned < 1.0, "a player's read returned after \(player.returned) s: it waited for a commit")
        await source.fetchesEnded()
        #expect(await source.cachedRanges.contains((1 << 20)..<((1 << 20) + (256 << 10))))
    }
}
