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
    /// Whether the headers and `moov` are present (without them nothing plays).
    public var movieIsCached: Bool
    /// What plays from the bytes present (``PlayableTime``): the prefix from 0 in seconds, and
    /// the time ranges in which every track is present.
    public var playable: PlayableTime

    /// The status of `resource` in `directory`, or `nil` when it has no entry there.
    public static func of(_ resource: String, in directory: String, limits: ParseLimits = .default) async -> CacheStatus? {
        guard let snapshot = CacheSnapshot(directory: directory, resource: resource) else { return nil }
        var status = CacheStatus(resource: resource, length: snapshot.table.length, cachedBytes: snapshot.table.rangeSet.byteCount,
                                 movieIsCached: false, playable: .none)
        // Whatever is missing (a header, the moov, a fragment) leaves it at "nothing plays".
        guard let file = try? await MP4File.open(snapshot, options: MP4File.Options(limits: limits)), file.movie != nil else { return status }
        status.movieIsCached = true
        guard let planner = try? await SeekPlanner.index(file, from: snapshot, limits: limits) else { return status }
        let present = snapshot.table.rangeSet
        status.playable = PlayableTime.of(planner) { present.contains($0) }
        return status
    }
}

/// A cache entry's bytes as they are on disk, read without the origin: reads of bytes the
/// table does not claim throw. (Block checksums are not checked: nothing read here is served.)
final class CacheSnapshot: ByteSource, @unchecked Sendable {
    let table: CacheTable
    private let fd: Int32
    private let dataPath: String

    init?(directory: String, resource: String) {
        let paths = CachedByteSource.entryPaths(directory: directory, resource: resource)
        guard let loaded = try? CacheTable.load(paths.table), loaded.resource == resource,
              let fd = try? Platform.openForReading(paths.data) else { return nil }
        table = loaded
        self.fd = fd
        dataPath = paths.data
    }

    deinit { Platform.closeFile(fd) }

    var name: String { table.resource }
    func length() async throws -> UInt64 { table.length }
    func validator() async throws -> String? { table.validator }

    func read(_ range: Range<UInt64>) async throws -> [UInt8] {
        let upper = min(range.upperBound, table.length)
        guard range.lowerBound < upper else { return [] }
        guard table.rangeSet.contains(range.lowerBound..<upper) else {
            throw MP4Error(.io, "\(name): bytes \(range.lowerBound)..<\(upper) are not cached", offset: range.lowerBound)
        }
        return try Platform.readFully(fd, offset: range.lowerBound, count: Int(upper - range.lowerBound), path: dataPath)
    }
}
