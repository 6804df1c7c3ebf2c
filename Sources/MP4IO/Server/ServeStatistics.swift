import MP4Core

/// What a proxy served, summed over its exchanges (`serve --stats` prints it on exit): how
/// many answers of each status class, the body bytes sent to players and where they came from
/// (the cache, the origin during the answer, or made by the proxy: a faststart view's `moov`,
/// pages), and how many answers a client left before their end. Fed by
/// ``CachingProxy/Options/statistics``; the summary is decided here, without I/O.
public final class ServeStatistics: Sendable {
    public struct Totals: Sendable, Equatable {
        public var requests = 0
        /// Answers by status class: index 2 for 2xx, 3 for 3xx, 4 for 4xx, 5 for 5xx.
        public var byClass = [Int](repeating: 0, count: 6)
        public var bytesSent: UInt64 = 0
        public var fromCache: UInt64 = 0
        public var fromOrigin: UInt64 = 0
        public var clientsLeft = 0
        public var cutShort = 0
        public init() {}
    }

    private let totals = Locked(Totals())

    public init() {}

    public var current: Totals { totals.withLock { $0 } }

    /// Counts one exchange.
    public func add(_ exchange: HTTPServer.Exchange) {
        totals.withLock { totals in
            totals.requests += 1
            totals.byClass[min(5, max(0, exchange.status / 100))] += 1
            totals.bytesSent += exchange.bytesSent
            totals.fromCache += exchange.fromCache ?? 0
            totals.fromOrigin += exchange.fromOrigin ?? 0
            if let failure = exchange.failure, exchange.status < 400 {
                if failure.hasPrefix("the client went away") { totals.clientsLeft += 1 } else { totals.cutShort += 1 }
            }
        }
    }
}
