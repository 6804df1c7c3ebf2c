/// Random access to the bytes of one resource: a local file, an HTTP URL, a cache, memory.
///
/// The parser asks for few, large ranges: the head of the file, the header of each top-level
/// box it cannot see yet, and then `moov` in one read. Implementations must be safe to call
/// concurrently.
public protocol ByteSource: Sendable {
    /// A name for messages: a path or URL.
    var name: String { get }

    /// How many bytes to read when the parser needs only a box header, so that a remote source
    /// can answer several headers (or a small `moov`) with one request. Local sources keep it
    /// small; the default is 4 KiB.
    var preferredReadSize: Int { get }

    /// The total length in bytes. May perform I/O the first time (a remote source learns it
    /// from its first response).
    /// - Throws: ``MP4Error`` of kind ``MP4Error/Kind/io`` when the length cannot be learned.
    func length() async throws -> UInt64

    /// Reads the bytes in `range`, clamped to the length: exactly `range.count` bytes unless
    /// the range passes the end, never more.
    /// - Throws: ``MP4Error`` of kind ``MP4Error/Kind/io`` on failure.
    func read(_ range: Range<UInt64>) async throws -> [UInt8]

    /// A string that changes when the resource changes (an HTTP `ETag` or `Last-Modified`, a
    /// file's size and modification time), or `nil` when the source cannot tell. Caches use it
    /// to never mix two versions of a resource. Call after ``length()``.
    func validator() async throws -> String?

    /// What the resource's server says about it besides its bytes (an HTTP response's
    /// `Content-Type` and `Last-Modified`), for a cache or proxy to record and pass on. Call
    /// after ``length()``. Empty by default.
    func attributes() async throws -> ResourceAttributes

    /// Reads the bytes in `range` (clamped to the length, like ``read(_:)``) and hands them to
    /// `consume` in order, in pieces, so that memory stays bounded by a piece whatever the
    /// range's size: a cache filling from HTTP writes each piece to disk as it arrives. The
    /// pieces are valid only during the call. The default reads pieces of
    /// ``streamPieceSize`` with ``read(_:)``.
    func read(_ range: Range<UInt64>, into consume: (ArraySlice<UInt8>) async throws -> Void) async throws

    /// Whether a read may cost a network round trip (an HTTP source, or a cache in front of
    /// one): then opening a file does not walk every fragment by default
    /// (``MP4File/Options/facts``). `false` by default.
    var isRemote: Bool { get }
}

/// What a server says about a resource besides its bytes, as it said it.
public struct ResourceAttributes: Sendable, Hashable, Codable {
    /// The media type the server gave (`Content-Type`), e.g. `video/mp4`.
    public var contentType: String?
    /// The server's `Last-Modified` date (an HTTP-date).
    public var lastModified: String?

    public init(contentType: String? = nil, lastModified: String? = nil) {
        self.contentType = contentType
        self.lastModified = lastModified
    }
}

/// The piece size of the default ``ByteSource/read(_:into:)``: 1 MiB.
public let streamPieceSize: UInt64 = 1 << 20

extension ByteSource {
    /// The default read-ahead: 4 KiB.
    public var preferredReadSize: Int { 4096 }

    /// Local by default.
    public var isRemote: Bool { false }

    /// No validator by default.
    public func validator() async throws -> String? { nil }

    /// No attributes by default.
    public func attributes() async throws -> ResourceAttributes { ResourceAttributes() }

    /// Reads `range` with ``read(_:)`` in pieces of ``streamPieceSize``.
    public func read(_ range: Range<UInt64>, into consume: (ArraySlice<UInt8>) async throws -> Void) async throws {
        var offset = range.lowerBound
        while offset < range.upperBound {
            let wanted = min(streamPieceSize, range.upperBound - offset)
            let piece = try await read(offset..<(offset + wanted))
            if !piece.isEmpty { try await consume(piece[...]) }
            if UInt64(piece.count) < wanted { return }  // the end of the source
            offset += wanted
        }
    }
}

/// A source that serves another's bytes (all or some, changed or not): what it does not
/// implement itself is its base's (name, read size, remoteness, validator, attributes), so a
/// wrapper cannot forget to pass one on. (`WatchedSource` and ``FaststartView`` did not pass
/// on ``ByteSource/isRemote``, and a proxy's inspector page of a remote fragmented film made a
/// request per fragment: 301 for one film.) Every wrapper of the package conforms;
/// `WrappingSourceTests` checks them over a remote base.
public protocol WrappingSource: ByteSource {
    /// The source whose bytes this one serves.
    var base: any ByteSource { get }
}

extension WrappingSource {
    public var name: String { base.name }
    public var preferredReadSize: Int { base.preferredReadSize }
    public var isRemote: Bool { base.isRemote }
    public func validator() async throws -> String? { try await base.validator() }
    public func attributes() async throws -> ResourceAttributes { try await base.attributes() }
}

/// A byte source over bytes in memory.
public struct MemorySource: ByteSource {
    /// The bytes.
    public let bytes: [UInt8]
    public let name: String

    /// A source over `bytes`, named `name` in messages.
    public init(_ bytes: [UInt8], name: String = "<memory>") {
        self.bytes = bytes
        self.name = name
    }

    public func length() async throws -> UInt64 { UInt64(bytes.count) }

    public func read(_ range: Range<UInt64>) async throws -> [UInt8] {
        let count = UInt64(bytes.count)
        let lower = Int(min(range.lowerBound, count))
        let upper = Int(min(range.upperBound, count))
        return Array(bytes[lower..<max(lower, upper)])
    }
}

/// Counts of the reads the parser made: what it cost to open a file.
public struct ReadStatistics: Sendable, Hashable, Codable {
    /// Number of `read` calls.
    public var readCount: Int = 0
    /// Bytes received.
    public var byteCount: UInt64 = 0

    /// Empty statistics.
    public init() {}
}
