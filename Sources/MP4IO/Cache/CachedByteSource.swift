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
        public init() {}
    }

    /// What this source did.
    public struct Statistics: Sendable, Hashable {
        public var upstreamReads = 0
        public var upstreamBytes: UInt64 = 0
        public var cachedBytesServed: UInt64 = 0
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
        return try await entry.read(range.lowerBound..<upper, upstream: upstream, bridgeGap: options.bridgeGap)
    }

    /// Makes the next sources for `directory` reopen its entries from disk.
    public static func forgetOpenEntries(directory: String) async {
        await CacheRegistry.shared.forget(directory: directory)
    }

    /// The file names of the entry for `resource` (for tools and tests).
    public static func entryPaths(directory: String, resource: String) -> (data: String, table: String, lock: String) {
        let key = String(CacheTable.fnv1a(resource.utf8), radix: 16)
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
    private let lockFD: Int32
    private var table: CacheTable
    private(set) var statistics = CachedByteSource.Statistics()
    private var inFlight: [(range: Range<UInt64>, task: Task<Void, any Error>)] = []

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
        table = CacheTable(resource: resource, length: 0, validator: nil, ranges: [])
    }

    deinit {
        Platform.closeFile(dataFD)
        Platform.closeFile(lockFD)
    }

    var present: ByteRangeSet { table.rangeSet }

    /// Runs `body` holding the entry's file lock (other processes wait).
    private func locked<T>(_ body: () throws -> T) throws -> T {
        try Platform.lockExclusive(lockFD, path: lockPath)
        defer { Platform.unlock(lockFD) }
        return try body()
    }

    /// The table on disk, or an empty one when it is missing, corrupt or for another
    /// resource/version (then the data file is emptied too). Call with the lock held.
    private func loadTable(length: UInt64, validator: String?) throws -> CacheTable {
        let fresh = CacheTable(resource: resource, length: length, validator: validator, ranges: [])
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
        table = try locked { try loadTable(length: length, validator: validator) }
    }

    func read(_ range: Range<UInt64>, upstream: any ByteSource, bridgeGap: UInt64) async throws -> [UInt8] {
        Platform.touch(tablePath)
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
                try await running.task.value
                continue
            }
            let task = Task { try await self.fetch(part, from: upstream) }
            inFlight.append((part, task))
            defer { inFlight.removeAll { $0.range == part } }
            try await task.value
        }
        statistics.cachedBytesServed += UInt64(range.count)
        let bytes = try Platform.readFully(dataFD, offset: range.lowerBound, count: Int(range.count), path: dataPath)
        guard bytes.count == Int(range.count) else {
            throw MP4Error(.io, "cache data file \(dataPath) is shorter than its table says")
        }
        return bytes
    }

    /// Fetches `part` upstream, writes and flushes it, then records it in the table (merged with
    /// what other processes recorded meanwhile).
    private func fetch(_ part: Range<UInt64>, from upstream: any ByteSource) async throws {
        let bytes = try await upstream.read(part)
        statistics.upstreamReads += 1
        statistics.upstreamBytes += UInt64(bytes.count)
        guard bytes.count == Int(part.count) else {
            throw MP4Error(.io, "\(resource): upstream returned \(bytes.count) of \(part.count) bytes at \(part.lowerBound)", offset: part.lowerBound)
        }
        try locked {
            // Another process may have added ranges, or evicted or reset the entry: start from
            // what is on disk now (an empty entry when it is gone or damaged).
            table = try loadTable(length: table.length, validator: table.validator)
            try Platform.writeFully(dataFD, bytes, offset: part.lowerBound, path: dataPath)
            try Platform.syncData(dataFD, path: dataPath)   // data first ...
            var set = table.rangeSet
            set.insert(part)
            table.rangeSet = set
            try table.write(to: tablePath)                   // ... then the table that claims it
        }
    }
}
