import Foundation
import Testing
@testable import MP4Core
@testable import MP4IO
import MP4TestSupport

/// An upstream for tests: bytes in memory that can fail reads (seeded), change version, and
/// count what it is asked for.
final class FlakyUpstream: ByteSource, @unchecked Sendable {
    private let lock = NSLock()
    private var bytes: [UInt8]
    private var version = 1
    private var random: SeededRandom
    var failureRate = 0.0
    private(set) var reads: [Range<UInt64>] = []

    init(_ bytes: [UInt8], seed: UInt64) {
        self.bytes = bytes
        self.random = SeededRandom(seed: seed)
    }

    var name: String { "flaky://resource" }
    var current: [UInt8] { locked { bytes } }

    func replace(with new: [UInt8]) {
        locked {
            bytes = new
            version += 1
        }
    }

    private func locked<T>(_ body: () -> T) -> T { lock.withLock(body) }
    func length() async throws -> UInt64 { locked { UInt64(bytes.count) } }
    func validator() async throws -> String? { locked { "v\(version)" } }

    func read(_ range: Range<UInt64>) async throws -> [UInt8] {
        let result: [UInt8]? = locked {
            reads.append(range)
            if Double.random(in: 0..<1, using: &random) < failureRate { return nil }
            let upper = min(range.upperBound, UInt64(bytes.count))
            return range.lowerBound < upper ? Array(bytes[Int(range.lowerBound)..<Int(upper)]) : []
        }
        guard let result else { throw MP4Error(.io, "simulated upstream failure at \(range.lowerBound)") }
        return result
    }
}

@Suite(.serialized) struct CachedByteSourceTests {
    static let origin: [UInt8] = (0..<400_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) }

    /// Every range the table on disk claims holds exactly the origin's bytes in the data file.
    static func tableIsTruthful(_ directory: String, resource: String, origin: [UInt8]) throws -> ByteRangeSet {
        let paths = CachedByteSource.entryPaths(directory: directory, resource: resource)
        guard let table = try CacheTable.load(paths.table) else { return ByteRangeSet() }
        let data = try #require(FileSystem.read(paths.data))
        for range in table.rangeSet.ranges {
            #expect(Int(range.upperBound) <= data.count && data[Int(range.lowerBound)..<Int(range.upperBound)] == origin[Int(range.lowerBound)..<Int(range.upperBound)], "table claims \(range) but the data differs")
        }
        return table.rangeSet
    }

    @Test func rangeSetMergesAndFindsGapsLikeABitmap() {
        var random = SeededRandom(seed: 42)
        for _ in 0..<200 {
            var set = ByteRangeSet()
            var bitmap = [Bool](repeating: false, count: 300)
            for _ in 0..<Int.random(in: 0...12, using: &random) {
                let a = UInt64.random(in: 0..<300, using: &random), b = UInt64.random(in: a...300, using: &random)
                set.insert(a..<b)
                for i in a..<b { bitmap[Int(i)] = true }
            }
            #expect(set.isWellFormed)
            #expect(set.byteCount == UInt64(bitmap.filter { $0 }.count))
            let a = UInt64.random(in: 0..<300, using: &random), b = UInt64.random(in: a...300, using: &random)
            let missing = set.missing(in: a..<b)
            var expected: [Range<UInt64>] = []
            for i in a..<b where !bitmap[Int(i)] {
                if let last = expected.last, last.upperBound == i { expected[expected.count - 1] = last.lowerBound..<(i + 1) } else { expected.append(i..<(i + 1)) }
            }
            #expect(missing == expected)
            #expect(set.contains(a..<b) == (a == b || (a..<b).allSatisfy { bitmap[Int($0)] }))
        }
        var merged = ByteRangeSet()
        merged.insert(0..<100)
        merged.insert(100..<200)
        #expect(merged.ranges == [0..<200])
    }

    /// Random reads, upstream failures, reopenings and an upstream change, against a model:
    /// every byte returned equals the origin's, and the table only claims true bytes.
    @Test(arguments: [1, 2, 3])
    func modelBasedReadsFailuresAndReopenings(seed: Int) async throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-cache")
        defer { FileSystem.removeDirectory(directory) }
        var random = SeededRandom(seed: UInt64(seed))
        let upstream = FlakyUpstream(Self.origin, seed: UInt64(seed) * 977)
        // Every open asks the upstream (no freshness window), so a change is found at the
        // reopen after it (CacheFreshnessTests covers the window).
        var options = CachedByteSource.Options()
        options.maxAge = 0
        var source = try await CachedByteSource(upstream: upstream, directory: directory, options: options)
        var delivered = ByteRangeSet()  // the model: bytes that reads returned
        for step in 0..<90 {
            let action = Int.random(in: 0..<100, using: &random)
            if action < 8 {
                // Reopen, as a new process would.
                await CachedByteSource.forgetOpenEntries(directory: directory)
                source = try await CachedByteSource(upstream: upstream, directory: directory, options: options)
                let cached = await source.cachedRanges
                for range in delivered.ranges { #expect(cached.contains(range), "step \(step): \(range) was lost") }
                continue
            }
            if action == 8 && step > 45 {
                // The upstream changes: the entry must be emptied, never mixed.
                var changed = upstream.current
                for i in stride(from: 0, to: changed.count, by: 1000) { changed[i] ^= 0xFF }
                upstream.replace(with: changed)
                await CachedByteSource.forgetOpenEntries(directory: directory)
                source = try await CachedByteSource(upstream: upstream, directory: directory, options: options)
                #expect(await source.cachedRanges.byteCount == 0)
                delivered = ByteRangeSet()
                continue
            }
            upstream.failureRate = action < 30 ? 0.5 : 0
            let length = UInt64(upstream.current.count)
            let a = UInt64.random(in: 0..<length, using: &random)
            let b = min(length, a + UInt64.random(in: 1...60_000, using: &random))
            do {
                let bytes = try await source.read(a..<b)
                #expect(bytes == Array(upstream.current[Int(a)..<Int(b)]), "step \(step): wrong bytes for \(a)..<\(b)")
                delivered.insert(a..<b)
            } catch let error as MP4Error {
                #expect(error.kind == .io && error.message.contains("simulated"), "\(error)")
            }
            _ = try Self.tableIsTruthful(directory, resource: upstream.name, origin: upstream.current)
        }
        // Finally everything reads back right.
        upstream.failureRate = 0
        #expect(try await source.read(0..<UInt64(upstream.current.count)) == upstream.current)
    }

    @Test func concurrentReadersShareOneEntryAndOneFetch() async throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-cache")
        defer { FileSystem.removeDirectory(directory) }
        let upstream = FlakyUpstream(Self.origin, seed: 1)
        let a = try await CachedByteSource(upstream: upstream, directory: directory)
        let b = try await CachedByteSource(upstream: upstream, directory: directory)
        #expect(a.entry === b.entry)
        let results = await withTaskGroup(of: [UInt8].self) { group in
            for i in 0..<20 {
                let source = i % 2 == 0 ? a : b
                group.addTask { (try? await source.read(100_000..<150_000)) ?? [] }
            }
            var all: [[UInt8]] = []
            for await r in group { all.append(r) }
            return all
        }
        #expect(results.allSatisfy { $0 == Array(Self.origin[100_000..<150_000]) })
        #expect(upstream.reads.filter { $0.overlaps(100_000..<150_000) }.count == 1, "\(upstream.reads)")
        // A second read is served locally; small gaps are bridged into one request.
        _ = try await a.read(0..<10)
        _ = try await a.read(30_000..<40_000)
        let before = upstream.reads.count
        _ = try await a.read(0..<60_000)  // two gaps, 20 KiB apart: one request
        #expect(upstream.reads.count == before + 1)
    }

    /// Entries close their files when their last source goes: many resources in one process
    /// (`check --cache` over a directory) do not pile up open descriptors.
    @Test func entriesCloseTheirFilesWhenUnused() async throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-cache")
        defer { FileSystem.removeDirectory(directory) }
        // Descriptors of files in this cache directory only: the other suites run at the same
        // time and open (and close) descriptors of their own (counting every descriptor of the
        // process failed once in CI under ASan: 143 against a bound of 124).
        func openDescriptors() -> Int {
            FileSystem.entries("/proc/self/fd").filter { fd in
                ((try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + fd)) ?? "").hasPrefix(directory)
            }.count
        }
        guard !FileSystem.entries("/proc/self/fd").isEmpty else { return }  // no /proc (not Linux)
        for i in 0..<100 {
            let source = try await CachedByteSource(upstream: FlakyUpstream(Array(Self.origin.prefix(1000)), seed: UInt64(i)), directory: directory, key: "r\(i)")
            _ = try await source.read(0..<10)
            if i == 0 { #expect(openDescriptors() > 0, "an open source holds its entry's files (the count must be able to see them)") }
        }
        #expect(openDescriptors() < 20, "\(openDescriptors()) descriptors of the cache left open by 100 released sources")
    }

    /// The proxy's size limit (`serve --max-size`): least-recently-used entries go first, but
    /// never one a source in this process has open (a client is reading it), even when the
    /// limit cannot be met without it.
    @Test func evictionSparesEntriesBeingRead() async throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-cache")
        defer { FileSystem.removeDirectory(directory) }
        let body = Array(Self.origin.prefix(200_000))
        for name in ["old", "newer"] {
            let source = try await CachedByteSource(upstream: FlakyUpstream(body, seed: 1), directory: directory, key: name)
            _ = try await source.read(0..<UInt64(body.count))
        }
        let reading = try await CachedByteSource(upstream: FlakyUpstream(body, seed: 2), directory: directory, key: "reading")
        _ = try await reading.read(0..<UInt64(body.count))
        let open = await CachedByteSource.openResources(directory: directory)
        #expect(open == ["reading"], "\(open)")
        let removed = try CacheDirectory.evict(directory, toAtMost: 0, sparing: open)
        #expect(Set(removed.map(\.resource)) == ["old", "newer"])
        #expect(CacheDirectory.entries(directory).map(\.resource) == ["reading"])
        #expect(try await reading.read(0..<1000) == Array(body[0..<1000]))
        #expect(await reading.statistics.upstreamReads == 1, "the entry being read kept its bytes")
    }

    @Test func corruptTableIsDiscardedNotTrusted() async throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-cache")
        defer { FileSystem.removeDirectory(directory) }
        let upstream = FlakyUpstream(Self.origin, seed: 3)
        let source = try await CachedByteSource(upstream: upstream, directory: directory)
        _ = try await source.read(0..<50_000)
        let paths = CachedByteSource.entryPaths(directory: directory, resource: upstream.name)
        // Torn table, then a table whose checksum does not match, then garbage data claims.
        for damage in [{ (t: [UInt8]) in Array(t.prefix(t.count / 2)) }, { (t: [UInt8]) in t.map { $0 == UInt8(ascii: "5") ? UInt8(ascii: "6") : $0 } }] {
            let table = try #require(FileSystem.read(paths.table))
            FileSystem.write(damage(table), to: paths.table)
            #expect(throws: MP4Error.self) { _ = try CacheTable.load(paths.table) }
            await CachedByteSource.forgetOpenEntries(directory: directory)
            let reopened = try await CachedByteSource(upstream: upstream, directory: directory)
            #expect(await reopened.cachedRanges.byteCount == 0)
            #expect(try await reopened.read(0..<50_000) == Array(Self.origin[0..<50_000]))
        }
    }

    /// A flipped byte in the data file (issue 13 item 13) used to be served: only the range
    /// table was checksummed. Each wholly present 1 MiB block now has a checksum in the table;
    /// a read that finds a block changed drops it, fetches it again and serves the origin's
    /// bytes; with the upstream unreachable, it fails instead of serving corrupt bytes.
    @Test func corruptDataBlocksAreRefetchedNotServed() async throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-cache")
        defer { FileSystem.removeDirectory(directory) }
        let origin: [UInt8] = (0..<2_600_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 11) }
        let upstream = FlakyUpstream(origin, seed: 5)
        let first = try await CachedByteSource(upstream: upstream, directory: directory, key: "blocks")
        try await first.fill(0..<UInt64(origin.count))
        let paths = CachedByteSource.entryPaths(directory: directory, resource: "blocks")
        let table = try #require(try CacheTable.load(paths.table))
        #expect(table.blockChecksums.count == 3)  // 1 MiB, 1 MiB and the 0.48 MiB tail
        // Flip one byte in the second block, as a failing disk or another program would.
        let fd = try Platform.openForUpdate(paths.data)
        var byte = try Platform.readFully(fd, offset: 1_500_000, count: 1, path: paths.data)
        byte[0] ^= 0xFF
        try Platform.writeFully(fd, byte[...], offset: 1_500_000, path: paths.data)
        Platform.closeFile(fd)

        // A new process: the block is checked on first use, found changed and fetched again.
        await CachedByteSource.forgetOpenEntries(directory: directory)
        let second = try await CachedByteSource(upstream: upstream, directory: directory, key: "blocks")
        #expect(try await second.read(1_499_990..<1_500_010) == Array(origin[1_499_990..<1_500_010]))
        let statistics = await second.statistics
        // The block is no longer claimed; the read fetches only its own 20 bytes again.
        #expect(statistics.corruptBlocksRefetched == 1 && statistics.upstreamBytes == 20, "\(statistics)")
        #expect(try await second.read(0..<UInt64(origin.count)) == origin)
        #expect(FileSystem.read(paths.data) == origin)

        // Offline: a corrupt block is an error, never served.
        let fd2 = try Platform.openForUpdate(paths.data)
        try Platform.writeFully(fd2, [0x00, 0x00][...], offset: 100, path: paths.data)
        Platform.closeFile(fd2)
        await CachedByteSource.forgetOpenEntries(directory: directory)
        upstream.failureRate = 1
        let offline = try await CachedByteSource(upstream: upstream, directory: directory, key: "blocks")
        await #expect(throws: MP4Error.self) { _ = try await offline.read(0..<200) }
    }

    /// A table's block checksums are input too: an index far past the resource (that would
    /// overflow `index * blockSize`) or a block the table does not hold makes the table
    /// untrusted, never a trap.
    @Test func blockChecksumsOutsideTheEntryDiscardTheTable() throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-cache")
        defer { FileSystem.removeDirectory(directory) }
        for index in [UInt64.max / 2, 3] {
            var table = CacheTable(resource: "r", length: 3 << 20, validator: "v", rangeSet: ByteRangeSet([0..<(2 << 20)]))
            table.blockChecksums[index] = 1
            try table.write(to: directory + "/t.ranges")
            #expect(throws: MP4Error.self) { _ = try CacheTable.load(directory + "/t.ranges") }
        }
        var good = CacheTable(resource: "r", length: 3 << 20, validator: "v", rangeSet: ByteRangeSet([0..<(2 << 20)]))
        good.blockChecksums[1] = 42
        try good.write(to: directory + "/t.ranges")
        #expect(try CacheTable.load(directory + "/t.ranges")?.blockChecksums == [1: 42])
    }

    /// A table file larger than any table could be is corrupt and is not read: a 1 GiB sparse
    /// file used to be read whole into memory before the decoder refused it.
    @Test func anOversizedTableIsNotRead() throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-cache")
        defer { FileSystem.removeDirectory(directory) }
        let path = directory + "/t.ranges"
        var good = CacheTable(resource: "r", length: 3 << 20, validator: "v", rangeSet: ByteRangeSet([0..<(2 << 20)]))
        try good.write(to: path)
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.truncate(atOffset: 1 << 30)  // sparse: nothing is written
        try handle.close()
        let started = Date()
        #expect(throws: MP4Error.self) { _ = try CacheTable.load(path) }
        #expect(Date().timeIntervalSince(started) < 0.5, "the file was read")
        good.generation = "second"
        try good.write(to: path)
        #expect(try CacheTable.load(path)?.generation == good.generation)
    }

    /// The origin's type and date are part of the checksummed table: they round-trip, a
    /// changed one fails the checksum, and a table written before they existed still loads.
    @Test func theOriginsTypeAndDateAreRecordedInTheTable() throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-cache")
        defer { FileSystem.removeDirectory(directory) }
        let path = directory + "/t.ranges"
        var table = CacheTable(resource: "r", length: 100, validator: "v", rangeSet: ByteRangeSet([0..<10]))
        table.attributes = ResourceAttributes(contentType: "audio/mp4", lastModified: "Mon, 23 Nov 2026 10:00:00 GMT")
        try table.write(to: path)
        #expect(try CacheTable.load(path)?.attributes == table.attributes)
        let text = String(decoding: try #require(FileSystem.read(path)), as: UTF8.self)
        FileSystem.write(Array(text.replacingOccurrences(of: "audio", with: "video").utf8), to: path)
        #expect(throws: MP4Error.self) { _ = try CacheTable.load(path) }
        let old = CacheTable(resource: "r", length: 100, validator: "v", rangeSet: ByteRangeSet([0..<10]))
        try old.write(to: path)
        let oldText = String(decoding: try #require(FileSystem.read(path)), as: UTF8.self)
        #expect(!oldText.contains("contentType") && !oldText.contains("lastModified"), "a table without them has the old form")
        #expect(try CacheTable.load(path) == old)
    }

    @Test func evictionAndExport() async throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-cache")
        defer { FileSystem.removeDirectory(directory) }
        var sources: [CachedByteSource] = []
        for i in 0..<3 {
            let upstream = FlakyUpstream(Array(Self.origin.prefix(100_000 + i)), seed: UInt64(i))
            let source = try await CachedByteSource(upstream: upstream, directory: directory, key: "resource-\(i)")
            _ = try await source.read(0..<UInt64(100_000 + i))
            sources.append(source)
            usleep(20_000)
        }
        _ = try await sources[0].read(0..<10)  // resource-0 becomes the most recently used
        let entries = CacheDirectory.entries(directory)
        #expect(entries.count == 3 && entries.allSatisfy(\.isComplete))
        #expect(entries.first?.resource == "resource-0")
        let removed = try CacheDirectory.evict(directory, toAtMost: 250_000)
        #expect(removed.map(\.resource) == ["resource-1"])
        // Nothing of the evicted entry is left, its lock file included.
        let kept = FileSystem.entries(directory)
        #expect(kept.count == 6, "\(kept)")
        // The resource comes back as a new entry.
        sources.removeAll()
        let again = try await CachedByteSource(upstream: FlakyUpstream(Array(Self.origin.prefix(100_001)), seed: 1), directory: directory, key: "resource-1")
        #expect(try await again.read(0..<100) == Array(Self.origin.prefix(100)))
        #expect(FileSystem.entries(directory).count == 9)
        // A lock file removed after it was opened is not locked: the lock is taken on the file
        // that is there now, so an evicting process and a reading one never both hold it.
        let lockPath = directory + "/test.lock"
        let stale = try Platform.openForUpdate(lockPath)
        defer { Platform.closeFile(stale) }
        Platform.removeFile(lockPath)
        let fresh = try EntryLocks.openAndLockTable(lockPath)
        defer { Platform.closeFile(fresh) }
        #expect(Platform.isSameFile(fresh, path: lockPath) && !Platform.isSameFile(stale, path: lockPath))
        try CacheDirectory.export(directory, resource: "resource-2", to: directory + "/exported.bin")
        #expect(FileSystem.read(directory + "/exported.bin") == Array(Self.origin.prefix(100_002)))
        #expect(throws: MP4Error.self) { try CacheDirectory.export(directory, resource: "resource-1", to: directory + "/x") }
    }

    /// A child process fills the cache (`mp4probe fetch --all` in 1 KiB blocks, each flushed
    /// and recorded) and is killed with SIGKILL at random moments; after each kill, the table
    /// only lists bytes that are in the data file, and reading everything gives the origin.
    @Test(.enabled(if: Executables.mp4probe != nil, "the mp4probe executable is not built beside the tests (swift build first): the crash test is skipped"))
    func survivesSIGKILLAtRandomMoments() async throws {
        let executable = try #require(Executables.mp4probe)
        let directory = FileSystem.temporaryDirectory("mp4probe-crash")
        defer { FileSystem.removeDirectory(directory) }
        let input = Fixtures.sample("quicktime.mov")
        let origin = try #require(FileSystem.read(input))
        var random = SeededRandom(seed: 99)
        var killedWhileRunning = 0
        var round = 0
        while killedWhileRunning < 20 && round < 80 {
            round += 1
            // A complete entry would make the child finish at once: start it over.
            if CacheDirectory.entries(directory).contains(where: \.isComplete) {
                CacheDirectory.entries(directory).forEach { try? CacheDirectory.remove($0, from: directory) }
            }
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = ["fetch", input, "--cache", directory, "--all", "--block", "1K"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            usleep(UInt32.random(in: 5_000...100_000, using: &random))
            if process.isRunning { killedWhileRunning += 1 }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            let present = try Self.tableIsTruthful(directory, resource: input, origin: origin)
            if round % 6 == 5 {
                // Reopen and read everything through the cache: the origin's bytes.
                await CachedByteSource.forgetOpenEntries(directory: directory)
                let source = try await CachedByteSource(upstream: try FileSource(path: input), directory: directory)
                #expect(await source.cachedRanges.byteCount >= present.byteCount)
                #expect(try await source.read(0..<UInt64(origin.count)) == origin, "round \(round)")
                await CachedByteSource.forgetOpenEntries(directory: directory)
                CacheDirectory.entries(directory).forEach { try? CacheDirectory.remove($0, from: directory) }
            }
        }
        #expect(killedWhileRunning >= 20, "only \(killedWhileRunning) kills hit a running fill")

        // Two processes filling the same entry at once: the lock serializes their updates and
        // each keeps the other's ranges.
        CacheDirectory.entries(directory).forEach { try? CacheDirectory.remove($0, from: directory) }
        let writers = try (0..<2).map { i -> Process in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = ["fetch", input, "--cache", directory, "--all", "--block", i == 0 ? "1K" : "3K"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            return process
        }
        for process in writers { process.waitUntilExit() }
        #expect(writers.allSatisfy { $0.terminationStatus == 0 })
        let present = try Self.tableIsTruthful(directory, resource: input, origin: origin)
        #expect(present.byteCount == UInt64(origin.count) && present.ranges.count == 1)
    }
}
