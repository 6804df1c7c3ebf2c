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
        /// Seconds of every track fetched ahead of where a player reads (see ``MediaLoader``);
        /// 0 turns prefetch off.
        public var prefetchSeconds: Double = 10

        public init(cacheDirectory: String) { self.cacheDirectory = cacheDirectory }
    }

    public let options: Options
    /// The secret path segment (random per start).
    public let secret: String
    private var server: HTTPServer?
    /// The loader core every request goes through.
    public let loader: MediaLoader
    private var eviction: Task<Void, Never>?

    public init(options: Options) {
        self.options = options
        var loading = MediaLoader.Options(cacheDirectory: options.cacheDirectory)
        loading.sources = options.sources
        loading.prefetchSeconds = options.prefetchSeconds
        loader = MediaLoader(options: loading)
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
        let faststart = request.query["faststart"].map { $0 == "1" } ?? options.faststartByDefault
        do {
            let resource = try await loader.resource(for: origin, faststart: faststart)
            return await SourceResponder.response(for: request, source: resource, contentType: resource.nameContentType)
        } catch let error as MP4Error {
            let status = switch error.kind { case .invalidRequest: 400; case .unsupported: 422; default: 502 }
            return .text(status, "\(origin): \(error.message)")
        } catch {
            return .text(502, "\(origin): \(error)")
        }
    }
}
