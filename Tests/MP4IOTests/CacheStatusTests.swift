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
}
