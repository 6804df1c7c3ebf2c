import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import MP4Core

/// A ``ByteSource`` over HTTP(S) with `Range` requests (URLSession; FoundationNetworking on
/// Linux).
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
    /// How requests are made.
    public struct Options: Sendable {
        /// Bytes of the first request (64 KiB: `ftyp` and a small front `moov` in one request,
        /// yet little waste when `moov` is at the end).
        public var headWindow: Int = 64 << 10
        /// Extra request headers (e.g. `Authorization`).
        public var headers: [String: String] = [:]
        /// Seconds without progress before a request fails (at least 1: FoundationNetworking
        /// on Linux times a shorter interval out at once).
        public var timeout: TimeInterval = 30
        /// Retries of one read after transient failures.
        public var maxRetries: Int = 3
        /// First backoff delay, seconds (doubled per retry).
        public var retryDelay: Double = 0.2
        /// Longest `Retry-After` honoured, seconds.
        public var maxRetryAfter: Double = 30
        /// Redirects followed per request.
        public var maxRedirects: Int = 5

        public init() {}
    }

    /// Requests made and bytes received so far.
    public struct Statistics: Sendable, Hashable, Codable {
        public var requests: Int = 0
        public var bytesReceived: UInt64 = 0
        public var retries: Int = 0
    }

    struct State {
        var length: UInt64?
        var head: [UInt8] = []
        var etag: String?
        var lastModified: String?
        var supportsRanges = true
        var statistics = Statistics()
    }

    /// The URL.
    public let url: URL
    public let options: Options
    private let transport: HTTPTransport
    private let state = Locked(State())
    private let headTask = Locked<Task<Void, any Error>?>(nil)

    /// A source for `url` (http or https).
    public init(url: URL, options: Options = Options()) throws {
        guard let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https" else {
            throw MP4Error(.io, "\(url.absoluteString) is not an http(s) URL")
        }
        self.url = url
        var options = options
        options.timeout = max(options.timeout, 1)
        self.options = options
        self.transport = HTTPTransport(timeout: options.timeout, maxRedirects: options.maxRedirects)
    }

    deinit { transport.invalidate() }

    public var name: String { url.absoluteString }
    public var preferredReadSize: Int { options.headWindow }

    /// Whether the server honoured `Range` (known after the first request).
    public var supportsRanges: Bool { state.withLock { $0.supportsRanges } }
    /// Requests made and bytes received so far.
    public var statistics: Statistics { state.withLock { $0.statistics } }

    /// The `ETag` (or `Last-Modified`) of the first response.
    public func validator() async throws -> String? {
        try await fetchHead()
        return state.withLock { $0.etag ?? $0.lastModified }
    }

    public func length() async throws -> UInt64 {
        try await fetchHead()
        guard let length = state.withLock({ $0.length }) else { throw MP4Error(.io, "\(name): the server did not say how long the file is") }
        return length
    }

    public func read(_ range: Range<UInt64>) async throws -> [UInt8] {
        try await fetchHead()
        let (length, head) = state.withLock { ($0.length ?? 0, $0.head) }
        let upper = min(range.upperBound, length)
        guard range.lowerBound < upper else { return [] }
        if upper <= UInt64(head.count) { return Array(head[Int(range.lowerBound)..<Int(upper)]) }
        return try await fetch(range.lowerBound..<upper)
    }

    /// The first request, made once: the head window and the total length.
    private func fetchHead() async throws {
        let task = headTask.withLock { current -> Task<Void, any Error> in
            if let current { return current }
            let made = Task { try await self.loadHead() }
            current = made
            return made
        }
        try await task.value
    }

    private func loadHead() async throws {
        let bytes = try await fetch(0..<UInt64(max(options.headWindow, 16)), learning: true)
        state.withLock { $0.head = bytes }
    }

    private func request(_ range: Range<UInt64>) -> URLRequest {
        var request = URLRequest(url: url)
        request.timeoutInterval = options.timeout
        for (key, value) in options.headers { request.setValue(value, forHTTPHeaderField: key) }
        request.setValue("bytes=\(range.lowerBound)-\(range.upperBound - 1)", forHTTPHeaderField: "Range")
        request.setValue("identity", forHTTPHeaderField: "Accept-Encoding")
        let (etag, modified) = state.withLock { ($0.etag, $0.lastModified) }
        if let etag, !etag.hasPrefix("W/") {
            request.setValue(etag, forHTTPHeaderField: "If-Range")
        } else if let modified {
            request.setValue(modified, forHTTPHeaderField: "If-Range")
        }
        return request
    }

    /// Parses `bytes a-b/total` (total may be `*`).
    static func parseContentRange(_ text: String) -> (first: UInt64, last: UInt64, total: UInt64?)? {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        guard trimmed.lowercased().hasPrefix("bytes ") else { return nil }
        let spec = trimmed.dropFirst(6)
        let parts = spec.split(separator: "/", maxSplits: 1)
        guard parts.count == 2 else { return nil }
        let bounds = parts[0].split(separator: "-")
        guard bounds.count == 2, let first = UInt64(bounds[0]), let last = UInt64(bounds[1]), first <= last else { return nil }
        return (first, last, parts[1] == "*" ? nil : UInt64(parts[1]))
    }

    /// Checks (or, on the first response, records) the validators.
    private func validate(_ exchange: HTTPExchange, learning: Bool) throws {
        let etag = exchange.header("etag"), modified = exchange.header("last-modified")
        try state.withLock { state in
            if learning && state.length == nil {
                state.etag = etag
                state.lastModified = modified
                return
            }
            if let known = state.etag, let etag, known != etag {
                throw MP4Error(.io, "\(name) changed on the server between two reads (ETag \(known) → \(etag)); open it again")
            }
            if state.etag == nil, let known = state.lastModified, let modified, known != modified {
                throw MP4Error(.io, "\(name) changed on the server between two reads (Last-Modified \(known) → \(modified)); open it again")
            }
        }
    }

    /// The bytes of `range`, with retries and resumption. With `learning`, the response also
    /// sets the length and validators (the first request).
    private func fetch(_ range: Range<UInt64>, learning: Bool = false) async throws -> [UInt8] {
        var result: [UInt8] = []
        var wanted = range
        var attempt = 0
        func retry(after delay: Double?, _ why: String) async throws {
            attempt += 1
            guard attempt <= options.maxRetries else { throw MP4Error(.io, "\(name): \(why) (gave up after \(options.maxRetries) retries)", offset: wanted.lowerBound) }
            state.withLock { $0.statistics.retries += 1 }
            let seconds = min(delay ?? options.retryDelay * Double(1 << (attempt - 1)), options.maxRetryAfter)
            try await Task.sleep(nanoseconds: UInt64(seconds * 1e9))
        }
        while result.count < Int(range.count) {
            let supportsRanges = state.withLock { $0.supportsRanges }
            let exchange: HTTPExchange
            do {
                state.withLock { $0.statistics.requests += 1 }
                // A 200 answer starts at byte 0: the bytes before the range are dropped as
                // they arrive, so memory stays bounded by the range.
                exchange = try await transport.perform(request(wanted), limit: Int(wanted.count), skipWhole: Int(wanted.lowerBound))
            } catch let error as URLError where Self.isTransient(error) {
                try await retry(after: nil, "network error: \(error.localizedDescription)")
                continue
            } catch {
                throw MP4Error(.io, "\(name): request failed: \(error.localizedDescription)", offset: wanted.lowerBound)
            }
            state.withLock { $0.statistics.bytesReceived += UInt64(exchange.body.count) }
            switch exchange.status {
            case 206:
                guard let contentRange = exchange.header("content-range").flatMap(Self.parseContentRange) else {
                    throw MP4Error(.io, "\(name): 206 response without a valid Content-Range (\(exchange.header("content-range") ?? "missing"))", offset: wanted.lowerBound)
                }
                guard contentRange.first == wanted.lowerBound, contentRange.last < wanted.upperBound || learning else {
                    throw MP4Error(.io, "\(name): asked for bytes \(wanted.lowerBound)-\(wanted.upperBound - 1), the server sent \(contentRange.first)-\(contentRange.last)", offset: wanted.lowerBound)
                }
                try validate(exchange, learning: learning)
                if learning {
                    guard let total = contentRange.total else { throw MP4Error(.io, "\(name): Content-Range does not give the file's length") }
                    state.withLock { $0.length = total }
                    wanted = wanted.lowerBound..<min(wanted.upperBound, total)
                } else if let total = contentRange.total, total != state.withLock({ $0.length }) {
                    throw MP4Error(.io, "\(name) changed on the server: its length went from \(state.withLock { $0.length ?? 0 }) to \(total) bytes")
                }
                let expected = Int(min(contentRange.last + 1, wanted.upperBound) - wanted.lowerBound)
                let body = exchange.body.prefix(expected)
                result.append(contentsOf: body)
                wanted = (wanted.lowerBound + UInt64(body.count))..<wanted.upperBound
                if learning { return result }  // the head: whatever the window held
                if body.count < expected || !wanted.isEmpty {
                    // Cut short (dropped connection, short body): fetch only the missing part.
                    try await retry(after: nil, "the response ended after \(body.count) of \(expected) bytes")
                }
            case 200:
                if !learning && (state.withLock { $0.etag != nil || $0.lastModified != nil }) && supportsRanges {
                    // If-Range did not match: the file is not the one we started reading.
                    throw MP4Error(.io, "\(name) changed on the server between two reads (If-Range did not match); open it again")
                }
                try validate(exchange, learning: learning)
                state.withLock { $0.supportsRanges = false }
                if learning {
                    guard let total = exchange.header("content-length").flatMap({ UInt64($0) }) ?? (exchange.error == nil && !exchange.stoppedAtLimit ? UInt64(exchange.body.count) : nil) else {
                        throw MP4Error(.io, "\(name): the server ignores Range and does not say how long the file is")
                    }
                    state.withLock { $0.length = total }
                    wanted = wanted.lowerBound..<min(wanted.upperBound, total)
                }
                // The whole body from 0, minus the `skipped` bytes before the range.
                let keep = exchange.skipped == Int(wanted.lowerBound) ? exchange.body.prefix(Int(wanted.count)) : []
                result.append(contentsOf: keep)
                wanted = (wanted.lowerBound + UInt64(keep.count))..<wanted.upperBound
                if wanted.isEmpty || (learning && exchange.error == nil && !exchange.stoppedAtLimit) { return result }
                try await retry(after: nil, "the response ended after \(exchange.skipped + exchange.body.count) bytes")
            case 416 where learning:
                // `bytes=0-…` not satisfiable: an empty file (`Content-Range: bytes */0`).
                guard exchange.header("content-range").map({ $0.trimmingCharacters(in: .whitespaces) == "bytes */0" }) ?? true else {
                    throw MP4Error(.io, "\(name): 416 for the first bytes of the file (\(exchange.header("content-range") ?? "no Content-Range"))")
                }
                try validate(exchange, learning: true)
                state.withLock { $0.length = 0 }
                return []
            case 416:
                throw MP4Error(.io, "\(name): 416 range \(wanted.lowerBound)-\(wanted.upperBound - 1) not satisfiable (the file is shorter than \(state.withLock { $0.length ?? 0 }) bytes: changed on the server?)", offset: wanted.lowerBound)
            case 429, 500...599:
                let retryAfter = exchange.header("retry-after").flatMap { Double($0.trimmingCharacters(in: .whitespaces)) }
                try await retry(after: retryAfter, "HTTP \(exchange.status)")
            default:
                throw MP4Error(.io, "\(name): HTTP \(exchange.status)\(exchange.status == 404 ? " (not found)" : exchange.status == 401 || exchange.status == 403 ? " (not allowed: --header \"Authorization: ...\"?)" : "")", offset: wanted.lowerBound)
            }
        }
        return result
    }

    static func isTransient(_ error: URLError) -> Bool {
        [.networkConnectionLost, .timedOut, .cannotConnectToHost, .notConnectedToInternet, .cannotFindHost, .dnsLookupFailed, .badServerResponse].contains(error.code)
    }
}
