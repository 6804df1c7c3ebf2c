import Foundation
import Testing
import MP4Core
@testable import MP4IO
import MP4TestSupport

/// The loader's prefetcher (``Prefetcher``): the prefetch of a player's read runs in the
/// background, and those tasks may run in any order.
@Suite struct PrefetcherTests {
    /// AVPlayer probes bytes 0-1, then seeks. When the probe's prefetch runs after the seek's,
    /// it must not replace it (a prefetch supersedes the one before: the seek's window was
    /// never fetched, in one CI run).
    @Test(.requires("ffmpeg")) func anOlderReadHandledLateDoesNotSupersedeANewerOne() async throws {
        let path = try #require(await MediaLoaderTests.film())   // 60 s, a keyframe every 2 s
        let directory = FileSystem.temporaryDirectory("mp4probe-prefetcher")
        defer { FileSystem.removeDirectory(directory) }
        let cache = try await CachedByteSource(upstream: try FileSource(path: path), directory: directory)
        var policy = ReadAheadPolicy()
        policy.prefetchSeconds = 4
        let prefetcher = Prefetcher(cache: cache, view: nil, policy: policy)
        await prefetcher.load()
        let file = try await MP4File.open(try FileSource(path: path))
        let mdat = try #require(file.layout.boxes.first { $0.type == .mdat })
        let probe = prefetcher.ticket(), seek = prefetcher.ticket()
        await prefetcher.playerReads(at: mdat.offset + mdat.size * 3 / 4, ticket: seek)
        let afterSeek = await prefetcher.started
        #expect(!afterSeek.isEmpty, "the seek started no prefetch")
        await prefetcher.playerReads(at: mdat.offset + 16, ticket: probe)
        #expect(await prefetcher.started == afterSeek, "the probe handled late replaced the seek's prefetch")
    }

    /// The same two reads handled in order, the probe's prefetch slow on its way to the cache
    /// (a hop to the pool and the entry's actor, which the seek's may overtake): the cache
    /// must get the seek's last, or the probe's supersedes it (CI's ASan suite: the seek's
    /// window was never fetched, `MediaLoaderTests.aSeekPrefetchesTheNextSecondsOfEveryTrack`).
    @Test(.requires("ffmpeg")) func theCacheGetsPrefetchesInTheOrderTheyWerePlanned() async throws {
        let path = try #require(await MediaLoaderTests.film())
        let directory = FileSystem.temporaryDirectory("mp4probe-prefetcher")
        defer { FileSystem.removeDirectory(directory) }
        let cache = try await CachedByteSource(upstream: try FileSource(path: path), directory: directory)
        var policy = ReadAheadPolicy()
        policy.prefetchSeconds = 4
        let arrived = Locked<[[Range<UInt64>]]>([]), calls = Locked(0)
        let prefetcher = Prefetcher(cache: cache, view: nil, policy: policy) { ranges, _ in
            // The first (the probe's) is slow to arrive.
            if calls.withLock({ count in count += 1; return count }) == 1 { try? await Task.sleep(nanoseconds: 300_000_000) }
            arrived.withLock { $0.append(ranges) }
            return ranges
        }
        await prefetcher.load()
        let file = try await MP4File.open(try FileSource(path: path))
        let mdat = try #require(file.layout.boxes.first { $0.type == .mdat })
        let probe = prefetcher.ticket(), seek = prefetcher.ticket()
        let probing = Task { await prefetcher.playerReads(at: mdat.offset + 16, ticket: probe) }
        for _ in 0..<5_000 where calls.withLock({ $0 }) == 0 { try await Task.sleep(nanoseconds: 1_000_000) }
        try #require(calls.withLock { $0 } == 1, "the probe planned no prefetch")
        await prefetcher.playerReads(at: mdat.offset + mdat.size * 3 / 4, ticket: seek)
        await probing.value
        let order = arrived.withLock { $0 }
        #expect(order.count == 2)
        #expect(order.last?.first.map { $0.lowerBound > mdat.offset + mdat.size / 2 } == true,
                "the probe's prefetch reached the cache after the seek's and superseded it: \(order)")
    }

    /// Three reads while the first one's prefetch is held on its way: the second, which the
    /// third follows before its turn comes, is not handed to the cache (it would start fetches
    /// the third stops at once). The first is held until both others are planned (a fixed
    /// delay was not enough under CI's ASan load).
    @Test(.requires("ffmpeg")) func aPlanOvertakenBeforeItsTurnIsNotHandedOn() async throws {
        let path = try #require(await MediaLoaderTests.film())
        let directory = FileSystem.temporaryDirectory("mp4probe-prefetcher")
        defer { FileSystem.removeDirectory(directory) }
        let cache = try await CachedByteSource(upstream: try FileSource(path: path), directory: directory)
        var policy = ReadAheadPolicy()
        policy.prefetchSeconds = 4
        let arrived = Locked<[[Range<UInt64>]]>([]), calls = Locked(0), released = Locked(false)
        let prefetcher = Prefetcher(cache: cache, view: nil, policy: policy) { ranges, _ in
            if calls.withLock({ count in count += 1; return count }) == 1 {
                for _ in 0..<1_000 where !released.withLock({ $0 }) { try? await Task.sleep(nanoseconds: 10_000_000) }
            }
            arrived.withLock { $0.append(ranges) }
            return ranges
        }
        await prefetcher.load()
        let file = try await MP4File.open(try FileSource(path: path))
        let mdat = try #require(file.layout.boxes.first { $0.type == .mdat })
        let reads = [mdat.offset + 16, mdat.offset + mdat.size / 2, mdat.offset + mdat.size * 3 / 4]
        let tickets = reads.map { _ in prefetcher.ticket() }
        let first = Task { await prefetcher.playerReads(at: reads[0], ticket: tickets[0]) }
        for _ in 0..<5_000 where calls.withLock({ $0 }) == 0 { try await Task.sleep(nanoseconds: 1_000_000) }
        try #require(calls.withLock { $0 } == 1, "the first read planned no prefetch")
        let second = Task { await prefetcher.playerReads(at: reads[1], ticket: tickets[1]) }
        for _ in 0..<5_000 where await prefetcher.planned < 2 { try await Task.sleep(nanoseconds: 1_000_000) }
        let third = Task { await prefetcher.playerReads(at: reads[2], ticket: tickets[2]) }
        for _ in 0..<5_000 where await prefetcher.planned < 3 { try await Task.sleep(nanoseconds: 1_000_000) }
        try #require(await prefetcher.planned == 3, "the later reads planned no prefetch")
        released.withLock { $0 = true }
        _ = await (first.value, second.value, third.value)
        let starts = arrived.withLock { $0 }.compactMap { $0.first?.lowerBound }
        #expect(starts.count == 2, "\(starts.count) prefetches reached the cache: \(starts)")
        #expect(starts.last.map { $0 > reads[2] - 1_000_000 } == true, "the newest was not the last: \(starts); reads \(reads)")
    }
}
