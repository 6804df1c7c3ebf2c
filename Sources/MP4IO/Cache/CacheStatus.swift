import MP4Core

/// What a cache holds of one resource, in bytes and in seconds: what `cache stat`, a
/// loader's ``MediaLoader/status(of:)`` and `serve`'s `_/status` answer. Read from the entry on
/// disk without the origin.
public struct CacheStatus: Sendable, Equatable {
    /// The resource (origin URL or path).
    public var resource: String
    /// The resource's length, as the origin last said it.
    public var length: UInt64
    /// Bytes present.
    public var cachedBytes: UInt64
    /// The byte ranges present, in order (what an inspector page draws).
    public var cachedRanges: [Range<UInt64>] = []
    /// Whether the headers and `moov` are present (without them nothing plays).
    public var movieIsCached: Bool
    /// What plays from the bytes present (``PlayableTime``): the prefix from 0 in seconds, and
    /// the time ranges in which every track is present.
    public var playable: PlayableTime

    /// The status of `resource` in `directory`, or `nil` when it has no entry there.
    public static func of(_ resource: String, in directory: String, limits: ParseLimits = .default) async -> CacheStatus? {
        await of(resource, in: directory, limits: limits, indexes: nil)
    }

    /// The status, taking the movie's sample index from `indexes` when it holds it, and
    /// leaving the one it builds there: a loader answers `_/status` polls, and for a
    /// two-hour film (7.4 MB `moov`) a poll took 76 ms when it parsed the `moov`, 45-50 ms
    /// when it did not.
    static func of(_ resource: String, in directory: String, limits: ParseLimits, indexes: MovieIndexes?) async -> CacheStatus? {
        guard let snapshot = CacheSnapshot(directory: directory, resource: resource) else { return nil }
        var status = CacheStatus(resource: resource, length: snapshot.table.length, cachedBytes: snapshot.table.rangeSet.byteCount,
                                 movieIsCached: false, playable: .none)
        status.cachedRanges = snapshot.table.rangeSet.ranges
        let key = MovieIndexes.Key(resource: resource, length: snapshot.table.length, validator: snapshot.table.validator)
        let planner: SeekPlanner
        if let known = await indexes?.planner(for: key) {
            planner = known
        } else {
            // Whatever is missing (a header, the moov, a fragment) leaves it at "nothing plays".
            let file = try? await MP4File.open(snapshot, options: MP4File.Options(limits: limits, facts: .structure))
            if let file, file.movie != nil, let made = try? await SeekPlanner.index(file, from: snapshot, limits: limits) {
                planner = made
                await indexes?.remember(made, for: key)
            } else if file?.isFragmented ?? true, let partial = await fragmentedPrefix(snapshot, limits: limits, indexes: indexes, key: key) {
                // A fragmented file preloaded from its start: its later fragments' headers are
                // not cached (a preload does not scan them). Or every top-level header is
                // cached (a scan through the cache reads each one) but a later moof is not:
                // the whole index cannot be built, and the status said 0 s where the first
                // fragments were whole. Remembered with the prefix's end: it grows. (A
                // progressive file whose moov is cached but gives no index has no prefix to
                // play: it is not walked and parsed again at every poll.)
                planner = partial
            } else {
                status.movieIsCached = file?.movie != nil
                return status
            }
        }
        status.movieIsCached = true
        status.playable = PlayableTime.of(planner, present: snapshot.table.rangeSet)
        return status
    }
}

extension CacheStatus {
    /// The index of a fragmented file's cached prefix (as a preload leaves it), read as if the
    /// file ended there: the top-level boxes from byte 0 whose headers are cached (a box's
    /// body may be missing, as an `mdat` a plan took only part of; a `moof`'s must be there),
    /// up to the first that is not. (The first cached run from 0 was used before: an `.f4v`
    /// whose first samples lie in an `mdat` before its first `moof` showed 0 s when 4.7 s were
    /// cached.)
    ///
    /// The index is taken from `indexes` when the prefix ends where it did at the last status:
    /// a `_/status` poll of a two-hour fragmented film with 1,800 of its 3,600 fragments
    /// cached takes 20 ms with it; a status built afresh (`cache stat`) takes 100 ms (release).
    static func fragmentedPrefix(_ snapshot: CacheSnapshot, limits: ParseLimits, indexes: MovieIndexes?, key: MovieIndexes.Key) async -> SeekPlanner? {
        let present = snapshot.table.rangeSet, length = snapshot.table.length
        var end: UInt64 = 0
        for _ in 0..<limits.maxTopLevelBoxes where end < length {
            let wanted = end..<min(length, end + 16)
            guard present.contains(end..<min(length, end + 8)),
                  let bytes = try? await snapshot.read(present.contains(wanted) ? wanted : end..<min(length, end + 8)),
                  let header = try? BoxHeader.parse(bytes[...], at: end, containerEnd: length), header.size > 0 else { break }
            let next = end + min(header.size, length - end)
            if header.type == .moof && !present.contains(end..<next) { break }
            end = next
        }
        guard end > 0 else { return nil }
        if let known = await indexes?.prefix(for: key, end: end) { return known }
        let prefix = PrefixSource(base: snapshot, length: end)
        guard let file = try? await MP4File.open(prefix, options: MP4File.Options(limits: limits, facts: .structure)), file.movie != nil, file.isFragmented,
              let made = try? await SeekPlanner.index(file, from: prefix, limits: limits) else { return nil }
        await indexes?.remember(made, for: key, prefixEnd: end)
        return made
    }
}

/// The first `length` bytes of a source, as a source of that length. Local whatever its base:
/// its bytes are cached (a cache snapshot's, or a cached prefix), so an open walks its
/// fragments without asking an origin.
struct PrefixSource: WrappingSource {
    let base: any ByteSource
    let length: UInt64
    var isRemote: Bool { false }
    func length() async throws -> UInt64 { length }
    func read(_ range: Range<UInt64>) async throws -> [UInt8] {
        let upper = min(range.upperBound, length)
        guard range.lowerBound < upper else { return [] }
        return try await base.read(range.lowerBound..<upper)
    }
}

/// The sample indexes of the movies a loader was last asked the status of (at most
/// ``capacity``, the least recently asked dropped first), by resource and version: a
/// resource's index does not change while its length and validator stay. A fragmented
/// resource cached in part keeps the index of its cached prefix with the prefix's end (one
/// per resource: a longer prefix replaces it, the whole file's index replaces both).
actor MovieIndexes {
    struct Key: Hashable {
        var resource: String
        var length: UInt64
        var validator: String?
    }
    static let capacity = 8
    /// `prefixEnd`: `nil` for the whole file's index, else the end of the prefix it indexes.
    private var entries: [Key: (planner: SeekPlanner, prefixEnd: UInt64?, used: UInt64)] = [:]
    private var clock: UInt64 = 0

    /// The whole file's index.
    func planner(for key: Key) -> SeekPlanner? { take(key, prefixEnd: nil) }

    /// The index of the file's first `end` bytes.
    func prefix(for key: Key, end: UInt64) -> SeekPlanner? { take(key, prefixEnd: end) }

    private func take(_ key: Key, prefixEnd: UInt64?) -> SeekPlanner? {
        guard let entry = entries[key], entry.prefixEnd == prefixEnd else { return nil }
        clock += 1
        entries[key]?.used = clock
        return entry.planner
    }

    func remember(_ planner: SeekPlanner, for key: Key, prefixEnd: UInt64? = nil) {
        clock += 1
        if entries[key] == nil, entries.count >= Self.capacity, let oldest = entries.min(by: { $0.value.used < $1.value.used })?.key {
            entries.removeValue(forKey: oldest)
        }
        entries[key] = (planner, prefixEnd, clock)
    }
}

/// A cache entry's bytes as they are on disk, read without the origin: reads of bytes the
/// table does not claim throw, and so do blocks that fail their checksums.
/// (`@unchecked Sendable`: every stored value is a constant; the descriptor is read with `pread`, which any thread may call.)
final class CacheSnapshot: ByteSource, @unchecked Sendable {
    let table: CacheTable
    private let fd: Int32
    private let dataPath: String

    init?(directory: String, resource: String) {
        let paths = CachedByteSource.entryPaths(directory: directory, resource: resource)
        guard let loaded = try? CacheTable.load(paths.table), loaded.resource == resource,
              let fd = try? CacheFiles.open(paths.data, forUpdate: false) else { return nil }
        // A data file cut short or grown behind the table holds none of what it claims.
        guard (try? Platform.regularFileSize(fd, path: paths.data)) == loaded.length else {
            Platform.closeFile(fd)
            return nil
        }
        table = loaded
        self.fd = fd
        dataPath = paths.data
    }

    deinit { Platform.closeFile(fd) }

    var name: String { table.resource }
    /// A box header's worth: a scan reads at least this much at each header, and a larger
    /// window ran into bytes a preload had not cached right after a cached `mdat` header (a
    /// fragmented film then showed 0 s playable).
    var preferredReadSize: Int { 16 }
    func length() async throws -> UInt64 { table.length }
    func validator() async throws -> String? { table.validator }

    func read(_ range: Range<UInt64>) async throws -> [UInt8] {
        let upper = min(range.upperBound, table.length)
        guard range.lowerBound < upper else { return [] }
        guard table.rangeSet.contains(range.lowerBound..<upper) else {
            throw MP4Error(.io, "\(name): bytes \(range.lowerBound)..<\(upper) are not cached", offset: range.lowerBound)
        }
        let bytes = try Platform.readFully(fd, offset: range.lowerBound, count: Int(upper - range.lowerBound), path: dataPath)
        // The blocks read are checked against their checksums, as a served read checks them.
        if let blocks = table.blocks(touching: range.lowerBound..<upper) {
            for index in blocks {
                guard let expected = table.blockChecksums[index] else { continue }
                let block = table.block(index)
                let content = try Platform.readFully(fd, offset: block.lowerBound, count: Int(block.count), path: dataPath)
                guard FNV1a.hashWords(content) == expected else {
                    throw MP4Error(.io, "\(name): cached bytes \(block.lowerBound)..<\(block.upperBound) fail their checksum", offset: block.lowerBound)
                }
            }
        }
        return bytes
    }
}
