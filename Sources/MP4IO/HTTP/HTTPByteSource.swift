import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import MP4Core

/// A ``ByteSource`` over HTTP(S) with `Range` requests: on Linux through mp4probe's own
/// HTTP/1.1 client over sockets (TLS by OpenSSL's libssl for `https:`); on Apple platforms
/// through URLSession. Either way bodies stream to the consumer as they
/// arrive, one request per read, with memory bounded by a few pieces (``HTTPClient``).
///
/// - The first request fetches a head window (``Options/headWindow``, 64 KiB by default) and
///   learns the total length from its `Content-Range`: no separate HEAD round trip. The head
///   is kept, so the parser's first read costs nothing more.
/// - `ETag` and `Last-Modified` of the first response are remembered and checked on every later
///   response (and sent as `If-Range`): a file that changed between two reads is an error,
///   never a mix of two versions.
/// - Transient failures (connection reset or dropped, timeouts, 5xx, 429 with `Retry-After`)
///   are retried a bounded number of times with backoff; a body cut short is resumed from the
///   first missing byte.
/// - A server that ignores `Range` (200 with the whole body) still works: the body is read up
///   to the bytes needed and the transfer cancelled; ``supportsRanges`` then says so.
public final class HTTPByteSource: ByteSource {
    /// Requests made and bytes received so far.
    public struct Statistics: Sendable, Hashable, Codable {
        public var requests: Int = 0
        /// Body bytes that arrived, used or not (a server that ignores `Range` sends the bytes
        /// before the range too, and more arrive before a transfer stops).
        public var bytesReceived: UInt64 = 0
        public var retries: Int = 0
    }

    struct State {
        var length: UInt64?
        var etag: String?
        var lastModified: String?
        var contentType: String?
        var supportsRanges = true
        var statistics = Statistics()
        /// Length and validator were given by ``presume(length:validator:)``, not learnt: no
        /// head request is made.
        var described = false
        /// Given and not yet confirmed by a `206` (then a `200` may also mean an origin that
        /// ignores `Range`, told apart by its validator).
        var presumed = false
        /// The last response came from a URL whose requests go through URLSession (a redirect
        /// may lead there).
        var answeredThroughURLSession = false
    }

    /// The URL.
    public let url: URL
    public let options: Options
    private let client: any HTTPClient
    /// Our own client, when requests go through it (else every one goes through URLSession).
    private let ownClient: HTTP1Client?
    /// The caller's headers, as every request sends them (validated, in a stable order).
    private let baseHeaders: HTTPFields
    private let state = Locked(State())
    private let headTask = Locked<Task<Void, any Error>?>(nil)
    /// The first response's body (the head window) as it arrives.
    private let head = HeadStream()

    /// When every read must have ended (``Options/maxTotalTime`` from creation), if ever.
    private let totalDeadline: ContinuousClock.Instant?

    /// A source for `url` (http or https).
    public init(url: URL, options: Options = Options()) throws {
        totalDeadline = options.maxTotalTime.map { ContinuousClock.now + Self.duration($0) }
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw MP4Error(.io, "\(url.absoluteString) is not an http(s) URL")
        }
        self.url = url
        var options = options
        options.timeout = max(options.timeout, 1)
        options.credentialHeaders = Set(options.credentialHeaders.map { $0.lowercased() })
        self.options = options
        for (name, value) in options.headers {
            guard HTTPRequest.isValidHeaderName(name) else { throw MP4Error(.invalidRequest, "header name '\(name)' is not a valid HTTP field name") }
            guard HTTPRequest.isValidHeaderValue(value) else { throw MP4Error(.invalidRequest, "the value of header \(name) contains a line break or NUL (it would inject headers)") }
        }
        self.baseHeaders = HTTPFields(options.headers.filter { !["range", "accept-encoding", "if-range"].contains($0.key.lowercased()) }
            .sorted { $0.key < $1.key }.map { (name: $0.key, value: $0.value) })
        let tls = URLSessionClient(timeout: options.timeout, maxRedirects: options.maxRedirects, allowsInsecureRedirects: options.allowsInsecureRedirects,
                                   credentialHeaders: options.credentialHeaders, caFile: options.caFile)
        if Self.usesOwnClient(options.client, proxyConfigured: Self.proxyConfigured()) {
            let own = HTTP1Client(maxRedirects: options.maxRedirects, allowsInsecureRedirects: options.allowsInsecureRedirects, caFile: options.caFile, fallback: tls)
            self.client = own
            self.ownClient = own
        } else {
            self.client = tls
            self.ownClient = nil
        }
    }

    deinit { client.invalidate() }

    /// Whether `http:` requests go through mp4probe's own HTTP/1.1 client over BSD sockets
    /// rather than URLSession. Never on Apple platforms: there sockets bypass the system proxy
    /// and PAC, App Transport Security, and the system's bringing up of cellular or an
    /// on-demand VPN, which URLSession honours. On Linux for `.automatic` without a proxy in
    /// the environment (streamed bodies; libcurl's URLSession collects them).
    static func usesOwnClient(_ client: Options.Client, proxyConfigured: Bool, onApplePlatform: Bool = isApplePlatform) -> Bool {
        client == .automatic && !proxyConfigured && !onApplePlatform
    }

    #if canImport(Darwin)
    static let isApplePlatform = true
    #else
    static let isApplePlatform = false
    #endif

    /// Whether the environment names an HTTP proxy (`http_proxy`, `HTTP_PROXY`, `all_proxy`,
    /// `ALL_PROXY`): then URLSession (libcurl), which honours it, makes the requests.
    static func proxyConfigured(_ environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        ["http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY"].contains { !(environment[$0] ?? "").isEmpty }
    }

    /// Whether `name` can be sent as a header name (an HTTP token).
    public static func isValidHeaderName(_ name: String) -> Bool { HTTPRequest.isValidHeaderName(name) }
    /// Whether `value` can be sent as a header value: no CR, LF or NUL.
    public static func isValidHeaderValue(_ value: String) -> Bool { HTTPRequest.isValidHeaderValue(value) }

    public var name: String { url.absoluteString }
    public var preferredReadSize: Int { options.headWindow }
    /// Every request is a round trip.
    public var isRemote: Bool { true }

    /// Whether the server honoured `Range` (known after the first request).
    public var supportsRanges: Bool { state.withLock { $0.supportsRanges } }
    /// Requests made and bytes received so far.
    public var statistics: Statistics { state.withLock { $0.statistics } }

    /// The `ETag` (or `Last-Modified`) of the first response.
    public func validator() async throws -> String? {
        try await fetchHead()
        return state.withLock { $0.etag ?? $0.lastModified }
    }

    /// The first response's `Content-Type` and `Last-Modified` (values that are not one
    /// printable line of at most 256 bytes are dropped).
    public func attributes() async throws -> ResourceAttributes {
        try await fetchHead()
        return state.withLock { ResourceAttributes(contentType: $0.contentType, lastModified: $0.lastModified.flatMap(Self.passable)) }
    }

    public func length() async throws -> UInt64 {
        try await fetchHead()
        guard let length = state.withLock({ $0.length }) else { throw MP4Error(.io, "\(name): the server did not say how long the file is") }
        return length
    }

    public func read(_ range: Range<UInt64>) async throws -> [UInt8] {
        try await fetchHead()
        let upper = min(range.upperBound, state.withLock { $0.length ?? 0 })
        guard range.lowerBound < upper else { return [] }
        var result: [UInt8] = []
        result.reserveCapacity(Int(upper - range.lowerBound))
        try await read(range.lowerBound..<upper) { result.append(contentsOf: $0) }
        return result
    }

    /// Streams `range`: one request whose body goes to `consume` as it arrives (through
    /// URLSession, requests of at most ``Options/maxURLSessionRequest``, each streamed),
    /// resumed from the first byte not delivered when it is cut short.
    public func read(_ range: Range<UInt64>, into consume: (ArraySlice<UInt8>) async throws -> Void) async throws {
        try await fetchHead()
        let length = state.withLock { $0.length ?? 0 }
        let upper = min(range.upperBound, length)
        guard range.lowerBound < upper else { return }
        var offset = range.lowerBound
        // The head window as it arrives (a presumed description made no head request).
        if offset < UInt64(max(options.headWindow, 16)), headTask.withLock({ $0 != nil }) {
            offset = try await head.deliver(from: offset, to: upper, into: consume)
        }
        // Through URLSession, requests of a bounded size (Options.maxURLSessionRequest).
        let bounded = goesThroughURLSession(url) || state.withLock { $0.answeredThroughURLSession }
        let step = bounded ? UInt64(max(options.maxURLSessionRequest, 1 << 16)) : UInt64.max
        while offset < upper {
            let end = upper - offset > step ? offset + step : upper
            try await fetch(offset..<end, deliver: consume)
            offset = end
        }
    }

    /// Whether requests for `url` are made by URLSession.
    private func goesThroughURLSession(_ url: URL) -> Bool {
        ownClient?.handsOver(url) ?? true
    }

    /// Takes `length` and `validator` (what ``validator()`` returned for this URL before: an
    /// entity tag or a `Last-Modified` date) as the resource's, without asking the server:
    /// no head request is made, every request carries `If-Range` with the validator, and
    /// every response is checked against both, so a changed resource fails with cause
    /// ``MP4Error/Cause/sourceChanged`` before any of its bytes is delivered. A cache uses it
    /// for an entry it holds: the first missing byte costs one request, not two.
    ///
    /// Returns `false` and changes nothing when the source has already made a request, or
    /// the validator cannot be sent as `If-Range` (none, a weak entity tag, or neither form).
    func presume(length: UInt64, validator: String?) -> Bool {
        guard length <= UInt64(Int64.max), let validator else { return false }
        let isTag = validator.hasPrefix("\""), isDate = validator.hasSuffix(" GMT")
        guard isTag || isDate else { return false }
        return headTask.withLock { task in
            guard task == nil else { return false }
            return state.withLock { state in
                guard state.length == nil, state.statistics.requests == 0 else { return false }
                state.length = length
                if isTag { state.etag = validator } else { state.lastModified = validator }
                state.described = true
                state.presumed = true
                return true
            }
        }
    }

    /// The first request, made once: the head window and the total length. Returns once the
    /// response's head is checked (the length and validators are known then) and its first
    /// bytes are here; the rest of the window streams on (``HeadStream``).
    private func fetchHead() async throws {
        if state.withLock({ $0.described }) { return }
        let task = headTask.withLock { current -> Task<Void, any Error> in
            if let current { return current }
            let made = ServingTask.startThrowing { try await self.loadHead() }
            current = made
            return made
        }
        await head.waitDescribed()
        try Task.checkCancellation()
        // Failed before its first byte (or there was no body): its error, or what it learnt.
        if head.hasEnded && head.count == 0 { try await task.value }
    }

    private func loadHead() async throws {
        defer { head.end() }
        try await fetch(0..<UInt64(max(options.headWindow, 16)), learning: true) { head.append($0) }
    }

    private func request(_ range: Range<UInt64>) -> HTTPRequest {
        var headers = baseHeaders
        headers.append(("Range", "bytes=\(range.lowerBound)-\(range.upperBound - 1)"))
        headers.append(("Accept-Encoding", "identity"))
        let (etag, modified) = state.withLock { ($0.etag, $0.lastModified) }
        if let etag, !etag.hasPrefix("W/") {
            headers.append(("If-Range", etag))
        } else if let modified {
            headers.append(("If-Range", modified))
        }
        return HTTPRequest(url: url, headers: headers, timeout: options.timeout, credentialHeaders: options.credentialHeaders)
    }

    /// Records the resource's length, refusing what no file can be (more than 2^63 - 1 bytes:
    /// file offsets are signed 64-bit, and the cache sizes its data file to the length).
    private func learn(length: UInt64) throws {
        guard length <= UInt64(Int64.max) else { throw MP4Error(.io, "\(name): the server claims a length of \(length) bytes") }
        state.withLock { $0.length = length }
    }

    /// A `200` to a request made on a presumed description (``presume(length:validator:)``)
    /// is the resource only when it carries the presumed validator and length: otherwise
    /// `If-Range` did not match, and the resource changed.
    private func confirmWhole(_ head: HTTPResponseHead) throws {
        let (etag, modified, length) = state.withLock { ($0.etag, $0.lastModified, $0.length) }
        let sameTag = etag != nil && head.header("etag") == etag
        let sameDate = etag == nil && modified != nil && head.header("last-modified") == modified
        let sameLength = head.header("content-length").flatMap { UInt64($0.trimmingSpaces()) }.map { $0 == length } ?? true
        guard (sameTag || sameDate) && sameLength else {
            throw MP4Error(.io, "\(name) changed on the server since it was cached (If-Range did not match); nothing of it was used").caused(by: .sourceChanged)
        }
    }

    /// Checks (or, on the first response, records) the validators.
    private func validate(_ exchange: HTTPResponseHead, learning: Bool) throws {
        let etag = exchange.header("etag"), modified = exchange.header("last-modified")
        try state.withLock { state in
            if learning && state.length == nil {
                state.etag = etag
                state.lastModified = modified
                state.contentType = exchange.header("content-type").flatMap(Self.passable)
                return
            }
            if let known = state.etag, let etag, known != etag {
                throw MP4Error(.io, "\(name) changed on the server between two reads (ETag \(known) → \(etag)); open it again").caused(by: .sourceChanged)
            }
            if state.etag == nil, let known = state.lastModified, let modified, known != modified {
                throw MP4Error(.io, "\(name) changed on the server between two reads (Last-Modified \(known) → \(modified)); open it again").caused(by: .sourceChanged)
            }
        }
    }

    /// The error of a read past `deadline` (the read's own, or the total one).
    private func tooSlow(_ deadline: ContinuousClock.Instant?, at offset: UInt64) -> MP4Error {
        let total = totalDeadline.map { $0 == deadline } ?? false
        let seconds = (total ? options.maxTotalTime : options.maxTime) ?? 0
        return MP4Error(.io, "\(name): \(total ? "reading" : "the read") took longer than \(seconds) s in all (--max-time)", offset: offset)
    }

    /// Fetches `range` and hands its bytes to `deliver` in order, with retries and resumption
    /// from the first byte not delivered. Every response is checked (status, `Content-Range`,
    /// validators) before any of its body is delivered, so a changed file never contributes a
    /// byte. With `learning`, the response also sets the length and validators (the first
    /// request), and whatever the window held is delivered.
    private func fetch(_ range: Range<UInt64>, learning: Bool = false, deliver: (ArraySlice<UInt8>) async throws -> Void) async throws {
        var wanted = range
        var attempt = 0
        let perRead = options.maxTime.map { ContinuousClock.now + Self.duration($0) }
        let deadline = [perRead, totalDeadline].compactMap { $0 }.min()
        // Until a response head has come, the waiting for it is bounded in all, retries included.
        var headBudget: WaitBudget? = WaitBudget(seconds: options.maxHeadTime)
        let pastDeadline = { deadline.map { ContinuousClock.now >= $0 } ?? false }
        let tooSlow = { self.tooSlow(deadline, at: wanted.lowerBound) }
        if pastDeadline() { throw tooSlow() }
        func retry(after delay: Double?, _ why: String) async throws {
            attempt += 1
            if pastDeadline() { throw tooSlow() }
            guard attempt <= options.maxRetries else { throw MP4Error(.io, "\(name): \(why) (gave up after \(options.maxRetries) retries)", offset: wanted.lowerBound) }
            state.withLock { $0.statistics.retries += 1 }
            let seconds = RangeFetch.wait(attempt: attempt, retryAfter: delay, options: options)
            if let deadline, ContinuousClock.now + Self.duration(seconds) >= deadline {
                // Said as it happened: the wait asked for would pass the limit (not "took longer").
                let limit = (self.totalDeadline == deadline ? options.maxTotalTime : options.maxTime) ?? 0
                throw MP4Error(.io, "\(name): \(why); the next try would come after \(Self.secondsText(seconds)) s\(delay != nil ? " (the server's Retry-After)" : ""), past the \(Self.secondsText(limit)) s limit (--max-time): gave up", offset: wanted.lowerBound)
            }
            try await Task.sleep(for: Self.duration(seconds))
        }
        while !wanted.isEmpty {
            // Bytes of this response's body to deliver (set by the head check), and delivered.
            var expected = 0, given = 0
            let outcome: HTTPOutcome
            do {
                state.withLock { $0.statistics.requests += 1 }
                // A 200 answer starts at byte 0: the bytes before the range are dropped as
                // they arrive, so memory stays bounded by the range.
                var request = request(wanted)
                request.deadline = deadline
                request.headBudget = headBudget
                outcome = try await client.get(request, limit: Int(clamping: wanted.count), skipWhole: Int(clamping: wanted.lowerBound), head: { head in
                    headBudget = nil
                    (wanted, expected) = try checkHead(head, wanted: wanted, learning: learning)
                }, body: { bytes in
                    let take = bytes.prefix(max(0, expected - given))
                    given += take.count
                    guard !take.isEmpty else { return }
                    do {
                        try await deliver(take)
                    } catch {
                        throw ReaderFailure(error: error)
                    }
                })
            } catch let failure as ReaderFailure {
                // The reader's own error (it stopped taking bytes): passed on as it is.
                throw failure.error
            } catch {
                if let headBudget, headBudget.isSpent, !pastDeadline() {
                    throw MP4Error(.io, "\(name): no response within \(Self.secondsText(options.maxHeadTime)) s (connecting, the TLS handshake and the response head, retries included): the server is too slow or holds the connection open without answering", offset: wanted.lowerBound)
                }
                try await retry(after: nil, try retryReason(for: error, pastDeadline: pastDeadline(), tooSlow: tooSlow, at: wanted.lowerBound))
                continue
            }
            state.withLock { $0.statistics.bytesReceived += UInt64(outcome.received) }
            let response = RangeFetch.Response(status: outcome.status, given: given, expected: expected, skipped: outcome.skipped, paused: outcome.paused,
                                               complete: outcome.error == nil && !outcome.stoppedAtLimit, contentRange: outcome.header("content-range"),
                                               retryAfter: outcome.header("retry-after"), location: outcome.header("location"), url: outcome.head.url,
                                               bodyFailure: outcome.error.flatMap { $0.userInfo[NSLocalizedDescriptionKey] as? String })
            switch RangeFetch.after(response, wanted: wanted, learning: learning, knownLength: state.withLock { $0.length }, name: name, maxRedirects: options.maxRedirects) {
            case .done: return
            case .next(let rest): wanted = rest
            case .retry(let rest, let why, let retryAfter):
                wanted = rest
                try await retry(after: retryAfter, why)
            case .learnedWhole(let length):
                try learn(length: length)
                return
            case .empty:
                state.withLock { $0.length = 0 }
                return
            case .fail(let error): throw error
            }
        }
    }

    /// Checks a response's head before any of its body is delivered (status, codings,
    /// `Content-Range` against `wanted`, validators); with `learning`, records the length and
    /// validators. Returns the range to deliver (clamped to a length just learned) and the
    /// bytes of this body to hand on (0 for a status that delivers nothing).
    private func checkHead(_ head: HTTPResponseHead, wanted given: Range<UInt64>, learning: Bool) throws -> (wanted: Range<UInt64>, expected: Int) {
        var wanted = given
        var expected = 0
        if goesThroughURLSession(head.url) { state.withLock { $0.answeredThroughURLSession = true } }
        if head.status == 200 || head.status == 206 { try Self.checkCodings(head, name: name) }
        switch head.status {
        case 206:
            guard let contentRange = head.header("content-range").flatMap(Self.parseContentRange) else {
                throw MP4Error(.io, "\(name): 206 response without a valid Content-Range (\(head.header("content-range") ?? "missing"))", offset: wanted.lowerBound)
            }
            guard contentRange.first == wanted.lowerBound, contentRange.last < wanted.upperBound || learning else {
                throw MP4Error(.io, "\(name): asked for bytes \(wanted.lowerBound)-\(wanted.upperBound - 1), the server sent \(contentRange.first)-\(contentRange.last)", offset: wanted.lowerBound)
            }
            // A Content-Length must count the bytes the Content-Range names.
            // (Compared as `length - 1` and `last - first`: `last + 1` may overflow.)
            if let length = head.header("content-length"),
               UInt64(length.trimmingSpaces()).map({ $0 == 0 || $0 - 1 != contentRange.last - contentRange.first }) ?? true {
                throw MP4Error(.io, "\(name): Content-Length \(length) does not match Content-Range bytes \(contentRange.first)-\(contentRange.last)", offset: wanted.lowerBound)
            }
            try validate(head, learning: learning)
            if learning {
                guard let total = contentRange.total else { throw MP4Error(.io, "\(name): Content-Range does not give the file's length") }
                try learn(length: total)
                wanted = wanted.lowerBound..<min(wanted.upperBound, total)
            } else if let total = contentRange.total, total != state.withLock({ $0.length }) {
                throw MP4Error(.io, "\(name) changed on the server: its length went from \(state.withLock { $0.length ?? 0 }) to \(total) bytes").caused(by: .sourceChanged)
            } else {
                state.withLock { $0.presumed = false }
            }
            // `last` may be anything up to 2^64-1 in a learning answer: no `last + 1`.
            expected = Int(min(contentRange.last, wanted.upperBound - 1) + 1 - wanted.lowerBound)
        case 200:
            let (validated, presumed) = state.withLock { ($0.etag != nil || $0.lastModified != nil, $0.presumed) }
            if presumed {
                // Either If-Range did not match or the origin ignores Range: the
                // same validator and length say which.
                try confirmWhole(head)
            } else if !learning && validated && supportsRanges {
                // If-Range did not match: the file is not the one we started reading.
                throw MP4Error(.io, "\(name) changed on the server between two reads (If-Range did not match); open it again").caused(by: .sourceChanged)
            }
            try validate(head, learning: learning)
            let first = state.withLock { state -> Bool in
                defer { state.supportsRanges = false }
                return state.supportsRanges
            }
            if first {
                options.warn?("\(name): the server ignores Range requests and sends the whole file from its first byte; every read downloads everything before the bytes it needs")
            }
            if learning, let total = head.header("content-length").flatMap({ UInt64($0) }) {
                try learn(length: total)
                wanted = wanted.lowerBound..<min(wanted.upperBound, total)
            }
            expected = Int(clamping: wanted.count)
        case 416 where learning:
            try validate(head, learning: true)
        default:
            break
        }
        return (wanted, expected)
    }
}

/// An error thrown by the reader of a streamed response (not by the transfer), carried through
/// the client so that it reaches the caller unchanged, never retried or relabelled.
struct ReaderFailure: Error {
    let error: any Error
}
