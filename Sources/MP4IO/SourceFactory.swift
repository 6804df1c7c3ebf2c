import Foundation
import MP4Core

/// A byte source that can say what reading through it cost (requests, bytes, retries, cache
/// hits), in sentences for a person. Sources that wrap another include its lines.
public protocol ReportsReadCost: ByteSource {
    /// One line per layer, outermost first (no trailing newline).
    func readCostSummary() async -> [String]
}

/// Opens the byte source for a location the way every command and the server do: a local
/// path or an `http(s)` URL, through the on-disk cache when one is given. The one place that
/// knows which source type serves which location.
///
/// ```swift
/// var options = SourceFactory.Options()
/// options.cache = CacheConfiguration(directory: "/var/cache/videos")
/// let source = try await SourceFactory.open("https://cdn.example.com/v.mp4", options: options)
/// ```
public enum SourceFactory {
    /// How to open a location.
    public struct Options: Sendable {
        /// For URLs: headers, credentials, timeouts, retries, the client.
        public var http = HTTPByteSource.Options()
        /// Read through this cache (docs/cache.md), when set.
        public var cache: CacheConfiguration?
        /// Told when opening a local path finished or undid an in-place faststart that a crash
        /// interrupted (the CLI says so on standard error).
        public var recovered: (@Sendable (String, InPlaceFaststart.Recovery) -> Void)?
        /// For a ``MediaLoader``'s sources: where their fetches are reported
        /// (``OriginActivity``), and the priority their reads have in the cache.
        var activity: OriginActivity?
        var readPriority = FetchPlanner.Priority.playing

        public init(http: HTTPByteSource.Options = HTTPByteSource.Options(), cache: CacheConfiguration? = nil) {
            self.http = http
            self.cache = cache
        }
    }

    /// Whether `location` is an `http://` or `https://` URL (any case).
    public static func isURL(_ location: String) -> Bool {
        let lower = location.lowercased()
        return lower.hasPrefix("http://") || lower.hasPrefix("https://")
    }

    /// The source for the local file at `path`: an in-place faststart a crash interrupted is
    /// finished or undone first. What ``open(_:options:)`` does for a path, without building
    /// the URL options (a local read does not need them).
    ///
    /// The source holds a shared lock on the file while it is open (``FileSource``): a rewrite
    /// under way is waited for (``InPlaceFaststart/readerWait``) and none begins meanwhile, so a
    /// reader reports the film before or after it. Without it, `info` started 0-30 ms after
    /// `faststart --in-place` printed a mix with exit 0 (3 of 300). A journal found under the
    /// lock is a crashed rewrite's: recovered, then the file opened again.
    public static func openFile(_ path: String, recovered: (@Sendable (String, InPlaceFaststart.Recovery) -> Void)? = nil) throws -> FileSource {
        let journal = InPlaceFaststart.journalPath(for: Platform.resolvedPath(path) ?? path)
        for _ in 0..<3 {
            if let recovery = try InPlaceFaststart.recover(path: path) { recovered?(path, recovery) }
            let source = try FileSource(path: path, sharedLockWait: InPlaceFaststart.readerWait)
            if !Platform.exists(journal) { return source }
        }
        throw MP4Error(.io, "\(path) keeps being rewritten in place (a new journal each time it was opened); nothing was read")
    }

    /// A location opened: the source to read, and its layers by type (no caller casts an
    /// `any ByteSource` back).
    public struct Opened: Sendable {
        /// What to read: the cache in front of the origin when it took the entry, else the origin.
        public let source: any ByteSource
        /// The cache in front of the origin, when ``Options/cache`` was set and it took the
        /// entry (a disk too full for even a new entry leaves the origin uncached).
        public let cache: CachedByteSource?
        /// The origin when it is a URL.
        public let http: HTTPByteSource?
    }

    /// The source for `location`, through the cache when ``Options/cache`` is set.
    /// - Throws: ``MP4Error`` `.io` for a missing file, a directory, an invalid URL.
    public static func open(_ location: String, options: Options = Options()) async throws -> any ByteSource {
        try await opened(location, options: options).source
    }

    /// `location` opened as ``open(_:options:)`` opens it, with its layers by type.
    public static func opened(_ location: String, options: Options = Options()) async throws -> Opened {
        let upstream: any ByteSource
        var http: HTTPByteSource?
        if isURL(location) {
            guard let url = URL(string: location) else { throw MP4Error(.io, "\(location) is not a valid URL") }
            let origin = try HTTPByteSource(url: url, options: options.http)
            (http, upstream) = (origin, origin)
        } else {
            upstream = try openFile(location, recovered: options.recovered)
        }
        guard let cache = options.cache else { return Opened(source: upstream, cache: nil, http: http) }
        let wiring = CachedByteSource.Wiring(budget: cache.maxBytes.map { CacheBudget.for(cache.directory, limit: $0) },
                                             activity: options.activity, readPriority: options.readPriority)
        do {
            let cached = try await CachedByteSource(upstream: upstream, directory: cache.directory, options: cache.entries, wiring: wiring)
            return Opened(source: cached, cache: cached, http: http)
        } catch where CacheEntry.isOutOfRoom(error) {
            // The cache cannot take even a new entry: the origin is read without it (said once).
            DiskFullNotice.full(cache.directory, warn: cache.entries.warn)
            return Opened(source: upstream, cache: nil, http: http)
        }
    }
}

extension HTTPByteSource: ReportsReadCost {
    public func readCostSummary() async -> [String] {
        let s = statistics
        let requests = s.requests == 1 ? "1 HTTP request" : "\(s.requests) HTTP requests"
        let retries = s.retries == 1 ? "1 retry" : "\(s.retries) retries"
        return ["\(requests), \(s.bytesReceived) body bytes received, \(retries)" + (supportsRanges ? "" : "; the server does not support Range requests (whole-body reads)")]
    }
}

extension CachedByteSource: ReportsReadCost {
    public func readCostSummary() async -> [String] {
        let s = await statistics
        let reads = s.upstreamReads == 1 ? "1 upstream read" : "\(s.upstreamReads) upstream reads"
        var lines = ["cache: \(reads), \(s.upstreamBytes) bytes fetched, \(s.cachedBytesServed) bytes served" + (s.corruptBlocksRefetched > 0 ? ", \(s.corruptBlocksRefetched) corrupt block(s) fetched again" : "")]
        if let inner = upstream as? any ReportsReadCost { lines += await inner.readCostSummary() }
        return lines
    }
}
