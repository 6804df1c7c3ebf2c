import Foundation
import Testing
@testable import MP4Core
@testable import MP4IO
import MP4Report
import MP4TestSupport

/// `{BASE}_/inspect?url=ENC` (issue 35): the inspector page of an origin, live. Headless
/// Chromium opens it from the proxy with nginx as the origin: the page draws the origin's
/// facts and what the cache holds, polls `_/status` and plays the film through the proxy, and
/// loads nothing but that proxy's URLs.
@Suite(.serialized) struct InspectPageTests {
    @Test(.requires("nginx", "chromium", "curl"), .enabled(if: !Executables.underSanitizer, "the browser's time, not our code's: the plain run renders"),
          .hangGuard)
    func theLivePageShowsTheOriginAndWhatIsCached() async throws {
        let nginx = try #require(NginxServer.sampleMedia)
        let directory = FileSystem.temporaryDirectory("mp4probe-inspect-live")
        defer { FileSystem.removeDirectory(directory) }
        var options = CachingProxy.Options(cacheDirectory: directory + "/cache")
        let log = Locked<[String]>([])
        options.accessLog = { line in log.withLock { $0.append(line) } }
        options.inspectorPage = InspectorPage.live   // as `serve` has it
        let proxy = CachingProxy(options: options)
        try proxy.start()
        defer { proxy.stop() }
        let marker = "inspect=\(UInt64.random(in: 0...UInt64.max))"
        let origin = nginx.baseURL + "/moov-at-end.mp4?" + marker
        let page = proxy.baseURL + "_/inspect?url=" + CachingProxy.encoded(origin)

        let answer = try await CachingProxyCurlTests.curl(page)
        #expect(answer.status == 200 && answer.header("content-type") == "text/html; charset=utf-8")
        let html = String(decoding: answer.body, as: UTF8.self)
        #expect(html.contains("media-src 'self'; connect-src 'self'"), "a live page may load its own server's URLs only")
        // Opening the page read the moov through the cache: it is drawn as cached.
        let status = try await PreloadTests.status(proxy.baseURL, origin)
        let cached = try #require(status["cachedRanges"] as? [[Int]])
        #expect(!cached.isEmpty && (status["movieCached"] as? Bool) == true, "\(status)")

        let dom = await HeadlessChromium.dumpDOM(page, profile: directory + "/profile", virtualTime: 4000)
        #expect(HeadlessChromium.bodyData("rendered", in: dom) == "1", "\(dom.prefix(2000))")
        #expect(HeadlessChromium.bodyData("errors", in: dom) == nil, "\(dom.prefix(3000))")
        #expect(Int(HeadlessChromium.bodyData("polls", in: dom) ?? "0") ?? 0 >= 1, "the page never read _/status")
        let base = try #require(URL(string: proxy.baseURL))
        let proxyOrigin = "http://\(try #require(base.host)):\(try #require(base.port))"
        #expect(HeadlessChromium.bodyData("resource-origins", in: dom) == proxyOrigin, "the page loaded from elsewhere: \(HeadlessChromium.bodyData("resource-origins", in: dom) ?? "nothing")")
        let text = HeadlessChromium.visibleText(dom)
        let file = try await MP4File.open(try FileSource(path: Fixtures.sample("moov-at-end.mp4")))
        #expect(text.contains(file.faststartVerdict))
        for box in file.layout.boxes { #expect(text.contains("\(box.type) @\(Format.grouped(box.offset))"), "no \(box.type)") }
        #expect(text.contains("avc1.64000D") && text.contains("mp4a.40.2"))
        #expect(dom.contains("cached: bytes"), "no cached range drawn")
        #expect(text.contains("cached ") && text.contains(" of 82,215 bytes"), "no cache status: \(text.suffix(600))")
        // The video plays through this proxy: its URL is the proxy's, and the origin saw it.
        let video = try #require(dom.range(of: "<video[^>]*src=\"[^\"]*\"", options: .regularExpression).map { String(dom[$0]) })
        #expect(video.contains("src=\"/") && video.contains("/moov-at-end.mp4?url="), "\(video)")
        #expect(!nginx.requests(containing: marker).isEmpty)
        // Nothing of the video was asked for before play (preload none): only the page and its
        // status polls reached the proxy.
        let videoLines = { log.withLock { $0 }.filter { $0.contains("moov-at-end.mp4") && !$0.contains("_/inspect") && !$0.contains("_/status") } }
        #expect(videoLines().isEmpty, "the video was fetched before play: \(videoLines())")
        // PAGE#play starts it: then the player's requests reach the proxy.
        let played = await HeadlessChromium.dumpDOM(page + "#play", profile: directory + "/profile", virtualTime: 4000)
        // A line is written when its answer ends: the browser's connection closes as it quits.
        for _ in 0..<40 where videoLines().isEmpty { try await Task.sleep(for: .milliseconds(100)) }
        #expect(!videoLines().isEmpty, "#play did not play: \(log.withLock { $0 }) play: \(HeadlessChromium.bodyData("play", in: played) ?? "not asked"), errors: \(HeadlessChromium.bodyData("errors", in: played) ?? "none") \(played.range(of: "Errors on this page[^<]*", options: .regularExpression).map { String(played[$0]) } ?? "")")
        let shot = HeadlessChromium.screenshotDirectory + "/inspect-live.png"
        #expect(await HeadlessChromium.screenshot(page, to: shot, profile: directory + "/profile", virtualTime: 3000))
        print("inspect live: page \(answer.body.count) bytes, \(HeadlessChromium.bodyData("polls", in: dom) ?? "0") status polls, drawn in \(HeadlessChromium.bodyData("render-ms", in: dom) ?? "?") ms; screenshot \(shot)")
    }

    /// The page needs the secret like every control request; a bad origin is refused.
    /// The page of a remote fragmented film without an index reads its head and its end, as
    /// `mp4probe inspect URL` does, not every fragment (a request each: the resource did not
    /// say it was remote, 301 requests for a 300-fragment film).
    @Test(.requires("ffmpeg", "curl"), .hangGuard)
    func aRemoteFragmentedFilmsPageCostsAFewRequests() async throws {
        let film = try await FragmentedStartTests.film(seconds: 40)
        let fragments = FragmentedStartTests.movieFragments(film).count
        let origin = try #require(LoopbackHTTPServer(body: film, behavior: .normal))
        defer { origin.stop() }
        let (proxy, directory) = try CachingProxyTests.proxy()
        defer { proxy.stop(); FileSystem.removeDirectory(directory) }
        let answer = try await CachingProxyCurlTests.curl(proxy.baseURL + "_/inspect?url=" + CachingProxy.encoded(origin.url.absoluteString))
        #expect(answer.status == 200)
        let requests = origin.requestHeads.count
        print("inspect of a \(fragments)-fragment film through serve: \(requests) origin requests")
        #expect(fragments >= 15)
        #expect(requests <= 6, "the page walked the fragments: \(requests) requests for \(fragments) fragments")
    }

    @Test func inspectRequestsAreParsedLikeTheOthers() {
        #expect(ProxyControl.parse(ProxyControlTests.request("GET", query: ["url": "https://cdn.example/a.mp4"]), path: "inspect") == .success(.inspect(url: "https://cdn.example/a.mp4")))
        for (method, query, status) in [("POST", ["url": "https://cdn.example/a.mp4"], 405), ("GET", [:], 400), ("GET", ["url": "file:///etc/passwd"], 400)] {
            guard case .failure(let refusal) = ProxyControl.parse(ProxyControlTests.request(method, query: query), path: "inspect") else {
                Issue.record("accepted \(method) \(query)")
                continue
            }
            #expect(refusal.status == status)
        }
    }
}
