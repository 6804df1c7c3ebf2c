import Foundation
import Testing
@testable import MP4Core
@testable import MP4IO
import MP4TestSupport

/// The path users take: an HTTPS origin (nginx with TLS and a certificate from a test CA the
/// system trusts, as a CDN's is), read by both transports: ours (sockets and OpenSSL, every
/// `https:` on Linux) and URLSession (every request on Apple platforms) (issue 43). Bodies
/// used to be collected whole per request (up to 16 MiB) before the reader saw a byte; a
/// player through `serve` started later than without it.
@Suite(.serialized, .hangGuard, .enabled(if: NginxServer.tlsDirectory != nil, Comment(rawValue: NginxServer.tlsMissing)))
struct HTTPSOriginTests {
    /// `size` bytes of a fixed pattern in a file of their own, served by nginx over TLS.
    static func origin(size: Int, limitRate: String? = nil) throws -> (NginxServer, [UInt8], String) {
        let root = FileSystem.temporaryDirectory("mp4probe-https-origin")
        var random = SeededRandom(seed: UInt64(size))
        let bytes = random.bytes(size)
        FileSystem.write(bytes, to: root + "/body.bin")
        let nginx = try #require(NginxServer.start(root: root, limitRate: limitRate, tls: true), "nginx with TLS did not start")
        return (nginx, bytes, root)
    }

    static func source(_ url: String, client: HTTPByteSource.Options.Client = .automatic, caFile: String? = nil) throws -> HTTPByteSource {
        var options = HTTPByteSource.Options()
        options.timeout = 10
        options.client = client
        options.caFile = caFile
        return try HTTPByteSource(url: try #require(URL(string: url)), options: options)
    }

    /// Both transports: ours, and the one Apple platforms use.
    static let clients: [HTTPByteSource.Options.Client] = [.automatic, .urlSession]

    /// A 48 MiB read over HTTPS reaches the reader in pieces as it arrives (none over 1 MiB):
    /// in one request through our client, in requests of 8 MiB through URLSession; before, it
    /// was three requests of 16 MiB, each collected whole.
    @Test(.requires("nginx"), arguments: clients) func aLongReadStreamsInOneRequest(client: HTTPByteSource.Options.Client) async throws {
        let (nginx, bytes, root) = try Self.origin(size: 48 << 20)
        defer { nginx.stop(); FileSystem.removeDirectory(root) }
        let source = try Self.source(nginx.baseURL + "/body.bin", client: client)
        #expect(try await source.length() == UInt64(bytes.count))
        let before = source.statistics.requests
        var position = 100, largest = 0, pieces = 0, matches = true
        // A reader that keeps up (memcmp; a per-byte compare in a debug build is slower than
        // TLS on loopback, and a reader a buffer behind is cut short and resumed: more requests).
        try await source.read(100..<UInt64(bytes.count)) { piece in
            if matches && !piece.withUnsafeBytes({ got in bytes.withUnsafeBytes { memcmp(got.baseAddress!, $0.baseAddress! + position, got.count) == 0 } }) { matches = false }
            position += piece.count
            largest = max(largest, piece.count)
            pieces += 1
        }
        #expect(matches && position == bytes.count)
        // Requests of 8 MiB (`maxURLSessionRequest`), each streamed, and one more each time the
        // reader fell a buffer behind TLS on loopback (a loaded debug build's reader can).
        if client == .automatic {
            #expect(source.statistics.requests - before == 1, "\(source.statistics.requests - before) requests")
        } else {
            let windows = (bytes.count + source.options.maxURLSessionRequest - 1) / source.options.maxURLSessionRequest
            #expect(source.statistics.requests - before <= windows + bytes.count / URLSessionClient.bufferCapacity, "\(source.statistics.requests - before) requests")
        }
        #expect(largest <= 1 << 20 && pieces > 48, "\(pieces) pieces, the largest \(largest) bytes")
    }

    /// A 128 MiB read from a fast HTTPS origin, by a reader that stalls now and then, costs
    /// the origin its bytes once. With one
    /// unbounded request, FoundationNetworking's delegate queue fell behind loopback TLS, the
    /// pipe's cut came when the transfer had long ended, and each resumed range was sent
    /// whole: a 1 GiB `fetch --all` made nginx send 106 ranges of up to 1 GB and held 10 GB.
    @Test(.requires("nginx"), arguments: clients) func aLongReadCostsTheOriginItsBytesOnce(client: HTTPByteSource.Options.Client) async throws {
        let (nginx, bytes, root) = try Self.origin(size: 128 << 20)
        defer { nginx.stop(); FileSystem.removeDirectory(root) }
        let source = try Self.source(nginx.baseURL + "/body.bin", client: client)
        // The reader stalls for 300 ms every 16 MiB, as a cache's commit (fsync) does.
        var position = 0, matches = true, stalls = 0
        try await source.read(0..<UInt64(bytes.count)) { piece in
            if matches && !piece.withUnsafeBytes({ got in bytes.withUnsafeBytes { memcmp(got.baseAddress!, $0.baseAddress! + position, got.count) == 0 } }) { matches = false }
            position += piece.count
            if position / (16 << 20) > stalls { stalls += 1; try await Task.sleep(for: .milliseconds(300)) }
        }
        #expect(matches && position == bytes.count)
        try await Task.sleep(for: .milliseconds(500))
        let sent = nginx.requests(containing: "body.bin").reduce(0) { $0 + $1.bodyBytes }
        #expect(sent <= bytes.count + (1 << 20), "nginx sent \(sent) bytes for a \(bytes.count)-byte read")
    }

    /// A reader that leaves an HTTPS transfer stops it: from an origin paced at 512 KB/s, a
    /// reader takes 1 MiB of a 32 MiB range and goes; nginx's log says when the transfer ended.
    ///
    /// Measured from the leave, not in bytes: what nginx had sent when the reader left is not
    /// what the reader had taken. nginx paces in bursts (`limit_rate` sends a second's worth at
    /// each second), and a reader whose task waits for a loaded machine's two cores finds the
    /// kernel's buffers holding bursts it has not read: in a CI run nginx had sent 2,064,097
    /// bytes when a reader 1.2 MB in left, all of it before the leave. What the client owns is
    /// the time from the leave to the transfer's end.
    /// Not under AddressSanitizer: there, in a loaded suite, the reader's task waited for the
    /// shared pool while libcurl went on receiving (nothing in URLSession holds the origin
    /// back), so what nginx sent measured the pool, not the stop (a whole 8 MiB request once,
    /// in an ASan run of the serving suites here; alone it passes under ASan in 4.4 s).
    @Test(.requires("nginx"), .enabled(if: ProcessInfo.processInfo.environment["MP4PROBE_UNDER_ASAN"] == nil, "timing-bound: not under AddressSanitizer"), arguments: clients)
    func aReaderThatLeavesStopsTheTransfer(client: HTTPByteSource.Options.Client) async throws {
        let (nginx, _, root) = try Self.origin(size: 32 << 20, limitRate: "512k")
        defer { nginx.stop(); FileSystem.removeDirectory(root) }
        let source = try Self.source(nginx.baseURL + "/body.bin", client: client)
        _ = try await source.length()
        struct Enough: Error {}
        var taken = 0, left = 0.0
        do {
            try await source.read(1 << 20..<(32 << 20)) { piece in
                taken += piece.count
                if taken >= 1 << 20 { left = Date().timeIntervalSince1970; throw Enough() }
            }
        } catch is Enough {}
        // nginx logs the request when its transfer ends: that it is logged at all says the
        // transfer stopped (the rest of the range takes a minute at this pace).
        var ended: [NginxServer.Request] = []
        for _ in 0..<100 where ended.isEmpty {
            try await Task.sleep(for: .milliseconds(100))
            ended = nginx.requests(containing: "body.bin").filter { $0.range.hasPrefix("bytes=1048576-") }
        }
        let stop = ended.first.map { $0.ended - left } ?? .infinity
        let report = "nginx sent \(ended.map(\.bodyBytes)) bytes, the reader took \(taken); the transfer ended \(String(format: "%.3f", stop)) s after the reader left"
        print(report)
        #expect(ended.count == 1, "the transfer did not stop: \(report)")
        // What the reader took (1 MiB and the piece that crossed it) and at most 256 KiB more
        // (before: 16 MiB collected whole, then handed on).
        #expect(taken < (1 << 20) + (256 << 10), "the reader's first piece held \(taken) bytes: the body was collected")
        // Our client closes the socket as the reader leaves, and nginx finds it closed at once
        // (while a paced write waits, it watches the connection for reading): 0.000-0.002 s
        // alone; a close held 3 s fails here with 2,588,385 bytes sent (checked). The second
        // is a loaded machine's margin: at this pace, 512 KB. URLSession on Linux acts on a
        // cancel when its delegate queue gets to it, which in a loaded suite was one and two
        // seconds of the origin's pace later.
        let bound = client == .automatic ? 1.0 : 6.0
        #expect(stop <= bound, "\(report) (at most \(bound) s)")
    }

    /// A film whose first 5 s ffmpeg decodes through `serve` from an HTTPS origin paced at
    /// 512 KB/s: the frames are the direct ones, and they come about as soon as direct (issue
    /// 43: 3.81 s through `serve`, 2.46 s direct, when URLSession's bodies were collected;
    /// measured here 0.97-0.98x unloaded, 1.47x in a loaded suite, the collecting build 1.84x).
    @Test(.requires("nginx", "ffmpeg"), .enabled(if: Executables.mp4probe != nil, "the mp4probe executable is not built beside the tests"))
    func aPlayerThroughServeStartsAsSoonAsDirect() async throws {
        let executable = try #require(Executables.mp4probe)
        let root = FileSystem.temporaryDirectory("mp4probe-https-film")
        defer { FileSystem.removeDirectory(root) }
        let ffmpeg = try #require(Executables.find("ffmpeg"))
        _ = await Executables.runOffPool(ffmpeg, ["-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25",
                                                  "-f", "lavfi", "-i", "sine=frequency=440", "-t", "60", "-c:v", "mpeg4", "-b:v", "1500k", "-g", "50",
                                                  "-c:a", "aac", "-b:a", "96k", "-movflags", "+faststart", root + "/film.mp4"])
        let nginx = try #require(NginxServer.start(root: root, limitRate: "512k", tls: true))
        defer { nginx.stop() }
        func decode(_ url: String) async -> (seconds: Double, frames: String) {
            let clock = ContinuousClock(), started = clock.now
            let frames = await Executables.runOffPool(ffmpeg, ["-v", "error", "-nostdin", "-i", url, "-t", "5", "-f", "framemd5", "-"])
            let elapsed = clock.now - started
            return (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18, frames)
        }
        let direct = await decode(nginx.baseURL + "/film.mp4")
        let cache = FileSystem.temporaryDirectory("mp4probe-https-film-cache")
        defer { FileSystem.removeDirectory(cache) }
        let (proxy, base) = try await ProxyProcessTests.serve(executable, cache: cache, arguments: [])
        defer { proxy.terminate() }
        let proxied = ProxyProcessTests.proxied(base, nginx.baseURL + "/film.mp4")
        var through = await decode(proxied)
        // The wall clock is a loaded machine's to judge (2 cores, other suites beside: 0.59x
        // to 0.98x alone, 1.37x to 2.56x in CI-like runs); the sharp check is the first byte
        // below, which the collecting build fails (3.96 s). This bound catches a proxy that
        // stalls the player outright.
        // Under AddressSanitizer the proxy is the instrumented build (11.3 s against 2.6 s
        // direct in one CI run): the frames and the first byte are checked there, the wall
        // clock in the plain run.
        let bound = direct.seconds * 3 + 1
        if through.seconds > bound && !Executables.underSanitizer {
            // Once more, on a new cache entry (another URL of the same file): a loaded CI run
            // (2 cores, other suites beside) once took 2.56x where the same build took 0.97x
            // alone and 1.37x in a loaded run here; the better of two is the proxy's, the
            // worse the machine's.
            let again = await decode(ProxyProcessTests.proxied(base, nginx.baseURL + "/film.mp4?again"))
            if again.seconds < through.seconds { through = again }
        }
        // The first byte of an uncached range: as soon as the origin sends it (before, at this
        // pace, after the proxy's whole 2 MiB window: 4 s). A wall-clock ratio alone is a
        // loaded CI's to judge.
        // (At 7 MB: 37 s into the film, past what the player and the 10 s prefetch asked for.)
        let firstByte = await Self.secondsToFirstBodyByte(try #require(URL(string: proxied)), range: "bytes=7000000-")
        print("HTTPS origin at 512 KB/s, first 5 s decoded: direct \(String(format: "%.2f", direct.seconds)) s, through serve \(String(format: "%.2f", through.seconds)) s (\(String(format: "%.2f", through.seconds / max(direct.seconds, 0.001)))x); an uncached range's first byte after \(String(format: "%.2f", firstByte)) s")
        #expect(direct.frames.split(separator: "\n").count > 100 && through.frames == direct.frames, "the first 5 s decode identically")
        #expect(firstByte < 2, "the first byte of an uncached range came after \(firstByte) s: the body was collected")
        if !Executables.underSanitizer { #expect(through.seconds <= bound, "\(through.seconds) s through serve, \(direct.seconds) s direct") }
    }

    /// Seconds from sending `GET` with `range` to the first byte of the response's body.
    static func secondsToFirstBodyByte(_ url: URL, range: String) async -> Double {
        await withCheckedContinuation { continuation in
            Thread {
                let clock = ContinuousClock(), started = clock.now
                guard let port = url.port, let fd = connectLoopback(port) else { return continuation.resume(returning: .infinity) }
                defer { close(fd) }
                var timeout = timeval(tv_sec: 30, tv_usec: 0)
                setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                let target = url.path + (url.query.map { "?" + $0 } ?? "")
                let request = Array("GET \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nRange: \(range)\r\n\r\n".utf8)
                _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                var received: [UInt8] = [], buffer = [UInt8](repeating: 0, count: 65536)
                while true {
                    let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                    if n <= 0 { return continuation.resume(returning: .infinity) }
                    received += buffer[0..<n]
                    if let split = received.indices.first(where: { received[$0...].starts(with: [13, 10, 13, 10]) }), received.count > split + 4 { break }
                }
                let elapsed = clock.now - started
                continuation.resume(returning: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
            }.start()
        }
    }

    /// A certificate the system does not trust is an error at once that names the host and
    /// the reason (exit 4 in the CLI), never retried: the same certificate fails the same
    /// way. (It read "network error -1: SSL certificate problem: ...".)
    @Test(.requires("nginx", "openssl"), arguments: clients) func anUntrustedCertificateIsSaidAtOnce(client: HTTPByteSource.Options.Client) async throws {
        let root = FileSystem.temporaryDirectory("mp4probe-https-untrusted")
        defer { FileSystem.removeDirectory(root) }
        FileSystem.write(Array(repeating: 1, count: 1000), to: root + "/body.bin")
        let openssl = try #require(Executables.find("openssl"))
        _ = await Executables.runOffPool(openssl, ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", root + "/server.key", "-out", root + "/server.pem",
                                                   "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"])
        let nginx = try #require(NginxServer.start(root: root, tls: true, certificates: root))
        defer { nginx.stop() }
        let source = try Self.source(nginx.baseURL + "/body.bin", client: client)
        let clock = ContinuousClock(), started = clock.now
        do {
            _ = try await source.length()
            Issue.record("read from a server whose certificate is not trusted")
        } catch let error as MP4Error {
            #expect(error.message.contains("TLS (https) connection to 127.0.0.1 failed") && error.message.contains("trust store") && error.message.contains("--ca-file"), "\(error.message)")
            if client == .automatic { #expect(error.message.contains("certificate: self-signed certificate"), "\(error.message)") }
        }
        #expect(source.statistics.retries == 0)
        // The wall clock in the plain run only: in the AddressSanitizer build URLSession's first
        // TLS connection (libcurl and the CA bundle loaded) took 19.6 and 21.3 s in two CI runs.
        if !Executables.underSanitizer { #expect(clock.now - started < .seconds(10)) }
    }

    /// The cache over HTTPS: a read through `SourceFactory` with a cache gets the origin's
    /// bytes, and a second source reads them from the cache without a request for them.
    @Test(.requires("nginx")) func theCacheKeepsWhatAnHTTPSOriginSent() async throws {
        let (nginx, bytes, root) = try Self.origin(size: 6 << 20)
        defer { nginx.stop(); FileSystem.removeDirectory(root) }
        let directory = FileSystem.temporaryDirectory("mp4probe-https-cache")
        defer { FileSystem.removeDirectory(directory) }
        var options = SourceFactory.Options()
        options.cache = CacheConfiguration(directory: directory)
        let url = nginx.baseURL + "/body.bin"
        let first = try await SourceFactory.open(url, options: options)
        #expect(try await first.read(0..<UInt64(bytes.count)) == bytes)
        await CachedByteSource.forgetOpenEntries(directory: directory)
        let second = try await SourceFactory.open(url, options: options)
        let before = nginx.requests(containing: "body.bin").count
        #expect(try await second.read(1_000_000..<5_000_000) == Array(bytes[1_000_000..<5_000_000]))
        #expect(nginx.requests(containing: "body.bin").count - before <= 1, "only a freshness check, no bytes again")
    }

    /// Our client reads a TLS body several records at a time (OpenSSL's read-ahead): a 16 MiB
    /// body of 16 KiB records costs fewer `read` calls than it has records. Without read-ahead
    /// OpenSSL read each record's header and then its body, two calls a record (131,072 for a
    /// 1 GiB `fetch --all`; 26,368 with it). Counted with strace on the mp4probe executable.
    @Test(.requires("nginx", "strace"), .enabled(if: Executables.mp4probe != nil, "the mp4probe executable is not built beside the tests"))
    func aBodyIsReadSeveralRecordsAtATime() async throws {
        let size = 16 << 20
        let (nginx, bytes, root) = try Self.origin(size: size)
        defer { nginx.stop(); FileSystem.removeDirectory(root) }
        let mp4probe = try #require(Executables.mp4probe), strace = try #require(Executables.find("strace"))
        let timeout = try #require(Executables.find("timeout"))
        let directory = FileSystem.temporaryDirectory("mp4probe-tls-reads")
        defer { FileSystem.removeDirectory(directory) }
        let trace = directory + "/trace.txt"
        _ = await Executables.runOffPool(timeout, ["-s", "KILL", "60", strace, "-f", "-qq", "-e", "trace=read", "-o", trace,
                                                   mp4probe, "fetch", "--cache", directory + "/cache", "--all", nginx.baseURL + "/body.bin"])
        let cached = FileSystem.entries(directory + "/cache").filter { $0.hasSuffix(".data") }
        #expect(cached.count == 1 && FileSystem.read(directory + "/cache/" + (cached.first ?? "")) == bytes, "the body was not fetched whole")
        let calls = FileSystem.read(trace).map { String(decoding: $0, as: UTF8.self).split(separator: "\n").filter { $0.contains("read(") }.count } ?? 0
        #expect(calls > 0, "strace saw no read: the count below would prove nothing")
        #expect(calls < size / 16_384, "\(calls) read calls for \(size / 16_384) records of 16 KiB")
    }

    /// A private CA, never in the system's store, and a certificate it signed for `names`
    /// (subjectAltName entries), in a directory of their own: ca.pem, server.pem, server.key.
    static func privateCA(names: String) async throws -> String {
        let root = FileSystem.temporaryDirectory("mp4probe-private-ca")
        let openssl = try #require(Executables.find("openssl"))
        for arguments in [
            ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", root + "/ca.key", "-out", root + "/ca.pem", "-days", "2", "-subj", "/CN=private test CA",
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign"],
            ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", root + "/server.key", "-out", root + "/server.csr", "-subj", "/CN=server"],
            ["x509", "-req", "-in", root + "/server.csr", "-CA", root + "/ca.pem", "-CAkey", root + "/ca.key", "-CAcreateserial", "-out", root + "/server.pem", "-days", "2",
             "-extfile", root + "/ext"],
        ] {
            if arguments[0] == "x509" { FileSystem.write(Array("subjectAltName=\(names)\n".utf8), to: root + "/ext") }
            _ = await Executables.runOffPool(openssl, arguments)
        }
        FileSystem.write(Array(repeating: 7, count: 5000), to: root + "/body.bin")
        return root
    }

    /// `--ca-file`: an origin whose certificate a private CA signed is read when that CA is
    /// given (curl's `--cacert`), refused without it, and refused when another CA is given
    /// (the file replaces the system's store, as curl's does, so the system's CAs are not
    /// trusted beside it). A certificate that does not name the host fails with a CA that
    /// signed it. Through our client; URLSession on Linux cannot take one and says so.
    @Test(.requires("nginx", "openssl")) func aPrivateCAIsTrustedWhenItIsNamed() async throws {
        let root = try await Self.privateCA(names: "IP:127.0.0.1")
        defer { FileSystem.removeDirectory(root) }
        let nginx = try #require(NginxServer.start(root: root, tls: true, certificates: root))
        defer { nginx.stop() }
        let url = nginx.baseURL + "/body.bin"
        #expect(try await Self.source(url, caFile: root + "/ca.pem").read(0..<5000) == Array(repeating: 7, count: 5000))
        await #expect(throws: MP4Error.self) { _ = try await Self.source(url).length() }
        let tlsDirectory = try #require(NginxServer.tlsDirectory)
        do {
            _ = try await Self.source(url, caFile: tlsDirectory + "/ca.pem").length()
            Issue.record("the system's test CA was trusted for a certificate only the private CA signed")
        } catch let error as MP4Error {
            #expect(error.message.contains("unable to get local issuer certificate"), "\(error.message)")
        }
        // A CA file that cannot be read trusts nothing, and says why.
        do {
            _ = try await Self.source(url, caFile: root + "/no-such-ca.pem").length()
            Issue.record("a missing CA file trusted the server")
        } catch let error as MP4Error {
            #expect(error.message.contains("no-such-ca.pem could not be read"), "\(error.message)")
        }
        // The system's trusted test origin is refused too when another CA file is named.
        let (trusted, _, trustedRoot) = try Self.origin(size: 1000)
        defer { trusted.stop(); FileSystem.removeDirectory(trustedRoot) }
        await #expect(throws: MP4Error.self) { _ = try await Self.source(trusted.baseURL + "/body.bin", caFile: root + "/ca.pem").length() }
        // Through URLSession on Linux the file cannot be honoured: an error, not the system's CAs.
        #if !canImport(Darwin)
        do {
            _ = try await Self.source(trusted.baseURL + "/body.bin", client: .urlSession, caFile: root + "/ca.pem").length()
            Issue.record("URLSession on Linux trusted the system's CAs although a CA file was named")
        } catch let error as MP4Error {
            #expect(error.message.contains("--ca-file cannot be honoured"), "\(error.message)")
        }
        #endif
    }

    /// A certificate from a trusted CA that names another host is refused (host name check:
    /// OpenSSL verifies the chain, not the name, unless asked).
    @Test(.requires("nginx", "openssl")) func aCertificateForAnotherHostIsRefused() async throws {
        let root = try await Self.privateCA(names: "DNS:other.example")
        defer { FileSystem.removeDirectory(root) }
        let nginx = try #require(NginxServer.start(root: root, tls: true, certificates: root))
        defer { nginx.stop() }
        do {
            _ = try await Self.source(nginx.baseURL + "/body.bin", caFile: root + "/ca.pem").length()
            Issue.record("a certificate for other.example was accepted for 127.0.0.1")
        } catch let error as MP4Error {
            #expect(error.message.contains("mismatch"), "\(error.message)")
        }
    }
}
