import Foundation
import Testing
@testable import MP4Core
@testable import MP4IO
import MP4TestSupport

/// `CachedByteSource.fill`: upstream bytes stream straight into the data file and are claimed
/// in commits; what a commit claims is always true on disk.
@Suite(.serialized, .hangGuard) struct CacheFillTests {
    static let origin: [UInt8] = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 11 &+ $0 >> 10) }

    /// An upstream that streams in 64 KiB pieces and runs `hook` once, after the first piece
    /// (for "another process" to act in the middle of a fill).
    final class HookedUpstream: ByteSource, @unchecked Sendable {
        let bytes: [UInt8]
        let hook: Locked<(@Sendable () -> Void)?>
        let pieces = Locked(0)
        init(_ bytes: [UInt8], hook: @escaping @Sendable () -> Void) {
            self.bytes = bytes
            self.hook = Locked(hook)
        }
        var name: String { "hooked://resource" }
        func length() async throws -> UInt64 { UInt64(bytes.count) }
        func validator() async throws -> String? { "v1" }
        func read(_ range: Range<UInt64>) async throws -> [UInt8] {
            Array(bytes[Int(range.lowerBound)..<min(Int(range.upperBound), bytes.count)])
        }
        func read(_ range: Range<UInt64>, into consume: (ArraySlice<UInt8>) async throws -> Void) async throws {
            var offset = Int(range.lowerBound)
            while offset < Int(range.upperBound) {
                let end = min(Int(range.upperBound), offset + (64 << 10))
                try await consume(bytes[offset..<end])
                offset = end
                pieces.withLock { $0 += 1 }
                if let hook = self.hook.withLock({ hook -> (@Sendable () -> Void)? in defer { hook = nil }; return hook }) { hook() }
            }
        }
    }

    /// An upstream that streams in pieces of `piece` bytes.
    final class PiecesUpstream: ByteSource, Sendable {
        let bytes: [UInt8]
        let piece: Int
        init(_ bytes: [UInt8], piece: Int) { (self.bytes, self.piece) = (bytes, piece) }
        var name: String { "pieces://resource" }
        func length() async throws -> UInt64 { UInt64(bytes.count) }
        func validator() async throws -> String? { "v1" }
        func read(_ range: Range<UInt64>) async throws -> [UInt8] { Array(bytes[Int(range.lowerBound)..<min(Int(range.upperBound), bytes.count)]) }
        func read(_ range: Range<UInt64>, into consume: (ArraySlice<UInt8>) async throws -> Void) async throws {
            var offset = Int(range.lowerBound)
            while offset < min(Int(range.upperBound), bytes.count) {
                let end = min(Int(range.upperBound), bytes.count, offset + piece)
                try await consume(bytes[offset..<end])
                offset = end
            }
        }
    }

    /// The block checksums a fetch computes as it writes (no read-back) are those of the bytes
    /// on disk: fills in odd-sized pieces, one from a block's start and one from inside a
    /// block (whose first block is then read back), and the last, shorter block; each
    /// checksum in the table is `hashWords` of the block, and a served read verifies them.
    @Test func blockChecksumsHashedAsWrittenAreThoseOfTheBlocks() async throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-block-hashes")
        defer { FileSystem.removeDirectory(directory) }
        var random = SeededRandom(seed: 11)
        let bytes = random.bytes((5 << 20) + 12_345)
        var options = CachedByteSource.Options()
        options.commitInterval = 1 << 20
        let source = try await CachedByteSource(upstream: PiecesUpstream(bytes, piece: 7_777), directory: directory, options: options)
        try await source.fill(0..<(2 << 20))
        try await source.fill((3 << 20) + 100..<UInt64(bytes.count))
        try await source.fill((2 << 20)..<(3 << 20) + 100)
        await source.fetchesEnded()
        let table = try #require(try CacheTable.load(CachedByteSource.entryPaths(directory: directory, resource: "pieces://resource").table))
        #expect(table.blockChecksums.count == 6, "\(table.blockChecksums.keys.sorted())")
        for (index, checksum) in table.blockChecksums {
            let block = table.block(index)
            #expect(checksum == FNV1a.hashWords(Array(bytes[Int(block.lowerBound)..<Int(block.upperBound)])), "block \(index)")
        }
        await CachedByteSource.forgetOpenEntries(directory: directory)
        let again = try await CachedByteSource(upstream: PiecesUpstream(bytes, piece: 7_777), directory: directory, options: options)
        #expect(try await again.read(0..<UInt64(bytes.count)) == bytes)
        #expect(await again.statistics.corruptBlocksRefetched == 0)
    }

    /// Another process starts the entry again (another version of the resource: the data file
    /// truncated, a new table) while this one streams. The bytes streamed before that are gone
    /// from the data file: the fill must not claim them. It notices at its commit (the table's
    /// generation changed), claims nothing, and fetches again; in the end every claimed byte is
    /// true. Without the generation check the table claims zeros.
    @Test func aResetByAnotherProcessDuringAFillIsNeverClaimed() async throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-fill")
        defer { FileSystem.removeDirectory(directory) }
        let paths = CachedByteSource.entryPaths(directory: directory, resource: "hooked://resource")
        let upstream = HookedUpstream(Self.origin) {
            // What `loadTable` in another process does for another version: empty data file,
            // fresh table with its own generation.
            if let handle = FileHandle(forUpdatingAtPath: paths.data) {
                try? handle.truncate(atOffset: 0)
                try? handle.truncate(atOffset: UInt64(Self.origin.count))
                try? handle.close()
            }
            _ = try? CacheTable(resource: "hooked://resource", length: UInt64(Self.origin.count), validator: "v0").write(to: paths.table)
        }
        var options = CachedByteSource.Options()
        options.commitInterval = 1 << 20
        let cached = try await CachedByteSource(upstream: upstream, directory: directory, options: options)
        try await cached.fill(0..<UInt64(Self.origin.count))
        let present = try CachedByteSourceTests.tableIsTruthful(directory, resource: "hooked://resource", origin: Self.origin)
        #expect(present.byteCount == UInt64(Self.origin.count))
        #expect(try await cached.read(0..<UInt64(Self.origin.count)) == Self.origin)
        #expect(upstream.pieces.withLock { $0 } > Self.origin.count / (64 << 10), "the fill did not fetch again after the reset")
    }

    /// A fill over HTTP that keeps failing: what arrived before each failure is committed, so
    /// the next attempt (another process, later) fetches only the rest.
    @Test func anInterruptedFillKeepsWhatArrived() async throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-fill")
        defer { FileSystem.removeDirectory(directory) }
        let server = try #require(LoopbackHTTPServer(body: Self.origin, behavior: .dropsAfter(bytes: 1_000_000, times: 1_000)))
        defer { server.stop() }
        var http = HTTPByteSource.Options()
        http.maxRetries = 0
        http.headWindow = 1024
        var options = CachedByteSource.Options()
        options.commitInterval = 256 << 10
        let cached = try await CachedByteSource(upstream: try HTTPByteSource(url: server.url, options: http), directory: directory, options: options)
        await #expect(throws: MP4Error.self) { try await cached.fill(0..<UInt64(Self.origin.count)) }
        let present = try CachedByteSourceTests.tableIsTruthful(directory, resource: server.url.absoluteString, origin: Self.origin)
        // The 1 KiB head came first; the streamed request for the rest dropped after 1,000,000.
        #expect(present.ranges == [0..<1_001_024], "\(present.ranges)")

        // A later run with retries completes it, asking only for the rest.
        await CachedByteSource.forgetOpenEntries(directory: directory)
        let healthy = try #require(LoopbackHTTPServer(body: Self.origin, behavior: .keepsAlive))
        defer { healthy.stop() }
        let resumed = try await CachedByteSource(upstream: try HTTPByteSource(url: healthy.url), directory: directory, key: server.url.absoluteString, options: options)
        try await resumed.fill(0..<UInt64(Self.origin.count))
        #expect(healthy.ranges.last == "bytes=1001024-\(Self.origin.count - 1)", "\(healthy.ranges)")
        #expect(try await resumed.read(0..<UInt64(Self.origin.count)) == Self.origin)
    }

    /// An upstream that sends more than it was asked for: the fill writes nothing past the
    /// part (it used to write on, into bytes the table then claimed) and fails.
    @Test func anUpstreamSendingTooMuchWritesNothingPastThePart() async throws {
        struct Overflowing: ByteSource {
            let bytes: [UInt8]
            var name: String { "overflowing://resource" }
            func length() async throws -> UInt64 { UInt64(bytes.count) }
            func read(_ range: Range<UInt64>) async throws -> [UInt8] { Array(bytes[Int(range.lowerBound)..<Int(range.upperBound)]) }
            func read(_ range: Range<UInt64>, into consume: (ArraySlice<UInt8>) async throws -> Void) async throws {
                // The range, then 4 KiB of what follows it, in one piece.
                try await consume(bytes[Int(range.lowerBound)..<min(bytes.count, Int(range.upperBound) + 4096)])
            }
        }
        let directory = FileSystem.temporaryDirectory("mp4probe-fill")
        defer { FileSystem.removeDirectory(directory) }
        let cached = try await CachedByteSource(upstream: Overflowing(bytes: Self.origin), directory: directory)
        await #expect(throws: MP4Error.self) { try await cached.fill(1000..<5000) }
        #expect(await cached.cachedRanges.byteCount == 0)
        let paths = CachedByteSource.entryPaths(directory: directory, resource: "overflowing://resource")
        let data = try #require(FileSystem.read(paths.data))
        #expect(data[5000..<9096].allSatisfy { $0 == 0 }, "bytes past the part were written")
    }

    /// A commit's data flush (a full drive flush on a phone, tens of milliseconds) runs in the
    /// fetch, not on the entry's actor: a player reading cached bytes of the same entry while
    /// the fill flushes gets them at once. The disk is made slow (400 ms per flush of the data
    /// file); with the flush on the actor (as before) the read waited for it. Also with the
    /// flush on a dispatch queue, as before iOS 18 (`ServingTask.offPool`).
    @Test(arguments: [false, true]) func readersDoNotWaitForACommitsFlush(flushOnAQueue: Bool) async throws {
        ServingTask.offPoolDispatches.withLock { $0 = flushOnAQueue }
        defer { ServingTask.offPoolDispatches.withLock { $0 = false } }
        let directory = FileSystem.temporaryDirectory("mp4probe-fill")
        defer { FileSystem.removeDirectory(directory) }
        let paths = CachedByteSource.entryPaths(directory: directory, resource: "hooked://resource")
        var options = CachedByteSource.Options()
        options.commitInterval = 256 << 10
        let cached = try await CachedByteSource(upstream: HookedUpstream(Self.origin) {}, directory: directory, options: options)
        try await cached.fill(0..<(64 << 10))
        let flushing = Locked(0)
        Platform.beforeSync.withLock { hooks in
            hooks[directory] = { path, _ in
                guard path == paths.data else { return }
                flushing.withLock { $0 += 1 }
                Thread.sleep(forTimeInterval: 0.4)
            }
        }
        defer { Platform.beforeSync.withLock { $0[directory] = nil } }
        let filled = Locked(false)
        let fill = Task {
            defer { filled.withLock { $0 = true } }
            try await cached.fill(0..<UInt64(Self.origin.count))
        }
        // Three flushes of the twelve are looked into; a test task starved long enough for the
        // fill to end first (an AddressSanitizer run under load hung here) stops looking. The
        // reader runs off the shared pool, as a served player does (ServingTask): the suite's
        // synchronous tests hold the pool's threads, and a read that waited for one of them
        // (0.2 s and more in a loaded AddressSanitizer run) is not a read that waited for a flush.
        let looks = try await ServingTask.startThrowing { () -> [(wait: Double, right: Bool)] in
            var looks: [(wait: Double, right: Bool)] = []
            for _ in 0..<3 where !filled.withLock({ $0 }) {
                let seen = flushing.withLock { $0 }
                while flushing.withLock({ $0 }) == seen && !filled.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(5)) }
                guard !filled.withLock({ $0 }) else { break }
                try await Task.sleep(for: .milliseconds(50))    // well inside the 400 ms flush
                let start = ContinuousClock.now
                let bytes = try await cached.read(0..<4096)
                let wait = start.duration(to: .now)
                looks.append((Double(wait.components.attoseconds) / 1e18 + Double(wait.components.seconds), bytes == Array(Self.origin[0..<4096])))
            }
            return looks
        }.value
        let waits = looks.map(\.wait)
        #expect(looks.allSatisfy { $0.right }, "a reader got wrong bytes during a commit")
        try await fill.value
        print("a reader's wait for cached bytes during a commit's flush (400 ms): \(waits.map { String(format: "%.3f s", $0) })")
        #expect(!waits.isEmpty && waits.allSatisfy { $0 < 0.2 }, "a reader waited for the commit's flush: \(waits)")
        #expect(try await cached.read(0..<UInt64(Self.origin.count)) == Self.origin)
    }
}
