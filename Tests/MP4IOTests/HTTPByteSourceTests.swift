import Foundation
import Testing
@testable import MP4Core
@testable import MP4IO
import MP4TestSupport

/// HTTP against a real server: nginx on 127.0.0.1 (started by the tests when installed; the
/// access log gives the requests, ranges, statuses and body bytes), and fault cases against a
/// small loopback server written for the tests.
@Suite struct HTTPByteSourceTests {
    static let nginx = NginxServer.sampleMedia

    /// A URL for `name` with a unique query, so that its requests can be found in the log.
    static func url(_ name: String) throws -> (URL, String) {
        let server = try #require(nginx)
        let marker = "t=\(UInt64.random(in: 0...UInt64.max))"
        return (try #require(URL(string: "\(server.baseURL)/\(name)?\(marker)")), marker)
    }

    @Test(.requires("nginx")) func moovAtEndInTwoOrThreeRequests() async throws {
        let (url, marker) = try Self.url("moov-at-end.mp4")
        let source = try HTTPByteSource(url: url)
        let file = try await MP4File.open(source)
        let moov = try #require(file.layout.movieBox)
        #expect(file.layout.moviePlacement == .afterMediaData)
        let requests = try #require(Self.nginx).requests(containing: marker)
        #expect(requests.count <= 3 && requests.count == source.statistics.requests, "\(requests)")
        #expect(requests.allSatisfy { $0.status == 206 && !$0.range.isEmpty })
        let body = requests.reduce(0) { $0 + $1.bodyBytes }
        #expect(UInt64(body) <= moov.size + 128 << 10, "\(body) bytes for a \(moov.size)-byte moov")
        #expect(requests.first?.range == "bytes=0-65535")
        #expect(requests.last?.range == "bytes=\(moov.offset)-\(file.layout.fileSize - 1)", "the second request goes from the end of mdat to the end of the file")
        // The same answer as the local file.
        let local = try await MP4File.open(try FileSource(path: Fixtures.sample("moov-at-end.mp4")))
        #expect(file.layout == local.layout && file.movie == local.movie)
    }

    @Test(.requires("nginx")) func faststartAndFragmentedFilesInFewRequests() async throws {
        for (name, most) in [("faststart.mp4", 1), ("fragmented-sidx.mp4", 2), ("hevc.mp4", 2)] {
            let (url, marker) = try Self.url(name)
            let file = try await MP4File.open(try HTTPByteSource(url: url))
            #expect(file.movie != nil)
            let requests = try #require(Self.nginx).requests(containing: marker)
            #expect(requests.count >= 1 && requests.count <= most, "\(name): \(requests)")
        }
    }

    @Test(.requires("nginx")) func seekOverHTTPFetchesMoovOnceThenOnlyThePlannedRanges() async throws {
        let (url, marker) = try Self.url("moov-at-end.mp4")
        let source = try HTTPByteSource(url: url)
        let file = try await MP4File.open(source)
        let plan = try await SeekPlanner.plan(file, from: source, at: 1.2, duration: 0.3)
        let opened = try #require(Self.nginx).requests(containing: marker).count
        #expect(source.statistics.requests == opened)  // planning needed no request
        let local = try SeekPlanner(file: try await MP4File.open(try FileSource(path: Fixtures.sample("moov-at-end.mp4")))).plan(at: 1.2, duration: 0.3)
        #expect(plan == local)
        let localBytes = try #require(FileSystem.read(Fixtures.sample("moov-at-end.mp4")))
        for range in plan.ranges {
            #expect(try await source.read(range) == Array(localBytes[Int(range.lowerBound)..<Int(range.upperBound)]))
        }
        let requests = try #require(Self.nginx).requests(containing: marker)
        let fetched = requests.dropFirst(opened)
        #expect(fetched.count == plan.ranges.filter { $0.upperBound > 65536 }.count)
        #expect(fetched.map(\.range) == plan.ranges.filter { $0.upperBound > 65536 }.map { "bytes=\($0.lowerBound)-\($0.upperBound - 1)" })
        // A fragmented file: sidx-located seek over HTTP.
        let (shortURL, shortMarker) = try Self.url("fragmented-short.mp4")
        let shortSource = try HTTPByteSource(url: shortURL)
        let short = try await MP4File.open(shortSource)
        let located = try await SeekPlanner.plan(short, from: shortSource, at: 1.5)
        #expect(located.keyframeTime == 1.08)
        let located_ = try #require(Self.nginx).requests(containing: shortMarker)
        // Against indexing the whole file over HTTP: never more requests or bytes. (This 84 KB
        // file is read whole by the open's header scan, so the two cost the same here; the
        // saving is one request per moof not needed, on files whose fragments are larger than
        // the 64 KiB read window.)
        let (fullURL, fullMarker) = try Self.url("fragmented-short.mp4")
        let fullSource = try HTTPByteSource(url: fullURL)
        let full = try await SeekPlanner.index(try await MP4File.open(fullSource), from: fullSource)
        #expect(try full.plan(at: 1.5).ranges == located.ranges)
        let everything = try #require(Self.nginx).requests(containing: fullMarker)
        #expect(located_.count <= everything.count, "located \(located_.count) requests, full index \(everything.count)")
        #expect(located_.reduce(0) { $0 + $1.bodyBytes } <= everything.reduce(0) { $0 + $1.bodyBytes })
    }

    @Test(.requires("nginx")) func randomReadsEqualTheFile() async throws {
        let (url, _) = try Self.url("quicktime.mov")
        let source = try HTTPByteSource(url: url)
        let local = try #require(FileSystem.read(Fixtures.sample("quicktime.mov")))
        try await expectRandomRanges(of: source, equal: local, count: 20, maxLength: 200_000, seed: 7)
        let base = try #require(Self.nginx).baseURL
        let missing = try HTTPByteSource(url: try #require(URL(string: "\(base)/no-such-file.mp4")))
        await #expect(throws: MP4Error.self) { try await missing.length() }
    }

    // MARK: faults (loopback server)

    static let body: [UInt8] = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 8) }

    static func source(_ behavior: LoopbackHTTPServer.Behavior, timeout: Double = 5, scheme: OriginScheme = .http) throws -> (HTTPByteSource, LoopbackHTTPServer) {
        let server = try #require(LoopbackHTTPServer(body: body, behavior: behavior, certificates: scheme.certificates))
        var options = HTTPByteSource.Options()
        options.timeout = timeout
        options.retryDelay = 0.01
        return (try HTTPByteSource(url: server.url, options: options), server)
    }

    @Test(arguments: OriginScheme.available) func serverThatIgnoresRange(scheme: OriginScheme) async throws {
        let server = try #require(LoopbackHTTPServer(body: Self.body, behavior: .ignoresRange, certificates: scheme.certificates))
        defer { server.stop() }
        let warnings = Locked<[String]>([])
        var options = HTTPByteSource.Options()
        options.retryDelay = 0.01
        options.warn = { message in warnings.withLock { $0.append(message) } }
        let source = try HTTPByteSource(url: server.url, options: options)
        #expect(try await source.length() == UInt64(Self.body.count))
        #expect(try await source.read(1000..<2000) == Array(Self.body[1000..<2000]))
        #expect(try await source.read(250_000..<260_000) == Array(Self.body[250_000..<260_000]))
        #expect(!source.supportsRanges)
        // What arrived is counted, not what was kept: the second read alone carried the
        // 250,000 bytes before its range.
        #expect(source.statistics.bytesReceived >= 260_000, "\(source.statistics)")
        #expect(warnings.withLock { $0.count } == 1, "\(warnings.withLock { $0 })")
    }

    /// A cache's entry description taken as the source's own (`presume`): no head request,
    /// and each response checked against it: a stale validator (If-Range then answers the
    /// whole body), another length, or a whole body that does not carry the validator is
    /// "changed"; an origin that ignores Range with the same validator is read as one.
    @Test(arguments: OriginScheme.available) func aPresumedDescriptionSavesTheHeadRequestAndIsChecked(scheme: OriginScheme) async throws {
        let length = UInt64(Self.body.count)
        func read(_ behavior: LoopbackHTTPServer.Behavior, length: UInt64, validator: String) async throws -> (bytes: [UInt8], ranges: [String]) {
            let (source, server) = try Self.source(behavior, scheme: scheme)
            defer { server.stop() }
            #expect(source.presume(length: length, validator: validator))
            #expect(!source.presume(length: length, validator: validator), "a second description is refused")
            let bytes = try await source.read(100_000..<110_000)
            return (bytes, server.ranges)
        }
        let fresh = try await read(.normal, length: length, validator: "\"v1\"")
        #expect(fresh.bytes == Array(Self.body[100_000..<110_000]))
        #expect(fresh.ranges == ["bytes=100000-109999"])
        let whole = try await read(.ignoresRange, length: length, validator: "\"v1\"")
        #expect(whole.bytes == Array(Self.body[100_000..<110_000]))
        for (behavior, length, validator) in [(LoopbackHTTPServer.Behavior.normal, length, "\"v0\""), (.normal, length - 1, "\"v1\""),
                                               (.ignoresRange, length, "\"v0\""), (.ignoresRangeWithoutValidators, length, "\"v1\"")] {
            do {
                _ = try await read(behavior, length: length, validator: validator)
                Issue.record("\(behavior), \(length), \(validator): read a changed resource")
            } catch let error as MP4Error {
                #expect(error.cause == .sourceChanged, "\(behavior): \(error)")
            }
        }
        // What cannot be sent as If-Range is refused, and the source asks as usual.
        for validator in [nil, "W/\"v1\"", "v1"] {
            let (source, server) = try Self.source(.normal, scheme: scheme)
            defer { server.stop() }
            #expect(!source.presume(length: length, validator: validator))
            #expect(try await source.length() == length)
        }
    }

    @Test(arguments: OriginScheme.available) func droppedConnectionResumesTheMissingPartOnly(scheme: OriginScheme) async throws {
        let (source, server) = try Self.source(.dropsAfter(bytes: 30_000, times: 2), scheme: scheme)
        defer { server.stop() }
        // The head request is cut at 30,000 bytes: that is all the head holds.
        #expect(try await source.length() == UInt64(Self.body.count))
        #expect(try await source.read(100_000..<200_000) == Array(Self.body[100_000..<200_000]))
        #expect(server.ranges == ["bytes=0-65535", "bytes=100000-199999", "bytes=130000-199999"])
        #expect(source.statistics.retries == 1)
    }

    @Test(arguments: OriginScheme.available) func lyingOrMissingContentRangeIsAnError(scheme: OriginScheme) async throws {
        for behavior in [LoopbackHTTPServer.Behavior.wrongContentRange, .missingContentRange] {
            let (source, server) = try Self.source(behavior, scheme: scheme)
            defer { server.stop() }
            do {
                _ = try await source.read(70_000..<80_000)
                Issue.record("\(behavior): no error")
            } catch let error as MP4Error {
                #expect(error.kind == .io && error.message.contains("Content-Range") || error.message.contains("asked for"), "\(error)")
            }
        }
    }

    @Test(arguments: OriginScheme.available) func changedFileIsAnErrorNotAMix(scheme: OriginScheme) async throws {
        let (source, server) = try Self.source(.changesETag, scheme: scheme)
        defer { server.stop() }
        _ = try await source.length()
        do {
            _ = try await source.read(100_000..<110_000)
            Issue.record("read a changed file")
        } catch let error as MP4Error {
            #expect(error.kind == .io && error.message.contains("changed on the server"), "\(error)")
        }
    }

    @Test(arguments: OriginScheme.available) func transientFailuresAreRetried(scheme: OriginScheme) async throws {
        let (source, server) = try Self.source(.failsFirst(status: 503, times: 2, retryAfter: nil), scheme: scheme)
        defer { server.stop() }
        #expect(try await source.read(0..<100) == Array(Self.body[0..<100]))
        #expect(source.statistics.retries == 2)
        let (limited, other) = try Self.source(.failsFirst(status: 429, times: 1, retryAfter: 1), scheme: scheme)
        defer { other.stop() }
        let clock = ContinuousClock(), start = clock.now
        #expect(try await limited.read(0..<100) == Array(Self.body[0..<100]))
        #expect(clock.now - start >= .milliseconds(900), "Retry-After: 1 honoured")
        let (failing, third) = try Self.source(.failsFirst(status: 500, times: 100, retryAfter: nil), scheme: scheme)
        defer { third.stop() }
        await #expect(throws: MP4Error.self) { try await failing.length() }
        #expect(failing.statistics.requests == 1 + failing.options.maxRetries)
    }

    /// Each TLS fault says what failed, and the `--ca-file` advice comes only for a certificate
    /// that is not trusted and no CA file given. Before, a TLS 1.0-only server and a reset
    /// handshake were both "its certificate is not trusted here ... --ca-file", also when
    /// `--ca-file` was given.
    @Test func tlsFailuresSayWhatFailed() {
        func said(_ code: URLError.Code, _ reason: String, caFile: String? = nil) -> String {
            HTTPByteSource.tlsFailure(URLError(code, userInfo: [NSLocalizedDescriptionKey: reason]), host: "cdn.example", caFile: caFile)
        }
        let reset = said(.secureConnectionFailed, "TLS: Connection reset by peer")
        #expect(reset.contains("ended the connection during the handshake") && !reset.contains("--ca-file"), "\(reset)")
        let closed = said(.secureConnectionFailed, "TLS: the server closed the connection during the handshake")
        #expect(closed.contains("ended the connection during the handshake"), "\(closed)")
        let old = said(.secureConnectionFailed, "TLS: error:0A000102:SSL routines::unsupported protocol")
        #expect(old.contains("TLS version") && !old.contains("--ca-file"), "\(old)")
        let untrusted = said(.serverCertificateUntrusted, "TLS: certificate: unable to get local issuer certificate")
        #expect(untrusted.contains("not trusted here") && untrusted.contains("--ca-file FILE"), "\(untrusted)")
        let withFile = said(.serverCertificateUntrusted, "TLS: certificate: unable to get local issuer certificate", caFile: "/etc/ca.pem")
        #expect(withFile.contains("does not chain to a CA in /etc/ca.pem") && !withFile.contains("--ca-file FILE"), "\(withFile)")
        #expect(said(.serverCertificateUntrusted, "TLS: certificate: certificate has expired").contains("has expired"))
        #expect(said(.serverCertificateUntrusted, "TLS: certificate: Hostname mismatch").contains("another host name"))
        let other = said(.secureConnectionFailed, "TLS: error:0A000410:SSL routines::sslv3 alert handshake failure")
        #expect(other.hasSuffix(": the handshake failed") && !other.contains("--ca-file"), "\(other)")
    }

    /// The head window's first bytes reach a reader as they arrive: the server sends the head
    /// and 4 KiB of a 64 KiB window, then waits until the reader has had them before it sends
    /// the rest. Before, the first request's window was read whole before anything (length,
    /// bytes) reached a caller: on a phone's link two round trips more than its first bytes.
    /// Judged by what the server had sent when the first bytes came, not by a clock: it fails
    /// then with the first bytes coming after the rest was sent (the server gives up at 60 s).
    @Test func theHeadWindowStreamsToItsReader() async throws {
        let body = (0..<(256 << 10)).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 7) }
        let firstBytesRead = DispatchSemaphore(value: 0)
        let restSent = Locked(false)
        let (port, listener) = scriptedLoopbackServer(connections: 1) { client in
            var request = [UInt8](repeating: 0, count: 4096)
            _ = recv(client, &request, request.count, 0)
            let window = 64 << 10
            let head = "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-\(window - 1)/\(body.count)\r\nContent-Length: \(window)\r\nETag: \"h\"\r\n\r\n"
            _ = sendWithoutSignal(client, Array(head.utf8) + body[0..<4096])
            _ = firstBytesRead.wait(timeout: .now() + 60)
            restSent.withLock { $0 = true }
            _ = sendWithoutSignal(client, body[4096..<window])
            close(client)
        }
        defer { close(listener) }
        var options = HTTPByteSource.Options()
        options.client = .automatic
        let source = try HTTPByteSource(url: try #require(URL(string: "http://127.0.0.1:\(port)/v.mp4")), options: options)
        // Off the shared pool, as a cache's fetches run (ServingTask): other suites hold it.
        let (got, early) = try await ServingTask.startThrowing { () -> ([UInt8], Bool?) in
            #expect(try await source.length() == UInt64(body.count))
            var got: [UInt8] = []
            var early: Bool?
            try await source.read(0..<(64 << 10)) { piece in
                if got.isEmpty {
                    early = !restSent.withLock { $0 }
                    firstBytesRead.signal()
                }
                got += piece
            }
            return (got, early)
        }.value
        #expect(got[...] == body[0..<(64 << 10)])
        #expect(early == true, "the first bytes came after the server sent the whole window")
    }

    /// As a reader meets it: a server that resets the connection on the ClientHello is said to
    /// have ended the handshake, not to have an untrusted certificate (our own client; the
    /// URLSession path's words are libcurl's).
    @Test func aResetHandshakeIsSaidAsSuch() async throws {
        let (port, listener) = scriptedLoopbackServer(connections: 8) { client in
            var hello = [UInt8](repeating: 0, count: 4096)
            _ = recv(client, &hello, hello.count, 0)
            closeWithReset(client)
        }
        defer { close(listener) }
        var options = HTTPByteSource.Options()
        options.retryDelay = 0.01
        options.client = .automatic
        let source = try HTTPByteSource(url: try #require(URL(string: "https://127.0.0.1:\(port)/v.mp4")), options: options)
        do { _ = try await source.length(); Issue.record("read from a server that resets its handshakes") } catch let error as MP4Error {
            #expect(error.message.contains("ended the connection during the handshake") && !error.message.contains("--ca-file"), "\(error.message)")
        }
        shutdown(listener, Int32(SHUT_RDWR))
    }

    /// A server that drips its response head (a byte every 50 ms: never idle for the timeout)
    /// meets the head deadline (`maxHeadTime`, 45 s by default), retries included: the client
    /// hangs up long before the 60 s drip ends, and the error says why. Before, such a server
    /// (or one dripping its TLS handshake) kept `info` running past 200 s. Judged by who ended
    /// the connection, not by a clock a loaded machine stretches (16.9 s for 0.5 s under the
    /// AddressSanitizer suite); without the deadline the drip runs out first.
    @Test func aDrippedHeadMeetsTheHeadDeadline() async throws {
        let stop = Locked(false), ended = Locked<String?>(nil), endedSignal = DispatchSemaphore(value: 0)
        defer { stop.withLock { $0 = true } }
        let (port, listener) = scriptedLoopbackServer(connections: 4) { client in
            defer { close(client) }
            var request = [UInt8](repeating: 0, count: 4096)
            _ = recv(client, &request, request.count, 0)
            let head = Array("HTTP/1.1 206 Partial Content\r\nX-Slow: ".utf8) + [UInt8](repeating: UInt8(ascii: "a"), count: 1200)
            for byte in head {
                if stop.withLock({ $0 }) { return }
                guard sendWithoutSignal(client, [byte]) == 1 else {
                    ended.withLock { $0 = $0 ?? "client" }
                    endedSignal.signal()
                    return
                }
                usleep(50_000)
            }
            ended.withLock { $0 = $0 ?? "drip" }
            endedSignal.signal()
        }
        defer { close(listener) }
        var options = HTTPByteSource.Options()
        options.timeout = 5
        options.maxHeadTime = 0.5
        options.retryDelay = 0.01
        let source = try HTTPByteSource(url: try #require(URL(string: "http://127.0.0.1:\(port)/v.mp4")), options: options)
        do { _ = try await source.length(); Issue.record("read from a server that drips its head") } catch let error as MP4Error {
            #expect(error.message.contains("no response within 0.5 s"), "\(error.message)")
        }
        // The drip notices a hang-up at its next byte.
        _ = await Executables.offPool { endedSignal.wait(timeout: .now() + 120) }
        #expect(ended.withLock { $0 } == "client", "the drip ran out before the client gave up")
    }

    /// A chunk size no body can have (2^62-1; 2^60-1, over 1 TiB) is named as such, not read
    /// until the server closes ("the response ended after 0 of 65536 bytes").
    @Test(arguments: ["3fffffffffffffff", "fffffffffffffff"])
    func aChunkSizeThatCannotBeRealIsNamed(_ chunk: String) async throws {
        let (port, listener) = scriptedLoopbackServer(connections: 16) { client in
            defer { close(client) }
            var request = [UInt8](repeating: 0, count: 4096)
            _ = recv(client, &request, request.count, 0)
            let asked = String(decoding: request, as: UTF8.self).components(separatedBy: "\r\n").first { $0.lowercased().hasPrefix("range: bytes=") }
            let range = asked.map { String($0.dropFirst("range: bytes=".count)) } ?? "0-65535"
            let answer = Array("HTTP/1.1 206 Partial Content\r\nContent-Range: bytes \(range)/1000000\r\nTransfer-Encoding: chunked\r\n\r\n\(chunk)\r\nabc".utf8)
            sendWithoutSignal(client, answer)
        }
        defer { close(listener) }
        var options = HTTPByteSource.Options()
        options.maxRetries = 1
        options.retryDelay = 0.01
        let source = try HTTPByteSource(url: try #require(URL(string: "http://127.0.0.1:\(port)/v.mp4")), options: options)
        do { _ = try await source.read(0..<1000); Issue.record("read a 2^62-byte chunk") } catch let error as MP4Error {
            #expect(error.message.contains("cannot be real"), "\(error.message)")
        }
    }

    /// A redirect from https to http is not followed unless asked, by either client: the read
    /// fails naming the hop and the option. Before, `info`, `fetch`, `faststart` and `serve`
    /// followed it silently, showed the https URL and cached the clear-text bytes under it.
    @Test(.enabled(if: NginxServer.tlsDirectory != nil, "needs the test CA (MP4PROBE_TLS_DIR; .ci/run makes one): no https origin here"),
          arguments: [HTTPByteSource.Options.Client.automatic, .urlSession])
    func aRedirectOutOfTLSIsNotFollowedUnlessAsked(client: HTTPByteSource.Options.Client) async throws {
        let plain = try #require(LoopbackHTTPServer(body: Self.body, behavior: .normal, certificates: nil))
        defer { plain.stop() }
        let secure = try #require(LoopbackHTTPServer(body: Self.body, behavior: .redirectsTo(location: plain.url.absoluteString), certificates: OriginScheme.https.certificates))
        defer { secure.stop() }
        var options = HTTPByteSource.Options()
        options.client = client
        options.retryDelay = 0.01
        let refused = try HTTPByteSource(url: secure.url, options: options)
        do { _ = try await refused.read(0..<100); Issue.record("followed a redirect from https to http") } catch let error as MP4Error {
            #expect(error.message.contains("to plain http:") && error.message.contains("--allow-insecure-redirect"), "\(error.message)")
        }
        #expect(plain.requestHeads.isEmpty, "the plain origin was asked")
        options.allowsInsecureRedirects = true
        let allowed = try HTTPByteSource(url: secure.url, options: options)
        #expect(try await allowed.read(0..<100) == Array(Self.body[0..<100]))
    }

    /// Errors say what happened: a redirect loop says loop, a redirect to `file:` names the
    /// scheme (both said only "HTTP 302"), and a Retry-After past the time limit says so at
    /// once instead of "took longer than 25 s" after 0.04 s.
    @Test(arguments: OriginScheme.available) func redirectAndDeadlineErrorsSayWhatHappened(scheme: OriginScheme) async throws {
        let (looping, first) = try Self.source(.redirects(hops: 50), scheme: scheme)
        defer { first.stop() }
        do { _ = try await looping.length(); Issue.record("a redirect loop was read") } catch let error as MP4Error {
            #expect(error.message.contains("more than 5 redirects (a redirect loop?)"), "\(error.message)")
        }
        let (toFile, second) = try Self.source(.redirectsTo(location: "file:///etc/passwd"), scheme: scheme)
        defer { second.stop() }
        do { _ = try await toFile.length(); Issue.record("a redirect to file: was read") } catch let error as MP4Error {
            #expect(error.message.contains("a redirect to a file: URL") && error.message.contains("only http: and https:"), "\(error.message)")
        }
        let server = try #require(LoopbackHTTPServer(body: Self.body, behavior: .failsFirst(status: 503, times: 5, retryAfter: 999_999), certificates: scheme.certificates))
        defer { server.stop() }
        var options = HTTPByteSource.Options()
        options.maxTime = 25
        options.maxRetryAfter = 1_000_000
        let limited = try HTTPByteSource(url: server.url, options: options)
        let clock = ContinuousClock(), start = clock.now
        do { _ = try await limited.length(); Issue.record("read past a Retry-After beyond the limit") } catch let error as MP4Error {
            #expect(error.message.contains("HTTP 503") && error.message.contains("999999 s (the server's Retry-After), past the 25 s limit"), "\(error.message)")
            #expect(!error.message.contains("took longer"))
        }
        // Said at once, not after waiting out the 25 s limit (a loaded suite on two cores took
        // 6.7 s to schedule it once, so the bound is the limit's, not a stopwatch's).
        #expect(clock.now - start < .seconds(20))
    }

    @Test(arguments: OriginScheme.available) func slowServerTimesOut(scheme: OriginScheme) async throws {
        let (source, server) = try Self.source(.slow(seconds: 2.5), timeout: 1, scheme: scheme)
        defer { server.stop() }
        var options = source.options
        options.maxRetries = 1
        let quick = try HTTPByteSource(url: server.url, options: options)
        let clock = ContinuousClock(), start = clock.now
        do {
            _ = try await quick.length()
            Issue.record("no timeout")
        } catch let error as MP4Error {
            #expect(error.kind == .io && error.message.contains("gave up after 1 retries"), "\(error)")
        }
        let elapsed = clock.now - start
        // Bounded, not benchmarked: under AddressSanitizer in CI this took 138 s once (libcurl's
        // timers under load), 2 s otherwise; a hang would never end.
        #expect(elapsed >= .milliseconds(900) && elapsed < .seconds(300), "\(elapsed)")
    }

    /// A server that sends 1,000 bytes every 0.2 s is never idle for the 1 s timeout; without a
    /// total deadline a 200 KB read would go on for 40 s (issue 13 item 9). With `maxTime` 1.5 s it fails
    /// in about that time, retries included, on both clients.
    @Test(arguments: [HTTPByteSource.Options.Client.automatic, .urlSession], OriginScheme.available)
    func tricklingServerMeetsTheTotalDeadline(_ client: HTTPByteSource.Options.Client, scheme: OriginScheme) async throws {
        let server = try #require(LoopbackHTTPServer(body: Self.body, behavior: .trickles(bytes: 1000, interval: 0.2), certificates: scheme.certificates))
        defer { server.stop() }
        var options = HTTPByteSource.Options()
        options.timeout = 1
        options.maxTime = 1.5
        options.retryDelay = 0.01
        options.client = client
        let source = try HTTPByteSource(url: server.url, options: options)
        let clock = ContinuousClock(), start = clock.now
        do {
            _ = try await source.read(0..<200_000)
            Issue.record("read 200 KB from a server that sends 5 KB/s within 1.5 s")
        } catch let error as MP4Error {
            #expect(error.kind == .io && error.message.contains("--max-time"), "\(error)")
        }
        // About 1.5 s alone. No upper bound on the clock: with the whole suite running, tests
        // that block the 2-thread cooperative pool (ffmpeg runs) delayed this one to 64 s once.
        // Without the deadline the read succeeds (after 40 s) and the test fails above.
        #expect(clock.now - start >= .milliseconds(1400))
    }

    /// `--max-time` is one deadline for a command's reads, not one per read: `info URL
    /// --max-time 5` against a dripping server failed after 10 s (the head, then the moov).
    /// A read that starts after the deadline fails at once; a per-read limit alone lets it run.
    @Test(arguments: OriginScheme.available) func theTotalDeadlineCoversEveryRead(scheme: OriginScheme) async throws {
        let server = try #require(LoopbackHTTPServer(body: Self.body, behavior: .normal, certificates: scheme.certificates))
        defer { server.stop() }
        // No read is timed (CI's AddressSanitizer suite once took over a second for 1,000
        // bytes): the per-read limit is generous, the total one is spent before reading.
        var options = HTTPByteSource.Options()
        options.maxTotalTime = 0.5
        options.maxTime = 60
        let source = try HTTPByteSource(url: server.url, options: options)
        try await Task.sleep(nanoseconds: 700_000_000)
        do {
            _ = try await source.read(100_000..<101_000)
            Issue.record("a read after the total deadline succeeded")
        } catch let error as MP4Error {
            #expect(error.message.contains("reading took longer than 0.5 s in all (--max-time)"), "\(error)")
        }
        // The per-read limit alone: every read has its own.
        options.maxTotalTime = nil
        let perRead = try HTTPByteSource(url: server.url, options: options)
        try await Task.sleep(nanoseconds: 700_000_000)
        #expect(try await perRead.read(100_000..<101_000) == Array(Self.body[100_000..<101_000]))
    }

    @Test(arguments: OriginScheme.available) func emptyFileHasLengthZero(scheme: OriginScheme) async throws {
        let server = try #require(LoopbackHTTPServer(body: [], behavior: .normal, certificates: scheme.certificates))
        defer { server.stop() }
        let source = try HTTPByteSource(url: server.url)
        #expect(try await source.length() == 0)
        #expect(try await source.read(0..<10).isEmpty)
        await #expect(throws: MP4Error.self) { try await MP4File.open(source) }
    }

    @Test(arguments: OriginScheme.available) func redirectsAreFollowedUpToTheBound(scheme: OriginScheme) async throws {
        let (near, server) = try Self.source(.redirects(hops: 3), scheme: scheme)
        defer { server.stop() }
        #expect(try await near.read(0..<100) == Array(Self.body[0..<100]))
        let (far, other) = try Self.source(.redirects(hops: 9), scheme: scheme)
        defer { other.stop() }
        do {
            _ = try await far.length()
            Issue.record("followed 9 redirects")
        } catch let error as MP4Error {
            #expect(error.kind == .io && error.message.contains("302"), "\(error)")
        }
    }

    @Test func parsesContentRange() {
        #expect(HTTPByteSource.parseContentRange("bytes 0-99/1000")! == (0, 99, 1000))
        #expect(HTTPByteSource.parseContentRange("bytes 5-5/*")! == (5, 5, nil))
        #expect(HTTPByteSource.parseContentRange("bytes 9-5/10") == nil)
        #expect(HTTPByteSource.parseContentRange("items 0-1/2") == nil)
        #expect(HTTPByteSource.parseContentRange(" BYTES 1-2/3 ")! == (1, 2, 3))
        for malformed in ["bytes 0-65535/1000", "bytes 1-2-3/9", "bytes -5/10", "bytes 1-/10", "bytes 0-1/2/3", "bytes 0-1/", "bytes /5", "bytes 0-1", "bytes ", "bytes\t0-1/2"] {
            #expect(HTTPByteSource.parseContentRange(malformed) == nil, "\(malformed)")
        }
    }
}
