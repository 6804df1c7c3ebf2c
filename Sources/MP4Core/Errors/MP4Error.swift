/// The one error type of the core library.
///
/// Every error says *what* went wrong (``kind`` and ``message``) and, where known, *where*:
/// the absolute byte offset in the file and the path of the box being read (for example
/// `moov/trak[1]/mdia/minf/stbl/stsz`). The command-line tool maps ``Kind`` to exit codes in
/// exactly one place.
public struct MP4Error: Error, Sendable, Hashable, CustomStringConvertible {
    /// The broad class of a failure.
    public enum Kind: String, Sendable, Hashable, Codable {
        /// The data ends before a structure it announces (a header, a table, a box).
        case truncated
        /// The bytes contradict the format (a size below the header size, a count that the
        /// box cannot hold, an impossible value).
        case malformed
        /// The input is valid but uses something this library does not handle.
        case unsupported
        /// A resource bound of ``ParseLimits`` was reached.
        case limitExceeded
        /// The byte source failed (file system, network).
        case io
        /// The input is not an ISO base media / QuickTime file at all.
        case notMP4
        /// The request does not fit the file, which is fine: a seek time past the end of the
        /// movie, a track the file does not have.
        case invalidRequest
        /// mp4probe broke its own promise (a rewrite whose verification failed, a plan that
        /// contradicts itself): a bug in this tool, not a fault of the input. Nothing was
        /// written.
        case internalError
    }

    /// The broad class of the failure.
    public var kind: Kind
    /// A sentence saying what is wrong, with the numbers involved.
    public var message: String
    /// The absolute file offset where the problem was found, when known.
    public var offset: UInt64?
    /// The path of the box being read, when known.
    public var path: BoxPath?
    /// For ``Kind/limitExceeded``: the bound of ``ParseLimits`` that was reached, so that a
    /// caller can say how to raise it.
    public var limit: ParseLimits.Name?
    /// For ``Kind/notMP4``: the first bytes of the input (at most
    /// ``FileSignature/prefixLength``), to show and to recognise what the file is instead.
    public var leadingBytes: [UInt8]?
    /// The file or URL the error is about, when the caller knows it (the command-line tool
    /// fills it in).
    public var subject: String?
    /// What lies beneath an ``Kind/io`` failure, when known.
    public var cause: Cause?

    /// The cause of an ``Kind/io`` failure, for callers that act on it.
    public enum Cause: Sendable, Hashable {
        /// A system call failed with this `errno` (`ENOSPC`, `EACCES`...).
        case system(errno: Int32)
        /// The source is no longer the one that was opened (its validator or length changed
        /// between two reads): open it again; bytes of the two versions are never mixed.
        case sourceChanged
        /// The origin answered with a status that asking again does not change (`4xx`, a
        /// redirect that is not followed): no use waiting for it.
        case refused(status: Int)
    }

    /// Creates an error.
    public init(_ kind: Kind, _ message: String, offset: UInt64? = nil, path: BoxPath? = nil, limit: ParseLimits.Name? = nil) {
        self.kind = kind
        self.message = message
        self.offset = offset
        self.path = path
        self.limit = limit
    }

    /// A copy naming `subject` when no subject was known yet.
    public func about(_ newSubject: String) -> MP4Error {
        var copy = self
        if copy.subject == nil { copy.subject = newSubject }
        return copy
    }

    /// A copy with `cause`.
    public func caused(by newCause: Cause) -> MP4Error {
        var copy = self
        copy.cause = newCause
        return copy
    }

    /// A copy with `path` filled in when it was not known yet.
    public func at(path newPath: BoxPath) -> MP4Error {
        var copy = self
        if copy.path == nil { copy.path = newPath }
        return copy
    }

    public var description: String {
        var location: [String] = []
        if let path { location.append(path.description) }
        if let offset { location.append("offset \(offset)") }
        let prefix = location.isEmpty ? "" : "[" + location.joined(separator: " @ ") + "] "
        return "\(kind.rawValue): \(prefix)\(message)"
    }
}
