import Foundation
import Testing
import MP4Core
@testable import MP4IO
import MP4TestSupport

/// Bytes read from the origin by the walk ahead itself, taken into the cache
/// (``CachedByteSource/adopt(_:)``): written, claimed and committed as any fetch, without
/// asking the origin again; what is present or being fetched is left alone.
@Suite struct CacheAdoptTests {
    static let body = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) }

    static func piece(_ range: Range<UInt64>) -> [UInt8] { Array(body[Int(range.lowerBound)..<Int(range.upperBound)]) }

    @Test func adoptedBytesAreCachedWithoutAskingTheOrigin() async throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-adopt")
        defer { FileSystem.removeDirectory(directory) }
        let upstream = FlakyUpstream(Self.body, seed: 1)
        let source = try await CachedByteSource(upstream: upstream, directory: directory, key: "film")
        try await source.fill(200_000..<204_096)
        let asked = upstream.reads.count
        let heads: [Range<UInt64>] = [100_000..<104_096, 200_000..<204_096, 300_000..<301_000]
        let taken = await source.adopt(heads.map { ($0.lowerBound, Self.piece($0)) })
        #expect(taken == [heads[0], heads[2]], "what was present was taken again")
        // Readable at once (the adopted fetch is followed or its bytes are claimed), from memory.
        #expect(try await source.read(heads[0]) == Self.piece(heads[0]))
        await source.fetchesEnded()
        let present = await source.cachedRanges
        #expect(heads.allSatisfy { present.contains($0) })
        #expect(upstream.reads.count == asked, "the origin was asked for adopted bytes: \(upstream.reads.dropFirst(asked))")
        // Adopted again: nothing to take.
        #expect(await source.adopt([(heads[0].lowerBound, Self.piece(heads[0]))]).isEmpty)

        await CachedByteSource.forgetOpenEntries(directory: directory)
        let reopened = try await CachedByteSource(upstream: FlakyUpstream(Self.body, seed: 1), directory: directory, key: "film")
        let onDisk = await reopened.cachedRanges
        #expect(heads.allSatisfy { onDisk.contains($0) }, "the claims are in the table on disk")
        #expect(try await reopened.read(heads[2]) == Self.piece(heads[2]))
        #expect(await reopened.statistics.upstreamReads == 0)
    }

    /// Adopted heads (the walk holds them for the players meanwhile) commit at the longest
    /// spacing, ``CacheEntry/maxCommitSpacing``, unless another commit comes: then they go
    /// with it.
    @Test func adoptedHeadsWaitForTheLongestSpacingOrTheNextCommit() async throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-adopt-patient")
        defer { FileSystem.removeDirectory(directory) }
        let source = try await CachedByteSource(upstream: FlakyUpstream(Self.body, seed: 1), directory: directory, key: "film")
        try await source.fill(0..<4096)   // a commit: the next one is spaced from it
        let commits = await source.statistics.tableCommits
        let head = 100_000..<104_096 as Range<UInt64>
        let adopted = ContinuousClock.now
        await source.adopt([(head.lowerBound, Self.piece(head))])
        try await Task.sleep(for: .milliseconds(40))   // past the shortest spacing (10 ms)
        let waited = ContinuousClock.now - adopted
        let claimedEarly = await source.cachedRanges.contains(head)
        if waited < CacheEntry.maxCommitSpacing * 0.8 {
            #expect(!claimedEarly, "an adopted head was committed after \(waited), before the longest spacing")
        }
        // A fetch that ends commits at the usual spacing, and takes the head along.
        try await source.fill(500_000..<504_096)
        #expect(await source.cachedRanges.contains(head))
        #expect(await source.statistics.tableCommits - commits <= 2)
        await source.fetchesEnded()
    }
}
