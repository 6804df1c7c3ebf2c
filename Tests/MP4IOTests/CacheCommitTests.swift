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
}
