import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How long one wait on the network may last: the idle timeout, cut short by the request's
/// deadline. Evaluated at every wait, so a server that sends a byte now and then still meets
/// the deadline.
struct WaitLimit: Sendable {
    var idle: TimeInterval
    var deadline: ContinuousClock.Instant?
    /// Seconds of waiting on the peer allowed in all, shared by every wait that carries it.
    var budget: WaitBudget? = nil

    /// Seconds the next wait may last (at least a millisecond).
    var seconds: TimeInterval {
        var seconds = idle
        if let deadline {
            let left = ContinuousClock.now.duration(to: deadline)
            seconds = min(seconds, Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18)
        }
        if let budget { seconds = min(seconds, budget.remaining) }
        return max(0.001, seconds)
    }
}

/// Seconds a peer may keep us waiting in all, over several waits and requests (a response
/// head's, retries included: ``HTTPByteSource/Options/maxHeadTime``). Spent only while a
/// socket wait is under way, not while the task waits for a thread: a loaded machine that
/// runs a task late does not spend it (a wall-clock deadline of 45 s expired in a loaded
/// test suite whose server answered at once).
final class WaitBudget: Sendable {
    private let left: Locked<Double>

    init(seconds: Double) { left = Locked(seconds) }

    var remaining: Double { left.withLock { max(0, $0) } }
    var isSpent: Bool { remaining <= 0 }

    /// Takes off the seconds a wait lasted.
    func spend(_ seconds: Double) { left.withLock { $0 -= seconds } }

    /// Runs `wait` (a blocking socket wait) and takes off what it lasted.
    func measuring<T>(_ wait: () -> T) -> T {
        let start = ContinuousClock.now
        defer {
            let spent = ContinuousClock.now - start
            spend(Double(spent.components.seconds) + Double(spent.components.attoseconds) / 1e18)
        }
        return wait()
    }
}

/// One GET as the HTTP clients take it.
struct HTTPRequest: Sendable {
    var url: URL
    /// Header fields in order (names as given). `Host`, `Connection` and framing headers are
    /// the client's.
    var headers: HTTPFields
    /// Seconds without progress (connecting, sending, receiving) before the request fails.
    var timeout: TimeInterval
    /// When the request fails however steadily bytes arrive (`--max-time`), if ever.
    var deadline: ContinuousClock.Instant? = nil

    /// The waiting allowed until a response head has arrived (connect, TLS and head), if
    /// bounded: a server that drips its handshake or head is never idle long enough for
    /// `timeout`.
    var headBudget: WaitBudget? = nil

    /// What bounds each wait of this request.
    var waitLimit: WaitLimit { WaitLimit(idle: timeout, deadline: deadline) }
    /// What bounds each wait until the response head has arrived.
    var headWaitLimit: WaitLimit { WaitLimit(idle: timeout, deadline: deadline, budget: headBudget) }
    /// Lower-cased names of the headers that carry credentials: dropped when a redirect leaves
    /// the origin (scheme, host or port), as curl does.
    var credentialHeaders: Set<String>

    /// Whether a redirect from `from` to `to` leaves TLS (`https:` to `http:`): not followed
    /// unless asked (``HTTPByteSource/Options/allowsInsecureRedirects``), by either client.
    static func isDowngrade(from: URL, to: URL) -> Bool {
        from.scheme?.lowercased() == "https" && to.scheme?.lowercased() == "http"
    }

    /// The headers a redirect to `target` keeps: all of them on the same origin, all but the
    /// credentials on another.
    func headers(redirectedTo target: URL) -> HTTPFields {
        HTTPRequest.sameOrigin(url, target) ? headers : headers.removing(credentialHeaders)
    }

    /// Whether `a` and `b` have the same scheme, host and port (default ports filled in).
    static func sameOrigin(_ a: URL, _ b: URL) -> Bool {
        func origin(_ url: URL) -> (String, String, Int) {
            let scheme = url.scheme?.lowercased() ?? ""
            return (scheme, (url.host ?? "").lowercased(), url.port ?? (scheme == "https" ? 443 : 80))
        }
        return origin(a) == origin(b)
    }

    /// Whether `value` may be sent as a header value: no CR, LF or NUL (they would end the
    /// header or the head early: header injection).
    static func isValidHeaderValue(_ value: String) -> Bool {
        !value.utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0 }
    }

    /// Whether `name` is an HTTP token (RFC 9110 §5.6.2).
    static func isValidHeaderName(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}

/// The status and headers of the response a request ended with (after redirects).
struct HTTPResponseHead: Sendable {
    var status: Int
    var headers: HTTPFields
    /// The URL that answered (differs from the request's after a redirect).
    var url: URL

    /// Field `name` (any case); repeated fields joined with ", ".
    func header(_ name: String) -> String? { headers[name] }
}

/// How one exchange ended.
struct HTTPOutcome: Sendable {
    var head: HTTPResponseHead
    /// Body bytes handed to the consumer.
    var delivered: Int
    /// Body bytes dropped before them (a 200 answer to a range request starts at byte 0).
    var skipped: Int
    /// Body bytes that arrived in all: delivered, skipped, and read past the limit (what the
    /// network carried, for statistics).
    var received: Int
    /// Whether the transfer was stopped on purpose after `limit` bytes.
    var stoppedAtLimit: Bool
    /// Set when the body ended early (connection dropped, timeout): `delivered` says how far it
    /// got.
    var error: URLError?
    /// The transfer was cut short because the reader fell behind (``BodyPipe``): not a
    /// failure; the rest is asked for again.
    var paused = false

    var status: Int { head.status }
    func header(_ name: String) -> String? { head.header(name) }
}

/// Performs GETs: the one transport contract. Two implementations: ``HTTP1Client`` (POSIX
/// sockets, `http:`; hands `https:` to the next) and ``URLSessionClient`` (URLSession: TLS on
/// Linux, everything on Apple platforms). Both hand the head over before any body byte, then
/// the body in pieces as it arrives, holding at most a bounded amount in memory; cancelling
/// the calling task stops the transfer. What to ask for and what to accept is decided above
/// them, once, by ``HTTPByteSource``.
protocol HTTPClient: Sendable {
    /// Performs `request`, following redirects. Calls `head` once with the final response's
    /// status and headers, before any body byte (it may throw to refuse the response); then, for
    /// a 2xx status, `body` with the body bytes in order: after dropping the first `skipWhole`
    /// bytes when the status is 200, and at most `limit` bytes in all (the transfer then
    /// stops). Throws a `URLError` when no response arrived, or what `head` or `body` threw.
    func get(_ request: HTTPRequest, limit: Int, skipWhole: Int,
             head: (HTTPResponseHead) throws -> Void,
             body: (ArraySlice<UInt8>) async throws -> Void) async throws -> HTTPOutcome

    /// Closes idle connections and cancels outstanding work.
    func invalidate()
}
