import Foundation
import Testing
import MP4Core
@testable import MP4IO
import MP4TestSupport

/// What another process can do to an entry while this one serves from it (issue 61): evict
/// it, start it again, cut its data file short. Two ``EntryStore``s on one directory stand for
/// two processes (each has its own descriptors, and record locks are per description).
@Suite struct EntryStoreTests {
    static let length: UInt64 = 3 << 20
    static let origin: [UInt8] = (0..<Int(length)).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 10 &+ 1) }

    /// Writes the origin's bytes of `range` into the store's data file and claims them.
    static func cache(_ range: Range<UInt64>, in store: EntryStore) throws {
        try Platform.writeFully(store.dataFD, origin[Int(range.lowerBound)..<Int(range.upperBound)], offset: range.lowerBound, path: store.dataPath)
        #expect(try store.commit(range, writtenThrough: store.dataFD, generation: store.table.generation))
    }

    static func store(_ directory: String, validator: String = "v1") throws -> EntryStore {
        let store = try EntryStore(directory: directory, resource: "film")
        _ = try store.prepare(length: length, validator: validator, confirmedAt: nil, attributes: nil)
        return store
    }

    /// A reader decides on its table that a range is cached, then (an actor's await later)
    /// reads it; meanwhile the table was reloaded: another process evicted the entry and
    /// cached other bytes in a new data file. The read gets nothing (the caller fetches),
    /// never that file's zeros: before, 7-26 responses a run of the outside campaign's
    /// two-`serve` test carried zeros with status 206.
    @Test func aRangeTheTableNoLongerClaimsIsNotRead() throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-entry-store")
        defer { FileSystem.removeDirectory(directory) }
        let first = try Self.store(directory)
        try Self.cache(0..<(1 << 20), in: first)
        #expect(try first.readCached(1000..<2000) == Array(Self.origin[1000..<2000]))

        let entry = try #require(CacheDirectory.entries(directory).first)
        try CacheDirectory.remove(entry, from: directory)
        let second = try Self.store(directory)
        try Self.cache((2 << 20)..<(2 << 20) + 4096, in: second)

        // Any step of the first process reloads the table it decided on.
        _ = try first.reload(checking: 0)
        #expect(try first.readCached(1000..<2000) == nil)
        #expect(try first.readCached((2 << 20)..<(2 << 20) + 100) == Array(Self.origin[(2 << 20)..<((2 << 20) + 100)]))
    }

    /// An entry started again (another version of the resource, a table found damaged) gets a
    /// new data file: the old one is never emptied in place, so a process still serving what
    /// its table claimed there reads the bytes it claimed (it emptied the shared file before:
    /// zeros to a player of the other process).
    @Test func aFreshStartLeavesTheOldFile() throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-entry-store")
        defer { FileSystem.removeDirectory(directory) }
        let first = try Self.store(directory)
        try Self.cache(0..<(1 << 20), in: first)
        let oldFile = first.dataFD

        let second = try Self.store(directory, validator: "v2")
        #expect(second.present.byteCount == 0)
        #expect(Platform.isSameFile(second.dataFD, path: second.dataPath))
        #expect(!Platform.isSameFile(oldFile, path: first.dataPath))
        // The first process has not looked at the table since: what it claimed is intact.
        #expect(try first.readCached(0..<(1 << 20)) == Array(Self.origin[0..<(1 << 20)]))
        #expect(try Platform.readFully(oldFile, offset: 500, count: 10, path: first.dataPath) == Array(Self.origin[500..<510]))
    }

    /// A data file cut short behind its table (another program, a disk tool) is a damaged
    /// entry: the read gets nothing, the entry starts again, and the bytes are fetched. Before,
    /// a read failed with an I/O error; through `serve` a player waited 30 s, then got 502.
    @Test func aDataFileCutShortStartsTheEntryAgain() throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-entry-store")
        defer { FileSystem.removeDirectory(directory) }
        let store = try Self.store(directory)
        try Self.cache(0..<(2 << 20), in: store)
        try Platform.truncate(store.dataFD, size: 1 << 20, path: store.dataPath)
        #expect(try store.readCached(((1 << 20) + 10)..<((1 << 20) + 20)) == nil)
        #expect(store.present.byteCount == 0)
        #expect(Platform.usage(store.dataPath)?.size == Self.length)
    }

    /// As a reader sees it: a cached source whose data file is cut short serves the origin's
    /// bytes, fetched again.
    @Test func aSourceWhoseDataFileWasCutShortServesTheOrigin() async throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-entry-store")
        defer { FileSystem.removeDirectory(directory) }
        let upstream = FlakyUpstream(Self.origin, seed: 3)
        let source = try await CachedByteSource(upstream: upstream, directory: directory, key: "cut")
        try await source.fill(0..<Self.length)
        let paths = CachedByteSource.entryPaths(directory: directory, resource: "cut")
        #expect(truncate(paths.data, off_t(1 << 20)) == 0)
        let range: Range<UInt64> = (2 << 20)..<((2 << 20) + 5000)
        #expect(try await source.read(range) == Array(Self.origin[Int(range.lowerBound)..<Int(range.upperBound)]))
    }
}
