import Foundation

extension HTTPByteSource {
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
        /// Seconds one read may take in all, its retries included, however steadily bytes
        /// arrive (nil: no limit). ``timeout`` alone lets a server that sends a byte now and
        /// then hold a read forever.
        public var maxTime: TimeInterval?
        /// Seconds all reads of this source may take together, counted from its creation
        /// (nil: no limit): a command's reading (`--max-time`: `info URL` reads the head, then
        /// the `moov`, and the deadline is one for both). Not for a long-lived source, such as
        /// a server's origin, whose reads each want ``maxTime``.
        public var maxTotalTime: TimeInterval?
        /// Retries of one read after transient failures.
        public var maxRetries: Int = 3
        /// First backoff delay, seconds (doubled per retry).
        public var retryDelay: Double = 0.2
        /// Longest `Retry-After` honoured, seconds.
        public var maxRetryAfter: Double = 30
        /// Redirects followed per request.
        public var maxRedirects: Int = 5
        /// Seconds a read may wait on the server for its first response head, retries included
        /// (connect, TLS handshake, head): a server that drips its handshake kept `info` running
        /// past 200 s, never idle for ``timeout``. Time spent in socket waits (``WaitBudget``),
        /// not wall-clock time: a loaded machine that runs the read late does not spend it.
        /// `--max-time` bounds the whole read by the clock. Our own client (URLSession keeps its
        /// own timeouts).
        public var maxHeadTime: TimeInterval = 45
        /// Whether a redirect from `https:` to `http:` is followed. Off: such a redirect fails
        /// the read, naming the hop (the request and its answer would go in clear text, under
        /// the https URL's name and cache entry). `--allow-insecure-redirect`.
        public var allowsInsecureRedirects = false
        /// Names of the headers that carry credentials (any case): they are sent only to the
        /// origin of ``HTTPByteSource/url`` and dropped when a redirect goes to another scheme,
        /// host or port (as curl does). Add the names of your own secret headers.
        public var credentialHeaders: Set<String> = ["authorization", "cookie", "proxy-authorization"]
        /// Called once per source with a sentence when something makes reading much costlier
        /// than it should be (the server ignores `Range`). The CLI writes it to stderr.
        public var warn: (@Sendable (String) -> Void)?
        /// Which client performs the requests.
        public var client: Client = .automatic
        /// A file of PEM certificates: `https:` servers must have a certificate that chains to
        /// one of them, instead of to one the system trusts (curl's `--cacert`), for origins
        /// behind a private CA. Used by mp4probe's own client (Linux); URLSession reads the
        /// system's store only.
        public var caFile: String?
        /// Largest request through URLSession (every scheme on Apple platforms; on Linux
        /// with a proxy in the environment or without libssl): a long read is made of requests of this size, each streamed to the
        /// reader as it arrives. FoundationNetworking hands body pieces to the delegate
        /// through a queue that a fast origin outruns, and its `cancel()` stops the transfer
        /// only when that queue gets to it: unbounded, a 1 GiB read over loopback TLS queued
        /// 10 GB and nginx sent each range whole (measured). Our own client (`http:` on
        /// Linux) makes one request per read.
        public var maxURLSessionRequest: Int = 8 << 20

        /// The implementation behind the requests.
        public enum Client: String, Sendable {
            /// On Linux, mp4probe's HTTP/1.1 client for `http:` and `https:` (URLSession when the
            /// environment names a proxy, `http_proxy`, `all_proxy`, or libssl is missing).
            /// On Apple platforms, URLSession for both (system proxy, PAC, ATS, cellular).
            case automatic
            /// URLSession for everything (the slower path on Linux; for comparison).
            case urlSession
        }

        public init() {}
    }
}
