import Foundation
import MP4Core
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Security)
import Security
#endif

/// The body of one URLSession exchange on its way from the delegate to the reader: the
/// response head, then the pieces as they arrive, in a bounded buffer. The delegate appends
/// (``arrived(_:)``, ``received(_:)``, ``completed(_:)``); the reader takes (``head()``,
/// ``next()``). Neither side waits for the other while holding the lock.
///
/// Backpressure: URLSession gives no way to pause a transfer that works on both platforms (on
/// Linux a suspended task's transfer is dropped and restarted from its first byte), so when
/// the reader falls more than ``capacity`` bytes behind, the transfer is cancelled and the
/// exchange ends *paused*: the reader takes what is buffered, and the source asks for the
/// rest in a new request (one round trip per `capacity` bytes the reader is slow by; memory
/// is bounded by `capacity` whatever the range).
final class BodyPipe: Sendable {
    let capacity: Int
    private struct State {
        var response: HTTPURLResponse?
        var pieces: [Data] = []
        var first = 0
        var buffered = 0
        /// Body bytes that arrived, taken or not.
        var arrived = 0
        var ended = false
        var failure: (any Error)?
        /// Cancelled because the reader fell behind.
        var paused = false
        /// The reader wants no more.
        var closed = false
        var waiter: CheckedContinuation<Void, Never>?
    }
    private let state = Locked(State())

    init(capacity: Int) { self.capacity = max(capacity, 1 << 16) }

    /// Bytes buffered, not taken yet.
    var buffered: Int { state.withLock { $0.buffered } }
    /// Body bytes that arrived, taken or not.
    var arrived: Int { state.withLock { $0.arrived } }
    /// Whether the transfer was cancelled because the reader fell behind.
    var paused: Bool { state.withLock { $0.paused } }

    // MARK: The delegate's side

    func arrived(_ response: HTTPURLResponse) {
        wake { if $0.response == nil { $0.response = response } }
    }

    /// Appends `data`; returns true when the transfer must be cancelled (the reader is more
    /// than ``capacity`` behind, or gone).
    func received(_ data: Data) -> Bool {
        var cancel = false
        let capacity = self.capacity
        wake { state in
            guard !state.ended && !state.closed else { cancel = state.closed; return }
            state.arrived += data.count
            state.pieces.append(data)
            state.buffered += data.count
            if state.buffered > capacity {
                state.paused = true
                state.ended = true
                cancel = true
            }
        }
        return cancel
    }

    /// The transfer ended (`error` nil: the whole body arrived).
    func completed(_ error: (any Error)?, response: HTTPURLResponse?) {
        wake { state in
            if state.response == nil { state.response = response }
            guard !state.ended else { return }
            state.ended = true
            state.failure = error
        }
    }

    // MARK: The reader's side

    /// The response head, once it arrived; nil when the exchange ended without one (then
    /// ``failure`` says why).
    func head() async -> HTTPURLResponse? {
        await waitUntil { $0.response != nil || $0.ended }
        return state.withLock { $0.response }
    }

    /// The next piece; nil at the end of the exchange (see ``outcome``).
    func next() async -> Data? {
        await waitUntil { $0.first < $0.pieces.count || $0.ended }
        return state.withLock { state in
            guard state.first < state.pieces.count else { return nil }
            let piece = state.pieces[state.first]
            state.first += 1
            state.buffered -= piece.count
            if state.first > 64 && state.first * 2 > state.pieces.count {
                state.pieces.removeFirst(state.first)
                state.first = 0
            }
            return piece
        }
    }

    /// How the exchange ended, once ``next()`` returned nil: the transfer's error (nil when
    /// complete or paused) and whether it was paused.
    var outcome: (failure: (any Error)?, paused: Bool) { state.withLock { ($0.failure, $0.paused) } }

    /// The reader is done (or gone): nothing more is kept, a waiting reader returns.
    func close(_ error: (any Error)? = nil) {
        wake { state in
            state.closed = true
            if !state.ended { state.ended = true; state.failure = error }
            state.pieces = []
            state.first = 0
            state.buffered = 0
        }
    }

    private func wake(_ change: (inout State) -> Void) {
        let waiting = state.withLock { state -> CheckedContinuation<Void, Never>? in
            change(&state)
            defer { state.waiter = nil }
            return state.waiter
        }
        waiting?.resume()
    }

    private func waitUntil(_ ready: @escaping (State) -> Bool) async {
        while !state.withLock({ ready($0) }) {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if ready(state) { return true }
                    state.waiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        }
    }
}

/// URLSession with a delegate: the client for `https:` on Linux (FoundationNetworking, over
/// libcurl) and for every scheme on Apple platforms. Bodies reach the reader as they arrive
/// (``BodyPipe``: bounded, with a transfer cut short and resumed when the reader falls
/// behind); a body can be cut off after the bytes a read needs (a server that ignores `Range`
/// sends the whole file) and a dropped connection still yields the bytes that arrived. One
/// session per source, reused for keep-alive.
final class URLSessionClient: NSObject, URLSessionDataDelegate, HTTPClient {
    /// How far a reader may fall behind the transfer before it is cut short (and resumed by
    /// the next request): what one exchange holds in the pipe at most. (FoundationNetworking's
    /// own delegate queue is bounded by the request's size: ``HTTPByteSource`` bounds them.)
    static let bufferCapacity = 8 << 20

    private let pipes = Locked<[Int: BodyPipe]>([:])
    private let redirects = Locked<[Int: Int]>([:])
    let maxRedirects: Int
    /// Whether a redirect from `https:` to `http:` is followed (``HTTPRequest/isDowngrade(from:to:)``).
    let allowsInsecureRedirects: Bool
    /// Lower-cased names of the headers dropped on a redirect to another origin.
    let credentialHeaders: Set<String>
    /// The CA file (PEM) a server's certificate must chain to instead of the system's CAs
    /// (``HTTPByteSource/Options/caFile``). Honoured on Apple platforms (server trust
    /// challenges; read once, at the first); FoundationNetworking on Linux delivers none, so
    /// there an `https:` request with a CA file fails rather than trusting the system's CAs.
    let caFile: String?
    #if canImport(Security)
    /// The CA file's certificates (DER), read at the first challenge.
    private let anchors = Locked<[Data]?>(nil)
    #endif
    let timeout: TimeInterval
    /// The session, made on the first request (on Linux, making one loads and starts libcurl,
    /// which a source whose requests all go through our own client never needs).
    private enum Session { case unused, open(URLSession), ended }
    private let sessionBox = Locked<Session>(.unused)

    init(timeout: TimeInterval, maxRedirects: Int, allowsInsecureRedirects: Bool = false, credentialHeaders: Set<String>, caFile: String? = nil) {
        self.maxRedirects = maxRedirects
        self.allowsInsecureRedirects = allowsInsecureRedirects
        self.credentialHeaders = credentialHeaders
        self.caFile = caFile
        self.timeout = timeout
        super.init()
    }

    /// The session, made now if this is the first request; nil once invalidated.
    private func session() -> URLSession? {
        sessionBox.withLock { state in
            switch state {
            case .open(let session): return session
            case .ended: return nil
            case .unused:
                let configuration = URLSessionConfiguration.ephemeral
                configuration.timeoutIntervalForRequest = timeout
                configuration.httpMaximumConnectionsPerHost = 4
                configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
                configuration.urlCache = nil
                let session = URLSession(configuration: configuration, delegate: self, delegateQueue: nil)
                state = .open(session)
                return session
            }
        }
    }

    /// Ends the session (outstanding tasks are cancelled).
    func invalidate() {
        sessionBox.withLock { state in
            if case .open(let session) = state { session.invalidateAndCancel() }
            state = .ended
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse, completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void) {
        if let response = response as? HTTPURLResponse { pipe(of: dataTask)?.arrived(response) }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        guard let pipe = pipe(of: dataTask) else { return }
        if let response = dataTask.response as? HTTPURLResponse { pipe.arrived(response) }
        if pipe.received(data) { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse, newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void) {
        let count = redirects.withLock { state -> Int in
            state[task.taskIdentifier, default: 0] += 1
            return state[task.taskIdentifier] ?? 0
        }
        // Beyond the bound, the redirect response itself is returned (and reported).
        guard count <= maxRedirects else { return completionHandler(nil) }
        // Never out of TLS unless asked: the redirect response itself is returned (and reported).
        if !allowsInsecureRedirects, let from = response.url, let to = request.url, HTTPRequest.isDowngrade(from: from, to: to) {
            return completionHandler(nil)
        }
        // Credentials stay with their origin (what curl does).
        var request = request
        if let from = response.url, let to = request.url, !HTTPRequest.sameOrigin(from, to) {
            for name in request.allHTTPHeaderFields?.keys.map({ $0 }) ?? [] where credentialHeaders.contains(name.lowercased()) {
                request.setValue(nil, forHTTPHeaderField: name)
            }
        }
        completionHandler(request)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        redirects.withLock { $0[task.taskIdentifier] = nil }
        let pipe = pipes.withLock { $0.removeValue(forKey: task.taskIdentifier) }
        pipe?.completed(error, response: task.response as? HTTPURLResponse)
    }

    #if canImport(Security)
    /// With ``caFile``: the server's certificate must chain to one of its certificates (and only
    /// them); a file that cannot be read or holds none trusts nothing.
    func urlSession(_ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge, completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void) {
        guard let caFile, challenge.protectionSpace.authenticationMethod == NSURLAuthenticationMethodServerTrust else {
            return completionHandler(.performDefaultHandling, nil)
        }
        let der = anchors.withLock { known -> [Data] in
            if let known { return known }
            let read = (try? String(contentsOfFile: caFile, encoding: .utf8)).map(PEM.certificates(in:)) ?? []
            known = read
            return read
        }
        let certificates = der.compactMap { SecCertificateCreateWithData(nil, $0 as CFData) }
        guard let trust = challenge.protectionSpace.serverTrust, !certificates.isEmpty else {
            return completionHandler(.cancelAuthenticationChallenge, nil)
        }
        SecTrustSetAnchorCertificates(trust, certificates as CFArray)
        SecTrustSetAnchorCertificatesOnly(trust, true)
        if SecTrustEvaluateWithError(trust, nil) {
            completionHandler(.useCredential, URLCredential(trust: trust))
        } else {
            completionHandler(.cancelAuthenticationChallenge, nil)
        }
    }
    #endif

    private func pipe(of task: URLSessionTask) -> BodyPipe? {
        pipes.withLock { $0[task.taskIdentifier] }
    }

    /// The response's header fields (URLSession has already joined repeated ones), by name.
    static func headers(of response: HTTPURLResponse) -> HTTPFields {
        var headers = HTTPFields()
        for (key, value) in response.allHeaderFields {
            if let key = key as? String, let value = value as? String { headers.append((key, value)) }
        }
        return HTTPFields(headers.sorted { $0.name.lowercased() < $1.name.lowercased() })
    }

    func get(_ request: HTTPRequest, limit: Int, skipWhole: Int,
             head: (HTTPResponseHead) throws -> Void,
             body: (ArraySlice<UInt8>) async throws -> Void) async throws -> HTTPOutcome {
        #if !canImport(Security)
        if caFile != nil && request.url.scheme?.lowercased() == "https" {
            throw URLError(.secureConnectionFailed, userInfo: [NSLocalizedDescriptionKey: "TLS: --ca-file cannot be honoured through URLSession on Linux (used here because the environment names a proxy)"])
        }
        #endif
        var urlRequest = URLRequest(url: request.url)
        urlRequest.timeoutInterval = request.waitLimit.seconds
        for (name, value) in request.headers {
            guard HTTPRequest.isValidHeaderName(name), HTTPRequest.isValidHeaderValue(value) else { throw URLError(.badURL) }
            urlRequest.setValue(value, forHTTPHeaderField: name)
        }
        if !request.headers.contains("User-Agent") {
            urlRequest.setValue(MP4ProbeVersion.userAgent, forHTTPHeaderField: "User-Agent")
        }
        guard let session = session() else { throw URLError(.cancelled) }
        let task = session.dataTask(with: urlRequest)
        let pipe = BodyPipe(capacity: Self.bufferCapacity)
        pipes.withLock { $0[task.taskIdentifier] = pipe }
        // URLSession's timeout is an idle timeout: the deadline ends the exchange however
        // steadily bytes arrive. Its timer is ``ServingClock``'s (a sleep on Swift's shared
        // pool, or a timer on Dispatch's global queues, can run late when they are busy), and
        // every piece is checked against it too, as `HTTP1Client` does at every wait.
        let deadline = request.deadline.map { deadline in
            // Weakly: the exchange's buffers must not be held by a timer.
            ServingClock.shared.schedule(after: ContinuousClock.now.duration(to: deadline)) { [weak pipe, weak task] in
                pipe?.close(URLError(.timedOut))
                task?.cancel()
            }
        }
        let pastDeadline = { request.deadline.map { ContinuousClock.now >= $0 } ?? false }
        defer {
            if let deadline { ServingClock.shared.cancel(deadline) }
            pipe.close()
            task.cancel()   // nothing once it completed; a transfer cut short stops here
        }
        return try await withTaskCancellationHandler {
            task.resume()
            guard let response = await pipe.head() else {
                if Task.isCancelled { throw URLError(.cancelled) }
                throw pipe.outcome.failure ?? URLError(.badServerResponse)
            }
            let responseHead = HTTPResponseHead(status: response.statusCode, headers: Self.headers(of: response), url: response.url ?? request.url)
            try head(responseHead)
            guard (200..<300).contains(response.statusCode) else {
                return HTTPOutcome(head: responseHead, delivered: 0, skipped: 0, received: 0, stoppedAtLimit: false, error: nil)
            }
            var delivered = 0, skipped = 0
            let skip = response.statusCode == 200 ? skipWhole : 0
            while delivered < limit, let data = await pipe.next() {
                if pastDeadline() {
                    pipe.close(URLError(.timedOut))
                    task.cancel()
                    break
                }
                var piece = data[...]
                if skipped < skip {
                    let drop = min(skip - skipped, piece.count)
                    skipped += drop
                    piece = piece.dropFirst(drop)
                }
                let take = piece.prefix(limit - delivered)
                guard !take.isEmpty else { continue }
                delivered += take.count
                try await body(ArraySlice(take))
            }
            if Task.isCancelled { throw URLError(.cancelled) }
            let stopped = delivered >= limit
            let outcome = pipe.outcome
            let failure: URLError? = stopped || outcome.paused ? nil : (outcome.failure as? URLError) ?? outcome.failure.map { _ in URLError(.unknown) }
            return HTTPOutcome(head: responseHead, delivered: delivered, skipped: skipped, received: pipe.arrived, stoppedAtLimit: stopped, error: failure, paused: outcome.paused && !stopped)
        } onCancel: {
            pipe.close(URLError(.cancelled))
            task.cancel()
        }
    }
}
