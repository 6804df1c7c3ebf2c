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
}
