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
        /// that claims them): what an interrupted fill can lose at most, and how far a reader in
        /// another process may wait behind this one's fetch. 16 MiB: a 1 GB `fetch --all` from
        /// nginx on loopback took the same time with 64, 16 and 8 MiB (3.1 to 4.6 s, noise).
        public var commitInterval: UInt64 = 16 << 20
        /// How long after the origin last confirmed an entry (its length and validator) the
        /// entry is used without asking the origin again, as an HTTP cache uses a fresh
        /// response. Media at a URL rarely changes: a day by default. 0 asks every time.
        public var maxAge: TimeInterval = 24 * 3600
        /// When the origin cannot be reached (or fails) and the entry holds bytes, use it
        /// anyway (stale-if-error): cached bytes are served, uncached ones fail cleanly.
        public var servesStaleOnError = true
        /// How far one fetch for a reader runs ahead of it: a read of a missing run fetches it
        /// in requests of at most this many bytes, the next one started when the reader is
        /// half-way through the current one. A player that stops reading (it closed the
        /// connection, or seeks elsewhere) leaves at most this much fetched for nothing. Fills
        /// are not bounded (they want every byte).
        public var readAhead: UInt64 = 2 << 20
        public init() {}
    }

    /// How the entry's description (length, validator) was settled when the source opened.
    public enum Freshness: Sendable, Equatable {
        /// The origin was asked and confirmed it (or the entry was started for it).
        case revalidated
        /// Within ``Options/maxAge`` of the last confirmation: the origin was not contacted.
        case fresh
        /// The origin could not be asked (`reason`): the entry is used as it is.
        case stale(reason: String)
    }

    /// The resources of `directory` that a source in this process has open: what eviction must
    /// spare (``CacheDirectory/evict(_:toAtMost:sparing:)``).
    public static func openResources(directory: String) async -> Set<String> {
        await CacheRegistry.shared.openResources(directory: directory)
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

    /// The origin, as given.
    public let upstream: any ByteSource
    /// What fetches go to: the origin, checked against the entry's description before the
    /// first byte is taken when the entry was opened without asking it.
    private let fetchSource: any ByteSource
    let entry: CacheEntry
    private let totalLength: UInt64
    private let entryValidator: String?
    private let entryAttributes: ResourceAttributes
    public let options: Options
    /// How the entry was settled when this source opened.
    public let freshness: Freshness

    /// Opens (or creates) the entry for `upstream` in `directory`; `key` defaults to the
    /// upstream's name.
    ///
    /// An entry the origin confirmed less than ``Options/maxAge`` ago is used without
    /// contacting the origin (``Freshness/fresh``); otherwise the origin is asked for its
    /// length and validator and the entry emptied if they changed (``Freshness/revalidated``);
    /// when it cannot be asked and the entry holds bytes, the entry is used as it is
    /// (``Freshness/stale(reason:)``, with ``Options/servesStaleOnError``). Either way a fetch
    /// of a missing part first checks that the origin is still the entry's resource: a
    /// changed origin is never mixed into an entry.
    public init(upstream: any ByteSource, directory: String, key: String? = nil, options: Options = Options()) async throws {
        self.upstream = upstream
        self.options = options
        try Platform.makeDirectory(directory)
        let entry = try await CacheRegistry.shared.entry(directory: directory, resource: key ?? upstream.name)
        self.entry = entry
        let stored = try await entry.storedDescription()
        let now = Int64(Date().timeIntervalSince1970)
        // The origin's word, unless the entry is fresh or the origin cannot be asked (only the
        // origin's failure counts: an error of the cache itself is thrown as it is).
        var confirmed: (length: UInt64, validator: String?, attributes: ResourceAttributes)?
        var state = Freshness.fresh
        if let stored, let validated = stored.validatedAt, options.maxAge > 0, now >= validated, Double(now - validated) < options.maxAge {
            confirmed = nil
        } else {
            do {
                confirmed = (try await upstream.length(), try await upstream.validator(), try await upstream.attributes())
                state = .revalidated
            } catch let error as MP4Error where options.servesStaleOnError && error.cause != .sourceChanged && (stored?.presentBytes ?? 0) > 0 {
                state = .stale(reason: error.message)
            }
        }
        if let confirmed {
            entryAttributes = try await entry.prepare(length: confirmed.length, validator: confirmed.validator, confirmedAt: now, attributes: confirmed.attributes)
            (totalLength, entryValidator, fetchSource) = (confirmed.length, confirmed.validator, upstream)
        } else if let stored {
            // Used without asking: the first fetch checks that the origin is still this resource.
            entryAttributes = try await entry.prepare(length: stored.length, validator: stored.validator, confirmedAt: nil)
            (totalLength, entryValidator) = (stored.length, stored.validator)
            fetchSource = CheckedOrigin(base: upstream, length: stored.length, validator: stored.validator)
        } else {
            throw MP4Error(.internalError, "cache entry for \(upstream.name) is neither confirmed nor stored")
        }
        freshness = state
    }

    public var name: String { upstream.name }
    public var preferredReadSize: Int { upstream.preferredReadSize }
    public func length() async throws -> UInt64 { totalLength }
    /// The validator of the resource the entry holds (the origin's when it was confirmed).
    public func validator() async throws -> String? { entryValidator }
    /// The origin's `Content-Type` and `Last-Modified`, as it last confirmed them (recorded in
    /// the entry, so an entry served offline still has them).
    public func attributes() async throws -> ResourceAttributes { entryAttributes }

    /// What was served from where, for this entry (shared by all sources of the resource).
    public var statistics: Statistics { get async { await entry.statistics } }

    /// Ranges present in the cache.
    public var cachedRanges: ByteRangeSet { get async { await entry.present } }

    public func read(_ range: Range<UInt64>) async throws -> [UInt8] {
        try await forgettingConfirmationOnChange { try await readWhole(range) }
    }

    /// Runs `body`; when it finds the origin changed, the entry forgets that the origin
    /// confirmed it (the next open asks), and the error goes on.
    private func forgettingConfirmationOnChange<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as MP4Error where error.cause == .sourceChanged {
            await entry.invalidateFreshness()
            throw error
        }
    }

    private func readWhole(_ range: Range<UInt64>) async throws -> [UInt8] {
        let upper = min(range.upperBound, totalLength)
        guard range.lowerBound < upper else { return [] }
        // Wholly cached (the common case once a file has been played): one read, one check.
        if await entry.present.contains(range.lowerBound..<upper) {
            await entry.markUsed()
            // nil: blocks failed their checksums and were dropped; the stream fetches them again.
            if let bytes = try await entry.readCached(range.lowerBound..<upper) { return bytes }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Int(min(upper - range.lowerBound, 64 << 20)))  // the length is the server's word
        try await stream(range.lowerBound..<upper, readsAhead: false) { bytes += $0 }
        return bytes
    }

    /// Streams `range` to `consume` as it becomes available: cached runs from the data file,
    /// missing runs as they arrive from upstream (written to the cache and handed on at once,
    /// not after the whole run is in). A read that finds a run already being fetched (another
    /// player's request for the same bytes) follows that fetch instead of starting its own:
    /// one upstream fetch per byte. When every reader of a fetch it started has gone (the
    /// player closed the connection), the fetch stops, keeping what arrived.
    public func read(_ range: Range<UInt64>, into consume: (ArraySlice<UInt8>) async throws -> Void) async throws {
        try await forgettingConfirmationOnChange { try await stream(range, into: consume) }
    }

    /// How many 50 ms looks a read waits for bytes another process is fetching without any
    /// of them arriving (30 s) before it fetches them itself.
    static let patienceForOthers = 600

    /// The one path of reads and fills: cached runs from the data file, missing runs fetched
    /// (or followed when another reader's fetch covers them). Without `readsBack` it only makes
    /// the range present (a fill): nothing is read back. A streamed read (`readsAhead`, whose
    /// reader may leave early) fetches in requests of at most ``Options/readAhead`` bytes.
    private func stream(_ range: Range<UInt64>, readsBack: Bool = true, readsAhead: Bool = true, into consume: (ArraySlice<UInt8>) async throws -> Void) async throws {
        let upper = min(range.upperBound, totalLength)
        var position = range.lowerBound
        var fruitless = 0
        var waitedForOthers = 0
        let interval = max(options.commitInterval, 1)
        await entry.markUsed()
        while position < upper {
            let limit = readsBack && readsAhead ? max(options.readAhead, 2 * streamPieceSize) : nil
            switch await entry.nextStep(at: position, upTo: upper, upstream: fetchSource, bridgeGap: options.bridgeGap, commitInterval: interval, limit: limit, othersAllowed: waitedForOthers < Self.patienceForOthers) {
            case .elsewhere:
                // Another process is fetching these bytes: what it commits reaches the table on
                // disk. Look again shortly; after a long wait without progress, fetch them here.
                try await Task.sleep(nanoseconds: 50_000_000)
                waitedForOthers = try await entry.reload(checking: position) ? 0 : waitedForOthers + 1
            case .cached(let run):
                guard readsBack else { position = run.upperBound; fruitless = 0; continue }
                guard let bytes = try await entry.readCached(run) else {
                    // Corrupt blocks were dropped from the table: the next step fetches them.
                    fruitless += 1
                    guard fruitless <= 3 else {
                        throw MP4Error(.io, "cache data file of \(name) fails its block checksums again after a fresh fetch", offset: position)
                    }
                    continue
                }
                try await consume(bytes[...])
                position = run.upperBound
            case .inFlight(let run, let task, let progress):
                let before = position
                // A fetch started by another reader may go past this read's end.
                let stop = min(run.upperBound, upper)
                if !readsBack {
                    // A fill waits until the table claims its part of the run (or the fetch
                    // ends: failed, superseded, reset by another process), then looks again.
                    let (committed, finished) = await progress.wait(committedThrough: stop)
                    let remaining = progress.unfollow()
                    if finished && committed < stop {
                        do {
                            _ = try await task.value   // its failure, if it failed
                        } catch {
                            if remaining == 0 { task.cancel() }
                            throw error
                        }
                    }
                    fruitless += committed < stop ? 1 : 0
                    guard fruitless <= 3 else {
                        throw MP4Error(.io, "\(name): the cache entry was started again by another process during one fill", offset: position)
                    }
                    continue
                }
                var startedAhead = false
                do {
                    while position < stop {
                        let (written, finished) = await progress.wait(beyond: position)
                        if written > position {
                            let end = min(written, stop, position + streamPieceSize)
                            let bytes = try await entry.readWritten(position..<end, by: progress)
                            try await consume(bytes[...])
                            position = end
                            // Half-way through a bounded fetch: the next one starts now, so the
                            // reader never waits for a request at the boundary.
                            if let limit, !startedAhead, run.upperBound < upper, position + limit / 2 >= run.upperBound {
                                startedAhead = true
                                await entry.fetchAhead(run.upperBound..<min(upper, run.upperBound + limit), upstream: fetchSource, commitInterval: interval)
                            }
                        } else if finished {
                            _ = try await task.value   // the fetch's failure, if it failed
                            break                      // reset by another process: look again
                        }
                    }
                } catch {
                    if progress.unfollow() == 0 { task.cancel() }
                    throw error
                }
                if progress.unfollow() == 0 && position < run.upperBound { task.cancel() }
                // All of that fetch was read: let it finish (its last commit) before the read
                // returns, so what a read returned is in the cache's table when it returns.
                if position == run.upperBound { _ = try? await task.value }
                fruitless = position == before ? fruitless + 1 : 0
                guard fruitless <= 3 else {
                    throw MP4Error(.io, "\(name): the cache entry was started again by another process during one read", offset: position)
                }
            }
        }
    }

    /// Makes `range` present in the cache without reading it back: missing parts stream from
    /// upstream straight to the data file (over `http:` one request per missing part, memory
    /// bounded by the socket buffer), committed every ``Options/commitInterval`` bytes, so an
    /// interrupted fill keeps what arrived.
    /// Like a read, a fill follows fetches already running over its range (another reader's,
    /// a prefetch) instead of waiting for them to end, and a fill ahead of one that is far
    /// behind starts at its own position.
    public func fill(_ range: Range<UInt64>) async throws {
        let upper = min(range.upperBound, totalLength)
        guard range.lowerBound < upper else { return }
        try await forgettingConfirmationOnChange { try await stream(range.lowerBound..<upper, readsBack: false, readsAhead: false) { _ in } }
    }

    /// Starts fetching the missing parts of `ranges` (a prefetch: what a player will ask for
    /// next) and returns without waiting. Parts already present or being fetched are left
    /// alone; neighbours closer than ``Options/bridgeGap`` go as one request; at most
    /// `maxRequests` requests start. The previous prefetch's fetches that no reader follows and
    /// `ranges` does not want stop (keeping what arrived): a new seek supersedes them.
    /// Returns the parts started.
    @discardableResult
    public func prefetch(_ ranges: [Range<UInt64>], maxRequests: Int = 8) async -> [Range<UInt64>] {
        let clamped = ranges.compactMap { range -> Range<UInt64>? in
            let upper = min(range.upperBound, totalLength)
            return range.lowerBound < upper ? range.lowerBound..<upper : nil
        }
        return await entry.prefetch(clamped, upstream: fetchSource, bridgeGap: options.bridgeGap, commitInterval: max(options.commitInterval, 1), maxRequests: maxRequests)
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

    /// The resources of `directory` that have an open entry in this process (a source reading
    /// them is alive).
    func openResources(directory: String) -> Set<String> {
        var result: Set<String> = []
        for (key, weak) in entries where key.hasPrefix(directory + "\u{0}") && weak.entry != nil {
            result.insert(String(key.dropFirst(directory.count + 1)))
        }
        return result
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
    private var inFlight: [(range: Range<UInt64>, task: Task<Bool, any Error>, progress: FillProgress)] = []
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
        for fd in retiredDescriptors { Platform.closeFile(fd) }
    }

    /// Data file descriptors replaced by a reopen, closed with the entry.
    private var retiredDescriptors: [Int32] = []

    var present: ByteRangeSet { table.rangeSet }

    /// Runs `body` holding the entry's file lock (other processes wait).
    private func locked<T>(_ body: () throws -> T) throws -> T {
        try Platform.lockExclusive(lockFD, path: lockPath)
        if !Platform.isSameFile(lockFD, path: lockPath) {
            // The lock file was removed (`cache evict`) since it was opened: the lock taken on
            // the old file excludes nobody. Lock the file that is there now.
            Platform.unlock(lockFD)
            let relocked = try Platform.openAndLock(lockPath)
            // Kept open until the entry goes: fetches still release their range locks on it.
            retiredDescriptors.append(lockFD)
            lockFD = relocked
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
            // The old descriptor stays open (retired) until the entry goes: a fetch still
            // writing through it must never write into whatever file reuses its number.
            let reopened = try Platform.openForUpdate(dataPath)
            retiredDescriptors.append(dataFD)
            dataFD = reopened
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
    /// that later opens within the maximum age need not ask it.
    /// `attributes`, when the origin just gave them, are recorded too; returns the entry's.
    @discardableResult
    func prepare(length: UInt64, validator: String?, confirmedAt: Int64?, attributes: ResourceAttributes? = nil) throws -> ResourceAttributes {
        let generation = table.generation
        table = try locked {
            var loaded = try loadTable(length: length, validator: validator)
            var changed = false
            // Recorded at most once a minute: an open is not a table write.
            if let confirmedAt, (loaded.validatedAt ?? 0) + 60 <= confirmedAt || (loaded.validatedAt ?? 0) > confirmedAt {
                loaded.validatedAt = confirmedAt
                changed = true
            }
            if let attributes, attributes != loaded.attributes {
                loaded.attributes = attributes
                changed = true
            }
            if changed { try loaded.write(to: tablePath) }
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

    /// The bytes of `range` (present in the table) from the data file, after checking the
    /// blocks it touches against their checksums; `nil` when some failed: they are dropped from
    /// the table (the caller fetches them again), corrupt bytes are never served.
    func readCached(_ range: Range<UInt64>) throws -> [UInt8]? {
        let bytes = try Platform.readFully(dataFD, offset: range.lowerBound, count: Int(range.count), path: dataPath)
        guard bytes.count == Int(range.count) else {
            throw MP4Error(.io, "cache data file \(dataPath) is shorter than its table says")
        }
        guard try verifyBlocks(range, bytes: bytes) else { return nil }
        statistics.cachedBytesServed += UInt64(range.count)
        return bytes
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

    /// How far ahead of a running fetch's progress a reader still waits for it rather than
    /// starting a fetch of its own.
    static let followDistance: UInt64 = 256 << 10

    /// Marks the entry as used now (its table's modification time orders eviction).
    func markUsed() { Platform.touch(tablePath) }

    /// What a streaming read does next at `position`.
    enum StreamStep {
        /// Serve this run (starting at the position) from the data file.
        case cached(Range<UInt64>)
        /// Follow this fetch (started now or by another reader), which covers the position.
        case inFlight(Range<UInt64>, Task<Bool, any Error>, FillProgress)
        /// Another process is fetching the bytes at the position: wait for its commits.
        case elsewhere
    }

    /// Reloads the table from disk (another process's commits); returns whether `offset` is
    /// present now.
    func reload(checking offset: UInt64) throws -> Bool {
        let generation = table.generation
        table = try locked { try loadTable(length: table.length, validator: table.validator) }
        if table.generation != generation { verifiedBlocks = [] }
        return table.rangeSet.contains(offset..<(offset + 1))
    }

    /// Takes the range lock that tells other processes this one fetches `part`, trimmed to
    /// end where another process's fetch begins; `nil` when another process fetches the
    /// first byte of `part`. Without range locks (unsupported), `part` as it is. With
    /// `othersAllowed` false the lock is taken where it can be and `part` fetched anyway.
    private func claimFetch(_ part: Range<UInt64>, othersAllowed: Bool = true) -> Range<UInt64>? {
        guard othersAllowed else {
            _ = Platform.tryLockRange(lockFD, part)
            return part
        }
        var part = part
        if let conflict = Platform.rangeLockConflict(lockFD, part) {
            guard conflict > part.lowerBound else { return nil }
            part = part.lowerBound..<conflict
        }
        return Platform.tryLockRange(lockFD, part) == false ? nil : part
    }

    /// The range each running fetch holds locked, by descriptor. Locks belong to the open
    /// file, not to a fetch: two fetches of this process may hold overlapping bytes (one
    /// superseded and stopping, one started over the same bytes), so a fetch releases only
    /// the bytes no other fetch of the same descriptor holds.
    private var heldLocks: [(progress: ObjectIdentifier, fd: Int32, range: Range<UInt64>)] = []

    /// Releases the lock `progress` holds, keeping `kept` (a fetch cut short keeps its head).
    private func releaseLock(of progress: FillProgress, keeping kept: Range<UInt64>? = nil) {
        let id = ObjectIdentifier(progress)
        guard let index = heldLocks.firstIndex(where: { $0.progress == id }) else { return }
        let held = heldLocks.remove(at: index)
        var released = ByteRangeSet([held.range])
        if let kept, !kept.isEmpty {
            released.remove(kept)
            heldLocks.append((id, held.fd, kept))
        }
        for other in heldLocks where other.fd == held.fd && other.progress != id { released.remove(other.range) }
        for range in released.ranges { Platform.unlockRange(held.fd, range) }
    }

    /// Starts the fetch of `part` (claimed: its lock is held), registered in flight.
    private func startFetch(of part: Range<UInt64>, upstream: any ByteSource, commitInterval: UInt64) -> (Task<Bool, any Error>, FillProgress) {
        let progress = FillProgress(part, fd: dataFD)
        heldLocks.append((ObjectIdentifier(progress), lockFD, part))
        let task = Task { try await self.fetch(part, from: upstream, commitInterval: commitInterval, progress: progress) }
        inFlight.append((part, task, progress))
        return (task, progress)
    }

    /// The next step of a streaming read at `position` (before `upper`): a cached run of at
    /// most one stream piece, the fetch already running over the position, or a new fetch of
    /// the missing run there (ending where another fetch begins). An in-flight step is
    /// returned already followed by the caller (counted here, on the actor, so that no other
    /// reader leaving in between can cancel it); the caller unfollows it when done.
    /// With `othersAllowed` false, bytes another process is fetching are fetched anyway (a
    /// reader that waited too long for that process).
    func nextStep(at position: UInt64, upTo upper: UInt64, upstream: any ByteSource, bridgeGap: UInt64, commitInterval: UInt64, limit: UInt64? = nil, othersAllowed: Bool = true) -> StreamStep {
        let missing = table.rangeSet.missing(in: position..<upper)
        guard let first = missing.first, first.lowerBound == position else {
            return .cached(position..<min(missing.first?.lowerBound ?? upper, position + streamPieceSize))
        }
        var end = first.upperBound
        // Small cached gaps between missing parts are fetched again rather than paid for with
        // another request.
        for part in missing.dropFirst() {
            guard part.lowerBound - end < bridgeGap else { break }
            end = part.upperBound
        }
        if let index = inFlight.firstIndex(where: { $0.range.contains(position) }) {
            let running = inFlight[index]
            // Follow a fetch that is about to reach the position; one far behind it (the
            // reader sought ahead, e.g. to a moov at the end) stops there instead, and a new
            // fetch starts at the position: a seek never waits for a sequential download.
            guard running.progress.written + Self.followDistance < position, running.progress.shrink(to: position) else {
                running.progress.follow()
                return .inFlight(running.range, running.task, running.progress)
            }
            inFlight[index].range = running.range.lowerBound..<position
            releaseLock(of: running.progress, keeping: running.range.lowerBound..<position)
            end = min(end, running.range.upperBound)
        }
        for other in inFlight where other.range.lowerBound > position && other.range.lowerBound < end { end = other.range.lowerBound }
        if let limit, end - position > limit { end = position + limit }
        guard let part = claimFetch(position..<end, othersAllowed: othersAllowed) else { return .elsewhere }
        let (task, progress) = startFetch(of: part, upstream: upstream, commitInterval: commitInterval)
        progress.follow()
        return .inFlight(part, task, progress)
    }

    /// Bytes a running fetch has written to the data file (not necessarily committed yet),
    /// read back for the readers that follow it.
    func readWritten(_ range: Range<UInt64>, by progress: FillProgress) throws -> [UInt8] {
        // The descriptor the fetch writes to must still be this entry's (not reopened since).
        guard progress.fd == dataFD, progress.valid else {
            throw MP4Error(.io, "\(resource): the cache entry was started again during a read", offset: range.lowerBound)
        }
        let bytes = try Platform.readFully(dataFD, offset: range.lowerBound, count: Int(range.count), path: dataPath)
        guard bytes.count == Int(range.count) else {
            throw MP4Error(.io, "cache data file \(dataPath) is shorter than the bytes written to it", offset: range.lowerBound)
        }
        return bytes
    }

    /// Starts a fetch of the first part of `range` that is neither present nor being fetched,
    /// when that part begins at the start of `range` (the bytes a reader needs next); nobody
    /// follows it yet.
    func fetchAhead(_ range: Range<UInt64>, upstream: any ByteSource, commitInterval: UInt64) {
        guard !inFlight.contains(where: { $0.range.contains(range.lowerBound) }),
              var part = table.rangeSet.missing(in: range).first, part.lowerBound == range.lowerBound else { return }
        for other in inFlight where other.range.lowerBound > part.lowerBound && other.range.lowerBound < part.upperBound {
            part = part.lowerBound..<other.range.lowerBound
        }
        guard let claimed = claimFetch(part) else { return }
        _ = startFetch(of: claimed, upstream: upstream, commitInterval: commitInterval)
    }

    /// The fetches the last ``prefetch(_:upstream:bridgeGap:commitInterval:maxRequests:)``
    /// started.
    private var prefetches: [(progress: FillProgress, task: Task<Bool, any Error>)] = []

    /// Starts fetches for the parts of `ranges` that are neither present nor being fetched
    /// (bridged, at most `maxRequests`), without following them; first stops the previous
    /// prefetch's fetches that nobody follows and `ranges` no longer wants. Returns the parts
    /// started.
    func prefetch(_ ranges: [Range<UInt64>], upstream: any ByteSource, bridgeGap: UInt64, commitInterval: UInt64, maxRequests: Int) -> [Range<UInt64>] {
        var wanted = ByteRangeSet()
        for range in ranges { wanted.insert(range) }
        for (progress, task) in prefetches where progress.followerCount == 0 {
            // Still wanted: it goes on.
            if wanted.ranges.contains(where: { $0.overlaps(progress.written..<max(progress.written, progress.end)) }) { continue }
            // Superseded: no new reader may follow it (it leaves the list now), and it stops
            // at its next piece, keeping what it committed.
            inFlight.removeAll { $0.progress === progress }
            task.cancel()
        }
        prefetches.removeAll { $0.task.isCancelled || $0.progress.isFinished }
        var parts: [Range<UInt64>] = []
        for range in wanted.ranges {
            var missing = ByteRangeSet()
            for part in table.rangeSet.missing(in: range) { missing.insert(part) }
            for running in inFlight { missing.remove(running.range) }
            for part in missing.ranges {
                if let last = parts.last, part.lowerBound - last.upperBound < bridgeGap,
                   !inFlight.contains(where: { $0.range.overlaps(last.upperBound..<part.lowerBound) }) {
                    parts[parts.count - 1] = last.lowerBound..<part.upperBound
                } else {
                    parts.append(part)
                }
            }
        }
        var started: [Range<UInt64>] = []
        for part in parts where started.count < max(maxRequests, 0) {
            guard let claimed = claimFetch(part) else { continue }
            let (task, progress) = startFetch(of: claimed, upstream: upstream, commitInterval: commitInterval)
            prefetches.append((progress, task))
            started.append(claimed)
        }
        return started
    }

    /// Streams `part` from upstream into the data file, committing what arrived every
    /// `commitInterval` bytes, at the end, and when the stream fails (then rethrows). Returns
    /// false when the entry was started again by another process meanwhile (nothing claimed).
    private func fetch(_ part: Range<UInt64>, from upstream: any ByteSource, commitInterval: UInt64, progress: FillProgress) async throws -> Bool {
        statistics.upstreamReads += 1
        let generation = table.generation
        // The stream runs outside the actor (the upstream is nonisolated): it writes with the
        // descriptor directly and comes back to the actor only to commit.
        let fd = progress.fd, path = dataPath, name = resource
        defer {
            statistics.upstreamBytes += progress.written - part.lowerBound
            inFlight.removeAll { $0.progress === progress }
            // Committed (or given up): other processes may take these bytes from the table now.
            releaseLock(of: progress)
            progress.finish()
        }
        var failure: (any Error)?
        do {
            try await upstream.read(part, into: { @Sendable bytes in
                guard progress.valid, !Task.isCancelled else { throw CancellationError() }
                // Never past the part, whatever the upstream sends.
                guard UInt64(bytes.count) <= part.upperBound - progress.written else {
                    throw MP4Error(.io, "\(name): upstream sent more than the \(part.count) bytes asked for at \(part.lowerBound)", offset: part.lowerBound)
                }
                // A piece may span several commit points (`--block` smaller than a piece), and
                // the fetch stops where a later fetch (a reader's seek ahead) took over.
                var rest = bytes.prefix(Int(min(UInt64(bytes.count), progress.end - min(progress.end, progress.written))))
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
                if progress.written >= progress.end && progress.end < part.upperBound { throw FillProgress.ReachedEnd() }
            })
            if progress.written != part.upperBound {
                failure = MP4Error(.io, "\(resource): upstream returned \(progress.written - part.lowerBound) of \(part.count) bytes at \(part.lowerBound)", offset: part.lowerBound)
            }
        } catch is FillProgress.ReachedEnd {
            // Stopped where another fetch begins: this one is complete.
        } catch {
            failure = error
        }
        // What arrived is claimed even when the stream failed: the next read asks for the rest.
        if progress.valid && progress.written > progress.committed {
            do {
                progress.valid = try commit(progress.committed..<progress.written, generation: generation)
                if progress.valid { progress.committed = progress.written }
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

/// How far one streamed fetch got, and who follows it. The fetch (its owner) advances
/// `written` and `committed` one piece at a time; readers that follow it wait for `written` to
/// pass their position.
final class FillProgress: @unchecked Sendable {
    /// The range being fetched.
    let part: Range<UInt64>
    /// The data file descriptor the fetch writes to.
    let fd: Int32
    private let lock = NSLock()
    private var _written: UInt64
    private var _valid = true
    private var finished = false
    private var followers = 0
    private var waiters: [(offset: UInt64, continuation: CheckedContinuation<Void, Never>)] = []
    /// End of the bytes claimed by the table (advanced by the owner; fills wait on it).
    var committed: UInt64 {
        get { lock.withLock { _committed } }
        set {
            let ready = lock.withLock { () -> [CheckedContinuation<Void, Never>] in
                _committed = newValue
                let ready = commitWaiters.filter { $0.offset <= newValue }.map(\.continuation)
                commitWaiters.removeAll { $0.offset <= newValue }
                return ready
            }
            for continuation in ready { continuation.resume() }
        }
    }
    private var _committed: UInt64
    private var commitWaiters: [(offset: UInt64, continuation: CheckedContinuation<Void, Never>)] = []

    init(_ part: Range<UInt64>, fd: Int32) {
        self.part = part
        self.fd = fd
        _written = part.lowerBound
        _end = part.upperBound
        _committed = part.lowerBound
    }

    /// End of the bytes written to the data file.
    var written: UInt64 {
        get { lock.withLock { _written } }
        set {
            let ready = lock.withLock { () -> [CheckedContinuation<Void, Never>] in
                _written = newValue
                let ready = waiters.filter { $0.offset < newValue }.map(\.continuation)
                waiters.removeAll { $0.offset < newValue }
                return ready
            }
            for continuation in ready { continuation.resume() }
        }
    }

    /// False once a commit found the entry started again by another process.
    var valid: Bool {
        get { lock.withLock { _valid } }
        set { lock.withLock { _valid = newValue } }
    }

    /// Where the fetch stops: the end of its part, or earlier once another fetch took over.
    var end: UInt64 { lock.withLock { _end } }
    private var _end: UInt64 = .max

    /// Makes the fetch stop at `offset`, unless it has already written past it.
    func shrink(to offset: UInt64) -> Bool {
        lock.withLock {
            guard _written < offset, offset < _end else { return false }
            _end = offset
            return true
        }
    }

    /// Thrown inside the fetch's stream when it reached ``end``.
    struct ReachedEnd: Error {}

    /// The fetch ended (done, failed or cancelled): wakes every waiter.
    func finish() {
        let ready = lock.withLock { () -> [CheckedContinuation<Void, Never>] in
            finished = true
            defer { waiters = []; commitWaiters = [] }
            return waiters.map(\.continuation) + commitWaiters.map(\.continuation)
        }
        for continuation in ready { continuation.resume() }
    }

    /// Waits until the table claims the bytes up to `offset` or the fetch has ended.
    func wait(committedThrough offset: UInt64) async -> (committed: UInt64, finished: Bool) {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = lock.withLock { () -> Bool in
                if _committed >= offset || finished { return true }
                commitWaiters.append((offset, continuation))
                return false
            }
            if now { continuation.resume() }
        }
        return lock.withLock { (_committed, finished) }
    }

    /// Whether the fetch has ended.
    var isFinished: Bool { lock.withLock { finished } }

    /// Waits until bytes past `offset` are written or the fetch has ended.
    func wait(beyond offset: UInt64) async -> (written: UInt64, finished: Bool) {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = lock.withLock { () -> Bool in
                if _written > offset || finished { return true }
                waiters.append((offset, continuation))
                return false
            }
            if now { continuation.resume() }
        }
        return lock.withLock { (_written, finished) }
    }

    /// A reader starts following the fetch.
    func follow() { lock.withLock { followers += 1 } }

    /// How many readers follow the fetch now.
    var followerCount: Int { lock.withLock { followers } }

    /// A reader stops following; returns how many still do.
    func unfollow() -> Int { lock.withLock { followers -= 1; return followers } }
}


/// The origin of an entry that was opened without asking it (fresh or stale): before the first
/// byte is taken from it, its length and validator must be the entry's, so a changed origin is
/// never mixed into the entry. A mismatch is an error with cause ``MP4Error/Cause/sourceChanged``.
final class CheckedOrigin: ByteSource, @unchecked Sendable {
    let base: any ByteSource
    let expectedLength: UInt64
    let expectedValidator: String?
    private let lock = NSLock()
    private var confirmed = false

    init(base: any ByteSource, length: UInt64, validator: String?) {
        self.base = base
        self.expectedLength = length
        self.expectedValidator = validator
    }

    var name: String { base.name }
    var preferredReadSize: Int { base.preferredReadSize }
    func length() async throws -> UInt64 { expectedLength }
    func validator() async throws -> String? { expectedValidator }

    private func confirm() async throws {
        if lock.withLock({ confirmed }) { return }
        let length = try await base.length(), validator = try await base.validator()
        guard length == expectedLength, validator == expectedValidator else {
            var error = MP4Error(.io, "\(base.name) changed since it was cached (\(length) bytes, validator \(validator ?? "none"); the cache holds \(expectedLength) bytes, validator \(expectedValidator ?? "none")); nothing was mixed, the next open starts the entry again")
            error.cause = .sourceChanged
            throw error
        }
        lock.withLock { confirmed = true }
    }

    func read(_ range: Range<UInt64>) async throws -> [UInt8] {
        try await confirm()
        return try await base.read(range)
    }

    func read(_ range: Range<UInt64>, into consume: (ArraySlice<UInt8>) async throws -> Void) async throws {
        try await confirm()
        try await base.read(range, into: consume)
    }
}
