import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import MP4ProbeSystem
import MP4Core

/// A small HTTP/1.1 server over POSIX sockets for loopback use: GET and HEAD, keep-alive,
/// every size and time bounded (head 64 KiB and 200 fields, 10 s to send a head, 30 s idle,
/// at most ``Options/maxConnections`` at once), `Host` checked against its own address (DNS
/// rebinding), bodies streamed from a ``ByteSource``. The caching proxy (`mp4probe serve`) is
/// a handler on top of it.
public final class HTTPServer: Sendable {
    /// Bounds and address.
    public struct Options: Sendable {
        /// A numeric loopback address by default; anything else is the caller's decision.
        public var host = "127.0.0.1"
        /// 0: a free port, chosen by the system.
        public var port = 0
        /// Connections served at once; more wait in the listen backlog.
        public var maxConnections = 64
        /// Seconds a connection may stay idle (between requests, or while a client reads
        /// slowly) before it is closed.
        public var idleTimeout: TimeInterval = 30
        /// Seconds a client has to send a whole request head (slow-header clients).
        public var headTimeout: TimeInterval = 10
        /// Connections must earn their slot: one whose requests were never answered with
        /// ``HTTPServerResponse/trustsConnection`` is closed after each response, and when
        /// every slot is taken a new connection displaces the untrusted connection that has
        /// waited longest for a request head, instead of being refused. Without it, any local
        /// process (or a web page opening connections to loopback) could hold every slot with
        /// requests that have no secret and keep players at 503.
        public var requiresTrust = false
        /// Methods answered besides GET and HEAD, with a body of at most ``maxRequestBody``
        /// bytes framed by `Content-Length` (a chunked request body is refused, 411). The body
        /// must arrive within ``headTimeout`` like the head.
        public var methodsWithBodies: Set<String> = []
        /// The largest request body accepted (413 above it); at most 192 KiB (what a
        /// connection's buffer holds beside a head), whatever is set.
        public var maxRequestBody = 64 << 10
        /// After a streamed body's first piece, how long the server waits at most for the client
        /// to hang up before it sends on (0: no wait); the wait ends as soon as the client goes
        /// (a `poll` on its socket, on the connection's own queue). A player that reads a box
        /// header and goes (ffmpeg opens a fragmented film with a request per fragment and
        /// reads 8 KiB of each) has gone by then, and the server neither copies pieces into a
        /// socket no one reads nor asks the origin for what follows: ffmpeg decoding the first
        /// 2 s of a 300-fragment film from the cache took 0.30-0.34 s with a sleep of 2 ms
        /// against 0.40-0.44 s without (the server's CPU had gone to copies). 5 ms: with 2 ms,
        /// 33 of ffmpeg's 300 header requests were still open after it on a loaded machine and
        /// each had the origin send a fetch's first burst. A client that reads on loses the
        /// pause once per response.
        public var firstPiecePause: Duration = .milliseconds(5)
        /// Seconds a request may wait for its answer to start (the status line goes with the
        /// body's first bytes) before the server answers 504 in its place and stops the work:
        /// an origin that accepts and never answers, or drips its head, left players without a
        /// status line for 100 s and more. Longer than ``MediaLoader/Options/originWait``
        /// (the proxy makes it so).
        public var responseStartTimeout: TimeInterval = 40
        /// Told of every answered request when its answer has ended (an access log); called on
        /// the connection's task, so it must not wait.
        public var accessLog: (@Sendable (Exchange) -> Void)?

        public init() {}
    }

    /// One request and how its answer went, for ``Options/accessLog``.
    public struct Exchange: Sendable {
        /// When the request head had arrived.
        public var start: Date
        /// Method and target as sent; nil when the head could not be read (a 400 or 431).
        public var method: String?
        public var target: String?
        /// The `Range` header, if any.
        public var range: String?
        public var status: Int
        /// Body bytes written to the client.
        public var bytesSent: UInt64
        /// Seconds from the head's arrival to the end of the answer.
        public var seconds: Double
        /// Why the answer ended early (the client went away, the source failed), or why the
        /// request was refused (a 4xx or 5xx's text); nil when it went as planned.
        public var failure: String?
        /// Of the body bytes read for the answer, those from the cache and those from the
        /// origin during it (nil for an answer not read from a source: a refusal, a page).
        public var fromCache: UInt64?
        public var fromOrigin: UInt64?
    }

    public typealias Handler = @Sendable (HTTPServerRequest) async -> HTTPServerResponse

    public let options: Options
    private let handler: Handler
    private let state = Locked(State())
    /// The port it listens on (after ``start()``).
    public var port: Int { state.withLock { $0.listener?.port ?? 0 } }

    private struct State {
        var stopped = false
        var active: [ObjectIdentifier: SocketConnection] = [:]
        /// The listening socket and its accept loop (after ``start()``).
        var listener: Listener?
        /// Connections whose requests showed the secret (``Options/requiresTrust``).
        var trusted: Set<ObjectIdentifier> = []
        /// Connections waiting for a request head, with the order in which they began to wait.
        var waiting: [ObjectIdentifier: UInt64] = [:]
        var waits: UInt64 = 0
    }

    /// `accept` calls that failed other than for want of a connection, and the times the
    /// listening socket was made again after the system took it (``AcceptFailure``).
    public var acceptStatistics: (failures: Int, reopenings: Int) {
        state.withLock { $0.listener }?.statistics ?? (0, 0)
    }

    public init(options: Options = Options(), handler: @escaping Handler) {
        self.options = options
        self.handler = handler
    }

    deinit { stop() }

    /// The server's base URL, `http://HOST:PORT`.
    public var baseURL: String {
        let host = options.host.contains(":") ? "[\(options.host)]" : options.host
        return "http://\(host):\(port)"
    }

    /// Binds and starts accepting connections (on a dispatch queue of its own: ``Listener``).
    /// - Throws: ``MP4Error`` `.io` when the address cannot be bound.
    public func start() throws {
        let listener = try Listener(host: options.host, port: options.port)
        state.withLock { $0.listener = listener }
        listener.run { [self] client, lane in admit(client, on: lane) }
    }

    /// Checks that the listening socket still takes connections (the server connects to
    /// itself), and makes it again on the same port when it does not. An iOS app calls it when
    /// it returns to the foreground: XNU takes a suspended app's listening socket away without
    /// a word (``ListenerWatch``). Returns at once; the check runs on the server's own queue.
    public func checkListener() { state.withLock { $0.listener }?.check() }

    /// Shuts the listening socket down as Linux lets one be taken: for tests.
    package func simulateReclaimedListener() { state.withLock { $0.listener }?.simulateReclaimed() }

    /// Takes the listening socket away as XNU does from a suspended iOS app: for tests.
    package func simulateDefunctListener() { state.withLock { $0.listener }?.simulateDefunct() }

    /// Stops accepting, ends the connections being served and closes the socket.
    public func stop() {
        let (wasRunning, connections, listener) = state.withLock { state -> (Bool, [SocketConnection], Listener?) in
            defer { state.stopped = true; state.active = [:] }
            return (!state.stopped, Array(state.active.values), state.listener)
        }
        guard wasRunning else { return }
        for connection in connections { connection.shutdown() }
        listener?.stop()
    }

    /// Connections being served now.
    public var activeConnectionCount: Int { state.withLock { $0.active.count } }

    /// A connection the listener accepted: served on the lane it was accepted on (a queue of
    /// its own from now on), or, over ``Options/maxConnections``, refused at once (or, with
    /// ``Options/requiresTrust``, let in in place of the untrusted connection that has waited
    /// longest for a head).
    private func admit(_ client: Int32, on lane: ServingTask.Lane) {
        let connection = SocketConnection(fd: client, key: "client", waitsInline: true, capacity: 16 << 10)
        let (admitted, displaced) = state.withLock { state -> (Bool, SocketConnection?) in
            guard !state.stopped else { return (false, nil) }
            var displaced: SocketConnection?
            if state.active.count >= options.maxConnections {
                guard options.requiresTrust, let victim = Self.untrustedWaitingLongest(state) else { return (false, nil) }
                displaced = state.active.removeValue(forKey: victim)
                state.waiting[victim] = nil
            }
            state.active[ObjectIdentifier(connection)] = connection
            return (true, displaced)
        }
        displaced?.shutdown()
        guard admitted else {
            // Over the bound: refused at once rather than queued without limit.
            let refusal = Array("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\nRetry-After: 1\r\n\r\n".utf8)
            _ = refusal.withUnsafeBytes { mp4probe_send(client, $0.baseAddress, $0.count) }
            connection.close()
            lane.putBack()
            return
        }
        // Each connection runs on a queue of its own, not on the shared task pool: a pool kept
        // busy by other work (an app's, a test run's) must not stall the player's requests or
        // the server's timeouts.
        ServingTask.start(on: lane) { [self] in
            await serve(connection)
            state.withLock { state in
                let id = ObjectIdentifier(connection)
                state.active[id] = nil
                state.trusted.remove(id)
                state.waiting[id] = nil
            }
            connection.close()
        }
    }

    /// The untrusted connection that has waited longest for a request head, if any.
    private static func untrustedWaitingLongest(_ state: State) -> ObjectIdentifier? {
        state.waiting.filter { !state.trusted.contains($0.key) }.min { $0.value < $1.value }?.key
    }

    /// The `Host` values a request may carry: this server's own address, by number or as
    /// `localhost` (a browser tab that resolves an attacker's name to 127.0.0.1 sends that
    /// name instead, and is refused).
    private var allowedHosts: Set<String> {
        let port = self.port
        if let made = madeAllowedHosts.withLock({ $0 }), made.port == port { return made.hosts }
        var hosts: Set<String> = ["127.0.0.1:\(port)", "localhost:\(port)", "[::1]:\(port)"]
        hosts.insert(options.host.utf8.contains(UInt8(ascii: ":")) ? "[\(options.host)]:\(port)" : "\(options.host):\(port)")
        madeAllowedHosts.withLock { $0 = (port, hosts) }
        return hosts
    }
    /// How long a refused client's further bytes are read and dropped before the connection
    /// closes (``SocketConnection/drainBeforeClose(timeout:maxBytes:)``): 2 s in all, 1 s
    /// without a byte.
    static var lingering: WaitLimit { WaitLimit(idle: 1, deadline: .now + .seconds(2)) }

    /// ``allowedHosts`` as made for a port (not made again for each request).
    private let madeAllowedHosts = Locked<(port: Int, hosts: Set<String>)?>(nil)

    /// Serves the requests of one connection, one at a time, until it ends, fails a bound or
    /// the server stops: the head (``readHead(_:)``), then ``RequestDecision``, then the body
    /// and the handler's answer.
    private func serve(_ connection: SocketConnection) async {
        let idle = WaitLimit(idle: options.idleTimeout, deadline: nil)
        let id = ObjectIdentifier(connection)
        while !state.withLock({ $0.stopped }) {
            state.withLock { state in
                state.waits += 1
                state.waiting[id] = state.waits
            }
            // Until the body has arrived: the head's deadline (below) still runs.
            let readingHead = Locked(true)
            defer { readingHead.withLock { $0 = false } }
            let deadline = HeadDeadline(connection: connection, seconds: options.headTimeout, readingHead: readingHead)
            let read = await readHead(connection, idle: idle, deadline: deadline)
            state.withLock { _ = $0.waiting.removeValue(forKey: id) }
            let head: HTTPMessage.Head
            switch read {
            case .gone: return
            case .refused(let status, let text):
                await send(.text(status, text), to: connection, head: false, keepAlive: false)
                await connection.drainBeforeClose(timeout: Self.lingering)
                return
            case .head(let parsed): head = parsed
            }
            let (method, target, version) = head.startLine
            let seen = Self.request(method: method, target: target, headers: head.fields)
            switch RequestDecision.decide(method: method, version: version, fields: head.fields, options: options, allowedHosts: allowedHosts) {
            case .refuse(let status, let text, let keepAlive, let logged, let allow):
                var refusal = HTTPServerResponse.text(status, text)
                if let allow { refusal.headers.append(("Allow", allow)) }
                await send(refusal, to: connection, head: false, keepAlive: keepAlive, request: logged ? seen : nil)
                if !keepAlive {
                    // The refused request's body may still be coming (a 413).
                    await connection.drainBeforeClose(timeout: Self.lingering)
                    return
                }
            case .handle(let keepAlive, let bodyLength):
                var request = seen
                if bodyLength > 0 {
                    if connection.available.count < bodyLength { deadline.arm() }
                    while connection.available.count < bodyLength {
                        guard let received = try? await connection.fill(timeout: idle), received > 0 else { return }
                    }
                    request.body = Array(connection.available.prefix(bodyLength))
                    connection.consume(bodyLength)
                }
                readingHead.withLock { $0 = false }
                guard await answer(request, on: connection, keepAlive: keepAlive) else { return }
            }
        }
    }

    /// Sends the handler's answer to `request`; or, when it has not started within
    /// ``Options/responseStartTimeout``, a 504 in its place, and the handler's work is
    /// cancelled. Returns whether the connection goes on.
    private func answer(_ request: HTTPServerRequest, on connection: SocketConnection, keepAlive: Bool) async -> Bool {
        let started = Date(), start = ResponseStart(), id = ObjectIdentifier(connection)
        let timeout = options.responseStartTimeout
        return await withTaskGroup(of: Bool?.self) { group in
            group.addTask { [self] in
                let response = await handler(request)
                // An untrusted connection is closed after its answer (Options.requiresTrust).
                let trusted = state.withLock { state -> Bool in
                    if response.trustsConnection { state.trusted.insert(id) }
                    return state.trusted.contains(id)
                }
                let keep = keepAlive && (trusted || !options.requiresTrust)
                return await send(response, to: connection, head: request.method == "HEAD", keepAlive: keep, request: request, started: started, start: start) && keep
            }
            group.addTask { [self] in
                try? await ServingClock.shared.sleep(for: .milliseconds(Int64(timeout * 1000)))
                guard !Task.isCancelled, start.expire() else { return nil }
                let text = "no answer within \(HTTPByteSource.secondsText(timeout)) s: the origin (or the cache) did not respond in time"
                await send(.text(504, text), to: connection, head: false, keepAlive: false, request: request, started: started)
                // The client has its answer: it sees the end now, not when the cancelled work
                // has wound down (under a loaded pool that took a minute in the suite).
                connection.shutdown()
                return false
            }
            while let next = await group.next() {
                guard let goesOn = next else { continue }   // the deadline passed an answer under way
                group.cancelAll()
                return goesOn
            }
            return false
        }
    }

    /// What reading a request head gave.
    private enum HeadRead {
        case head(HTTPMessage.Head)
        /// Over a bound, or malformed: answered with `status` and the connection closed.
        case refused(Int, String)
        /// The client went, or was too slow.
        case gone
    }

    /// The bound on a request head's (and its body's) arrival: a timer of ``ServingClock``,
    /// outside the task pool and Dispatch's global queues, that ends the connection while
    /// `readingHead` holds (a busy pool or queue must not let a client that trickles its head
    /// hold a slot for longer: on Dispatch's global queue, a loaded AddressSanitizer suite in
    /// CI cut such a client after 6.1 s for a 0.5 s bound). Armed only when a head or body did
    /// not come whole in the first receive: most do, and a timer per request cost the server a
    /// thread's wake-up for each.
    private final class HeadDeadline: Sendable {
        private let armed = Locked(false)
        private let connection: SocketConnection
        private let seconds: TimeInterval
        private let readingHead: Locked<Bool>

        init(connection: SocketConnection, seconds: TimeInterval, readingHead: Locked<Bool>) {
            (self.connection, self.seconds, self.readingHead) = (connection, seconds, readingHead)
        }

        /// Starts the timer (once).
        func arm() {
            guard armed.withLock({ armed in defer { armed = true }; return !armed }) else { return }
            // Weakly: a served connection (and its 256 KiB buffer) must go when it ends,
            // not when this timer fires (each aborted request held it 10 s).
            ServingClock.shared.schedule(after: .seconds(seconds)) { [weak connection, readingHead] in
                if readingHead.withLock({ $0 }) { connection?.shutdown() }
            }
        }
    }

    /// Reads one request head, consuming it from the connection's buffer. The first byte may
    /// take the idle timeout, the whole head (and a body after it) at most ``Options/headTimeout``
    /// after that (`deadline`, armed once part of a head is there and more is awaited).
    private func readHead(_ connection: SocketConnection, idle: WaitLimit, deadline: HeadDeadline) async -> HeadRead {
        var scanned = 0
        while true {
            if let end = HTTPMessage.headEnd(connection.available, scanned: scanned) {
                let bytes = connection.available
                do {
                    let head = try HTTPMessage.parseHead(bytes[bytes.startIndex..<end])
                    connection.consume(end - bytes.startIndex)
                    return .head(head)
                } catch let error as HTTPMessage.Malformed where error.tooLarge {
                    // Over a bound whether it arrived whole or not (RFC 6585 §5).
                    return .refused(431, "request head too large: \(error)")
                } catch {
                    return .refused(400, "malformed request: \(error)")
                }
            }
            scanned = connection.available.count
            if scanned > HTTPMessage.maxHeadSize { return .refused(431, "request head too large") }
            if scanned > 0 { deadline.arm() }
            guard let received = try? await connection.fill(timeout: idle), received > 0 else { return .gone }
        }
    }

    /// The request for `target`: its path and query percent-decoded (an escape that is
    /// malformed leaves the text as it came). Splits on bytes, not characters: a request's
    /// path and query are ASCII delimiters in UTF-8, and Character-wise splitting was 4 % of a
    /// cached request's CPU.
    static func request(method: String, target: String, headers: HTTPFields) -> HTTPServerRequest {
        let bytes = Array(target.utf8)
        let question = bytes.firstIndex(of: UInt8(ascii: "?")) ?? bytes.endIndex
        var query: [String: String] = [:]
        if question < bytes.endIndex {
            for pair in bytes[(question + 1)...].split(separator: UInt8(ascii: "&")) {
                let equals = pair.firstIndex(of: UInt8(ascii: "=")) ?? pair.endIndex
                let value = equals < pair.endIndex ? pair[(equals + 1)...] : []
                query[decodedOrAsIs(pair[..<equals], plusIsSpace: true)] = decodedOrAsIs(value, plusIsSpace: true)
            }
        }
        return HTTPServerRequest(method: method, target: target, path: decodedOrAsIs(bytes[..<question], plusIsSpace: false), query: query, headers: headers)
    }

    private static func decodedOrAsIs(_ bytes: ArraySlice<UInt8>, plusIsSpace: Bool) -> String {
        percentDecoded(bytes, plusIsSpace: plusIsSpace) ?? String(decoding: bytes, as: UTF8.self)
    }

    /// `text` with its `%XX` escapes decoded (and, in a query, `+` as a space); nil when an
    /// escape is malformed or the result is not UTF-8 (as Foundation's `removingPercentEncoding`,
    /// which cost every request a tenth of the server's time in string bridging).
    static func percentDecoded(_ text: Substring, plusIsSpace: Bool) -> String? {
        percentDecoded(ArraySlice(text.utf8), plusIsSpace: plusIsSpace)
    }

    static func percentDecoded(_ text: ArraySlice<UInt8>, plusIsSpace: Bool) -> String? {
        guard text.contains(where: { $0 == 0x25 || (plusIsSpace && $0 == 0x2B) }) else { return String(decoding: text, as: UTF8.self) }
        func hex(_ byte: UInt8) -> UInt8? {
            switch byte {
            case 0x30...0x39: return byte - 0x30
            case 0x41...0x46: return byte - 0x41 + 10
            case 0x61...0x66: return byte - 0x61 + 10
            default: return nil
            }
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.count)
        var index = text.startIndex
        while index < text.endIndex {
            let byte = text[index]
            if byte == 0x25 {
                guard index + 2 < text.endIndex, let high = hex(text[index + 1]), let low = hex(text[index + 2]) else { return nil }
                bytes.append(high << 4 | low)
                index += 3
            } else {
                bytes.append(plusIsSpace && byte == 0x2B ? 0x20 : byte)
                index += 1
            }
        }
        return HTTPMessage.utf8(bytes[...])
    }

    /// Writes `response` (the head; the body unless `head`). Returns false when the
    /// connection cannot go on (a write failed, the body source failed midway: the client sees
    /// a short body, never wrong bytes). A source body's head goes with its first bytes: a
    /// source that fails before it has any (an uncached range with the origin down) is
    /// answered 502 with the reason instead of a 206 that never delivers.
    @discardableResult
    private func send(_ response: HTTPServerResponse, to connection: SocketConnection, head: Bool, keepAlive: Bool,
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
                group.addTask {
                    var result = Streamed()
                    do {
                        try await ReadTally.$current.withValue(tally) {
                            try await source.read(range) { piece in
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
                        }
                    } catch {
                        result.failure = error
                    }
                    return result
                }
                group.addTask {
                    var interval = 10
                    while !Task.isCancelled {
                        try? await ServingClock.shared.sleep(for: .milliseconds(interval))
                        if !Task.isCancelled && connection.peerHasGone() { return nil }
                        interval = min(interval * 2, 250)
                    }
                    return Streamed(watchEnded: true)
                }
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
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 416: return "Range Not Satisfiable"
        case 421: return "Misdirected Request"
        case 431: return "Request Header Fields Too Large"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        case 505: return "HTTP Version Not Supported"
        default: return "Status"
        }
    }
}
