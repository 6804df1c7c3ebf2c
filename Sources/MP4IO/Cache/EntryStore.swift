import Foundation
import MP4Core

/// One cache entry on disk: the sparse data file, the table that claims its bytes
/// (``CacheTable``), and the lock file (``EntryLocks``), with the commit protocol that makes
/// the entry crash-safe: data flushed before the table that claims it is replaced, the table
/// merged with other processes' commits under the table lock, a reset by another process
/// detected by the table's generation, and block checksums checked before cached bytes are
/// served.
///
/// Not thread-safe: one ``CacheEntry`` (an actor) owns it. Fetches write the data file
/// through ``dataFD`` outside the actor and come back to it only to commit; readers that
/// follow a fetch read what it wrote through ``data``, outside the actor too.
final class EntryStore {
    let resource: String
    let dataPath: String, tablePath: String, lockPath: String
    /// The data file's descriptor, shared with the readers that follow fetches.
    let data: DataDescriptor
    var dataFD: Int32 { data.fd }
    private(set) var lockFD: Int32
    private(set) var table: CacheTable
    /// What was served from the data file and what its checksums cost.
    var cachedBytesServed: UInt64 = 0
    var corruptBlocksRefetched = 0
    var checksumBytesRead: UInt64 = 0
    /// Blocks whose checksum this process has checked (or computed): checked once each.
    private var verifiedBlocks: Set<UInt64> = []
    /// The table file as this process last read or wrote it (inode and size; not its time,
    /// which every read touches as the eviction clock): every commit replaces the file, so a
    /// different one on disk means another process committed since. An inode reused with the
    /// same size goes unnoticed; that costs a fetch that was not needed, never a wrong byte.
    private var tableSeen: (inode: UInt64, size: UInt64)?
    /// Descriptors replaced by a reopen, closed with the entry: a fetch may still write (or
    /// hold range locks) through them, and must never reach whatever file reuses the number.
    private var retiredDescriptors: [Int32] = []

    /// Traps found in place of the entry's files (``CacheFiles``), removed: what to report.
    private var trapsRemoved: [String] = []

    /// The traps removed since the last call (each reported once).
    func takeTrapsRemoved() -> [String] {
        defer { trapsRemoved = [] }
        return trapsRemoved
    }

    init(directory: String, resource: String) throws {
        self.resource = resource
        let paths = CachedByteSource.entryPaths(directory: directory, resource: resource)
        (dataPath, tablePath, lockPath) = paths
        var traps: [String] = []
        lockFD = try Self.openEntryFile(paths.lock, paths: paths, traps: &traps)
        do {
            data = DataDescriptor(try Self.openEntryFile(paths.data, paths: paths, traps: &traps))
        } catch {
            Platform.closeFile(lockFD)
            throw error
        }
        trapsRemoved = traps
        table = CacheTable(resource: resource, length: 0, validator: nil)
    }

    /// Opens (creating) the entry file at `path` as ``CacheFiles`` does. A trap there (a
    /// link, a FIFO, a device, another user's file) is never followed or waited on: its name
    /// is removed, with the table when it stood for the data file (nothing of it may be
    /// claimed), the message added to `traps`, and the file made anew.
    private static func openEntryFile(_ path: String, paths: (data: String, table: String, lock: String), traps: inout [String]) throws -> Int32 {
        do {
            if let fd = try CacheFiles.open(path, forUpdate: true, create: true) { return fd }
        } catch where CacheFiles.isTrap(error) {
            traps.append((error as? MP4Error)?.message ?? "\(error)")
            CacheFiles.removeTrap(path)
            if path == paths.data { CacheFiles.removeTrap(paths.table) }
            if let fd = try CacheFiles.open(path, forUpdate: true, create: true) { return fd }
        }
        throw MP4Error(.io, "cannot create \(path)")
    }

    /// Closes the descriptors a reopen replaced (their files were removed or reset). Call
    /// only when no fetch writes or holds range locks through them.
    func closeRetiredDescriptors() {
        for fd in retiredDescriptors { Platform.closeFile(fd) }
        retiredDescriptors = []
        data.closeRetired()
    }

    deinit {
        Platform.closeFile(lockFD)
        for fd in retiredDescriptors { Platform.closeFile(fd) }
    }

    var present: ByteRangeSet { table.rangeSet }

    /// Runs `body` holding the table lock (other processes wait).
    func locked<T>(_ body: () throws -> T) throws -> T {
        try EntryLocks.lockTable(lockFD, path: lockPath)
        if !Platform.isSameFile(lockFD, path: lockPath) {
            // The lock file was removed (`cache evict`) since it was opened: the lock taken on
            // the old file excludes nobody. Lock the file that is there now; the old
            // descriptor stays open, as fetches still release their range locks on it.
            EntryLocks.unlockTable(lockFD)
            let relocked = try EntryLocks.openAndLockTable(lockPath)
            retiredDescriptors.append(lockFD)
            lockFD = relocked
        }
        defer { EntryLocks.unlockTable(lockFD) }
        return try body()
    }

    /// Removes the data and lock files when no table exists (without a table no byte of the
    /// data file is claimed, whatever its size), under the table lock, as eviction removes an
    /// entry: a process waiting on the lock file finds it gone and locks the new one, and a
    /// later use of this entry reopens the data file.
    func discardIfNeverPrepared() {
        _ = try? locked {
            guard CacheFiles.linkStatus(tablePath) == nil else { return }
            Platform.removeFile(dataPath)
            Platform.removeFile(lockPath)
        }
    }

    /// The table on disk, or an empty one in a new data file when it is missing, corrupt or
    /// for another resource/version. Call with the lock held.
    /// `describe` adds what an open records (``prepare(length:validator:confirmedAt:attributes:)``)
    /// to a table started afresh before its one write: a fresh entry's open wrote the table
    /// twice, each write flushed (1.4 ms each on this machine, on a player's first request).
    ///
    /// A table on disk describes the data file at the entry's name: every process replaces
    /// that file only under the lock, after removing the table and before writing the next
    /// one. So when another process has replaced it (an eviction, a fresh start), this one
    /// opens the new file and takes its table; it no longer starts the entry again (which
    /// emptied the file the other process was serving from: zeros with a 206).
    private func loadTable(length: UInt64, validator: String?, describe: (inout CacheTable) -> Void = { _ in }) throws -> CacheTable {
        // Torn or corrupt: discarded, never trusted. The bytes this process last wrote or
        // read are not decoded again (``CacheTable/loadImage(_:known:)``).
        let image = try? CacheTable.loadImage(tablePath, known: lastImage)
        lastImage = image
        let onDisk = image?.table
        let dataIsThere = (try? Platform.status(dataFD, path: dataPath)).map { open in
            CacheFiles.linkStatus(dataPath).map { UInt64(truncatingIfNeeded: $0.st_ino) == open.inode && UInt64(truncatingIfNeeded: $0.st_dev) == open.device } ?? false
        } ?? false
        if !dataIsThere {
            var traps: [String] = []
            let reopened = try Self.openEntryFile(dataPath, paths: (dataPath, tablePath, lockPath), traps: &traps)
            trapsRemoved += traps
            data.replace(with: reopened)
        }
        // A data file made since the table was written (its own was deleted) is empty, and one
        // cut short is damaged: only a file of the full length is the table's.
        if let onDisk, onDisk.resource == resource, onDisk.length == length, onDisk.validator == validator,
           (try? Platform.status(dataFD, path: dataPath))?.size == length {
            noteTable()
            return onDisk
        }
        // New, changed upstream, unreadable, or its data file is gone or damaged: start empty,
        // in a new data file (a sparse file of the full length). The table goes first, so a
        // crash from here on leaves no table claiming a file it does not describe; the old
        // file is never emptied in place: another process may still serve what its table
        // claimed there (EntryStoreTests.aFreshStartLeavesTheOldFile).
        var fresh = CacheTable(resource: resource, length: length, validator: validator)
        describe(&fresh)
        Platform.removeFile(tablePath)
        try startNewDataFile()
        try Platform.truncate(dataFD, size: length, path: dataPath)
        lastImage = try fresh.write(to: tablePath)
        noteTable()
        return fresh
    }

    /// The table file as this process last read or wrote it.
    private var lastImage: CacheTable.FileImage?

    /// Replaces the data file with a new, empty one (the old name removed first, so a
    /// process that still reads the old file keeps its bytes). Call with the lock held: no
    /// table can claim the new file before this process writes one.
    private func startNewDataFile() throws {
        Platform.removeFile(dataPath)
        var traps: [String] = []
        let created = try Self.openEntryFile(dataPath, paths: (dataPath, tablePath, lockPath), traps: &traps)
        trapsRemoved += traps
        data.replace(with: created)
        // Made by another process's open between the removal and this one (it claims nothing
        // without the lock): empty it.
        try Platform.truncate(created, size: 0, path: dataPath)
    }

    /// Replaces the table with what is on disk now (under the lock); forgets verified blocks
    /// when the entry was started again.
    private func reloadLocked() throws {
        let generation = table.generation
        table = try loadTable(length: table.length, validator: table.validator)
        if table.generation != generation { verifiedBlocks = [] }
    }

    /// What the table on disk says about the resource, without changing anything: `nil` when
    /// there is no usable entry (no table, damaged, another resource, data file missing).
    func storedDescription() throws -> (length: UInt64, validator: String?, validatedAt: Int64?, presentBytes: UInt64)? {
        try locked {
            guard let onDisk = try? CacheTable.load(tablePath), onDisk.resource == resource,
                  Platform.usage(dataPath)?.size == onDisk.length else { return nil }
            return (onDisk.length, onDisk.validator, onDisk.validatedAt, onDisk.rangeSet.byteCount)
        }
    }

    /// Settles the entry for a resource of `length` and `validator` (emptied when the table
    /// describes another); `confirmedAt`, when the origin just confirmed them, is recorded so
    /// that later opens within the maximum age need not ask it, and so are `attributes` when
    /// given. Returns the entry's attributes.
    func prepare(length: UInt64, validator: String?, confirmedAt: Int64?, attributes: ResourceAttributes?) throws -> ResourceAttributes {
        let generation = table.generation
        table = try locked {
            var changed = false
            func describe(_ table: inout CacheTable) {
                // Recorded at most once a minute: an open is not a table write.
                if let confirmedAt, (table.validatedAt ?? 0) + 60 <= confirmedAt || (table.validatedAt ?? 0) > confirmedAt {
                    table.validatedAt = confirmedAt
                    changed = true
                }
                if let attributes, attributes != table.attributes {
                    table.attributes = attributes
                    changed = true
                }
            }
            var loaded = try loadTable(length: length, validator: validator, describe: describe)
            changed = false   // a fresh table was written with them
            describe(&loaded)
            if changed { lastImage = try loaded.write(to: tablePath) }
            return loaded
        }
        if table.generation != generation { verifiedBlocks = [] }
        return table.attributes
    }

    /// Forgets that the origin confirmed the entry (it was found changed): the next open asks.
    func invalidateFreshness() {
        _ = try? locked {
            guard var onDisk = try? CacheTable.load(tablePath), onDisk.resource == resource, onDisk.validatedAt != nil else { return }
            onDisk.validatedAt = nil
            try onDisk.write(to: tablePath)
            if table.generation == onDisk.generation { table.validatedAt = nil }
        }
    }

    /// Reloads the table (another process's commits); returns whether `offset` is present.
    func reload(checking offset: UInt64) throws -> Bool {
        try locked { try reloadLocked() }
        return table.rangeSet.contains(offset..<(offset + 1))
    }

    /// Table commits by this process (``CachedByteSource/Statistics/tableCommits``).
    private(set) var tableCommits = 0

    /// Marks the entry as used now (its table's modification time orders eviction); not again
    /// within a second while no other entry was marked since (the order stays the order of
    /// use): a player that opens a request per fragment header (300 in a second) paid a
    /// metadata write for each.
    func markUsed() {
        let now = ContinuousClock.now
        let again = Self.lastMarked.withLock { last -> Bool in
            if let marked = last, marked.path == tablePath, now - marked.at < .seconds(1) { return true }
            last = (tablePath, now)
            return false
        }
        if !again { Platform.touch(tablePath) }
    }
    /// The entry this process marked last, and when.
    private static let lastMarked = Locked<(path: String, at: ContinuousClock.Instant)?>(nil)

    /// The bytes of `range` (present in the table) from the data file, after checking the
    /// blocks it touches against their checksums; `nil` when some failed: they are dropped from
    /// the table (the caller fetches them again), corrupt bytes are never served.
    /// Returns `nil` too when the table no longer claims `range` (it was reloaded since the
    /// caller decided to read: another process evicted or started the entry again), and when
    /// the data file was cut short behind the table (the entry starts again): a byte is served
    /// only while the table that claims it is the one of the file it is read from.
    func readCached(_ range: Range<UInt64>) throws -> [UInt8]? {
        guard table.rangeSet.contains(range) else { return nil }
        let bytes = try Platform.readFully(dataFD, offset: range.lowerBound, count: Int(range.count), path: dataPath)
        guard bytes.count == Int(range.count) else {
            // A data file shorter than the resource fails the reload's check: the entry
            // starts again in a new file, and the caller fetches the bytes.
            try locked { try reloadLocked() }
            return nil
        }
        guard try verifyBlocks(range, bytes: bytes) else { return nil }
        cachedBytesServed += UInt64(range.count)
        return bytes
    }

    /// Checks the wholly present blocks `range` touches against their checksums, each block
    /// once per process. Returns false after dropping the blocks that fail.
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
            checksumBytesRead += UInt64(content.count)
            if content.count == Int(block.count) && FNV1a.hashWords(content) == expected {
                verifiedBlocks.insert(index)
            } else {
                corrupt.append(index)
            }
        }
        guard !corrupt.isEmpty else { return true }
        corruptBlocksRefetched += corrupt.count
        try locked {
            try reloadLocked()
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
    private func addBlockChecksums(around range: Range<UInt64>, known: [UInt64: UInt64] = [:]) throws {
        guard let indexes = table.blocks(touching: range) else { return }
        for index in indexes where table.blockChecksums[index] == nil {
            let block = table.block(index)
            guard !block.isEmpty, table.rangeSet.contains(block) else { continue }
            // Hashed by the fetch as it wrote the block whole (the last, shorter block of a
            // resource is read back: the fetch hashes whole blocks only).
            if let hash = known[index], block.count == CacheTable.blockSize {
                table.blockChecksums[index] = hash
                verifiedBlocks.insert(index)
                continue
            }
            let content = try Platform.readFully(dataFD, offset: block.lowerBound, count: Int(block.count), path: dataPath)
            guard content.count == Int(block.count) else { continue }
            table.blockChecksums[index] = FNV1a.hashWords(content)
            verifiedBlocks.insert(index)
        }
    }

    /// Writes a fetch's `bytes` at `offset` of the data file, never past its end: a data file
    /// is made as long as the resource, so one that ends before `offset` was cut short behind
    /// the table (another program), and a write there would leave zeros between its end and
    /// `offset` that the table claims (the seeded simulation served them). The fetch fails
    /// instead, and the next look at the table starts the entry again.
    static func writeFetched(_ bytes: ArraySlice<UInt8>, to fd: Int32, at offset: UInt64, path: String) throws {
        guard try Platform.regularFileSize(fd, path: path) >= offset else {
            throw MP4Error(.io, "\(path) was cut short behind its table (another program?): the entry starts again")
        }
        try Platform.writeFully(fd, bytes, offset: offset, path: path)
    }

    /// Flushes what a fetch wrote through `fd` so that it reaches the disk before the table
    /// that will claim it (``commit(_:writtenThrough:generation:)``). Ordered, not durable: a
    /// cache's bytes can be fetched again, so no drive flush (``Platform/SyncPurpose/ordered``).
    /// Called by the fetch, off the entry's actor: readers of the entry do not wait for it.
    static func flushBeforeCommit(_ fd: Int32, path: String) throws {
        try Platform.sync(fd, path: path, for: .ordered)
    }

    /// Claims `range` (written to the data file through `fd`, and flushed by
    /// ``flushBeforeCommit(_:path:)``) in the table: holding the lock, the table as it is on
    /// disk now (other processes' ranges merged) plus `range`, written atomically after the
    /// data. Claims nothing and returns false when the entry's generation is no longer
    /// `generation` (another process emptied it: the bytes may be gone) or `fd` is no longer
    /// the data file.
    func commit(_ range: Range<UInt64>, hashes: [UInt64: UInt64] = [:], writtenThrough fd: Int32, generation: String?) throws -> Bool {
        try commit([(range, hashes)], writtenThrough: fd, generation: generation)
    }

    /// ``commit(_:hashes:writtenThrough:generation:)`` for several ranges written through the
    /// same descriptor: one table write for all (a group commit, ``CacheEntry/commitSpacing``).
    func commit(_ parts: [(range: Range<UInt64>, hashes: [UInt64: UInt64])], writtenThrough fd: Int32, generation: String?) throws -> Bool {
        try locked {
            // Another process may have added ranges, or evicted or reset the entry: start from
            // what is on disk now (an empty entry when it is gone or damaged).
            try reloadLocked()
            guard table.generation == generation, fd == dataFD else { verifiedBlocks = []; return false }
            for part in parts { table.rangeSet.insert(part.range) }
            for part in parts { try addBlockChecksums(around: part.range, known: part.hashes) }
            lastImage = try table.write(to: tablePath, .ordered)     // after the data it claims
            tableCommits += 1
            noteTable()
            return true
        }
    }

    /// Marks `range` as fetched by this process (``EntryLocks/claim(_:_:othersAllowed:)``);
    /// returns the part it may fetch and the descriptor the lock is on.
    func claim(_ range: Range<UInt64>, othersAllowed: Bool) -> (Range<UInt64>, lockToken: Int32)? {
        EntryLocks.claim(lockFD, range, othersAllowed: othersAllowed).map { ($0, lockFD) }
    }

    /// Reloads the table when another process has replaced it since this one last read or
    /// wrote it (one `stat`). Called before a decision to fetch: a process that fell behind
    /// another would otherwise decide on a table seconds old and fetch again bytes the other
    /// committed and has stopped holding (ProxyProcessTests saw a 2 MiB window fetched twice).
    /// Returns whether it reloaded.
    @discardableResult
    func refreshIfChanged() throws -> Bool {
        guard let now = Platform.identity(tablePath), tableSeen.map({ $0 != now }) ?? true else { return false }
        try locked { try reloadLocked() }
        return true
    }

    private func noteTable() {
        tableSeen = Platform.identity(tablePath)
    }
}

/// The descriptor of an entry's data file, which a reopen replaces (the file was removed or
/// reset): the entry's actor writes and commits through it, and readers that follow a fetch
/// read what the fetch wrote through it without waiting for the actor (which may be busy
/// flushing a commit: a player's bytes waited 2 ms per request for it). A read names the
/// descriptor its fetch writes to and gets nothing once that is no longer the data file's;
/// replaced descriptors are closed under the same lock, so a read never reaches a file that
/// reuses the number.
final class DataDescriptor: Sendable {
    private struct Descriptors {
        var current: Int32
        var retired: [Int32] = []
    }
    private let descriptors: Locked<Descriptors>

    init(_ fd: Int32) { descriptors = Locked(Descriptors(current: fd)) }

    var fd: Int32 { descriptors.withLock { $0.current } }

    /// `fd` is the data file's descriptor from now on; the old one is retired (closed by
    /// ``closeRetired()``).
    func replace(with fd: Int32) {
        descriptors.withLock {
            $0.retired.append($0.current)
            $0.current = fd
        }
    }

    /// Closes the retired descriptors. Call only when no fetch writes or holds locks
    /// through them.
    func closeRetired() {
        descriptors.withLock {
            for fd in $0.retired { Platform.closeFile(fd) }
            $0.retired = []
        }
    }

    /// `count` bytes at `offset` of the data file, read through `fd` when it is still the data
    /// file's descriptor (nil when a reopen replaced it).
    func read(through fd: Int32, offset: UInt64, count: Int, path: String) throws -> [UInt8]? {
        try descriptors.withLock {
            guard fd == $0.current else { return nil }
            return try Platform.readFully(fd, offset: offset, count: count, path: path)
        }
    }

    deinit {
        descriptors.withLock {
            Platform.closeFile($0.current)
            for fd in $0.retired { Platform.closeFile(fd) }
        }
    }
}
