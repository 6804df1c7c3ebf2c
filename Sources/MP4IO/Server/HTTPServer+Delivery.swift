import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import MP4ProbeSystem
import MP4Core

/// How ``HTTPServer`` writes a response: the head with the body's first bytes, the body
/// streamed while the client is watched, a 502 in place of a source that fails before its
/// first byte, and the exchange reported.
extension HTTPServer {
    /// Writes `response` (the head; the body unless `head`). Returns false when the
    /// connection cannot go on (a write failed, the body source failed midway: the client sees
    /// a short body, never wrong bytes). A source body's head goes with its first bytes: a
    /// source that fails before it has any (an uncached range with the origin down) is
    /// answered 502 with the reason instead of a 206 that never delivers.
    @discardableResult
    func send(_ response: HTTPServerResponse, to connection: SocketConnection, head: Bool, keepAlive: Bool,
                      request: HTTPServerRequest? = nil, started: Date = Date(), start: ResponseStart? = nil) async -> Bool {
        let tally = ReadTally()
        let outcome = await deliver(response, to: connection, head: head, keepAlive: keepAlive, tally: tally, start: start)
        if let log = options.accessLog, !outcome.answeredInstead {
            var failure = outcome.failure
            if failure == nil, response.status >= 400, case .bytes(let bytes) = response.body {
                failure = String(decoding: bytes.prefix(300), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            }
            log(Exchange(start: started, method: request?.method, target: request?.target, range: request?.header("range"),
                         status: outcome.status, bytesSent: outcome.sent, seconds: Date().timeIntervalSince(started), failure: failure,
                         fromCache: outcome.streamed ? tally.split.cache : nil, fromOrigin: outcome.streamed ? tally.split.origin : nil))
        }
        return outcome.ok
    }

    /// What ``deliver(_:to:head:keepAlive:)`` did: whether the connection can go on, the
    /// status sent (a 502 replaces a source that failed before its first byte), body bytes
    /// written, and why it ended early.
    private struct Delivery {
        var ok: Bool; var status: Int; var sent: UInt64; var failure: String?; var streamed = false
        /// The server answered 504 in its place (``ResponseStart``): nothing was written.
        var answeredInstead = false
        static let late = Delivery(ok: false, status: 504, sent: 0, failure: nil, answeredInstead: true)
    }

    /// How a body's stream ended (or that the watch beside it ended).
    private struct Streamed: Sendable {
        var sent: UInt64 = 0
        var headSent = false
        var clientGone = false
        var failure: (any Error)?
        var watchEnded = false
    }

    /// The client went away while its body streamed (the body stops; nothing is reported).
    private struct ClientWentAway: Error {}
    /// The server answered 504 before the body's first piece (``ResponseStart``).
    private struct ResponseStartedElsewhere: Error {}

    private func deliver(_ response: HTTPServerResponse, to connection: SocketConnection, head: Bool, keepAlive: Bool, tally: ReadTally = ReadTally(),
                         start: ResponseStart? = nil) async -> Delivery {
        let timeout = WaitLimit(idle: options.idleTimeout, deadline: nil)
        do {
            guard !head, case .source(let source, let range) = response.body, !range.isEmpty else {
                guard start?.begin() ?? true else { return .late }
                try await connection.send(headBytes(of: response, keepAlive: keepAlive), timeout: timeout)
                guard !head else { return Delivery(ok: true, status: response.status, sent: 0, failure: nil) }
                if case .bytes(let bytes) = response.body {
                    try await connection.send(bytes, timeout: timeout)
                    return Delivery(ok: true, status: response.status, sent: UInt64(bytes.count), failure: nil)
                }
                return Delivery(ok: true, status: response.status, sent: 0, failure: nil)
            }
            let head = headBytes(of: response, keepAlive: keepAlive)
            let pause = options.firstPiecePause
            // The body streams in a child task, cancelled as soon as the client goes away, even
            // while it waits for the origin: what is fetched only for this client stops then,
            // not at the next piece the origin sends. A second child looks at the socket while
            // the body streams: soon after the start (10, 20, 40 ms...), then every quarter
            // second (at 512 KB/s, 128 KiB). Players that read a few KiB and go (ffmpeg and
            // Chromium read every fragment's header of a fragmented film, one request each)
            // leave early, and each fetch made for them stops within a few KiB. Both children
            // run on this connection's queue (a task group keeps its executor preference).
            let streamed = await withTaskGroup(of: Streamed?.self) { group -> (Streamed, peerGone: Bool) in
                group.addTask { await self.streamBody(source, range, head: head, to: connection, timeout: timeout, pause: pause, tally: tally, start: start) }
                group.addTask { await Self.watch(connection) }
                var peerGone = false
                var streamed = Streamed()
                for await ended in group {
                    guard let ended else {
                        // The watch saw the client go: the body stops at once.
                        peerGone = true
                        group.cancelAll()
                        continue
                    }
                    if ended.watchEnded { continue }
                    streamed = ended
                    group.cancelAll()   // the watch
                }
                return (streamed, peerGone)
            }
            let (sent, headSent, clientGone, failure) = (streamed.0.sent, streamed.0.headSent, streamed.0.clientGone, streamed.0.failure)
            if streamed.peerGone || clientGone || Task.isCancelled {
                // The watch saw the client go (it may have gone right after the last byte).
                let whole = sent == UInt64(range.count)
                return Delivery(ok: false, status: response.status, sent: sent, failure: whole ? nil : "the client went away after \(sent) of \(range.count) bytes", streamed: true)
            }
            do {
                if let failure { throw failure }
            } catch is ResponseStartedElsewhere {
                return .late
            } catch let error where !headSent && !Task.isCancelled {
                let refusal = ServingFailure.response(for: error)
                let delivered = await deliver(refusal, to: connection, head: false, keepAlive: false, start: start)
                return Delivery(ok: false, status: refusal.status, sent: delivered.sent, failure: Self.reason(of: error))
            } catch {
                return Delivery(ok: false, status: response.status, sent: sent, failure: "cut short after \(sent) of \(range.count) bytes: \(Self.reason(of: error))", streamed: true)
            }
            guard headSent else {
                // Ended without a byte and without an error (a source shorter than it said).
                let refusal = HTTPServerResponse.text(502, "the origin ended before byte \(range.lowerBound)")
                let delivered = await deliver(refusal, to: connection, head: false, keepAlive: false, start: start)
                return Delivery(ok: false, status: 502, sent: delivered.sent, failure: "the origin ended before byte \(range.lowerBound)")
            }
            let complete = sent == UInt64(range.count)
            return Delivery(ok: complete, status: response.status, sent: sent, failure: complete ? nil : "ended after \(sent) of \(range.count) bytes", streamed: true)
        } catch {
            return Delivery(ok: false, status: response.status, sent: 0, failure: "the client went away")
        }
    }

    /// Streams `range` of `source` to the client, the head with the first piece; a write
    /// that fails means the client went away.
    private func streamBody(_ source: any ByteSource, _ range: Range<UInt64>, head: [UInt8], to connection: SocketConnection, timeout: WaitLimit,
                            pause: Duration, tally: ReadTally, start: ResponseStart?) async -> Streamed? {
        var result = Streamed()
        do {
            let body: (ArraySlice<UInt8>) async throws -> Void = { piece in
                if !result.headSent, !(start?.begin() ?? true) { throw ResponseStartedElsewhere() }
                do {
                    if result.headSent {
                        try await connection.send(piece, timeout: timeout)
                    } else if piece.count <= 64 << 10 {
                        try await connection.send(head + piece, timeout: timeout)   // one segment
                    } else {
                        try await connection.send(head, timeout: timeout)
                        try await connection.send(piece, timeout: timeout)
                    }
                } catch {
                    result.clientGone = true   // a write to the client failed: it went away
                    throw error
                }
                let first = !result.headSent
                result.headSent = true
                result.sent += UInt64(piece.count)
                if first, pause > .zero, result.sent < UInt64(range.count) {
                    if await connection.hasGone(within: pause) {
                        result.clientGone = true
                        throw ClientWentAway()   // not a URLError: its NSError cost each such request 4 µs
                    }
                }
            }
            if let counted = source as? any TallyingSource {
                try await counted.read(range, tally: tally, into: body)
            } else {
                try await source.read(range, into: body)
            }
        } catch {
            result.failure = error
        }
        return result
    }

    /// Looks at the socket while a body streams: soon after the start (10, 20, 40 ms...), then
    /// every quarter second. Nil when the client has gone.
    private static func watch(_ connection: SocketConnection) async -> Streamed? {
        var interval = 10
        while !Task.isCancelled {
            try? await ServingClock.shared.sleep(for: .milliseconds(interval))
            if !Task.isCancelled && connection.peerHasGone() { return nil }
            interval = min(interval * 2, 250)
        }
        return Streamed(watchEnded: true)
    }

    /// An error in a line.
    static func reason(of error: any Error) -> String {
        ((error as? MP4Error)?.message ?? "\(error)").replacingOccurrences(of: "\n", with: " ")
    }

    /// The status line and header fields of `response`, with `Content-Length`, `Connection`
    /// and `Server` added; fields that are not valid HTTP are dropped.
    private func headBytes(of response: HTTPServerResponse, keepAlive: Bool) -> [UInt8] {
        // Appended as bytes (lines of interpolated strings joined were 3 % of a cached
        // request's CPU).
        var out: [UInt8] = []
        out.reserveCapacity(512)
        func line(_ name: String, _ value: String) {
            guard HTTPRequest.isValidHeaderName(name) && HTTPRequest.isValidHeaderValue(value) else { return }
            out += name.utf8
            out += ": ".utf8
            out += value.utf8
            out += "\r\n".utf8
        }
        out += "HTTP/1.1 ".utf8
        out += String(response.status).utf8
        out.append(0x20)
        out += Self.reason(response.status).utf8
        out += "\r\n".utf8
        for (name, value) in response.headers { line(name, value) }
        if !response.headers.contains("Content-Length") { line("Content-Length", String(response.body.count)) }
        line("Connection", keepAlive ? "keep-alive" : "close")
        line("Server", MP4ProbeVersion.userAgent)
        out += "\r\n".utf8
        return out
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 200: return "OK"
        case 206: return "Partial Content"
        case 304: return "Not Modified"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 410: return "Gone"
        case 411: return "Length Required"
        case 413: return "Content Too Large"
        case 416: return "Range Not Satisfiable"
        case 421: return "Misdirected Request"
        case 422: return "Unprocessable Content"
        case 431: return "Request Header Fields Too Large"
        case 451: return "Unavailable For Legal Reasons"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        case 505: return "HTTP Version Not Supported"
        default: return "Status"
        }
    }
}
