import Foundation
import MP4Core

/// A ``ByteSource`` that keeps what it reads from an upstream source (HTTP in practice) in an
/// on-disk cache: one sparse data file per resource plus a persisted table of the byte ranges
/// present (``ByteRangeSet``). A read is split into cached and missing parts; only the missing
/// parts go upstream (neighbouring gaps smaller than ``Options/bridgeGap`` are fetched as one).
///
/// - **Crash safety**: data is written and flushed before the table that claims it is replaced
///   (atomically), so after a crash at any point the table never lists bytes that are not
///   durably in the data file; a torn or corrupt table is detected and the entry discarded.
/// - **Validity**: each entry records the upstream length and validator (ETag / Last-Modified /
///   size+mtime); when they change, the entry is emptied, never mixed.
/// - **Concurrency**: sources for the same resource in one process share one entry (an actor);
///   concurrent reads of the same missing range fetch it once. Between processes, every update
///   of an entry holds an exclusive file lock and merges the table on disk.
///
/// ```swift
/// let remote = try HTTPByteSource(url: url)
/// let cached = try await CachedByteSource(upstream: remote, directory: "/var/cache/videos")
/// let file = try await MP4File.open(cached)      // moov now local too
/// ```
public final class CachedByteSource: ByteSource {
    /// Tuning.
    public struct Options: Sendable {
        /// Missing parts separated by less than this many cached bytes are fetched in one
        /// request (re-fetching the small cached gap costs less than a second round trip).
        public var bridgeGap: UInt64 = 64 << 10
        /// Bytes streamed into the data file between two commits (data fsync, then the table
        /// that claims them): what an interrupted fill can lose at most.
        public var commitInterval: UInt64 = 64 << 20
        public init() {}
    }

    /// What this source did.
    public struct Statistics: Sendable, Hashable {
        public var upstreamReads = 0
        public var upstreamBytes: UInt64 = 0
        public var cachedBytesServed: UInt64 = 0
        /// Blocks found corrupt (bytes that no longer match their checksum) and fetched again.
        public var corruptBlocksRefetched = 0
        /// Bytes read from the data file only to check block checksums (a read smaller than
        /// its blocks reads the rest of them, once per block per process).
        public var checksumBytesRead: UInt64 = 0
    }

    public let upstream: any ByteSource
    let entry: CacheEntry
    private let totalLength: UInt64
    public let options: Options

    /// Opens (or creates) the entry for `upstream` in `directory`; `key` defaults to the
    /// upstream's name. Learns the upstream length and validator and empties the entry if the
    /// resource changed.
    public init(upstream: any ByteSource, directory: String, key: String? = nil, options: Options = Options()) async throws {
        self.upstream = upstream
        self.options = options
        try Platform.makeDirectory(directory)
        let length = try await upstream.length()
        let validator = try await upstream.validator()
        self.entry = try await CacheRegistry.shared.entry(directory: directory, resource: key ?? upstream.name)
        try await entry.prepare(length: length, validator: validator)
        self.totalLength = length
    }

    public var name: String { upstream.name }
    public var preferredReadSize: Int { upstream.preferredReadSize }
    public func length() async throws -> UInt64 { totalLength }
    public func validator() async throws -> String? { try await upstream.validator() }

    /// What was served from where, for this entry (shared by all sources of the resource).
    public var statistics: Statistics { get async { await entry.statistics } }

    /// Ranges present in the cache.
    public var cachedRanges: ByteRangeSet { get async { await entry.present } }

    public func read(_ range: Range<UInt64>) async throws -> [UInt8] {
        let upper = min(range.upperBound, totalLength)
        guard range.lowerBound < upper else { return [] }
        return try await entry.read(range.lowerBound..<upper, upstream: upstream, bridgeGap: options.bridgeGap, commitInterval: max(options.commitInterval, 1))
    }

    /// Makes `range` present in the cache without reading it back: missing parts stream from
    /// upstream straight to the data file (over `http:` one request per missing part, memory
    /// bounded by the socket buffer), committed every ``Options/commitInterval`` bytes, so an
    /// interrupted fill keeps what arrived.
    public func fill(_ range: Range<UInt64>) async throws {
        let upper = min(range.upperBound, totalLength)
        guard range.lowerBound < upper else { return }
        try await entry.fill(range.lowerBound..<upper, upstream: upstream, bridgeGap: options.bridgeGap, commitInterval: max(options.commitInterval, 1))
    }

    /// Makes the next sources for `directory` reopen its entries from disk.
    public static func forgetOpenEntries(directory: String) async {
        await CacheRegistry.shared.forget(directory: directory)
    }

    /// The file names of the entry for `resource` (for tools and tests).
    public static func entryPaths(directory: String, resource: String) -> (data: String, table: String, lock: String) {
        let key = String(FNV1a.hash(resource.utf8), radix: 16)
        let base = directory + "/" + key
        return (base + ".data", base + ".ranges", base + ".lock")
    }
}

/// One entry per (directory, resource) per process, while some source uses it: entries are
/// held weakly, so their file descriptors close when the last source goes (checking 10,000
/// URLs with `--cache` must not keep 20,000 files open).
actor CacheRegistry {
    static let shared = CacheRegistry()
    private final class Weak {
        weak var entry: CacheEntry?
        init(_ entry: CacheEntry) { self.entry = entry }
    }
    private var entries: [String: Weak] = [:]

    func entry(directory: String, resource: String) throws -> CacheEntry {
        let key = directory + "\u{0}" + resource
        if let existing = entries[key]?.entry { return existing }
        let made = try CacheEntry(directory: directory, resource: resource)
        if entries.count % 256 == 255 { entries = entries.filter { $0.value.entry != nil } }
        entries[key] = Weak(made)
        return made
    }

    /// Forgets the entries of `directory`, so that the next source reopens them from disk
    /// (what a new process would see). For tests and long-running processes.
    func forget(directory: String) {
        entries = entries.filter { !$0.key.hasPrefix(directory + "\u{0}") }
    }
}

/// The shared state of one cached resource.
actor CacheEntry {
    let resource: String
    let dataPath: String, tablePath: String, lockPath: String
    private var dataFD: Int32
    private var lockFD: Int32
    private var table: CacheTable
    private(set) var statistics = CachedByteSource.Statistics()
    private var inFlight: [(range: Range<UInt64>, task: Task<Bool, any Error>)] = []
    /// Blocks whose checksum this process has checked (or computed): checked once each.
    private var verifiedBlocks: Set<UInt64> = []

    init(directory: String, resource: String) throws {
        self.resource = resource
        (dataPath, tablePath, lockPath) = CachedByteSource.entryPaths(directory: directory, resource: resource)
        lockFD = try Platform.openForUpdate(lockPath)
        do {
            dataFD = try Platform.openForUpdate(dataPath)
        } catch {
            Platform.closeFile(lockFD)
            throw error
        }
        table = CacheTable(resource: resource, length: 0, validator: nil)
    }

    deinit {
        Platform.closeFile(dataFD)
        Platform.closeFile(lockFD)
    }

    var present: ByteRangeSet { table.rangeSet }

    /// Runs `body` holding the entry's file lock (other processes wait).
    private func locked<T>(_ body: () throws -> T) throws -> T {
        try Platform.lockExclusive(lockFD, path: lockPath)
        if !Platform.isSameFile(lockFD, path: lockPath) {
            // The lock file was removed (`cache evict`) since it was opened: the lock taken on
            // the old file excludes nobody. Lock the file that is there now.
            Platform.unlock(lockFD)
            Platform.closeFile(lockFD)
            lockFD = try Platform.openAndLock(lockPath)
        }
        defer { Platform.unlock(lockFD) }
        return try body()
    }

    /// The table on disk, or an empty one when it is missing, corrupt or for another
    /// resource/version (then the data file is emptied too). Call with the lock held.
    private func loadTable(length: UInt64, validator: String?) throws -> CacheTable {
        let fresh = CacheTable(resource: resource, length: length, validator: validator)
        let onDisk: CacheTable?
        do {
            onDisk = try CacheTable.load(tablePath)
        } catch {
            onDisk = nil  // torn or corrupt: discarded, never trusted
        }
        // The data file must be the one the table describes (same inode, full length).
        let dataIsThere = (try? Platform.status(dataFD, path: dataPath)).map { open in
            Platform.status(path: dataPath).map { $0.inode == open.inode && $0.device == open.device } ?? false
        } ?? false
        if !dataIsThere {
            Platform.closeFile(dataFD)
            dataFD = try Platform.openForUpdate(dataPath)
        }
        if let onDisk, onDisk.resource == resource, onDisk.length == length, onDisk.validator == validator,
           dataIsThere, Platform.usage(dataPath)?.size == length {
            return onDisk
        }
        // New, changed upstream, unreadable, or its data file is gone: start empty (a sparse
        // file of the full length).
        try Platform.truncate(dataFD, size: 0, path: dataPath)
        try Platform.truncate(dataFD, size: length, path: dataPath)
        try fresh.write(to: tablePath)
        return fresh
    }

    func prepare(length: UInt64, validator: String?) throws {
        let generation = table.generation
        table = try locked { try loadTable(length: length, validator: validator) }
        if table.generation != generation { verifiedBlocks = [] }
    }

    func read(_ range: Range<UInt64>, upstream: any ByteSource, bridgeGap: UInt64, commitInterval: UInt64) async throws -> [UInt8] {
        for _ in 0..<2 {
            try await fill(range, upstream: upstream, bridgeGap: bridgeGap, commitInterval: commitInterval)
            let bytes = try Platform.readFully(dataFD, offset: range.lowerBound, count: Int(range.count), path: dataPath)
            guard bytes.count == Int(range.count) else {
                throw MP4Error(.io, "cache data file \(dataPath) is shorter than its table says")
            }
            // Blocks whose bytes no longer match their checksum are dropped from the table and
            // fetched again by the next pass; corrupt bytes are never served.
            if try verifyBlocks(range, bytes: bytes) {
                statistics.cachedBytesServed += UInt64(range.count)
                return bytes
            }
        }
        throw MP4Error(.io, "cache data file \(dataPath) fails its block checksums again after a fresh fetch")
    }

    /// Checks the wholly present blocks `range` touches against their checksums, each block
    /// once per process. Returns false after dropping the blocks that fail (the table no
    /// longer claims them, so the next fill fetches them again).
    private func verifyBlocks(_ range: Range<UInt64>, bytes: [UInt8]) throws -> Bool {
        guard let indexes = table.blocks(touching: range) else { return true }
        var corrupt: [UInt64] = []
        for index in indexes where !verifiedBlocks.contains(index) {
            guard let expected = table.blockChecksums[index] else { continue }
            let block = table.block(index)
            let content: [UInt8]
            if block.lowerBound >= range.lowerBound && block.upperBound <= range.upperBound {
                content = Array(bytes[Int(block.lowerBound - range.lowerBound)..<Int(block.upperBound - range.lowerBound)])
            } else {
                content = try Platform.readFully(dataFD, offset: block.lowerBound, count: Int(block.count), path: dataPath)
            }
            statistics.checksumBytesRead += UInt64(content.count)
            if content.count == Int(block.count) && FNV1a.hashWords(content) == expected {
                verifiedBlocks.insert(index)
            } else {
                corrupt.append(index)
            }
        }
        guard !corrupt.isEmpty else { return true }
        statistics.corruptBlocksRefetched += corrupt.count
        try locked {
            table = try loadTable(length: table.length, validator: table.validator)
            for index in corrupt {
                table.rangeSet.remove(table.block(index))
                table.blockChecksums[index] = nil
            }
            try table.write(to: tablePath)
        }
        return false
    }

    /// Computes the checksums of the blocks `range` completed (read back from the data file,
    /// just written, so from the page cache). Call with the lock held.
    private func addBlockChecksums(around range: Range<UInt64>) throws {
        guard let indexes = table.blocks(touching: range) else { return }
        for index in indexes where table.blockChecksums[index] == nil {
            let block = table.block(index)
            guard !block.isEmpty, table.rangeSet.contains(block) else { continue }
            let content = try Platform.readFully(dataFD, offset: block.lowerBound, count: Int(block.count), path: dataPath)
            guard content.count == Int(block.count) else { continue }
            table.blockChecksums[index] = FNV1a.hashWords(content)
            verifiedBlocks.insert(index)
        }
    }

    /// Makes every byte of `range` present: the missing parts are streamed from upstream
    /// straight into the data file (memory: one piece), committed every `commitInterval`
    /// bytes and at the end.
    func fill(_ range: Range<UInt64>, upstream: any ByteSource, bridgeGap: UInt64, commitInterval: UInt64) async throws {
        Platform.touch(tablePath)
        var resets = 0
        while true {
            var missing = table.rangeSet.missing(in: range)
            if missing.isEmpty { break }
            // Bridge small cached gaps between missing parts: one request instead of two.
            var bridged: [Range<UInt64>] = []
            for part in missing {
                if let last = bridged.last, part.lowerBound - last.upperBound < bridgeGap {
                    bridged[bridged.count - 1] = last.lowerBound..<part.upperBound
                } else {
                    bridged.append(part)
                }
            }
            missing = bridged
            let part = missing[0]
            if let running = inFlight.first(where: { $0.range.overlaps(part) }) {
                // Someone is already fetching (part of) it: wait, then look again.
                _ = try await running.task.value
                continue
            }
            let task = Task { try await self.fetch(part, from: upstream, commitInterval: commitInterval) }
            inFlight.append((part, task))
            defer { inFlight.removeAll { $0.range == part } }
            if try await task.value == false {
                // Another process started the entry again while we streamed: what we wrote
                // was not claimed. Look again, a bounded number of times.
                resets += 1
                guard resets <= 3 else { throw MP4Error(.io, "\(resource): the cache entry was started again by another process \(resets) times during one read") }
            }
        }
    }

    /// Streams `part` from upstream into the data file, committing what arrived every
    /// `commitInterval` bytes, at the end, and when the stream fails (then rethrows). Returns
    /// false when the entry was started again by another process meanwhile (nothing claimed).
    private func fetch(_ part: Range<UInt64>, from upstream: any ByteSource, commitInterval: UInt64) async throws -> Bool {
        statistics.upstreamReads += 1
        let generation = table.generation
        // The stream runs outside the actor (the upstream is nonisolated): it writes with the
        // descriptor directly and comes back to the actor only to commit.
        let progress = FillProgress(start: part.lowerBound)
        let fd = dataFD, path = dataPath, name = resource
        defer { statistics.upstreamBytes += progress.written - part.lowerBound }
        var failure: (any Error)?
        do {
            try await upstream.read(part, into: { @Sendable bytes in
                guard progress.valid else { throw CancellationError() }
                // Never past the part, whatever the upstream sends.
                guard UInt64(bytes.count) <= part.upperBound - progress.written else {
                    throw MP4Error(.io, "\(name): upstream sent more than the \(part.count) bytes asked for at \(part.lowerBound)", offset: part.lowerBound)
                }
                // A piece may span several commit points (`--block` smaller than a piece).
                var rest = bytes
                while !rest.isEmpty && progress.valid {
                    let room = commitInterval - (progress.written - progress.committed)
                    let chunk = rest.prefix(Int(min(UInt64(rest.count), room)))
                    try Platform.writeFully(fd, chunk, offset: progress.written, path: path)
                    progress.written += UInt64(chunk.count)
                    rest = rest.dropFirst(chunk.count)
                    if progress.written - progress.committed >= commitInterval {
                        progress.valid = try await self.commit(progress.committed..<progress.written, generation: generation)
                        progress.committed = progress.written
                    }
                }
            })
            if progress.written != part.upperBound {
                failure = MP4Error(.io, "\(resource): upstream returned \(progress.written - part.lowerBound) of \(part.count) bytes at \(part.lowerBound)", offset: part.lowerBound)
            }
        } catch {
            failure = error
        }
        // What arrived is claimed even when the stream failed: the next read asks for the rest.
        if progress.valid && progress.written > progress.committed {
            do {
                progress.valid = try commit(progress.committed..<progress.written, generation: generation)
            } catch {
                failure = failure ?? error
            }
        }
        guard progress.valid else { return false }
        if let failure { throw failure }
        return true
    }

    /// Claims `range` (written to the data file) in the table: data fsync first, then, holding
    /// the lock, the table as it is on disk now (other processes' ranges merged) plus `range`,
    /// written atomically. Claims nothing and returns false when the entry's generation is no
    /// longer `generation` (another process emptied it: the bytes may be gone).
    private func commit(_ range: Range<UInt64>, generation: String?) throws -> Bool {
        try Platform.syncData(dataFD, path: dataPath)   // data first ...
        return try locked {
            // Another process may have added ranges, or evicted or reset the entry: start from
            // what is on disk now (an empty entry when it is gone or damaged).
            table = try loadTable(length: table.length, validator: table.validator)
            guard table.generation == generation else { verifiedBlocks = []; return false }
            table.rangeSet.insert(range)
            try addBlockChecksums(around: range)
            try table.write(to: tablePath)              // ... then the table that claims it
            return true
        }
    }
}

/// How far one streamed fetch got. Touched only by the stream that owns it, one piece at a
/// time (the pieces of a read arrive in order, never concurrently).
private final class FillProgress: @unchecked Sendable {
    /// End of the bytes written to the data file.
    var written: UInt64
    /// End of the bytes claimed by the table.
    var committed: UInt64
    /// False once a commit found the entry started again by another process.
    var valid = true

    init(start: UInt64) {
        written = start
        committed = start
    }
}
