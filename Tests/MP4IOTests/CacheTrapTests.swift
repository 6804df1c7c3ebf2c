import Foundation
import Testing
@testable import MP4Core
@testable import MP4IO
import MP4TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// A cache directory is hostile territory (``CacheFiles``): a symbolic link, a FIFO or a
/// device planted at an entry's predictable name is never written through, followed or waited
/// on; it is reported, removed and the entry started again. And the cache never claims what it
/// cannot prove: a data file cut short, deleted or changed behind its table lists as damaged,
/// and an export of it fails naming the ranges, writing nothing.
@Suite(.serialized) struct CacheTrapTests {
    static let origin = CachedByteSourceTests.origin
    static let resource = "flaky://resource"

    final class Warnings: @unchecked Sendable {
        let lock = NSLock()
        var said: [String] = []
        func add(_ text: String) { lock.withLock { said.append(text) } }
        var all: [String] { lock.withLock { said } }
    }

    static func source(_ directory: String, warnings: Warnings) async throws -> CachedByteSource {
        var options = CachedByteSource.Options()
        options.warn = { warnings.add($0) }
        return try await CachedByteSource(upstream: FlakyUpstream(origin, seed: 1), directory: directory, options: options)
    }

    /// Runs `body` off the shared pool (as serving runs, ``ServingTask``); if it has not ended
    /// after `seconds`, opens every FIFO in `fifos` for writing (which frees an open blocked on
    /// one) and reports the hang. On the pool, the bound measured the pool instead: in the full
    /// suite a read took over 5 s with nothing blocked on a FIFO and no lock held (CI and here,
    /// 2026-11-27; the link test beside it took 64-85 s, 0.4 s alone); off it, it passes.
    static func withinSeconds(_ seconds: Double, fifos: [String], _ what: String, _ body: @escaping @Sendable () async throws -> Void) async {
        let done = Locked(false)
        let task = ServingTask.start { try? await body(); done.withLock { $0 = true } }
        let deadline = Date().addingTimeInterval(seconds)
        while !done.withLock({ $0 }) && Date() < deadline { try? await Task.sleep(for: .milliseconds(20)) }
        if !done.withLock({ $0 }) {
            Issue.record("\(what) waited on a FIFO planted in the cache directory")
            // Free every open blocked on one, again and again (a body may open a FIFO more than
            // once): the test then fails instead of hanging the suite.
            while !done.withLock({ $0 }) {
                for fifo in fifos {
                    let fd = open(fifo, O_WRONLY | O_NONBLOCK)
                    if fd >= 0 { close(fd) }
                }
                try? await Task.sleep(for: .milliseconds(20))
            }
        }
        _ = await task.value
    }

    /// Links at the data file's name (to a file of someone's, and dangling) and at the table's
    /// and lock's: the origin's bytes go to a new regular file of the entry, the link targets
    /// are untouched (the dangling one is not created), and each trap is reported.
    @Test(arguments: ["data", "table", "lock"])
    func aPlantedLinkIsNotWrittenThrough(_ which: String) async throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-cache-trap")
        let outside = FileSystem.temporaryDirectory("mp4probe-cache-victim")
        defer { FileSystem.removeDirectory(directory); FileSystem.removeDirectory(outside) }
        let paths = CachedByteSource.entryPaths(directory: directory, resource: Self.resource)
        let path = which == "data" ? paths.data : (which == "table" ? paths.table : paths.lock)
        let victim = outside + "/precious", dangling = outside + "/created"
        let precious = Array("precious bytes of someone else".utf8)
        FileSystem.write(precious, to: victim)
        for target in [victim, dangling] {
            unlink(path)
            #expect(symlink(target, path) == 0)
            let warnings = Warnings()
            let source = try await Self.source(directory, warnings: warnings)
            try await source.fill(0..<300_000)
            #expect(try await source.read(0..<300_000) == Array(Self.origin[0..<300_000]))
            #expect(FileSystem.read(victim) == precious, "the link's target was written")
            #expect(!FileSystem.exists(dangling), "the dangling link's target was created")
            #expect(!Platform.isSymbolicLink(path), "the link is still there")
            if which != "table" {
                // (A table is replaced by a rename, which replaces a link at its name.)
                #expect(warnings.all.contains { $0.contains("symbolic link") && $0.contains("planted") }, "\(warnings.all)")
            }
            CacheRegistry.shared.forget(directory: directory)
        }
    }

    /// A FIFO at each of the entry's names, and a link to /dev/zero: opening the entry, a
    /// listing, `stat` and `export` end at once (an open of a FIFO waits for a writer), and
    /// the origin's bytes are served.
    @Test(arguments: ["data", "table", "lock", "device"])
    func aPlantedFIFOOrDeviceIsNotWaitedOn(_ which: String) async throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-cache-trap")
        defer { FileSystem.removeDirectory(directory) }
        let paths = CachedByteSource.entryPaths(directory: directory, resource: Self.resource)
        // First a complete entry, so that listing, stat and export have one to read.
        let warnings = Warnings()
        let first = try await Self.source(directory, warnings: warnings)
        try await first.fill(0..<UInt64(Self.origin.count))
        CacheRegistry.shared.forget(directory: directory)
        let path = which == "table" ? paths.table : (which == "lock" ? paths.lock : paths.data)
        unlink(path)
        if which == "device" {
            #expect(symlink("/dev/zero", path) == 0)
        } else {
            #expect(mkfifo(path, 0o600) == 0)
        }
        await Self.withinSeconds(5, fifos: [path], "cache ls") { _ = CacheDirectory.entries(directory) }
        await Self.withinSeconds(5, fifos: [path], "cache stat") { _ = await CacheStatus.of(Self.resource, in: directory) }
        await Self.withinSeconds(5, fifos: [path], "cache export") { _ = try? CacheDirectory.export(directory, resource: Self.resource, to: directory + "/out.mp4") }
        await Self.withinSeconds(5, fifos: [path], "a read through the cache") {
            let source = try await Self.source(directory, warnings: warnings)
            #expect(try await source.read(0..<1000) == Array(Self.origin[0..<1000]))
        }
        CacheRegistry.shared.forget(directory: directory)
    }

    /// A data file cut short behind its table, deleted, or with a changed byte: listed as
    /// damaged (the first two) and never exported (all three), the message naming what is
    /// missing or wrong; nothing is written.
    @Test func anExportNeverWritesWhatTheCacheCannotProve() async throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-cache-trap")
        defer { FileSystem.removeDirectory(directory) }
        let paths = CachedByteSource.entryPaths(directory: directory, resource: Self.resource)
        let out = directory + "/exported.mp4"
        func fill() async throws {
            CacheRegistry.shared.forget(directory: directory)
            let source = try await Self.source(directory, warnings: Warnings())
            try await source.fill(0..<UInt64(Self.origin.count))
            CacheRegistry.shared.forget(directory: directory)
        }
        try await fill()
        #expect(CacheDirectory.entries(directory).first?.isComplete == true)
        try CacheDirectory.export(directory, resource: Self.resource, to: out)
        #expect(FileSystem.read(out) == Self.origin)
        Platform.removeFile(out)

        // Cut short at 200,000 bytes.
        #expect(truncate(paths.data, 200_000) == 0)
        #expect(CacheDirectory.entries(directory).first?.isDamaged == true)
        #expect(throws: MP4Error.self) { try CacheDirectory.export(directory, resource: Self.resource, to: out) }
        #expect(!FileSystem.exists(out))
        #expect(await CacheStatus.of(Self.resource, in: directory) == nil)

        // Deleted.
        try await fill()
        Platform.removeFile(paths.data)
        #expect(CacheDirectory.entries(directory).first?.isDamaged == true)
        #expect(throws: MP4Error.self) { try CacheDirectory.export(directory, resource: Self.resource, to: out) }
        #expect(!FileSystem.exists(out))

        // One byte changed: the export names its block.
        try await fill()
        var data = try #require(FileSystem.read(paths.data))
        data[300_001] ^= 0xFF
        let fd = open(paths.data, O_WRONLY)
        #expect(pwrite(fd, [data[300_001]], 1, 300_001) == 1)
        close(fd)
        do {
            try CacheDirectory.export(directory, resource: Self.resource, to: out)
            Issue.record("a changed byte was exported")
        } catch let error as MP4Error {
            #expect(error.message.contains("bytes 0-399999") && error.message.contains("checksum"), "\(error.message)")
        }
        #expect(!FileSystem.exists(out))
        await #expect(throws: MP4Error.self) { _ = try await CacheSnapshot(directory: directory, resource: Self.resource)?.read(300_000..<300_010) }
    }

    /// The directory and the files the cache creates are private to this user.
    @Test func cacheFilesArePrivate() async throws {
        let parent = FileSystem.temporaryDirectory("mp4probe-cache-trap")
        defer { FileSystem.removeDirectory(parent + "/cache"); FileSystem.removeDirectory(parent) }
        let directory = parent + "/cache"
        let source = try await Self.source(directory, warnings: Warnings())
        try await source.fill(0..<1000)
        let paths = CachedByteSource.entryPaths(directory: directory, resource: Self.resource)
        var info = stat()
        #expect(stat(directory, &info) == 0 && info.st_mode & 0o777 == 0o700)
        for path in [paths.data, paths.table, paths.lock] {
            #expect(stat(path, &info) == 0 && info.st_mode & 0o777 == 0o600, "\(path): \(String(info.st_mode & 0o777, radix: 8))")
        }
        CacheRegistry.shared.forget(directory: directory)
    }
}
