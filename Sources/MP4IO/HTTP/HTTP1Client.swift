import Foundation
import MP4Core
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// An HTTP/1.1 client over POSIX sockets for `http:` URLs, and for `https:` ones over TLS
/// (OpenSSL's libssl, on Linux: ``SocketConnection/connectTLS(host:port:caFile:timeout:)``):
/// bodies go from the socket buffer to the consumer without being collected (memory: one
/// 256 KiB buffer per connection, whatever the body size), a reader that stops reading stops
/// the transfer (TCP's own flow control), keep-alive connections are reused, and redirects
/// follow the credential rule. Where TLS over sockets is not available, `https:` requests
/// (and redirects to `https:`) go to the `fallback` client (URLSession).
///
/// Why not URLSession on Linux: it delivers each 16 KiB chunk through a timer reset and a
/// dispatch hop (loopback: about 270 MB/s where curl reads 2 GB/s), cannot pause a transfer,
/// acts on a cancel late, and reads only the system's CA store (docs/http.md).
final class HTTP1Client: HTTPClient {
    let maxRedirects: Int
    /// Whether a redirect from `https:` to `http:` is followed (``HTTPRequest/isDowngrade(from:to:)``).
    let allowsInsecureRedirects: Bool
    /// For `https:` where TLS over sockets is not available.
    let fallback: any HTTPClient
    /// The CA certificates `https:` servers are checked against (PEM); nil: the system's.
    let caFile: String?
    /// Whether `https:` is ours (else the fallback's).
    let speaksTLS: Bool
    private let idle = Locked<[String: [SocketConnection]]>([:])
    /// Idle connections kept per host.
    static let maxIdlePerHost = 4
    /// Error bodies, redirect bodies and the rest of a body stopped at its limit are read (to
    /// keep the connection) only up to this size; beyond it the connection is closed.
    static let maxDrain = 64 << 10

    init(maxRedirects: Int, allowsInsecureRedirects: Bool = false, caFile: String? = nil, fallback: any HTTPClient, speaksTLS: Bool = SocketConnection.tlsAvailable) {
        self.maxRedirects = maxRedirects
        self.allowsInsecureRedirects = allowsInsecureRedirects
        self.caFile = caFile
        self.fallback = fallback
        self.speaksTLS = speaksTLS
    }

    /// Whether requests for `url` go to the fallback client (URLSession).
    func handsOver(_ url: URL) -> Bool {
        switch url.scheme?.lowercased() {
        case "http": return false
        case "https": return !speaksTLS
        default: return true
        }
    }

    func invalidate() {
        let connections = idle.withLock { idle -> [SocketConnection] in
            defer { idle = [:] }
            return idle.values.flatMap { $0 }
        }
        for connection in connections { connection.close() }
        fallback.invalidate()
    }

    func get(_ request: HTTPRequest, limit: Int, skipWhole: Int,
             head: (HTTPResponseHead) throws -> Void,
             body: (ArraySlice<UInt8>) async throws -> Void) async throws -> HTTPOutcome {
        var request = request
        var redirects = 0
        while true {
            guard !handsOver(request.url) else {
                return try await fallback.get(request, limit: limit, skipWhole: skipWhole, head: head, body: body)
            }
            let (connection, response, framing) = try await open(request)
            let responseHead = HTTPResponseHead(status: response.status, headers: response.head.fields, url: request.url)
            if [301, 302, 303, 307, 308].contains(response.status), let location = responseHead.header("location"), redirects < maxRedirects,
               let target = URL(string: location, relativeTo: request.url)?.absoluteURL,
               let scheme = target.scheme?.lowercased(), scheme == "http" || scheme == "https",
               allowsInsecureRedirects || !HTTPRequest.isDowngrade(from: request.url, to: target) {
                redirects += 1
                await discard(connection, framing: framing, keepsAlive: response.keepsAlive, timeout: request.waitLimit)
                request.headers = request.headers(redirectedTo: target)
                request.url = target
                continue
            }
            do {
                try head(responseHead)
            } catch {
                connection.close()
                throw error
            }
            guard (200..<300).contains(response.status) else {
                await discard(connection, framing: framing, keepsAlive: response.keepsAlive, timeout: request.waitLimit)
                return HTTPOutcome(head: responseHead, delivered: 0, skipped: 0, received: 0, stoppedAtLimit: false, error: nil)
            }
            var reader = BodyReader(limit: limit, skip: response.status == 200 ? skipWhole : 0)
            var drained: UInt64 = 0
            do {
                let complete = try await reader.read(connection, framing: framing, timeout: request.waitLimit, body: body)
                if complete && response.keepsAlive {
                    release(connection)
                } else if reader.stoppedAtLimit, case .length(let total) = framing, total - reader.bodyBytesRead <= UInt64(Self.maxDrain), response.keepsAlive {
                    // The rest is small: read it away and keep the connection.
                    var rest = BodyReader(limit: Int.max, skip: 0, alreadyRead: reader.bodyBytesRead)
                    if (try? await rest.read(connection, framing: framing, timeout: request.waitLimit, body: { _ in })) == true { release(connection) } else { connection.close() }
                    drained = rest.bodyBytesRead - reader.bodyBytesRead
                } else {
                    connection.close()
                }
                return HTTPOutcome(head: responseHead, delivered: reader.delivered, skipped: reader.skipped, received: Int(clamping: reader.bodyBytesRead + drained), stoppedAtLimit: reader.stoppedAtLimit, error: nil)
            } catch let error as URLError {
                connection.close()
                if error.code == .cancelled { throw error }
                return HTTPOutcome(head: responseHead, delivered: reader.delivered, skipped: reader.skipped, received: Int(clamping: reader.bodyBytesRead), stoppedAtLimit: false, error: error)
            } catch {
                connection.close()
                throw error
            }
        }
    }

    struct Response {
        var status: Int
        var head: HTTPMessage.Head
        var keepsAlive: Bool
    }

    /// Sends `request` on a pooled or new connection and reads the response head (skipping 1xx
    /// heads). A reused connection that fails before the first response byte (the server closed
    /// it while idle) is replaced by a new one, once.
    private func open(_ request: HTTPRequest) async throws -> (SocketConnection, Response, HTTPMessage.Framing) {
        guard var host = request.url.host, !host.isEmpty else { throw URLError(.badURL) }
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let secure = request.url.scheme?.lowercased() == "https"
        let port = request.url.port ?? (secure ? 443 : 80)
        guard (1...65535).contains(port) else { throw URLError(.badURL) }
        let hostField = (host.utf8.contains(UInt8(ascii: ":")) ? "[\(host)]" : host) + (request.url.port.map { ":\($0)" } ?? "")
        let components = URLComponents(url: request.url, resolvingAgainstBaseURL: true)
        var target = components?.percentEncodedPath ?? "/"
        if target.isEmpty { target = "/" }
        if let query = components?.percentEncodedQuery { target += "?" + query }
        for (name, value) in request.headers {
            guard HTTPRequest.isValidHeaderName(name), HTTPRequest.isValidHeaderValue(value) else { throw URLError(.badURL) }
        }
        var fields = request.headers.removing(["host", "connection", "content-length", "transfer-encoding"])
        if !fields.contains("User-Agent") { fields.append(("User-Agent", MP4ProbeVersion.userAgent)) }
        let bytes = HTTPMessage.requestHead(target: target, host: hostField, fields: fields)
        let key = "\(secure ? "https" : "http")://\(host):\(port)"

        var attempt = 0
        while true {
            attempt += 1
            // A pooled connection has carried an exchange before: if it fails before the first
            // response byte, the server closed it while idle.
            let pooled = attempt == 1 ? take(key) : nil
            let connection: SocketConnection
            if let pooled {
                connection = pooled
            } else if secure {
                connection = try await SocketConnection.connectTLS(host: host, port: port, caFile: caFile, timeout: request.headWaitLimit)
            } else {
                connection = try await SocketConnection.connect(host: host, port: port, timeout: request.headWaitLimit)
            }
            do {
                try await connection.send(bytes, timeout: request.headWaitLimit)
                let response = try await readHead(connection, timeout: request.headWaitLimit)
                return (connection, response, try framing(response))
            } catch let error as URLError where pooled != nil && error.code != .cancelled && error.code != .timedOut {
                connection.close()
                continue   // stale keep-alive connection: once more on a new one
            } catch {
                connection.close()
                throw error
            }
        }
    }

    private func framing(_ response: Response) throws -> HTTPMessage.Framing {
        do {
            return try HTTPMessage.responseFraming(status: response.status, head: response.head)
        } catch {
            throw URLError(.badServerResponse)
        }
    }

    /// Reads a response head: bounded by ``HTTPMessage/maxHeadSize``; 1xx interim heads are
    /// skipped (at most 8). We never ask to switch protocols, so a 101 is an error.
    private func readHead(_ connection: SocketConnection, timeout: WaitLimit) async throws -> Response {
        for _ in 0..<8 {
            let end: Int
            var scanned = 0
            while true {
                if let found = HTTPMessage.headEnd(connection.available, scanned: scanned) { end = found; break }
                guard connection.available.count < HTTPMessage.maxHeadSize else { throw URLError(.badServerResponse) }
                scanned = connection.available.count
                let count = try await connection.fill(timeout: timeout)
                if count == 0 { throw URLError(.networkConnectionLost) }
                if count < 0 { throw URLError(.badServerResponse) }
            }
            let available = connection.available
            let headBytes = available[available.startIndex..<end]
            let head: HTTPMessage.Head
            do { head = try HTTPMessage.parseHead(headBytes) } catch { throw URLError(.badServerResponse) }
            connection.consume(headBytes.count)
            let version = head.startLine.0
            guard version.hasPrefix("HTTP/1."), head.startLine.1.count == 3, let status = Int(head.startLine.1), (100...999).contains(status) else {
                throw URLError(.badServerResponse)
            }
            if status == 101 { throw URLError(.badServerResponse) }
            if (100..<200).contains(status) { continue }
            let connectionField = head.values("connection").joined(separator: ",")
            let keepsAlive = version == "HTTP/1.1" ? !connectionField.hasToken("close") : connectionField.hasToken("keep-alive")
            return Response(status: status, head: head, keepsAlive: keepsAlive)
        }
        throw URLError(.badServerResponse)
    }

    /// Reads away a body we do not want when it is small (keeping the connection), else closes.
    private func discard(_ connection: SocketConnection, framing: HTTPMessage.Framing, keepsAlive: Bool, timeout: WaitLimit) async {
        guard keepsAlive else { return connection.close() }
        switch framing {
        case .none:
            release(connection)
        case .length(let length) where length > UInt64(Self.maxDrain):
            connection.close()
        case .length, .chunked:
            var reader = BodyReader(limit: Self.maxDrain, skip: 0)
            let complete = (try? await reader.read(connection, framing: framing, timeout: timeout, body: { _ in })) ?? false
            if complete && !reader.stoppedAtLimit { release(connection) } else { connection.close() }
        case .untilClose:
            connection.close()
        }
    }

    private func take(_ key: String) -> SocketConnection? {
        idle.withLock { idle in idle[key]?.popLast() }
    }

    private func release(_ connection: SocketConnection) {
        let extra = idle.withLock { idle -> SocketConnection? in
            guard (idle[connection.key]?.count ?? 0) < Self.maxIdlePerHost else { return connection }
            idle[connection.key, default: []].append(connection)
            return nil
        }
        extra?.close()
    }
}

/// Reads one body (any framing) from a connection, handing bytes to the consumer after
/// `skip` bytes and up to `limit` bytes.
struct BodyReader {
    var limit: Int
    var skip: Int
    var delivered = 0
    var skipped = 0
    var stoppedAtLimit = false
    /// Bytes of the body read from the connection (skipped, delivered or discarded).
    var bodyBytesRead: UInt64 = 0

    init(limit: Int, skip: Int, alreadyRead: UInt64 = 0) {
        self.limit = limit
        self.skip = skip
        self.bodyBytesRead = alreadyRead
    }

    /// Returns whether the whole body was read (the connection is then at the next response).
    /// With `limit` reached it stops early and returns false. Throws `URLError` when the
    /// connection ends or stalls before the body does.
    mutating func read(_ connection: SocketConnection, framing: HTTPMessage.Framing, timeout: WaitLimit,
                       body: (ArraySlice<UInt8>) async throws -> Void) async throws -> Bool {
        switch framing {
        case .none:
            return true
        case .length(let total):
            return try await readBytes(total - min(total, bodyBytesRead), connection, timeout: timeout, untilClose: false, body: body)
        case .untilClose:
            _ = try await readBytes(UInt64.max, connection, timeout: timeout, untilClose: true, body: body)
            return false   // never reusable
        case .chunked:
            while true {
                let sizeLine = try await line(connection, timeout: timeout)
                let size: UInt64
                do { size = try HTTPMessage.chunkSize(sizeLine) } catch { throw URLError(.badServerResponse, userInfo: [NSLocalizedDescriptionKey: "\(error)"]) }
                // A 2^62-byte chunk read as "the response ended after 0 of 65536 bytes".
                guard size <= HTTPMessage.maxChunkSize else {
                    throw URLError(.badServerResponse, userInfo: [NSLocalizedDescriptionKey: "a chunk of \(size) bytes, which cannot be real (over 1 TiB)"])
                }
                if size == 0 {
                    // Trailer fields, then the empty line.
                    for _ in 0..<HTTPMessage.maxFieldCount {
                        if try await line(connection, timeout: timeout).isEmpty { return true }
                    }
                    throw URLError(.badServerResponse)
                }
                guard try await readBytes(size, connection, timeout: timeout, untilClose: false, body: body) else { return false }
                guard try await line(connection, timeout: timeout).isEmpty else { throw URLError(.badServerResponse) }
            }
        }
    }

    /// Reads `count` body bytes (or until the stream ends with `untilClose`). Returns false when
    /// it stopped at the limit first.
    private mutating func readBytes(_ count: UInt64, _ connection: SocketConnection, timeout: WaitLimit, untilClose: Bool,
                                    body: (ArraySlice<UInt8>) async throws -> Void) async throws -> Bool {
        var remaining = count
        while remaining > 0 {
            if connection.available.isEmpty {
                let received = try await connection.fill(timeout: timeout)
                if received == 0 {
                    if untilClose { return true }
                    throw URLError(.networkConnectionLost)
                }
            }
            let available = connection.available
            let take = Int(min(UInt64(available.count), remaining))
            var piece = available.prefix(take)
            connection.consume(take)
            remaining -= UInt64(take)
            bodyBytesRead += UInt64(take)
            if skip > skipped {
                let drop = min(skip - skipped, piece.count)
                skipped += drop
                piece = piece.dropFirst(drop)
            }
            let room = limit - delivered
            if room > 0 && !piece.isEmpty {
                let given = piece.prefix(room)
                delivered += given.count
                try await body(given)
            }
            if delivered >= limit {
                stoppedAtLimit = remaining > 0
                return remaining == 0
            }
        }
        return true
    }

    /// One line (CRLF or LF), without its end; bounded by ``HTTPMessage/maxLineSize``.
    private func line(_ connection: SocketConnection, timeout: WaitLimit) async throws -> ArraySlice<UInt8> {
        while true {
            let available = connection.available
            if let newline = available.firstIndex(of: 0x0A) {
                var text = available[available.startIndex..<newline]
                if text.last == 0x0D { text = text.dropLast() }
                connection.consume(newline + 1 - available.startIndex)
                return text
            }
            guard available.count < HTTPMessage.maxLineSize else { throw URLError(.badServerResponse) }
            let received = try await connection.fill(timeout: timeout)
            if received == 0 { throw URLError(.networkConnectionLost) }
            if received < 0 { throw URLError(.badServerResponse) }
        }
    }
}
