import Foundation
import Testing
@testable import MP4Core
@testable import MP4IO
import MP4TestSupport

/// Eviction that knows preloads (issue 33 item 4): an entry preloaded and not yet played goes
/// after every entry already watched, within a quarter of the limit (ExoPlayer #9208: preloaded
/// videos evicted before anyone watched them).
@Suite(.serialized) struct PreloadEvictionTests {
    static func entry(_ name: String, bytes: UInt64, lastUsed: Double, preloaded: Bool) -> CacheDirectory.Entry {
        CacheDirectory.Entry(resource: name, length: bytes, cachedBytes: bytes, allocatedBytes: bytes, lastUsed: lastUsed,
                             validator: nil, isDamaged: false, isPreloadedUnplayed: preloaded)
    }

    @Test func preloadsGoLastWithinAQuarterOfTheLimit() {
        // Most recently used first, as CacheDirectory.entries lists them.
        let entries = [
            Self.entry("watched-new", bytes: 100, lastUsed: 50, preloaded: false),
            Self.entry("preload-new", bytes: 100, lastUsed: 40, preloaded: true),
            Self.entry("preload-old", bytes: 100, lastUsed: 30, preloaded: true),
            Self.entry("watched-old", bytes: 100, lastUsed: 20, preloaded: false),
            Self.entry("preload-oldest", bytes: 100, lastUsed: 10, preloaded: true),
        ]
        // A limit of 800: a quarter is 200, two preloads (the newest two) are kept apart.
        let order = CacheDirectory.evictionOrder(entries, limit: 800).map(\.resource)
        #expect(order == ["preload-new", "preload-old", "watched-new", "watched-old", "preload-oldest"])
        // Removal pops from the end: the oldest preload beyond the share goes first, then the
        // watched entries, and the protected preloads last.
        #expect(CacheDirectory.evictionOrder(entries, limit: 0).map(\.resource) == entries.map(\.resource))
    }

    /// Real entries: a 200 KB preload (not played), then two 1 MB entries, under a 1.5 MB
    /// limit (a quarter of it, 375 KB, covers the preload). The eviction that makes room
    /// removes the watched entry, older than the newest but newer than the preload; once the
    /// preload is played it is an entry like the others, and the least recently used.
    @Test func aPreloadedEntryOutlivesAWatchedOneUntilItIsPlayed() async throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-preload-evict")
        defer { FileSystem.removeDirectory(directory) }
        func fill(_ key: String, _ body: [UInt8]) async throws -> CachedByteSource {
            let source = try await CachedByteSource(upstream: FlakyUpstream(body, seed: 1), directory: directory, key: key)
            #expect(try await source.read(0..<UInt64(body.count)) == body)
            try await Task.sleep(for: .milliseconds(20))
            return source
        }
        let preloaded = try await fill("preloaded", Array(CacheBudgetTests.body.prefix(200_000)))
        await preloaded.markPreloaded()
        _ = try await fill("watched", CacheBudgetTests.body)
        _ = try await fill("newest", CacheBudgetTests.body)
        let removed = try CacheDirectory.evict(directory, toAtMost: 1_500_000)
        #expect(removed.map(\.resource) == ["watched"], "\(removed.map(\.resource))")
        #expect(CacheDirectory.entries(directory).first { $0.resource == "preloaded" }?.isPreloadedUnplayed == true)
        await preloaded.markPlayed()
        #expect(CacheDirectory.entries(directory).first { $0.resource == "preloaded" }?.isPreloadedUnplayed == false)
        let next = try CacheDirectory.evict(directory, toAtMost: 1_100_000)
        #expect(next.map(\.resource) == ["preloaded"], "played, it is the least recently used: \(next.map(\.resource))")
        #expect(!FileManager.default.fileExists(atPath: CacheDirectory.preloadMarker(directory: directory, resource: "preloaded")))
    }

    /// Through a loader: a preload marks the entry, a player's read unmarks it, and a preload
    /// of the same origin again marks it until the next read (the resource stays open).
    @Test func aPlayersReadUnmarksAPreloadEachTime() async throws {
        let film = try #require(FileSystem.read(Fixtures.sample("faststart.mp4")))
        let origin = try #require(LoopbackHTTPServer(body: film, behavior: .keepsAlive))
        defer { origin.stop() }
        let directory = FileSystem.temporaryDirectory("mp4probe-preload-mark")
        defer { FileSystem.removeDirectory(directory) }
        let loader = MediaLoader(options: .init(cacheDirectory: directory))
        let url = origin.url.absoluteString
        let marker = CacheDirectory.preloadMarker(directory: directory, resource: url)
        try await loader.preload(url, seconds: 1)
        #expect(FileManager.default.fileExists(atPath: marker), "preloaded: marked")
        let resource = try await loader.resource(for: url)
        _ = try await resource.read(0..<100)
        #expect(!FileManager.default.fileExists(atPath: marker), "read by a player: unmarked")
        try await loader.preload(url, seconds: 1)
        #expect(FileManager.default.fileExists(atPath: marker), "preloaded again: marked")
        _ = try await resource.read(100..<200)
        #expect(!FileManager.default.fileExists(atPath: marker), "read again: unmarked again")
    }
}
