import Foundation
import MP4ProbeSystem
import MP4IO
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The socket calls that differ between Glibc and Darwin, in one place.
#if canImport(Glibc)
private let streamSocket = Int32(SOCK_STREAM.rawValue)
private func sendNoSignal(_ fd: Int32, _ pointer: UnsafeRawPointer?, _ count: Int) -> Int { Glibc.send(fd, pointer, count, Int32(MSG_NOSIGNAL)) }
private func closeSocket(_ fd: Int32) { _ = Glibc.close(fd) }
#else
private let streamSocket = SOCK_STREAM
private func sendNoSignal(_ fd: Int32, _ pointer: UnsafeRawPointer?, _ count: Int) -> Int { Darwin.send(fd, pointer, count, 0) }
private func closeSocket(_ fd: Int32) { _ = Darwin.close(fd) }
#endif

/// A blocking TCP connection to 127.0.0.1:`port`, made by the production connect (MP4ProbeSystem),
/// or `nil`. Blocking, unlike mp4probe's own sockets: tests use plain `send` and `recv`.
public func connectLoopback(_ port: Int) -> Int32? {
    var failure: Int32 = 0
    let fd = mp4probe_tcp_connect("127.0.0.1", Int32(port), 5_000, &failure)
    guard fd >= 0 else { return nil }
    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK)
    return fd
}

/// A loopback listener whose first `connections` connections are each handed to `handle` on a
/// thread of their own (a server scripted byte by byte, for faults no real server makes); the
/// caller closes the listener. Sockets it accepts raise no SIGPIPE on either system.
public func scriptedLoopbackServer(connections: Int, _ handle: @escaping @Sendable (Int32) -> Void) -> (port: Int, listener: Int32) {
    let listener = socket(AF_INET, streamSocket, 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(listener, $0, length) } }
    listen(listener, 8)
    _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(listener, $0, &length) } }
    for _ in 0..<connections {
        Thread {
            let client = accept(listener, nil, nil)
            guard client >= 0 else { return }
            mp4probe_no_sigpipe(client)
            handle(client)
        }.start()
    }
    return (Int(UInt16(bigEndian: address.sin_port)), listener)
}

/// Sends `bytes` on a blocking socket without raising SIGPIPE when the peer has gone; the
/// bytes sent (fewer, or -1, when it has).
@discardableResult
public func sendWithoutSignal(_ fd: Int32, _ bytes: ArraySlice<UInt8>) -> Int {
    bytes.withUnsafeBytes { sendNoSignal(fd, $0.baseAddress, $0.count) }
}

@discardableResult
public func sendWithoutSignal(_ fd: Int32, _ bytes: [UInt8]) -> Int { sendWithoutSignal(fd, bytes[...]) }

/// Closes `fd` with a reset (SO_LINGER 0), as a server that drops a connection does.
public func closeWithReset(_ fd: Int32) {
    var option = linger(l_onoff: 1, l_linger: 0)
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &option, socklen_t(MemoryLayout<linger>.size))
    closeSocket(fd)
}

/// A free TCP port on 127.0.0.1 (bound to port 0, read back, released).
public func freeLoopbackPort() -> Int {
    let fd = socket(AF_INET, streamSocket, 0)
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }
    _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// nginx from the system, started once per test process with a private configuration (port,
/// pid, logs and temp paths under a temporary directory) serving one directory, and stopped
/// when the process exits. `nil` when nginx is not installed.
public final class NginxServer: Sendable {
    /// One line of the access log.
    public struct Request: Sendable, Hashable {
        public var line: String
        public var range: String
        public var status: Int
        public var bodyBytes: Int
        /// When nginx logged the request (its `$msec`, seconds since 1970): the end of its
        /// transfer, when the response was sent or the client was found gone.
        public var ended: Double
    }

    public let port: Int
    public let directory: String
    public let root: String

    /// `http` or `https`.
    public let scheme: String
    public var baseURL: String { "\(scheme)://127.0.0.1:\(port)" }

    /// The directory of the test CA and the server certificate it signed for 127.0.0.1
    /// (`Tests/TLS/make-test-ca.sh`, which `.ci/run` runs and whose CA it adds to the system
    /// store), when `MP4PROBE_TLS_DIR` names one.
    public static let tlsDirectory: String? = ProcessInfo.processInfo.environment["MP4PROBE_TLS_DIR"].flatMap {
        FileManager.default.fileExists(atPath: $0 + "/server.pem") ? $0 : nil
    }

    /// Why HTTPS tests are skipped here, for `.enabled(if:)`.
    public static let tlsMissing = "MP4PROBE_TLS_DIR is not set (Tests/TLS/make-test-ca.sh DIR --trust makes a test CA, trusted by the system store, and a certificate for 127.0.0.1; .ci/run does): the HTTPS tests are skipped"

    /// The shared server for `SampleMedia/`.
    public static let sampleMedia: NginxServer? = start(root: Fixtures.sampleMedia)

    static let executables = ["/usr/sbin/nginx", "/usr/bin/nginx", "/usr/local/sbin/nginx", "/opt/homebrew/bin/nginx"]

    /// Starts nginx serving `root` (also under `/as-octet-stream/` and `/as-audio/`, which
    /// give every file that `Content-Type`, `/no-etag/`, answered with `Last-Modified` as the
    /// only validator, and `/no-ranges/`, which ignores `Range`); `limitRate` (nginx syntax, `100k`) paces every response,
    /// as a slow origin does.
    /// With `tls`, it speaks HTTPS with the certificate in ``tlsDirectory`` (nil without one).
    /// `certificates` names another directory with `server.pem` and `server.key`.
    public static func start(root: String, limitRate: String? = nil, tls: Bool = false, certificates: String? = nil) -> NginxServer? {
        guard let nginx = executables.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else { return nil }
        var listen = ""
        if tls {
            guard let certificates = certificates ?? tlsDirectory else { return nil }
            listen = " ssl; ssl_certificate \(certificates)/server.pem; ssl_certificate_key \(certificates)/server.key"
        }
        let directory = FileSystem.temporaryDirectory("mp4probe-nginx")
        let port = freeLoopbackPort()
        let user = geteuid() == 0 ? "user root;\n" : ""
        let config = """
        \(user)worker_processes 1;
        daemon off;
        pid \(directory)/nginx.pid;
        error_log \(directory)/error.log;
        events { worker_connections 256; }
        http {
          log_format probe '$request|$http_range|$status|$body_bytes_sent|$msec';
          access_log \(directory)/access.log probe;
          client_body_temp_path \(directory)/body; proxy_temp_path \(directory)/proxy;
          fastcgi_temp_path \(directory)/fastcgi; uwsgi_temp_path \(directory)/uwsgi; scgi_temp_path \(directory)/scgi;
          types { video/mp4 mp4; audio/mp4 m4a; video/quicktime mov; text/html html; }
          keepalive_requests 10000;
          server {
            listen 127.0.0.1:\(port)\(listen); root \(root);\(limitRate.map { " limit_rate \($0);" } ?? "")
            location /as-octet-stream/ { alias \(root)/; types { } default_type application/octet-stream; }
            location /as-audio/ { alias \(root)/; types { } default_type audio/mp4; }
            location /no-etag/ { alias \(root)/; etag off; }
            location /no-ranges/ { alias \(root)/; max_ranges 0; }
          }
        }
        """
        FileSystem.write(Array(config.utf8), to: directory + "/nginx.conf")
        return launch(nginx, directory: directory, port: port, root: root, scheme: tls ? "https" : "http")
    }

    /// Runs `nginx` on the configuration in `directory` and waits until it accepts
    /// connections on `port` (up to 5 s).
    private static func launch(_ nginx: String, directory: String, port: Int, root: String, scheme: String) -> NginxServer? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: nginx)
        process.arguments = ["-c", directory + "/nginx.conf", "-p", directory]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch { return nil }
        NginxServer.stopAtExit(pid: process.processIdentifier)
        for _ in 0..<100 {
            if canConnect(port: port) { return NginxServer(port: port, directory: directory, root: root, pid: process.processIdentifier, scheme: scheme) }
            usleep(50_000)
        }
        kill(process.processIdentifier, SIGTERM)
        return nil
    }

    private init(port: Int, directory: String, root: String, pid: Int32, scheme: String) {
        self.scheme = scheme
        self.port = port
        self.directory = directory
        self.root = root
        self.pid = pid
    }

    private let pid: Int32

    /// Stops this nginx (a server started for one test).
    public func stop() { kill(pid, SIGQUIT) }

    /// Stops this nginx and waits (up to 5 s) until its port refuses connections: an origin
    /// that is gone.
    public func stopAndWait() {
        kill(pid, SIGQUIT)
        for _ in 0..<100 where Self.canConnect(port: port) { usleep(50_000) }
    }

    /// Starts nginx again with this one's configuration (same port, root and log): the origin
    /// comes back. `nil` when it does not accept connections within 5 s.
    public func restarted() -> NginxServer? {
        guard let nginx = Self.executables.first(where: { FileManager.default.isExecutableFile(atPath: $0) }) else { return nil }
        return Self.launch(nginx, directory: directory, port: port, root: root, scheme: scheme)
    }

    /// The nginx processes started (tests start them side by side).
    private static let pids = Locked<[Int32]>([])

    private static func stopAtExit(pid: Int32) {
        pids.withLock { pids in
            if pids.isEmpty { atexit { for pid in NginxServer.pids.withLock({ $0 }) { kill(pid, SIGQUIT) } } }
            pids.append(pid)
        }
    }

    static func canConnect(port: Int) -> Bool {
        guard let fd = connectLoopback(port) else { return false }
        close(fd)
        return true
    }

    /// Requests whose request line contains `marker` (e.g. a unique query string).
    public func requests(containing marker: String) -> [Request] {
        guard let bytes = FileSystem.read(directory + "/access.log") else { return [] }
        return String(decoding: bytes, as: UTF8.self).split(separator: "\n").compactMap { line in
            let fields = line.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 5, fields[0].contains(marker), let status = Int(fields[2]), let body = Int(fields[3]), let ended = Double(fields[4]) else { return nil }
            return Request(line: fields[0], range: fields[1], status: status, bodyBytes: body, ended: ended)
        }
    }
}

/// A deliberately misbehaving HTTP/1.1 server on 127.0.0.1 for fault tests: a thread per
/// connection; `Connection: close` on every response unless the behavior keeps connections.
public final class LoopbackHTTPServer: Sendable {
    /// What the server does wrong.
    public enum Behavior: Sendable {
        case normal
        /// Answers 200 with the whole body, whatever the Range.
        case ignoresRange
        /// Answers 200 with the whole body, whatever the Range, and no ETag.
        case ignoresRangeWithoutValidators
        /// The first `times` responses announce the full length but stop after `bytes` body
        /// bytes and close the connection.
        case dropsAfter(bytes: Int, times: Int)
        /// 206 with a Content-Range that starts one byte late.
        case wrongContentRange
        /// 206 without Content-Range.
        case missingContentRange
        /// The ETag changes after the first request.
        case changesETag
        /// Waits `seconds` before answering every request.
        case slow(seconds: Double)
        /// The first `times` responses are `status` (with `Retry-After: retryAfter` when set).
        case failsFirst(status: Int, times: Int, retryAfter: Int?)
        /// Every request without `hop=N` (N ≥ hops) in its path is redirected (302) to the next hop.
        case redirects(hops: Int)
        /// Every request is redirected (302) to `location` (an absolute URL: another origin).
        case redirectsTo(location: String)
        /// Keeps connections open between requests (HTTP/1.1 keep-alive).
        case keepsAlive
        /// Keeps the connection open after a response but closes it before reading the next
        /// request, without saying so (what a server with a short idle timeout does).
        case closesIdleConnections
        /// Sends bodies with `Transfer-Encoding: chunked` (chunks of 1 to 9,000 bytes with
        /// extensions, then a trailer field), keeping the connection.
        case chunked
        /// Answers as HTTP/1.0 without Content-Length: the body ends when the connection closes.
        case closeDelimited
        /// A response head larger than any client should accept (128 KiB of header fields).
        case hugeHead
        /// A Content-Length that is not a number.
        case invalidContentLength
        /// Every 206 carries this Content-Range instead of the true one (a hostile server).
        case contentRange(String)
        /// Adds these header lines to every response (the body unchanged): an origin that
        /// claims a coding, for instance.
        case headers([String])
        /// Sends the body encoded (every byte changed, as a compression would change them) with
        /// these header lines (`Content-Encoding: gzip`...): what it sends is not the file.
        case encodes([String])
        /// Sends the body `bytes` at a time with `interval` seconds between pieces: never idle
        /// long enough for an idle timeout, yet slow.
        case trickles(bytes: Int, interval: Double)
        /// Sends the first `bytes` of every body at once, then nothing for `seconds`, then the
        /// rest (what nginx's `limit_rate` with `sendfile` does: a second's worth, then a pause).
        case pausesAfter(bytes: Int, seconds: Double)
    }

    public let port: Int
    public let body: [UInt8]
    public let behavior: Behavior
    /// The directory with `server.pem` and `server.key` when it speaks HTTPS.
    public let certificates: String?
    private let listener: Int32
    private let log = LockedLog()

    /// One accepted connection, in the clear or over TLS (blocking socket).
    final class Peer: @unchecked Sendable {
        let fd: Int32
        private let tls: OpaquePointer?

        private init(fd: Int32, tls: OpaquePointer?) {
            self.fd = fd
            self.tls = tls
        }

        /// The connection, after a TLS handshake when `certificates` are given (nil when that fails).
        static func accepted(_ fd: Int32, certificates: String?) -> Peer? {
            guard let certificates else { return Peer(fd: fd, tls: nil) }
            var error = [CChar](repeating: 0, count: 256)
            guard let session = mp4probe_tls_server(fd, certificates + "/server.pem", certificates + "/server.key", &error, error.count) else { return nil }
            var certificateFailed: Int32 = 0
            while true {
                let result = mp4probe_tls_handshake(session, &certificateFailed)
                if result == 1 { return Peer(fd: fd, tls: session) }
                if result != MP4PROBE_TLS_WANT_READ && result != MP4PROBE_TLS_WANT_WRITE {
                    mp4probe_tls_free(session)
                    return nil
                }
            }
        }

        func receiveByte(_ byte: inout UInt8) -> Int {
            if let tls { return mp4probe_tls_recv(tls, &byte, 1) }
            return recv(fd, &byte, 1, 0)
        }

        func send(_ pointer: UnsafeRawPointer?, _ count: Int) -> Int {
            if let tls, let pointer { return mp4probe_tls_send(tls, pointer, count) }
            return sendNoSignal(fd, pointer, count)
        }

        func close() {
            if let tls { mp4probe_tls_free(tls) }
            closeSocket(fd)
        }
    }

    /// Range headers of the requests received, in order ("" when absent).
    public var ranges: [String] { log.ranges }
    /// The request heads received, in order.
    public var requestHeads: [String] { log.heads }
    /// Connections accepted.
    public var connectionCount: Int { log.connections }
    /// Body bytes the kernel has taken from this server so far (what the origin "sent"),
    /// counted for whole and trickled bodies (not chunked or cut ones).
    public var bodyBytesSent: Int { log.bodyBytes }

    final class LockedLog: @unchecked Sendable {
        private let lock = NSLock()
        private var entries: [String] = []
        private var headTexts: [String] = []
        private var accepted = 0
        private var sentBodyBytes = 0
        var bodyBytes: Int { lock.lock(); defer { lock.unlock() }; return sentBodyBytes }
        func sent(_ count: Int) { lock.lock(); defer { lock.unlock() }; sentBodyBytes += count }
        var ranges: [String] { lock.lock(); defer { lock.unlock() }; return entries }
        var heads: [String] { lock.lock(); defer { lock.unlock() }; return headTexts }
        var connections: Int { lock.lock(); defer { lock.unlock() }; return accepted }
        func accept() { lock.lock(); defer { lock.unlock() }; accepted += 1 }
        func append(_ range: String, head: String) -> Int {
            lock.lock(); defer { lock.unlock() }
            entries.append(range)
            headTexts.append(head)
            return entries.count
        }
    }

    /// A server on 127.0.0.1; over TLS with the certificate in `certificates` (a directory with
    /// `server.pem` and `server.key`, such as ``NginxServer/tlsDirectory``).
    public init?(body: [UInt8], behavior: Behavior, certificates: String? = nil) {
        self.body = body
        self.behavior = behavior
        self.certificates = certificates
        let fd = socket(AF_INET, streamSocket, 0)
        var yes: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        guard withUnsafePointer(to: &address, { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) } }) == 0, listen(fd, 16) == 0 else {
            close(fd)
            return nil
        }
        _ = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) } }
        self.listener = fd
        self.port = Int(UInt16(bigEndian: address.sin_port))
        let thread = Thread { [self] in self.serve() }
        thread.start()
    }

    public var url: URL { URL(string: "\(certificates == nil ? "http" : "https")://127.0.0.1:\(port)/file.mp4")! }

    /// Stops accepting connections.
    public func stop() { shutdown(listener, Int32(SHUT_RDWR)); close(listener) }

    private func serve() {
        while true {
            let client = accept(listener, nil, nil)
            if client < 0 { return }
            mp4probe_no_sigpipe(client)   // Darwin: its sends pass no MSG_NOSIGNAL
            log.accept()
            let thread = Thread { [self] in
                guard let peer = Peer.accepted(client, certificates: certificates) else { close(client); return }
                // Keep-alive behaviors answer requests until the client closes (bounded).
                for _ in 0..<10_000 {
                    guard handle(peer) else { break }
                }
                peer.close()
            }
            thread.start()
        }
    }

    private var keepsConnections: Bool {
        switch behavior {
        case .keepsAlive, .closesIdleConnections, .chunked: return true
        default: return false
        }
    }

    @discardableResult
    private func send(_ fd: Peer, _ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { fd.send($0.baseAddress, $0.count) }
            if n <= 0 { return false }
            sent += n
        }
        return true
    }

    /// Answers one request; returns whether the connection stays open for another.
    private func handle(_ fd: Peer) -> Bool {
        // Read the request head (one byte at a time: never past it, so that keep-alive
        // requests are read whole).
        var head: [UInt8] = []
        var byte: UInt8 = 0
        while !head.suffix(4).elementsEqual([13, 10, 13, 10]) {
            let n = fd.receiveByte(&byte)
            if n <= 0 { return false }
            head.append(byte)
            if head.count > 65536 { return false }
        }
        let lines = String(decoding: head, as: UTF8.self).split(separator: "\r\n").map(String.init)
        let range = lines.first { $0.lowercased().hasPrefix("range:") }.map { String($0.dropFirst(6)).trimmingCharacters(in: .whitespaces) } ?? ""
        let number = log.append(range, head: String(decoding: head, as: UTF8.self))
        if case .redirects(let hops) = behavior {
            let target = lines.first?.split(separator: " ").dropFirst().first.map(String.init) ?? "/"
            let hop = target.split(separator: "=").last.flatMap { Int($0) } ?? 0
            if hop < hops {
                let response = "HTTP/1.1 302 Found\r\nLocation: /file.mp4?hop=\(hop + 1)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                send(fd, Array(response.utf8))
                return false
            }
        }
        if case .redirectsTo(let location) = behavior {
            send(fd, Array("HTTP/1.1 302 Found\r\nLocation: \(location)\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8))
            return false
        }
        var start = 0, end = body.count - 1
        if range.hasPrefix("bytes=") {
            let parts = range.dropFirst(6).split(separator: "-", omittingEmptySubsequences: false)
            start = Int(parts[0]) ?? 0
            if parts.count > 1, let e = Int(parts[1]) { end = min(e, body.count - 1) }
        }
        var etag = "\"v1\""
        var status = 206
        var headers: [String] = []
        var payload = start <= end && start < body.count ? Array(body[start...end]) : []
        var cut: Int?
        switch behavior {
        case .normal: break
        case .ignoresRange, .ignoresRangeWithoutValidators:
            status = 200
            payload = body
        case .dropsAfter(let bytes, let times):
            if number <= times { cut = bytes }
        case .wrongContentRange:
            start += 1
        case .missingContentRange:
            break
        case .changesETag:
            if number > 1 { etag = "\"v2\"" }
        case .slow(let seconds):
            usleep(UInt32(seconds * 1_000_000))
        case .redirects, .redirectsTo, .keepsAlive, .closesIdleConnections, .chunked, .closeDelimited, .hugeHead, .invalidContentLength, .contentRange, .trickles, .headers, .pausesAfter:
            break
        case .encodes:
            payload = payload.map { $0 ^ 0x5A }
        case .failsFirst(let code, let times, let retryAfter):
            if number <= times {
                status = code
                payload = []
                if let retryAfter { headers.append("Retry-After: \(retryAfter)") }
            }
        }
        // If-Range with a stale validator: the whole body, as RFC 9110 says.
        if let ifRange = lines.first(where: { $0.lowercased().hasPrefix("if-range:") }), !ifRange.contains(etag), status == 206 {
            status = 200
            payload = body
        }
        if status == 206 && start > end { status = 416; payload = [] }
        let reason = [200: "OK", 206: "Partial Content", 416: "Range Not Satisfiable", 429: "Too Many Requests", 503: "Service Unavailable"][status] ?? "Error"
        if case .ignoresRangeWithoutValidators = behavior {} else { headers.append("ETag: \(etag)") }
        switch behavior {
        case .chunked: headers.append("Transfer-Encoding: chunked")
        case .closeDelimited: break
        case .invalidContentLength: headers.append("Content-Length: 12abc")
        default: headers.append("Content-Length: \(payload.count)")
        }
        if !keepsConnections { headers.append("Connection: close") }
        if case .headers(let extra) = behavior { headers += extra }
        if case .encodes(let extra) = behavior { headers += extra }
        if case .hugeHead = behavior {
            for i in 0..<2048 { headers.append("X-Filler-\(i): " + String(repeating: "x", count: 60)) }
        }
        if case .contentRange(let text) = behavior, status == 206 {
            headers.append("Content-Range: \(text)")
        } else if status == 206, !(behavior.isMissingContentRange) {
            headers.append("Content-Range: bytes \(start)-\(start + payload.count - 1)/\(body.count)")
        }
        if status == 416 { headers.append("Content-Range: bytes */\(body.count)") }
        let version = { if case .closeDelimited = behavior { return "HTTP/1.0" } else { return "HTTP/1.1" } }()
        let response = "\(version) \(status) \(reason)\r\n" + headers.joined(separator: "\r\n") + "\r\n\r\n"
        send(fd, Array(response.utf8))
        if let cut { send(fd, Array(payload.prefix(cut))); return false }
        if case .chunked = behavior {
            var offset = 0, size = 1
            while offset < payload.count {
                size = size * 7 % 9001 + 1
                let piece = payload[offset..<min(payload.count, offset + size)]
                send(fd, Array((String(piece.count, radix: 16) + ";ext=\"a\"\r\n").utf8) + piece + [13, 10])
                offset += piece.count
            }
            send(fd, Array("0\r\nX-Trailer: done\r\n\r\n".utf8))
            return true
        }
        if case .trickles(let bytes, let interval) = behavior {
            var offset = 0
            while offset < payload.count {
                let piece = Array(payload[offset..<min(payload.count, offset + max(bytes, 1))])
                guard send(fd, piece) else { return false }
                log.sent(piece.count)
                offset += max(bytes, 1)
                usleep(UInt32(interval * 1_000_000))
            }
            return false
        }
        if case .pausesAfter(let bytes, let seconds) = behavior, payload.count > bytes {
            guard send(fd, Array(payload.prefix(bytes))) else { return false }
            log.sent(bytes)
            usleep(UInt32(seconds * 1_000_000))
            if send(fd, Array(payload.dropFirst(bytes))) { log.sent(payload.count - bytes) }
            return false
        }
        if send(fd, payload) { log.sent(payload.count) }
        if case .closesIdleConnections = behavior {
            // Looks kept alive, but the server closes it now.
            return false
        }
        return keepsConnections
    }
}

extension LoopbackHTTPServer.Behavior {
    var isMissingContentRange: Bool {
        if case .missingContentRange = self { return true }
        return false
    }
}

/// What a stand-in origin speaks: a hostile-origin test runs over plain HTTP and, where a test
/// CA is set up (``NginxServer/tlsDirectory``), over HTTPS as well: the path users take.
public enum OriginScheme: String, Sendable, CaseIterable, CustomStringConvertible {
    case http, https

    /// The schemes this machine can test: HTTPS only with a test CA.
    public static var available: [OriginScheme] { NginxServer.tlsDirectory == nil ? [.http] : [.http, .https] }
    /// The certificate directory a ``LoopbackHTTPServer`` speaking this scheme uses.
    public var certificates: String? { self == .https ? NginxServer.tlsDirectory : nil }
    public var description: String { rawValue }
}
