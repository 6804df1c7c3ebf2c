import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A value behind a lock: the one place where the HTTP code shares mutable state between
/// URLSession's delegate queue and Swift tasks.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) { self.value = value }

    func withLock<T>(_ body: (inout Value) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}

/// One HTTP exchange as far as it went: status, headers, the body bytes received (up to a
/// limit), and the transport error that ended it early, if any.
struct HTTPExchange: Sendable {
    var status: Int
    /// Header values by lower-cased name.
    var headers: [String: String]
    var body: [UInt8]
    /// Set when the transfer failed before the body was complete (connection dropped,
    /// timeout); `body` then holds what arrived.
    var error: URLError?
    /// Whether the exchange was stopped on purpose after `limit` body bytes.
    var stoppedAtLimit: Bool
    /// Body bytes dropped before `body` (a 200 answer to a range request: the whole file
    /// arrives and only the requested part is kept).
    var skipped: Int = 0

    func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// URLSession with a delegate, so that a body can be cut off after the bytes a read needs (a
/// server that ignores `Range` sends the whole file) and a dropped connection still yields the
/// bytes that arrived. One session per source, reused for keep-alive.
final class HTTPTransport: NSObject, URLSessionDataDelegate, Sendable {
    /// What arrived of one exchange's body. Mutated only in place, through the locked
    /// dictionary (`state[id]?.receive(...)`): copying it out, appending and storing it back
    /// made copy-on-write copy the whole body for every chunk (O(n²) in the body size).
    struct Received {
        var limit: Int
        /// Bytes to drop first when the answer is 200 (the whole body).
        var skipWhole: Int
        var skipped = 0
        var body: [UInt8] = []
        var stopped = false

        /// Appends `data` (after the bytes a 200 answer must drop), up to `limit`; returns
        /// whether the transfer should stop. O(`data.count`) amortized.
        mutating func receive(_ data: Data, status: Int?) -> Bool {
            guard !stopped else { return false }
            var data = data[...]
            if status == 200 && skipped < skipWhole {
                let drop = min(skipWhole - skipped, data.count)
                skipped += drop
                data = data.dropFirst(drop)
            }
            let room = limit - body.count
            if room > 0 { body.append(contentsOf: data.prefix(room)) }
            if body.count >= limit { stopped = true }
            return stopped
        }
    }

    /// Appends `data` to the exchange `key` of `table` in place (the optional-chained mutation
    /// goes through the dictionary's storage, so the body is never copied); returns whether
    /// the transfer should stop. The delegate's only receive path, and what the test counts.
    static func receive<Key: Hashable, Value>(_ data: Data, status: Int?, at key: Key, in table: inout [Key: Value], through path: WritableKeyPath<Value, Received>) -> Bool {
        table[key]?[keyPath: path].receive(data, status: status) ?? false
    }

    struct Pending {
        var received: Received
        var response: HTTPURLResponse?
        var continuation: CheckedContinuation<HTTPExchange, any Error>
    }

    private let pending = Locked<[Int: Pending]>([:])
    private let redirects = Locked<[Int: Int]>([:])
    let maxRedirects: Int
    private let sessionBox = Locked<URLSession?>(nil)

    init(timeout: TimeInterval, maxRedirects: Int) {
        self.maxRedirects = maxRedirects
        super.init()
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = timeout
        configuration.httpMaximumConnectionsPerHost = 4
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        let session = URLSession(configuration: configuration, delegate: self, delegateQueue: nil)
        sessionBox.withLock { $0 = session }
    }

    /// Ends the session (outstanding tasks are cancelled).
    func invalidate() {
        sessionBox.withLock { $0?.invalidateAndCancel(); $0 = nil }
    }

    /// Performs `request`, keeping at most `limit` body bytes (the transfer is cancelled once
    /// they arrived); when the server answers 200 with the whole body, the first `skipWhole`
    /// bytes are dropped as they arrive, so memory stays bounded by `limit` whatever the
    /// offset. Throws only when no response arrived at all.
    func perform(_ request: URLRequest, limit: Int, skipWhole: Int = 0) async throws -> HTTPExchange {
        guard let session = sessionBox.withLock({ $0 }) else { throw URLError(.cancelled) }
        let task = session.dataTask(with: request)
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                pending.withLock { $0[task.taskIdentifier] = Pending(received: Received(limit: limit, skipWhole: skipWhole), continuation: continuation) }
                task.resume()
            }
        } onCancel: {
            task.cancel()
        }
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse, completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void) {
        pending.withLock { $0[dataTask.taskIdentifier]?.response = response as? HTTPURLResponse }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        let stop = pending.withLock { state -> Bool in
            guard state[dataTask.taskIdentifier] != nil else { return false }
            if state[dataTask.taskIdentifier]?.response == nil { state[dataTask.taskIdentifier]?.response = dataTask.response as? HTTPURLResponse }
            let status = state[dataTask.taskIdentifier]?.response?.statusCode
            return Self.receive(data, status: status, at: dataTask.taskIdentifier, in: &state, through: \.received)
        }
        if stop { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse, newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void) {
        let count = redirects.withLock { state -> Int in
            state[task.taskIdentifier, default: 0] += 1
            return state[task.taskIdentifier] ?? 0
        }
        // Beyond the bound, the redirect response itself is returned (and reported).
        completionHandler(count > maxRedirects ? nil : request)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        redirects.withLock { $0[task.taskIdentifier] = nil }
        guard let entry = pending.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        let response = entry.response ?? (task.response as? HTTPURLResponse)
        if let response {
            var headers: [String: String] = [:]
            for (key, value) in response.allHeaderFields {
                if let key = key as? String, let value = value as? String { headers[key.lowercased()] = value }
            }
            let received = entry.received
            let failure = received.stopped ? nil : (error as? URLError) ?? error.map { _ in URLError(.unknown) }
            entry.continuation.resume(returning: HTTPExchange(status: response.statusCode, headers: headers, body: received.body, error: failure, stoppedAtLimit: received.stopped, skipped: received.skipped))
        } else {
            entry.continuation.resume(throwing: error ?? URLError(.badServerResponse))
        }
    }
}
