import Foundation
import Testing
@testable import MP4Core
@testable import MP4IO

/// The proxy's control requests (`_/preload`, `_/status`), parsed without I/O: hostile bodies
/// and queries are refused with a status and a reason, never trapped on or believed.
@Suite struct ProxyControlTests {
    static func request(_ method: String, query: [String: String] = [:], body: String = "") -> HTTPServerRequest {
        HTTPServerRequest(method: method, target: "/s/_/x", path: "/s/_/x", query: query, headers: [], body: Array(body.utf8))
    }

    @Test func aPreloadIsParsed() throws {
        let parsed = ProxyControl.parse(Self.request("POST", body: #"{"urls": ["https://cdn.example/a.mp4", "http://o/b.mp4", "https://cdn.example/a.mp4"], "seconds": 3, "faststart": true}"#), path: "preload")
        #expect(parsed == .success(.preload(urls: ["https://cdn.example/a.mp4", "http://o/b.mp4"], seconds: 3, faststart: true)))
        let plain = ProxyControl.parse(Self.request("POST", body: #"{"urls": ["https://cdn.example/a.mp4"], "seconds": 2.5}"#), path: "preload")
        #expect(plain == .success(.preload(urls: ["https://cdn.example/a.mp4"], seconds: 2.5, faststart: false)))
    }

    @Test(arguments: [
        ("", 400), ("not json", 400), ("[1,2]", 400), (#"{"seconds": 3}"#, 400), (#"{"urls": [], "seconds": 3}"#, 400),
        (#"{"urls": "https://a/b", "seconds": 3}"#, 400), (#"{"urls": ["file:///etc/passwd"], "seconds": 3}"#, 400),
        (#"{"urls": ["https://a/b"], "seconds": -1}"#, 400), (#"{"urls": ["https://a/b"], "seconds": 0}"#, 400),
        (#"{"urls": ["https://a/b"], "seconds": 1e300}"#, 400), (#"{"urls": ["https://a/b"], "seconds": "3"}"#, 400),
        (#"{"urls": ["https://a/b"], "seconds": 3, "faststart": "yes"}"#, 400), (#"{"urls": ["http:///nohost"], "seconds": 3}"#, 400),
    ])
    func hostilePreloadBodiesAreRefused(body: String, status: Int) {
        guard case .failure(let refusal) = ProxyControl.parse(Self.request("POST", body: body), path: "preload") else {
            Issue.record("accepted: \(body)")
            return
        }
        #expect(refusal.status == status, "\(body): \(refusal)")
    }

    @Test func tooManyURLsAreRefused() {
        let urls = (0...ProxyControl.maxURLs).map { "\"https://o/\($0).mp4\"" }.joined(separator: ",")
        guard case .failure(let refusal) = ProxyControl.parse(Self.request("POST", body: #"{"urls": [\#(urls)], "seconds": 3}"#), path: "preload") else {
            Issue.record("accepted \(ProxyControl.maxURLs + 1) URLs")
            return
        }
        #expect(refusal.status == 400)
    }

    @Test func methodsPathsAndStatusQueries() {
        #expect(ProxyControl.parse(Self.request("GET"), path: "preload") == .failure(.init(405, "POST a JSON body to _/preload", allow: "POST")))
        #expect(ProxyControl.parse(Self.request("POST"), path: "status").refused == 405)
        #expect(ProxyControl.parse(Self.request("GET"), path: "status").refused == 400)
        #expect(ProxyControl.parse(Self.request("GET", query: ["url": "ftp://x/y"]), path: "status").refused == 400)
        #expect(ProxyControl.parse(Self.request("GET", query: ["url": "https://o/v.mp4"]), path: "status") == .success(.status(url: "https://o/v.mp4")))
        #expect(ProxyControl.parse(Self.request("GET"), path: "inspect").refused == 400)
        #expect(ProxyControl.parse(Self.request("GET"), path: "unknown").refused == 404)
    }

    @Test func statusAnswersInSecondsAndBytes() throws {
        let unknown = ProxyControl.status(url: "https://o/v.mp4", cache: nil, isPreloading: true)
        guard case .bytes(let body) = unknown.body, let object = try JSONSerialization.jsonObject(with: Data(body)) as? [String: Any] else {
            Issue.record("not JSON")
            return
        }
        #expect(unknown.status == 200)
        #expect(object["playableSeconds"] as? Double == 0)
        #expect(object["cachedBytes"] as? Int == 0)
        #expect(object["length"] is NSNull)
        #expect(object["preloading"] as? Bool == true)
        let status = CacheStatus(resource: "https://o/v.mp4", length: 1000, cachedBytes: 600, movieIsCached: true,
                                 playable: PlayableTime(prefixSeconds: 3.04, ranges: [0..<3.04, 7..<9.5]))
        let known = ProxyControl.status(url: "https://o/v.mp4", cache: status, isPreloading: false)
        guard case .bytes(let knownBody) = known.body, let fields = try JSONSerialization.jsonObject(with: Data(knownBody)) as? [String: Any] else {
            Issue.record("not JSON")
            return
        }
        #expect(fields["length"] as? Int == 1000)
        #expect(fields["cachedBytes"] as? Int == 600)
        #expect(fields["playableSeconds"] as? Double == 3.04)
        #expect(fields["movieCached"] as? Bool == true)
        #expect((fields["cachedTimeRanges"] as? [[Double]]) == [[0, 3.04], [7, 9.5]])
    }
}

extension Result where Failure == ProxyControl.Refusal {
    /// The refusal's status, or nil when accepted.
    var refused: Int? {
        if case .failure(let refusal) = self { return refusal.status }
        return nil
    }
}
