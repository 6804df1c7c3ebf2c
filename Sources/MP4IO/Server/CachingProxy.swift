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
/// (`@unchecked Sendable`: `server` is set once, by ``start()``, before any URL is handed out.)
public final class CachingProxy: @unchecked Sendable {
    public struct Options: Sendable {
        /// The loader every request goes through: the cache (directory, size bound,
        /// read-ahead and prefetch), how origins are read.
        public var loader: MediaLoader.Options
        /// Address, port and bounds of the server.
        public var server = HTTPServer.Options()
        /// Serve every resource as its faststart view (as if each URL said `&faststart=1`;
        /// `&faststart=0` asks for the original).
        public var faststartByDefault = false
        /// Given one ``AccessLog`` line per request (`serve --access-log`); it must not wait.
        public var accessLog: (@Sendable (String) -> Void)?
        /// Without ``accessLog``, given the line of each answer with a status of 400 or more
        /// (the CLI writes them to stderr: a refused player is never silent).
        public var refusalLog: (@Sendable (String) -> Void)?
        /// Sums every exchange (`serve --stats`), when set.
        public var statistics: ServeStatistics?
        /// Renders `_/inspect?url=` (the CLI gives `InspectorPage.live` of MP4Report, which
        /// MP4IO does not import): the page of `file` read from `source`, its cached ranges,
        /// and the paths of its status and video. Without it, `_/inspect` is a 404.
        public var inspectorPage: (@Sendable (_ file: MP4File, _ source: any ByteSource, _ cachedRanges: [Range<UInt64>]?, _ statusPath: String, _ videoPath: String) async -> String)?

        public init(loader: MediaLoader.Options) { self.loader = loader }
        /// A cache in `cacheDirectory` with the default rules.
        public init(cacheDirectory: String) { self.loader = MediaLoader.Options(cacheDirectory: cacheDirectory) }
    }

    public let options: Options
    /// The secret path segment (random per start).
    public let secret: String
    private var server: HTTPServer?
    /// The loader core every request goes through (with a size bound, it evicts while it
    /// lives).
    public let loader: MediaLoader

    public init(options: Options) {
        self.options = options
        loader = MediaLoader(options: options.loader)
        var random = SystemRandomNumberGenerator()
        secret = (0..<4).map { _ in String(random.next() as UInt32, radix: 36) }.joined()
    }

    /// Starts serving.
    /// - Throws: ``MP4Error`` `.io` when the cache directory cannot be made or the address bound.
    public func start() throws {
        let directory = options.loader.cache.directory
        do {
            let parent = (directory as NSString).deletingLastPathComponent
            if !parent.isEmpty { try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true) }
            try CacheFiles.makeDirectory(directory)
        } catch {
            throw MP4Error(.io, "cannot create the cache directory \(directory): \(error.localizedDescription)")
        }
        // Only holders of the secret keep a connection, and a crowd without it cannot hold
        // every slot (HTTPServer.Options.requiresTrust).
        var serverOptions = options.server
        serverOptions.requiresTrust = true
        serverOptions.methodsWithBodies = ["POST"]   // _/preload
        // A read waits up to originWait for an origin that is gone before it fails (502): the
        // 504 for an answer that never starts comes after that.
        serverOptions.responseStartTimeout = max(serverOptions.responseStartTimeout, options.loader.originWait + 10)
        let secret = self.secret, accessLog = options.accessLog, refusalLog = options.refusalLog, statistics = options.statistics
        if accessLog != nil || refusalLog != nil || statistics != nil {
            serverOptions.accessLog = { exchange in
                statistics?.add(exchange)
                if let accessLog {
                    accessLog(AccessLog.line(exchange, secret: secret))
                } else if exchange.status >= 400, let refusalLog {
                    refusalLog(AccessLog.line(exchange, secret: secret))
                }
            }
        }
        let server = HTTPServer(options: serverOptions) { [self] request in
            var response = await respond(request)
            response.trustsConnection = request.path.hasPrefix("/\(secret)/")
            return response
        }
        try server.start()
        self.server = server
    }

    public func stop() {
        loader.stopEvicting()
        server?.stop()
    }

    /// Makes sure the proxy still takes connections after the app was suspended, and makes
    /// its listening socket again on the same port (the URLs handed out stay valid) when iOS
    /// took it away meanwhile. Call it when the app returns to the foreground
    /// (`sceneWillEnterForeground`, `UIApplication.willEnterForegroundNotification`); it
    /// returns at once (``HTTPServer/checkListener()``).
    public func resume() { server?.checkListener() }

    /// `http://127.0.0.1:PORT/SECRET/`.
    public var baseURL: String { (server?.baseURL ?? "http://127.0.0.1:0") + "/\(secret)/" }

    /// The URL a player is given for `origin`; `name` (any, e.g. `movie.mp4`) is what players
    /// that look at the extension see.
    public func url(for origin: String, name: String = "media.mp4", faststart: Bool = false) -> String {
        baseURL + Self.encoded(name.isEmpty ? "media.mp4" : name) + "?url=" + Self.encoded(origin) + (faststart ? "&faststart=1" : "")
    }

    /// `text` percent-encoded for a path segment or a query value.
    static func encoded(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }

    /// The path and query of `url` (`http://host:port/PATH?QUERY` → `/PATH?QUERY`).
    static func path(of url: String) -> String {
        guard let scheme = url.range(of: "://"), let slash = url[scheme.upperBound...].firstIndex(of: "/") else { return url }
        return String(url[slash...])
    }

    private func respond(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        guard request.path.hasPrefix("/\(secret)/") else { return .text(404, "not found") }
        let control = "/\(secret)/_/"
        if request.path.hasPrefix(control) {
            switch ProxyControl.parse(request, path: String(request.path.dropFirst(control.count))) {
            case .failure(let refusal): return refusal.response
            case .success(let asked): return await perform(asked)
            }
        }
        guard request.method == "GET" || request.method == "HEAD" else {
            return ProxyControl.Refusal(405, "media is read with GET and HEAD", allow: "GET, HEAD").response
        }
        guard let origin = request.query["url"] else { return .text(400, "missing ?url=ORIGIN") }
        let faststart = request.query["faststart"].map { $0 == "1" } ?? options.faststartByDefault
        do {
            let resource = try await loader.resource(for: origin, faststart: faststart)
            let information = try await resource.contentInformation()
            let cached = await resource.cachedRunsWhileUnreachable()
            return SourceResponder.response(for: request, information: information, body: resource,
                                            deliverable: cached.map { runs in { OriginOutage.deliverable($0, cached: runs) } })
        } catch {
            return ServingFailure.response(for: error, subject: origin)
        }
    }

    /// Executes a control request (``ProxyControl``).
    private func perform(_ asked: ProxyControl.Request) async -> HTTPServerResponse {
        switch asked {
        case .preload(let urls, let seconds, let faststart):
            // In the background, at the loader's bounded concurrency and below every player;
            // at most ProxyControl.maxPending running or waiting at once.
            guard await loader.preloadInBackground(urls, seconds: seconds, maxPending: ProxyControl.maxPending) else {
                var refusal = HTTPServerResponse.text(429, "\(ProxyControl.maxPending) preloads are waiting already; ask again when some are done (_/status)")
                refusal.headers.append(("Retry-After", "5"))
                return refusal
            }
            return ProxyControl.accepted(urls: urls, seconds: seconds, faststart: faststart)
        case .status(let url):
            let (cache, preloading, failure) = await loader.status(of: url)
            return ProxyControl.status(url: url, cache: cache, isPreloading: preloading, preloadFailure: failure)
        case .inspect(let url):
            // The page of what a player gets: the origin read through the loader (its moov is
            // cached by this), the cached ranges, and this proxy's URLs for the video and the
            // status the page polls (paths: the page works under any host name of the server).
            guard let render = options.inspectorPage else { return .text(404, "this proxy has no inspector page") }
            do {
                let resource = try await loader.resource(for: url)
                var opening = MP4File.Options()
                opening.followsSegmentIndex = true
                // As `mp4probe inspect URL`: a remote fragmented film's fragments are not
                // walked (a request per `moof`); its duration comes from the last one.
                opening.stopsAtFirstFragment = resource.isRemote
                let file = try await MP4File.open(resource, options: opening)
                let (cache, _, _) = await loader.status(of: url)
                // The origin's file name without its query, so a player sees the extension.
                let name = URL(string: url).map(\.lastPathComponent).flatMap { $0.isEmpty || $0 == "/" ? nil : $0 } ?? "media.mp4"
                let video = self.url(for: url, name: name)
                let page = await render(file, resource, cache?.cachedRanges, "/\(secret)/_/status?url=" + Self.encoded(url), Self.path(of: video))
                return ProxyControl.page(page)
            } catch {
                return ServingFailure.response(for: error, subject: url)
            }
        }
    }
}
