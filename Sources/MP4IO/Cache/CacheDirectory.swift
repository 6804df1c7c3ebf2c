import MP4Core

/// Maintenance of a cache directory written by ``CachedByteSource``: listing, least-recently-
/// used eviction to a size limit, and export of complete entries as normal files.
public enum CacheDirectory {
    /// One entry.
    public struct Entry: Sendable, Hashable {
        /// The resource (URL or path).
        public var resource: String
        public var length: UInt64
        /// Bytes present.
        public var cachedBytes: UInt64
        /// Bytes the data file occupies on disk.
        public var allocatedBytes: UInt64
        /// Last use (seconds since 1970): the table's modification time.
        public var lastUsed: Double
        public var validator: String?
        /// The table could not be read (torn or corrupt): the entry will be discarded on use.
        public var isDamaged: Bool
        /// Preloaded (``Preload``) and not played since: eviction keeps it before entries
        /// already watched, within ``CacheDirectory/preloadShare`` of the limit.
        public var isPreloadedUnplayed = false

        /// Every byte of the resource is present.
        public var isComplete: Bool { !isDamaged && cachedBytes == length }
    }

    /// The entries of `directory`, most recently used first.
    public static func entries(_ directory: String) -> [Entry] {
        var result: [Entry] = []
        // An entry is a data file or a table (a table whose data file was deleted is listed,
        // as damaged).
        let names = Platform.list(directory)
        var keys = Set<String>()
        for name in names where !name.hasPrefix(".") {
            if name.hasSuffix(".data") { keys.insert(String(name.dropLast(5))) } else if name.hasSuffix(".ranges") { keys.insert(String(name.dropLast(7))) }
        }
        for key in keys {
            let name = key + ".data"
            let base = directory + "/" + key
            let usage = Platform.usage(base + ".data")
            let tableUsage = Platform.usage(base + ".ranges")
            // The data file must be a regular file of ours as long as the resource: one cut
            // short, deleted or replaced behind the table lists as damaged, not complete.
            let dataUsable = CacheFiles.linkStatus(base + ".data").map { CacheFiles.trapDescription($0) == nil } ?? false
            if let table = try? CacheTable.load(base + ".ranges"), dataUsable, usage?.size == table.length {
                result.append(Entry(resource: table.resource, length: table.length, cachedBytes: table.rangeSet.byteCount, allocatedBytes: usage?.allocated ?? 0, lastUsed: tableUsage?.modified ?? 0, validator: table.validator, isDamaged: false,
                                    isPreloadedUnplayed: Platform.exists(preloadMarker(ofData: base + ".data"))))
            } else {
                result.append(Entry(resource: String(name.dropLast(5)), length: usage?.size ?? 0, cachedBytes: 0, allocatedBytes: usage?.allocated ?? 0, lastUsed: tableUsage?.modified ?? usage?.modified ?? 0, validator: nil, isDamaged: true))
            }
        }
        return result.sorted { $0.lastUsed > $1.lastUsed }
    }

    /// The share of a size limit that preloaded, unplayed entries keep when eviction needs
    /// room: the most recently preloaded of them, up to a quarter of the limit, go only after
    /// every entry already watched (a feed's next videos are not evicted for one watched an
    /// hour ago); beyond that share they go by last use like the others.
    public static let preloadShare = 0.25

    /// Removes least-recently-used entries until the data files occupy at most `maxBytes` on
    /// disk (entries preloaded and not yet played last, within ``preloadShare``). Each removal holds the entry's lock, and removes the table before the data, so a
    /// process using the entry sees it gone and starts it again. Returns the removed entries.
    /// Entries whose resource is in `sparing` (being read in this process: ``CacheBudget``)
    /// are never removed, even when the limit cannot be met without them.
    /// Eviction also removes the temporary tables of processes that ended in the middle of a
    /// write (``TemporaryFiles``).
    @discardableResult
    public static func evict(_ directory: String, toAtMost maxBytes: UInt64, sparing: Set<String> = []) throws -> [Entry] {
        try evictCounting(directory, toAtMost: maxBytes, sparing: sparing).removed
    }

    /// ``evict(_:toAtMost:sparing:)``, also returning what the data files occupy afterwards
    /// (from the one listing the pass makes; a removal that fails throws as there).
    static func evictCounting(_ directory: String, toAtMost maxBytes: UInt64, sparing: Set<String>) throws -> (removed: [Entry], remaining: UInt64) {
        AtomicFileWriter.removeStaleTemporaries(in: directory)
        var entries = evictionOrder(self.entries(directory), limit: maxBytes)
        var total = entries.reduce(0) { $0 + $1.allocatedBytes }
        var removed: [Entry] = []
        while total > maxBytes, let oldest = entries.popLast() {
            if sparing.contains(oldest.resource) { continue }
            try remove(oldest, from: directory)
            total -= min(total, oldest.allocatedBytes)
            removed.append(oldest)
        }
        return (removed, total)
    }

    /// `entries` (most recently used first) in the order eviction keeps them, the first
    /// removed last: the protected preloads (newest first, up to ``preloadShare`` of `limit`),
    /// then the rest by last use.
    static func evictionOrder(_ entries: [Entry], limit: UInt64) -> [Entry] {
        let share = UInt64(Double(limit) * preloadShare)
        var protected: [Entry] = [], others: [Entry] = [], kept: UInt64 = 0
        for entry in entries {
            if entry.isPreloadedUnplayed, kept + entry.allocatedBytes <= share {
                kept += entry.allocatedBytes
                protected.append(entry)
            } else {
                others.append(entry)
            }
        }
        return protected + others
    }

    /// The marker of an entry preloaded and not yet played: beside its data file (`KEY.data`),
    /// `KEY.preloaded`.
    static func preloadMarker(ofData data: String) -> String {
        (data.hasSuffix(".data") ? String(data.dropLast(".data".count)) : data) + ".preloaded"
    }

    static func preloadMarker(directory: String, resource: String) -> String {
        preloadMarker(ofData: CachedByteSource.entryPaths(directory: directory, resource: resource).data)
    }

    /// Marks the entry of `resource` as preloaded and not yet played (``Preload``).
    static func markPreloaded(_ directory: String, resource: String) {
        let marker = preloadMarker(directory: directory, resource: resource)
        if let fd = try? CacheFiles.open(marker, forUpdate: true, create: true) { Platform.closeFile(fd) }
    }

    /// A player read the entry of `resource`: it is watched, no longer a preload.
    static func markPlayed(_ directory: String, resource: String) {
        Platform.removeFile(preloadMarker(directory: directory, resource: resource))
    }

    static func paths(_ entry: Entry, _ directory: String) -> (data: String, table: String, lock: String) {
        if entry.isDamaged {
            let base = directory + "/" + entry.resource
            return (base + ".data", base + ".ranges", base + ".lock")
        }
        return CachedByteSource.entryPaths(directory: directory, resource: entry.resource)
    }

    /// Removes one entry (under its lock).
    public static func remove(_ entry: Entry, from directory: String) throws {
        let (data, table, lock) = paths(entry, directory)
        let fd = try EntryLocks.openAndLockTable(lock)
        defer { Platform.closeFile(fd) }
        defer { EntryLocks.unlockTable(fd) }
        Platform.removeFile(table)
        Platform.removeFile(data)
        Platform.removeFile(preloadMarker(ofData: data))
        // Removed while held: a process waiting on the old file finds it gone once it gets
        // the lock and locks the new one (EntryLocks.openAndLockTable), so no two hold it at once.
        Platform.removeFile(lock)
    }

    /// Copies the complete entry for `resource` to `destination` (atomically).
    /// - Throws: ``MP4Error`` `.io` when the entry is missing or incomplete.
    public static func export(_ directory: String, resource: String, to destination: String) throws {
        guard let entry = entries(directory).first(where: { $0.resource == resource }) else {
            throw MP4Error(.io, "\(resource) is not in the cache \(directory)")
        }
        guard !entry.isDamaged else {
            throw MP4Error(.io, "\(resource): the cache entry is damaged (its table is unreadable, or its data file is missing, cut short or not a regular file); nothing was exported")
        }
        let (data, table, lock) = paths(entry, directory)
        let lockFD = try EntryLocks.openAndLockTable(lock)
        defer { Platform.closeFile(lockFD) }
        defer { EntryLocks.unlockTable(lockFD) }
        // What the table claims, read again under the lock, and the data it claims it of:
        // every byte present, the data file as long as the resource, every block's checksum
        // right. Anything else fails (exit 4) naming the ranges, and nothing is written.
        guard let claimed = try CacheTable.load(table), claimed.resource == resource else {
            throw MP4Error(.io, "\(resource): the cache table \(table) is missing or damaged; nothing was exported")
        }
        let missing = claimed.rangeSet.missing(in: 0..<claimed.length)
        guard missing.isEmpty else {
            throw MP4Error(.io, "\(resource) is only partly cached: missing \(describe(missing)); nothing was exported (fetch it with --all first)")
        }
        guard let input = try CacheFiles.open(data, forUpdate: false) else {
            throw MP4Error(.io, "\(resource): the cache data file \(data) is missing; nothing was exported")
        }
        defer { Platform.closeFile(input) }
        let dataSize = try Platform.regularFileSize(input, path: data)
        guard dataSize == claimed.length else {
            throw MP4Error(.io, "\(resource): the cache data file \(data) is \(dataSize) bytes where the table claims \(claimed.length) (missing \(describe([min(dataSize, claimed.length)..<claimed.length]))); nothing was exported")
        }
        AtomicFileWriter.removeStaleTemporaries(beside: destination)
        let writer = try AtomicFileWriter(destination: destination, permissions: 0o644)
        do {
            try writer.setSize(claimed.length)
            let output = try writer.fd()
            var damaged: [Range<UInt64>] = []
            var index: UInt64 = 0
            while index * CacheTable.blockSize < claimed.length {
                let block = claimed.block(index)
                let bytes = try Platform.readFully(input, offset: block.lowerBound, count: Int(block.count), path: data)
                if bytes.count != Int(block.count) || claimed.blockChecksums[index].map({ $0 != FNV1a.hashWords(bytes) }) ?? false {
                    damaged.append(block)
                } else if damaged.isEmpty {
                    try Platform.writeFully(output, bytes, offset: block.lowerBound, path: writer.temporaryPath)
                }
                index += 1
            }
            guard damaged.isEmpty else {
                throw MP4Error(.io, "\(resource): the cached bytes of \(describe(damaged)) fail their checksums (the data file was changed); nothing was exported (fetch them again)")
            }
            try writer.commit()
        } catch {
            writer.abort()
            throw error
        }
    }

    /// Byte ranges for a message: the first three, and how many more.
    static func describe(_ ranges: [Range<UInt64>]) -> String {
        let shown = ranges.prefix(3).map { "bytes \($0.lowerBound)-\($0.upperBound - 1)" }.joined(separator: ", ")
        return ranges.count > 3 ? shown + " and \(ranges.count - 3) more range(s)" : shown
    }
}
