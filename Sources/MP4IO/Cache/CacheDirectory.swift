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
        for name in Platform.list(directory) where name.hasSuffix(".data") {
            let base = directory + "/" + String(name.dropLast(5))
            let usage = Platform.usage(base + ".data")
            let tableUsage = Platform.usage(base + ".ranges")
            if let table = try? CacheTable.load(base + ".ranges") {
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
        if let fd = try? Platform.openForUpdate(marker) { Platform.closeFile(fd) }
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
        guard entry.isComplete else {
            throw MP4Error(.io, "\(resource) is only partly cached (\(entry.cachedBytes) of \(entry.length) bytes); fetch it with --all first")
        }
        let (data, _, lock) = paths(entry, directory)
        let lockFD = try EntryLocks.openAndLockTable(lock)
        defer { Platform.closeFile(lockFD) }
        defer { EntryLocks.unlockTable(lockFD) }
        let input = try Platform.openForReading(data)
        defer { Platform.closeFile(input) }
        AtomicFileWriter.removeStaleTemporaries(beside: destination)
        let writer = try AtomicFileWriter(destination: destination, permissions: 0o644)
        do {
            try writer.setSize(entry.length)
            var buffer: [UInt8] = []  // allocated only if the kernel cannot copy
            try Platform.copy(input, 0..<entry.length, to: try writer.fd(), at: 0, buffer: &buffer, names: (data, destination)) { _ in }
            try writer.commit()
        } catch {
            writer.abort()
            throw error
        }
    }
}
