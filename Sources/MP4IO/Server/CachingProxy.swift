import Foundation
import MP4Core

/// A loopback caching proxy for players (`mp4probe serve`): a resource is asked for as
/// `BASE + NAME + "?url=" + percent-encoded origin URL`, answered from the on-disk cache and
/// the origin with the range semantics of ``SourceResponder``. With `&faststart=1` a
/// moov-at-end origin is served as its ``FaststartView`` (moov first) without rewriting it;
/// the cache keeps origin bytes, so one entry serves both views.
///
/// ```swift
/// let proxy = CachingProxy(options: .init(cacheDirectory: "/tmp/mp4probe-cache"))
/// try proxy.start()
/// let playable = proxy.url(for: "https://cdn.example.com/v.mp4", faststart: true)
/// ```
///
/// The base URL holds a random secret path segment: only holders of a URL it handed out can
/// use it.
public final class CachingProxy: @unchecked Sendable {
    public struct Options: Sendable {
        /// The cache directory (created if missing).
        public var cacheDirectory: String
        /// How origins are read (headers, timeouts, retries).
        public var sources = SourceFactory.Options()
        /// Address, port and bounds of the server.
        public var server = HTTPServer.Options()
        /// Serve every resource as its faststart view (as if each URL said `&faststart=1`;
        /// `&faststart=0` asks for the original).
        public var faststartByDefault = false
        /// The most the cache may occupy on disk; least-recently-used entries are evicted
        /// (every ``evictionInterval`` seconds), never one that a client is reading. `nil`: no limit.
        public var maxCacheBytes: UInt64?
        public var evictionInterval: Double = 10

        public init(cacheDirectory: String) { self.cacheDirectory = cacheDirectory }
    }

    public let options: Options
    /// The secret path segment (random per start).
    public let secret: String
    private var server: HTTPServer?
    private let sources = SourceTable()
    private var eviction: Task<Void, Never>?

    public init(options: Options) {
        self.options = options
        var random = SystemRandomNumberGenerator()
        secret = (0..<4).map { _ in String(random.next() as UInt32, radix: 36) }.joined()
    }

    /// Starts serving.
    /// - Throws: ``MP4Error`` `.io` when the cache directory cannot be made or the address bound.
    public func start() throws {
        do {
            try FileManager.default.createDirectory(atPath: options.cacheDirectory, withIntermediateDirectories: true)
        } catch {
            throw MP4Error(.io, "cannot create the cache directory \(options.cacheDirectory): \(error.localizedDescription)")
        }
        let server = HTTPServer(options: options.server) { [self] request in await respond(request) }
        try server.start()
        self.server = server
        if let limit = options.maxCacheBytes {
            let directory = options.cacheDirectory, interval = max(options.evictionInterval, 0.1)
            eviction = Task.detached {
                while !Task.isCancelled {
                    await Self.evict(directory, toAtMost: limit)
                    try? await Task.sleep(for: .seconds(interval))
                }
            }
        }
    }

    /// One eviction pass: least-recently-used entries go until the cache fits, sparing those a
    /// source in this process has open (a client is reading them).
    static func evict(_ directory: String, toAtMost limit: UInt64) async {
        let open = await CachedByteSource.openResources(directory: directory)
        _ = try? CacheDirectory.evict(directory, toAtMost: limit, sparing: open)
    }

    public func stop() {
        eviction?.cancel()
        server?.stop()
    }

    /// `http://127.0.0.1:PORT/SECRET/`.
    public var baseURL: String { (server?.baseURL ?? "http://127.0.0.1:0") + "/\(secret)/" }

    /// The URL a player is given for `origin`; `name` (any, e.g. `movie.mp4`) is what players
    /// that look at the extension see.
    public func url(for origin: String, name: String = "media.mp4", faststart: Bool = false) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let encoded = origin.addingPercentEncoding(withAllowedCharacters: allowed) ?? origin
        let safeName = name.addingPercentEncoding(withAllowedCharacters: allowed) ?? "media.mp4"
        return baseURL + safeName + "?url=" + encoded + (faststart ? "&faststart=1" : "")
    }

    private func respond(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        guard request.path.hasPrefix("/\(secret)/") else { return .text(404, "not found") }
        guard let origin = request.query["url"] else { return .text(400, "missing ?url=ORIGIN") }
        guard SourceFactory.isURL(origin), URL(string: origin) != nil else { return .text(400, "only http and https origins are served") }
        let faststart = request.query["faststart"].map { $0 == "1" } ?? options.faststartByDefault
        do {
            let source = try await sources.source(for: origin, faststart: faststart, options: options)
            return await SourceResponder.response(for: request, source: source)
        } catch let error as MP4Error {
            return .text(error.kind == .unsupported ? 422 : 502, "\(origin): \(error.message)")
        } catch {
            return .text(502, "\(origin): \(error)")
        }
    }
}

/// The open sources by origin (and view), so that every request for one resource shares its
/// learned length, validator and connections; bounded, least recently used dropped first.
/// Requests that arrive while a source is being opened wait for that opening instead of
/// opening it again (players often start with two connections).
actor SourceTable {
    private var entries: [String: (opening: Task<any ByteSource, any Error>, used: UInt64, generation: UInt64)] = [:]
    private var clock: UInt64 = 0
    private let capacity = 64

    func source(for origin: String, faststart: Bool, options: CachingProxy.Options) async throws -> any ByteSource {
        let key = (faststart ? "faststart " : "") + origin
        clock += 1
        if let entry = entries[key] {
            entries[key]?.used = clock
            return try await entry.opening.value
        }
        if entries.count >= capacity, let oldest = entries.min(by: { $0.value.used < $1.value.used })?.key {
            entries.removeValue(forKey: oldest)
        }
        let generation = clock
        let opening = Task {
            let opened = try await Self.open(origin, faststart: faststart, options: options)
            // When a read finds the origin changed, the next request opens the new version
            // (a new length, plan and ETag) instead of failing against the old one forever.
            return WatchedSource(base: opened) { [weak self] in await self?.forget(key, generation: generation) } as any ByteSource
        }
        entries[key] = (opening, clock, generation)
        do {
            return try await opening.value
        } catch {
            forget(key, generation: generation)  // the next request tries again
            throw error
        }
    }

    /// Drops `key` if it is still the entry opened as `generation`.
    func forget(_ key: String, generation: UInt64) {
        if entries[key]?.generation == generation { entries.removeValue(forKey: key) }
    }

    private static func open(_ origin: String, faststart: Bool, options: CachingProxy.Options) async throws -> any ByteSource {
        var factory = options.sources
        factory.cacheDirectory = options.cacheDirectory
        let opened = try await SourceFactory.open(origin, options: factory)
        guard faststart else { return opened }
        do {
            return try await FaststartView.make(opened)
        } catch let error as MP4Error where error.kind == .unsupported {
            // A file the rewrite refuses (cmov, several moov...) is served unchanged.
            return opened
        }
    }
}

/// A source that calls `changed` when a read finds that its origin is no longer the version
/// it opened (``MP4Error/Cause/sourceChanged``); the error itself still reaches the reader, so
/// no byte of the new version is mixed into a response about the old one.
struct WatchedSource: ByteSource {
    let base: any ByteSource
    let changed: @Sendable () async -> Void

    var name: String { base.name }
    var preferredReadSize: Int { base.preferredReadSize }

    func length() async throws -> UInt64 { try await watching { try await base.length() } }
    func validator() async throws -> String? { try await watching { try await base.validator() } }
    func read(_ range: Range<UInt64>) async throws -> [UInt8] { try await watching { try await base.read(range) } }
    func read(_ range: Range<UInt64>, into consume: (ArraySlice<UInt8>) async throws -> Void) async throws {
        try await watching { try await base.read(range, into: consume) }
    }

    private func watching<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch let error as MP4Error where error.cause == .sourceChanged {
            await changed()
            throw error
        }
    }
}
