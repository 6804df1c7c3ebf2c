import Foundation
import MP4Core
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// One exchange through URLSession, as far as it went.
struct URLSessionExchange: Sendable {
    var status: Int
    var headers: [String: String]
    var url: URL?
    var body: [UInt8]
    var error: URLError?
    var stoppedAtLimit: Bool
    var skipped: Int
    var arrived: Int
}

/// URLSession with a delegate, so that a body can be cut off after the bytes a read needs (a
/// server that ignores `Range` sends the whole file) and a dropped connection still yields the
/// bytes that arrived. One session per source, reused for keep-alive. The client for `https:`
/// (TLS); bodies are collected up to the request's limit before they are handed on, so
/// ``HTTPByteSource`` splits large streamed reads into bounded requests on this client.
final class URLSessionClient: NSObject, URLSessionDataDelegate, HTTPClient {
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
        /// Every body byte that arrived, kept or not.
        var arrived = 0

        /// Appends `data` (after the bytes a 200 answer must drop), up to `limit`; returns
        /// whether the transfer should stop. O(`data.count`) amortized.
        mutating func receive(_ data: Data, status: Int?) -> Bool {
            arrived += data.count
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
        var continuation: CheckedContinuation<URLSessionExchange, any Error>
    }

    private let pending = Locked<[Int: Pending]>([:])
    private let redirects = Locked<[Int: Int]>([:])
    let maxRedirects: Int
    /// Lower-cased names of the headers dropped on a redirect to another origin.
    let credentialHeaders: Set<String>
    private let sessionBox = Locked<URLSession?>(nil)

    init(timeout: TimeInterval, maxRedirects: Int, credentialHeaders: Set<String>) {
        self.maxRedirects = maxRedirects
        self.credentialHeaders = credentialHeaders
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
    func perform(_ request: URLRequest, limit: Int, skipWhole: Int = 0) async throws -> URLSessionExchange {
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
        guard count <= maxRedirects else { return completionHandler(nil) }
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
        guard let entry = pending.withLock({ $0.removeValue(forKey: task.taskIdentifier) }) else { return }
        let response = entry.response ?? (task.response as? HTTPURLResponse)
        if let response {
            var headers: [String: String] = [:]
            for (key, value) in response.allHeaderFields {
                if let key = key as? String, let value = value as? String { headers[key.lowercased()] = value }
            }
            let received = entry.received
            let failure = received.stopped ? nil : (error as? URLError) ?? error.map { _ in URLError(.unknown) }
            entry.continuation.resume(returning: URLSessionExchange(status: response.statusCode, headers: headers, url: response.url, body: received.body, error: failure, stoppedAtLimit: received.stopped, skipped: received.skipped, arrived: received.arrived))
        } else {
            entry.continuation.resume(throwing: error ?? URLError(.badServerResponse))
        }
    }

    func get(_ request: HTTPRequest, limit: Int, skipWhole: Int,
             head: (HTTPResponseHead) throws -> Void,
             body: (ArraySlice<UInt8>) async throws -> Void) async throws -> HTTPOutcome {
        var urlRequest = URLRequest(url: request.url)
        urlRequest.timeoutInterval = request.timeout
        for (name, value) in request.headers {
            guard HTTPRequest.isValidHeaderName(name), HTTPRequest.isValidHeaderValue(value) else { throw URLError(.badURL) }
            urlRequest.setValue(value, forHTTPHeaderField: name)
        }
        if !request.headers.contains(where: { $0.name.lowercased() == "user-agent" }) {
            urlRequest.setValue(MP4ProbeVersion.userAgent, forHTTPHeaderField: "User-Agent")
        }
        let exchange: URLSessionExchange
        if let deadline = request.deadline {
            // URLSession's timeout is an idle timeout: race the request against the deadline.
            urlRequest.timeoutInterval = request.waitLimit.seconds
            exchange = try await withThrowingTaskGroup(of: URLSessionExchange.self) { group in
                group.addTask { [urlRequest] in try await self.perform(urlRequest, limit: limit, skipWhole: skipWhole) }
                group.addTask {
                    try await Task.sleep(until: deadline, clock: .continuous)
                    throw URLError(.timedOut)
                }
                defer { group.cancelAll() }
                guard let first = try await group.next() else { throw URLError(.timedOut) }
                return first
            }
        } else {
            exchange = try await perform(urlRequest, limit: limit, skipWhole: skipWhole)
        }
        let responseHead = HTTPResponseHead(status: exchange.status, headers: exchange.headers, url: exchange.url ?? request.url)
        try head(responseHead)
        var delivered = 0
        if (200..<300).contains(exchange.status) && !exchange.body.isEmpty {
            delivered = exchange.body.count
            try await body(exchange.body[...])
        }
        return HTTPOutcome(head: responseHead, delivered: delivered, skipped: exchange.skipped, received: exchange.arrived, stoppedAtLimit: exchange.stoppedAtLimit, error: exchange.error)
    }
}
