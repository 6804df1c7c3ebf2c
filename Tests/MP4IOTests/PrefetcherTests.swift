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

    /// A prefetcher over the 60 s film whose hand-offs to the cache are recorded (and answered
    /// as started), the first held until ``Held/release()``: the order in which later plans
    /// reach the cache is then up to the prefetcher, not to timing (a fixed 300 ms hold ran
    /// out under CI's ASan load).
    struct Held {
        let prefetcher: Prefetcher
        let mdat: TopLevelBox
        let arrived: Locked<[[Range<UInt64>]]>
        let released: Locked<Bool>

        /// The start of each prefetch that reached the cache, in order.
        var starts: [UInt64] { arrived.withLock { $0 }.compactMap { $0.first?.lowerBound } }
        func release() { released.withLock { $0 = true } }

        /// Waits (at most 5 s) until the prefetcher has planned `count` prefetches.
        func waitUntilPlanned(_ count: UInt64) async throws {
            for _ in 0..<5_000 where await prefetcher.planned < count { try await Task.sleep(nanoseconds: 1_000_000) }
            let planned = await prefetcher.planned
            try #require(planned == count, "\(planned) of \(count) reads planned a prefetch")
        }
    }

    static func heldPrefetcher(_ path: String, directory: String) async throws -> Held {
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
        return Held(prefetcher: prefetcher, mdat: mdat, arrived: arrived, released: released)
    }

    /// The same two reads handled in order, the probe's prefetch held on its way to the cache
    /// (a hop to the pool and the entry's actor, which the seek's may overtake): the cache
    /// must get the seek's last, or the probe's supersedes it (CI's ASan suite: the seek's
    /// window was never fetched, `MediaLoaderTests.aSeekPrefetchesTheNextSecondsOfEveryTrack`).
    @Test(.requires("ffmpeg")) func theCacheGetsPrefetchesInTheOrderTheyWerePlanned() async throws {
        let path = try #require(await MediaLoaderTests.film())
        let directory = FileSystem.temporaryDirectory("mp4probe-prefetcher")
        defer { FileSystem.removeDirectory(directory) }
        let held = try await Self.heldPrefetcher(path, directory: directory)
        let (prefetcher, mdat) = (held.prefetcher, held.mdat)
        let probe = prefetcher.ticket(), seek = prefetcher.ticket()
        let probing = Task { await prefetcher.playerReads(at: mdat.offset + 16, ticket: probe) }
        try await held.waitUntilPlanned(1)
        let seeking = Task { await prefetcher.playerReads(at: mdat.offset + mdat.size * 3 / 4, ticket: seek) }
        try await held.waitUntilPlanned(2)
        held.release()
        _ = await (probing.value, seeking.value)
        #expect(held.starts.count == 2)
        #expect(held.starts.last.map { $0 > mdat.offset + mdat.size / 2 } == true,
                "the probe's prefetch reached the cache after the seek's and superseded it: \(held.starts)")
    }

    /// Three reads while the first one's prefetch is held on its way: the second, which the
    /// third follows before its turn comes, is not handed to the cache (it would start fetches
    /// the third stops at once).
    @Test(.requires("ffmpeg")) func aPlanOvertakenBeforeItsTurnIsNotHandedOn() async throws {
        let path = try #require(await MediaLoaderTests.film())
        let directory = FileSystem.temporaryDirectory("mp4probe-prefetcher")
        defer { FileSystem.removeDirectory(directory) }
        let held = try await Self.heldPrefetcher(path, directory: directory)
        let (prefetcher, mdat) = (held.prefetcher, held.mdat)
        let reads = [mdat.offset + 16, mdat.offset + mdat.size / 2, mdat.offset + mdat.size * 3 / 4]
        let tickets = reads.map { _ in prefetcher.ticket() }
        var handling: [Task<Void, Never>] = []
        for (number, (read, ticket)) in zip(reads, tickets).enumerated() {
            handling.append(Task { await prefetcher.playerReads(at: read, ticket: ticket) })
            try await held.waitUntilPlanned(UInt64(number + 1))   // in ticket order
        }
        held.release()
        for task in handling { await task.value }
        #expect(held.starts.count == 2, "\(held.starts.count) prefetches reached the cache: \(held.starts)")
        #expect(held.starts.last.map { $0 > reads[2] - 1_000_000 } == true, "the newest was not the last: \(held.starts); reads \(reads)")
    }
}
