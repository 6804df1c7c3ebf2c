import MP4Core

/// How far ahead of a reader the cache fetches, and when it stops: the one read-ahead policy of
/// serving. The cache's windows and the loader's seek-aware prefetch take their numbers from
/// here, and ``FetchPlanner`` applies them. (The HTTP source's first request,
/// ``HTTPByteSource/Options/headWindow``, is not read-ahead: it is how the source learns the
/// length, and its bytes are what the first read asks for.)
public struct ReadAheadPolicy: Sendable, Equatable {
    /// How far one fetch for a streaming reader (a player's request) runs ahead of it: a
    /// missing run is fetched in requests of at most this many bytes, the next one started
    /// when the reader is half-way through the current one. When the reader leaves, both
    /// stop: what a player that leaves costs the origin is what was in flight. 2 MiB, the
    /// cache's window before this policy existed: at most one request per 2 MiB, and at
    /// most 2 MiB in flight for a reader.
    public var window: UInt64 = 2 << 20
    /// The furthest ahead of a running fetch's progress a reader may wait for it rather than
    /// start a fetch of its own (a seek further ahead never waits for a sequential fetch).
    /// Within it, a reader waits only when the fetch, at the rate it is measured to deliver,
    /// reaches the reader's position before a new request's first byte would arrive (the
    /// origin's measured latency); within ``followAlways`` it always waits. A fixed 256 KiB
    /// made a player that reads every fragment's header (ffmpeg, Chromium and mpv open a
    /// fragmented film so) follow one sequential fetch through the whole film: its first frame
    /// came after 70 to 106 s from a 512 KB/s origin, 0.9 s direct.
    public var followDistance: UInt64 = 256 << 10
    /// How far ahead of a fetch's progress a reader always waits for it (a new request for so
    /// few bytes is not worth its round trip), unless the fetch stalls.
    public var followAlways: UInt64 = 16 << 10
    /// The shortest time a reader waits for a fetch that delivers nothing at all before it
    /// starts a request of its own at its position (it waits four times the origin's measured
    /// latency when that is longer). A server that paces in bursts (nginx's `limit_rate` with
    /// `sendfile` sends a second's worth at once, then nothing for a second) kept a player
    /// that read every fragment's header through the proxy waiting a second at each pause:
    /// 1.5 to 6.5 s to its first frame against 0.15 s direct.
    public var stallPatience: Double = 0.05
    /// Missing parts separated by less than this many cached bytes are fetched in one request
    /// (fetching the small cached gap again costs less than a second round trip).
    public var bridgeGap: UInt64 = 64 << 10
    /// Seconds of every track fetched ahead of where a player reads (the seek plan of the
    /// next seconds, by ``MediaLoader``); 0 turns that prefetch off. It is asked for: it
    /// finishes its window even when the player leaves, unless a later seek supersedes it.
    public var prefetchSeconds: Double = 10
    /// The most one prefetch fetches.
    public var maxPrefetchBytes: UInt64 = 64 << 20
    /// Requests one prefetch starts at most.
    public var maxPrefetchRequests = 8

    public init() {}
}
