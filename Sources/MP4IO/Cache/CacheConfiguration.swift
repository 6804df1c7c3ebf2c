/// Where and how the on-disk cache keeps resources: the one value that ``SourceFactory``,
/// ``MediaLoader`` and ``CachingProxy`` pass on, unchanged.
///
/// ```swift
/// var cache = CacheConfiguration(directory: "/var/cache/videos")
/// cache.maxBytes = 2 << 30
/// cache.entries.readAhead.prefetchSeconds = 5
/// let loader = MediaLoader(options: .init(cache: cache))
/// ```
public struct CacheConfiguration: Sendable {
    /// The cache directory (created if missing).
    public var directory: String
    /// The rules of each entry: commits, freshness, read-ahead (``ReadAheadPolicy``).
    public var entries = CachedByteSource.Options()
    /// The most the cache may occupy on disk, kept as bytes are written: a write that needs
    /// room evicts least-recently-used entries nothing in this process is reading; when those
    /// cannot make room, the bytes are passed through uncached. A ``MediaLoader`` also runs an
    /// eviction pass at start and ``evictionInterval`` seconds after its writes. `nil`: no limit.
    public var maxBytes: UInt64?
    /// Seconds from a write to the eviction pass that follows it (a pass runs only after writes).
    public var evictionInterval: Double = 10

    public init(directory: String) { self.directory = directory }
}
