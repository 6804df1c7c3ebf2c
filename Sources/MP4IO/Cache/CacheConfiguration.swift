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
    /// The most the cache may occupy on disk: a ``MediaLoader`` evicts least-recently-used
    /// entries every ``evictionInterval`` seconds, never one it is reading. `nil`: no limit.
    public var maxBytes: UInt64?
    /// Seconds between two eviction passes.
    public var evictionInterval: Double = 10

    public init(directory: String) { self.directory = directory }
}
