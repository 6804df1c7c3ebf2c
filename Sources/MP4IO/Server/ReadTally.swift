import MP4Core

/// Where the bytes of one answer came from: the cache's data file, or the origin during the
/// answer (a fetch the reader followed, or bytes passed through). The server hands one to a
/// body that counts (``TallyingSource``); the cache's driver adds to it as it hands bytes on.
/// What neither counts (a faststart view's rewritten `moov`) was made by the proxy.
public final class ReadTally: Sendable {
    private let counts = Locked((cache: UInt64(0), origin: UInt64(0)))

    public init() {}

    /// Bytes served from the cache, and from the origin.
    public var split: (cache: UInt64, origin: UInt64) { counts.withLock { $0 } }

    func fromCache(_ count: Int) { counts.withLock { $0.cache += UInt64(count) } }
    func fromOrigin(_ count: Int) { counts.withLock { $0.origin += UInt64(count) } }
}

/// A source whose reads count where their bytes came from (``MediaResource``): the server
/// reads an answer's body so, and logs the split.
protocol TallyingSource: ByteSource {
    func read(_ range: Range<UInt64>, tally: ReadTally, into consume: (ArraySlice<UInt8>) async throws -> Void) async throws
}
