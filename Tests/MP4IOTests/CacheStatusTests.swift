import Foundation
import Testing
@testable import MP4Core
@testable import MP4IO
import MP4TestSupport

/// A loader's status polls reuse the movie's sample index (`MovieIndexes`): the second status
/// of an entry does not parse its `moov` again.
@Suite struct CacheStatusTests {
    @Test func aSecondStatusReusesTheIndex() async throws {
        let film = try #require(FileSystem.read(Fixtures.sample("faststart.mp4")))
        let directory = FileSystem.temporaryDirectory("mp4probe-status")
        defer { FileSystem.removeDirectory(directory) }
        let key = "memory://status-film"
        let cached = try await CachedByteSource(upstream: MemorySource(film, name: key), directory: directory, key: key)
        #expect(try await cached.read(0..<UInt64(film.count)) == film)
        let indexes = MovieIndexes()
        let first = try #require(await CacheStatus.of(key, in: directory, limits: .default, indexes: indexes))
        #expect(first.movieIsCached && first.playable.prefixSeconds > 1, "\(first)")
        // The moov's bytes spoiled on disk (the table still claims them): only a parse sees it.
        let moov = try #require(try await MP4File.open(MemorySource(film)).layout.movieBox)
        let fd = try Platform.openForUpdate(CachedByteSource.entryPaths(directory: directory, resource: key).data)
        defer { Platform.closeFile(fd) }
        try Platform.writeFully(fd, [UInt8](repeating: 0, count: 16), offset: moov.offset, path: "data")
        let again = try #require(await CacheStatus.of(key, in: directory, limits: .default, indexes: indexes))
        #expect(again.playable == first.playable, "the second status parsed the moov again")
        let parsed = try #require(await CacheStatus.of(key, in: directory, limits: .default, indexes: nil))
        #expect(!parsed.movieIsCached, "without the index the spoiled moov is seen: \(parsed)")
    }

    /// A fragmented entry whose top-level headers are all cached (a scan through the cache
    /// reads each one) but not every `moof` after the first fragments: what plays is the cached
    /// prefix, not nothing (the sample index of the whole file cannot be built, and the status
    /// said 0 s).
    @Test func allHeadersCachedButALaterFragmentMissingPlaysThePrefix() async throws {
        let film = try #require(FileSystem.read(Fixtures.sample("fragmented-short.mp4")))
        let file = try await MP4File.open(MemorySource(film))
        let moofs = file.layout.boxes.filter { $0.type == .moof }
        #expect(moofs.count > 5)
        let missing = moofs[3]
        let directory = FileSystem.temporaryDirectory("mp4probe-status")
        defer { FileSystem.removeDirectory(directory) }
        let key = "memory://status-fragments"
        let cached = try await CachedByteSource(upstream: MemorySource(film, name: key), directory: directory, key: key)
        _ = try await cached.read(0..<(missing.offset + 64))
        for box in file.layout.boxes where box.offset > missing.offset {
            _ = try await cached.read(box.offset..<min(box.offset + 64, UInt64(film.count)))
        }
        let status = try #require(await CacheStatus.of(key, in: directory))
        // Three fragments of 0.2 s are whole.
        let prefix = try #require(try await MP4File.open(MemorySource(Array(film[..<Int(missing.offset)]))).movie?.durationSeconds)
        #expect(status.movieIsCached)
        #expect(status.playable.prefixSeconds > 0.3 && status.playable.prefixSeconds <= prefix + 0.01, "\(status.playable); the cached fragments hold \(prefix) s")
    }

    /// A fragmented entry cached in part: the index of its cached prefix is kept while the
    /// prefix ends where it did (a poll while nothing arrives builds nothing), and built again
    /// when it grows.
    @Test func aPrefixIndexIsReusedUntilThePrefixGrows() async throws {
        let film = try #require(FileSystem.read(Fixtures.sample("fragmented-short.mp4")))
        let file = try await MP4File.open(MemorySource(film))
        let moofs = file.layout.boxes.filter { $0.type == .moof }
        let directory = FileSystem.temporaryDirectory("mp4probe-status")
        defer { FileSystem.removeDirectory(directory) }
        let key = "memory://status-prefix"
        let cached = try await CachedByteSource(upstream: MemorySource(film, name: key), directory: directory, key: key)
        _ = try await cached.read(0..<moofs[3].offset)   // three fragments, not the fourth's header
        let indexes = MovieIndexes()
        let first = try #require(await CacheStatus.of(key, in: directory, limits: .default, indexes: indexes))
        #expect(first.playable.prefixSeconds > 0.3, "\(first.playable)")
        // The third moof spoiled on disk past its header (the table still claims it): only a
        // parse of the moof sees it, not the walk over the headers.
        let fd = try Platform.openForUpdate(CachedByteSource.entryPaths(directory: directory, resource: key).data)
        defer { Platform.closeFile(fd) }
        try Platform.writeFully(fd, [UInt8](repeating: 0, count: Int(moofs[2].size) - 8), offset: moofs[2].offset + 8, path: "data")
        let again = try #require(await CacheStatus.of(key, in: directory, limits: .default, indexes: indexes))
        #expect(again.playable == first.playable, "the same prefix was indexed again")
        let parsed = try #require(await CacheStatus.of(key, in: directory, limits: .default, indexes: nil))
        #expect(parsed.playable != first.playable, "without the index the spoiled moof is seen: \(parsed.playable)")
        // The prefix grows by a fragment: its index is built again and holds the fourth
        // fragment (the shorter prefix's index ends with the third: 0.613 s).
        _ = try await cached.read(moofs[3].offset..<moofs[4].offset)
        let grown = try #require(await CacheStatus.of(key, in: directory, limits: .default, indexes: indexes))
        #expect(grown.playable.prefixSeconds > first.playable.prefixSeconds + 0.1, "the longer prefix took the shorter one's index: \(grown.playable)")
    }
}
