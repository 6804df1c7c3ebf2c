import MP4Core

/// Where the bytes of one answer came from: the cache's data file, or the origin during the
/// answer (a fetch the reader followed, or bytes passed through). The server sets one for the
/// task that streams an answer's body (``current``); the cache's driver adds to it as it hands
/// bytes on. What neither counts (a faststart view's rewritten `moov`) was made by the proxy.
public final class ReadTally: Sendable {
    private let counts = Locked((cache: UInt64(0), origin: UInt64(0)))

    /// The tally of the answer the current task streams, if any.
    @TaskLocal static var current: ReadTally?

    public init() {}

    /// Bytes served from the cache, and from the origin.
    public var split: (cache: UInt64, origin: UInt64) { counts.withLock { $0 } }

    func fromCache(_ count: Int) { counts.withLock { $0.cache += UInt64(count) } }
    func fromOrigin(_ count: Int) { counts.withLock { $0.origin += UInt64(count) } }
}
