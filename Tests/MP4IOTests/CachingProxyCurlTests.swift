import Foundation
import Testing
@testable import MP4Core
@testable import MP4IO
import MP4TestSupport

/// The proxy's HTTP semantics as curl sees them, with nginx as the origin: the answers players
/// rely on (probes, open and suffix ranges, 416, several ranges, HEAD, If-Range by entity tag
/// and by date, keep-alive, Host), and the origin's `Content-Type` and `Last-Modified` passed on,
/// from the cache too when the origin is gone.
@Suite(.serialized) struct CachingProxyCurlTests {
    struct Answer {
        var status: Int
        var headers: [String: String]
        var body: [UInt8]
        /// New connections curl opened for each transfer (0: a kept-alive one was reused).
        var connects: [Int]

        func header(_ name: String) -> String? { headers[name.lowercased()] }
    }

    /// One curl invocation: `urls` in order on one curl (so its connection can be reused); the
    /// answer is the last transfer's.
    static func curl(_ urls: [String], _ arguments: [String] = [], first: [String]? = nil) async throws -> Answer {
        let directory = FileSystem.temporaryDirectory("mp4probe-curl")
        defer { FileSystem.removeDirectory(directory) }
        var command = ["-sS", "--max-time", "20", "-w", "%{http_code} %{num_connects}\\n"] + (first ?? arguments)
        for (index, url) in urls.enumerated() {
            if index > 0 { command.append("--next"); command += ["-sS", "--max-time", "20", "-w", "%{http_code} %{num_connects}\\n"] + arguments }
            command += ["-D", "\(directory)/h\(index)", "-o", "\(directory)/b\(index)", url]
        }
        let out = await Executables.runOffPool(try #require(Executables.find("curl")), command, stderrToStdout: true)
        let lines = out.split(separator: "\n").map { $0.split(separator: " ").compactMap { Int($0) } }
        let last = urls.count - 1
        let status = try #require(lines.last?.first, "curl printed \(out)")
        var headers: [String: String] = [:]
        let head = String(decoding: FileSystem.read("\(directory)/h\(last)") ?? [], as: UTF8.self)
        for line in head.split(separator: "\r\n").dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return Answer(status: status, headers: headers, body: FileSystem.read("\(directory)/b\(last)") ?? [], connects: lines.compactMap { $0.count == 2 ? $0[1] : nil })
    }

    static func curl(_ url: String, _ arguments: [String] = []) async throws -> Answer { try await curl([url], arguments) }

    @Test(.requires("nginx", "curl"))
    func rangesProbesAndValidatorsAsCurlSeesThem() async throws {
        let nginx = try #require(NginxServer.sampleMedia)
        let (proxy, directory) = try CachingProxyTests.proxy()
        defer { proxy.stop(); FileSystem.removeDirectory(directory) }
        let origin = nginx.baseURL + "/moov-at-end.mp4?s=\(UInt64.random(in: 0...UInt64.max))"
        let url = proxy.url(for: origin, name: "movie.mp4")
        let file = try #require(FileSystem.read(Fixtures.sample("moov-at-end.mp4")))
        let n = file.count
        let direct = try await Self.curl(origin, ["-I"])
        let modified = try #require(direct.header("last-modified"))

        // AVPlayer's probe: 206 with the total length.
        let probe = try await Self.curl(url, ["-r", "0-1"])
        #expect(probe.status == 206 && probe.body == Array(file[0..<2]))
        #expect(probe.header("content-range") == "bytes 0-1/\(n)")
        #expect(probe.header("content-length") == "2")
        #expect(probe.header("accept-ranges") == "bytes")
        #expect(probe.header("content-type") == "video/mp4")
        #expect(probe.header("last-modified") == modified, "the origin's Last-Modified is passed on")
        let tag = try #require(probe.header("etag"))
        #expect(tag.hasPrefix("\"") && tag.hasSuffix("\""), "a strong entity tag: \(tag)")

        // Open, suffix and bounded ranges; a last byte past the end is clamped.
        let open = try await Self.curl(url, ["-H", "Range: bytes=1000-"])
        #expect(open.status == 206 && open.body == Array(file[1000...]) && open.header("content-range") == "bytes 1000-\(n - 1)/\(n)")
        let suffix = try await Self.curl(url, ["-H", "Range: bytes=-100"])
        #expect(suffix.status == 206 && suffix.body == Array(file[(n - 100)...]) && suffix.header("content-range") == "bytes \(n - 100)-\(n - 1)/\(n)")
        let longSuffix = try await Self.curl(url, ["-H", "Range: bytes=-\(n * 2)"])
        #expect(longSuffix.status == 206 && longSuffix.body == file)
        let clamped = try await Self.curl(url, ["-H", "Range: bytes=\(n - 10)-\(n + 1000)"])
        #expect(clamped.status == 206 && clamped.body == Array(file[(n - 10)...]) && clamped.header("content-range") == "bytes \(n - 10)-\(n - 1)/\(n)")

        // Unsatisfiable: 416 with the length; several ranges: the whole entity, never garbled.
        let past = try await Self.curl(url, ["-H", "Range: bytes=\(n)-"])
        #expect(past.status == 416 && past.header("content-range") == "bytes */\(n)")
        let several = try await Self.curl(url, ["-H", "Range: bytes=0-1,100-200"])
        #expect(several.status == 200 && several.body == file && several.header("content-range") == nil)
        let whole = try await Self.curl(url)
        #expect(whole.status == 200 && whole.body == file && whole.header("content-length") == "\(n)")

        // HEAD: the headers of GET, and no body: the same connection then answers a range
        // with exactly its bytes (a body after HEAD would be read as the next response).
        let head = try await Self.curl(url, ["-I"])
        #expect(head.status == 200 && head.header("content-length") == "\(n)" && head.header("etag") == tag && head.header("last-modified") == modified)
        let afterHead = try await Self.curl([url, url], ["-r", "5-9"], first: ["-I"])
        #expect(afterHead.status == 206 && afterHead.body == Array(file[5..<10]) && afterHead.connects == [1, 0])

        // If-Range: the entity tag or the exact date keeps the range; anything else is the whole file.
        let sameTag = try await Self.curl(url, ["-r", "10-19", "-H", "If-Range: \(tag)"])
        #expect(sameTag.status == 206 && sameTag.body == Array(file[10..<20]))
        let otherTag = try await Self.curl(url, ["-r", "10-19", "-H", "If-Range: \"other\""])
        #expect(otherTag.status == 200 && otherTag.body == file)
        let weakTag = try await Self.curl(url, ["-r", "10-19", "-H", "If-Range: W/\(tag)"])
        #expect(weakTag.status == 200, "a weak tag never validates a range")
        let sameDate = try await Self.curl(url, ["-r", "10-19", "-H", "If-Range: \(modified)"])
        #expect(sameDate.status == 206 && sameDate.body == Array(file[10..<20]))
        let otherDate = try await Self.curl(url, ["-r", "10-19", "-H", "If-Range: Thu, 01 Jan 1970 00:00:00 GMT"])
        #expect(otherDate.status == 200 && otherDate.body == file)

        // Keep-alive: curl's second and third transfers reuse the first one's connection.
        let three = try await Self.curl([url, url, url], ["-r", "0-1"])
        #expect(three.connects == [1, 0, 0], "connections opened per transfer: \(three.connects)")

        // Someone else's Host (DNS rebinding), a wrong secret, a missing origin.
        let port = try #require(URL(string: proxy.baseURL)?.port)
        let rebound = try await Self.curl(url, ["-H", "Host: attacker.example:\(port)"])
        #expect(rebound.status == 421)
        let secretless = try await Self.curl(url.replacingOccurrences(of: "/\(proxy.secret)/", with: "/guess/"))
        #expect(secretless.status == 404)
        let noOrigin = try await Self.curl(proxy.baseURL + "movie.mp4")
        #expect(noOrigin.status == 400)
        let fileScheme = try await Self.curl(proxy.url(for: "file:///etc/passwd"))
        #expect(fileScheme.status == 400)
    }

    /// `Content-Type` is the origin's when it names a media type, else the origin name's;
    /// both it and `Last-Modified` come from the cache table when the origin is gone.
    @Test(.requires("nginx", "curl"))
    func contentTypeAndDateComeFromTheOriginAndSurviveIt() async throws {
        let nginx = try #require(NginxServer.start(root: Fixtures.sampleMedia))
        var nginxRunning = true
        defer { if nginxRunning { nginx.stop() } }
        let (proxy, directory) = try CachingProxyTests.proxy(prefetchSeconds: 0)
        defer { proxy.stop(); FileSystem.removeDirectory(directory) }
        let modified = try #require(try await Self.curl(nginx.baseURL + "/faststart.mp4", ["-I"]).header("last-modified"))

        // The origin's type, though the name says video: audio/mp4.
        let audio = try await Self.curl(proxy.url(for: nginx.baseURL + "/as-audio/faststart.mp4", name: "a.mp4"), ["-I"])
        #expect(audio.status == 200 && audio.header("content-type") == "audio/mp4")
        // An origin that says octet-stream: the name's type.
        let octet = try await Self.curl(proxy.url(for: nginx.baseURL + "/as-octet-stream/alac.m4a"), ["-I"])
        #expect(octet.status == 200 && octet.header("content-type") == "audio/mp4")
        let quicktime = try await Self.curl(proxy.url(for: nginx.baseURL + "/quicktime.mov"), ["-I"])
        #expect(quicktime.header("content-type") == "video/quicktime")

        // Read it all, then stop the origin: a new proxy on the same cache answers from the
        // table with the same headers.
        let url = proxy.url(for: nginx.baseURL + "/faststart.mp4")
        let first = try await Self.curl(url)
        #expect(first.status == 200 && first.header("last-modified") == modified && first.header("content-type") == "video/mp4")
        nginx.stop()
        nginxRunning = false
        try await Task.sleep(for: .milliseconds(300))
        var options = CachingProxy.Options(cacheDirectory: directory)
        options.loader.cache.entries.readAhead.prefetchSeconds = 0
        let offline = CachingProxy(options: options)
        try offline.start()
        defer { offline.stop() }
        let again = try await Self.curl(offline.url(for: nginx.baseURL + "/faststart.mp4"), ["-r", "0-99"])
        #expect(again.status == 206 && again.body == first.body.prefix(100).map { $0 })
        #expect(again.header("last-modified") == modified && again.header("content-type") == "video/mp4" && again.header("etag") == first.header("etag"))
        let uncached = try await Self.curl(offline.url(for: nginx.baseURL + "/moov-at-end.mp4"), ["-r", "0-99"])
        #expect(uncached.status == 502, "an uncached file with the origin gone: \(uncached.status)")
    }

    /// The type policy on its own.
    @Test func contentTypePolicy() {
        #expect(ContentInformation.mediaType(given: "audio/mp4", fallback: "video/mp4") == "audio/mp4")
        #expect(ContentInformation.mediaType(given: "video/mp4; codecs=\"avc1\"", fallback: "x") == "video/mp4; codecs=\"avc1\"")
        #expect(ContentInformation.mediaType(given: "application/mp4", fallback: "x") == "application/mp4")
        #expect(ContentInformation.mediaType(given: "application/octet-stream", fallback: "video/mp4") == "video/mp4")
        #expect(ContentInformation.mediaType(given: "binary/octet-stream", fallback: "video/quicktime") == "video/quicktime")
        #expect(ContentInformation.mediaType(given: "text/html", fallback: "video/mp4") == "video/mp4")
        #expect(ContentInformation.mediaType(given: "video/", fallback: "video/mp4") == "video/mp4")
        #expect(ContentInformation.mediaType(given: nil, fallback: "video/mp4") == "video/mp4")
        #expect(HTTPByteSource.passable("video/mp4\u{7}") == nil && HTTPByteSource.passable(String(repeating: "a", count: 300)) == nil)
        #expect(HTTPByteSource.passable(" video/mp4 ") == "video/mp4")
        // The type a name says: the URL's path (not its host, query or fragment), or a file's.
        for (origin, type) in [("https://cdn.example/a/Song.M4A?sig=x.mov", "audio/mp4"), ("http://h/clip.mov#t=3", "video/quicktime"),
                               ("http://h.mov", "video/mp4"), ("http://h.mov/film.qt", "video/quicktime"), ("http://h/film.mp4?x=.m4a", "video/mp4"),
                               ("/var/media/book.m4b", "audio/mp4"), ("relative/clip.MOV", "video/quicktime"), ("", "video/mp4"), ("http://", "video/mp4")] {
            #expect(ContentInformation.nameType(of: origin) == type, "\(origin)")
        }
    }
}
