import Foundation
import MP4Core

/// The caching proxy's control requests, under `{BASE}_/` (a media NAME is percent-encoded,
/// so it never holds a `/` and cannot collide with them): what each asks, decided without I/O,
/// and how each answer is written. ``CachingProxy`` executes them with its ``MediaLoader``.
///
/// - `POST {BASE}_/preload` with `{"urls": ["https://..."], "seconds": N, "faststart": false}`:
///   preload each URL's `moov` and first N seconds in the background; answered 202 at once.
/// - `GET {BASE}_/status?url=ENC`: what the cache holds of one origin, in bytes and seconds.
/// - `GET {BASE}_/inspect?url=ENC`: the inspector page of one origin (docs/inspect.md), live:
///   its cached ranges refreshed from `_/status`, and a `<video>` playing through the proxy.
enum ProxyControl {
    /// The most URLs one preload request may name.
    static let maxURLs = 100
    /// The most seconds one preload may ask for.
    static let maxSeconds = 3600.0
    /// The most preloads running or waiting their turn (more are refused, 429).
    static let maxPending = 256

    enum Request: Equatable {
        case preload(urls: [String], seconds: Double, faststart: Bool)
        case status(url: String)
        case inspect(url: String)
    }

    /// The control request `request` makes, given the part of its path after `{BASE}_/`; an
    /// answer to send instead when it is not one (wrong method, malformed body, unknown path).
    static func parse(_ request: HTTPServerRequest, path: String) -> Result<Request, Refusal> {
        switch path {
        case "preload":
            guard request.method == "POST" else { return .failure(Refusal(405, "POST a JSON body to _/preload", allow: "POST")) }
            return parsePreload(request.body)
        case "status":
            guard request.method == "GET" || request.method == "HEAD" else { return .failure(Refusal(405, "GET _/status?url=ORIGIN", allow: "GET, HEAD")) }
            guard let url = request.query["url"], isOrigin(url) else { return .failure(Refusal(400, "missing or unsupported ?url=ORIGIN (http or https)")) }
            return .success(.status(url: url))
        case "inspect":
            guard request.method == "GET" || request.method == "HEAD" else { return .failure(Refusal(405, "GET _/inspect?url=ORIGIN", allow: "GET, HEAD")) }
            guard let url = request.query["url"], isOrigin(url) else { return .failure(Refusal(400, "missing or unsupported ?url=ORIGIN (http or https)")) }
            return .success(.inspect(url: url))
        default:
            return .failure(Refusal(404, "no control request _/\(path) (there are _/preload, _/status and _/inspect)"))
        }
    }

    /// A control request refused: its status and reason.
    struct Refusal: Error, Equatable {
        var status: Int
        var message: String
        var allow: String?
        init(_ status: Int, _ message: String, allow: String? = nil) {
            self.status = status
            self.message = message
            self.allow = allow
        }

        var response: HTTPServerResponse {
            var response = HTTPServerResponse.text(status, message)
            if let allow { response.headers.append(("Allow", allow)) }
            return response
        }
    }

    private static func parsePreload(_ body: [UInt8]) -> Result<Request, Refusal> {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            return .failure(Refusal(400, #"the body is not a JSON object: {"urls": ["https://..."], "seconds": N}"#))
        }
        guard let urls = object["urls"] as? [String], !urls.isEmpty, urls.count <= maxURLs else {
            return .failure(Refusal(400, "\"urls\" must be a list of 1 to \(maxURLs) origin URLs"))
        }
        if let bad = urls.first(where: { !isOrigin($0) }) {
            return .failure(Refusal(400, "not an http or https origin: \(bad.prefix(200))"))
        }
        guard let seconds = (object["seconds"] as? NSNumber)?.doubleValue, seconds.isFinite, seconds > 0, seconds <= maxSeconds else {
            return .failure(Refusal(400, "\"seconds\" must be a number above 0 and at most \(Int(maxSeconds))"))
        }
        let faststart: Bool
        switch object["faststart"] {
        case nil: faststart = false
        case let flag as Bool: faststart = flag
        default: return .failure(Refusal(400, "\"faststart\" must be true or false"))
        }
        var unique: [String] = []
        for url in urls where !unique.contains(url) { unique.append(url) }
        return .success(.preload(urls: unique, seconds: seconds, faststart: faststart))
    }

    /// Whether `text` is an origin the proxy reads (``SourceFactory/isURL(_:)``, with a host).
    static func isOrigin(_ text: String) -> Bool {
        guard text.utf8.count <= 8192, SourceFactory.isURL(text), let host = URL(string: text)?.host else { return false }
        return !host.isEmpty
    }

    /// The 202 answer to a preload: what was accepted.
    static func accepted(urls: [String], seconds: Double, faststart: Bool) -> HTTPServerResponse {
        json(202, ["accepted": urls, "seconds": seconds, "faststart": faststart])
    }

    /// The answer to a status request.
    static func status(url: String, cache: CacheStatus?, isPreloading: Bool, preloadFailure: String? = nil) -> HTTPServerResponse {
        let object: [String: Any] = [
            "url": url,
            "length": cache.map { NSNumber(value: $0.length) } ?? NSNull(),
            "cachedBytes": NSNumber(value: cache?.cachedBytes ?? 0),
            // At most 1,000 ranges: a hostile or long-lived entry may hold many more.
            "cachedRanges": (cache?.cachedRanges ?? []).prefix(1000).map { [NSNumber(value: $0.lowerBound), NSNumber(value: $0.upperBound)] },
            "movieCached": cache?.movieIsCached ?? false,
            "playableSeconds": rounded(cache?.playable.prefixSeconds ?? 0),
            "cachedTimeRanges": (cache?.playable.ranges ?? []).map { [rounded($0.lowerBound), rounded($0.upperBound)] },
            "preloading": isPreloading,
            "preloadError": preloadFailure.map { $0 as Any } ?? NSNull(),
            "cached": cache != nil,
        ]
        return json(200, object)
    }

    /// The answer to an inspect request: the page, which its own policy keeps from loading
    /// anything but this server's status and video.
    static func page(_ html: String) -> HTTPServerResponse {
        HTTPServerResponse(status: 200, headers: [("Content-Type", "text/html; charset=utf-8"), ("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff")],
                           body: .bytes(Array(html.utf8)))
    }

    private static func rounded(_ seconds: Double) -> Double { (seconds * 1000).rounded() / 1000 }

    private static func json(_ status: Int, _ object: [String: Any]) -> HTTPServerResponse {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return HTTPServerResponse(status: status, headers: [("Content-Type", "application/json"), ("Cache-Control", "no-store")],
                                  body: .bytes(Array(data) + [10]))
    }
}
