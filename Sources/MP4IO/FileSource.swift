import MP4Core
import MP4ProbeSystem
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A ``ByteSource`` over a local file, read with positional reads (`pread`): no seeking
/// state, safe for concurrent reads, and the file is never loaded whole.
public final class FileSource: ByteSource {
    /// The path given at creation.
    public let path: String
    private let descriptor: Int32
    private let size: UInt64

    /// Opens `path` for reading. With `sharedLockWait`, a shared lock is taken over the whole
    /// file and held while the source is open: an in-place rewrite (whose owner's lock,
    /// ``FileOwnerLock``, is exclusive) is waited for up to that many seconds, and cannot begin
    /// while the source is open (it waits for the readers), so what is read is the film before
    /// the rewrite or after it, never a mix (``SourceFactory/openFile(_:recovered:)``).
    /// - Throws: ``MP4Error`` of kind ``MP4Error/Kind/io`` when the file cannot be opened or is
    ///   not a regular file, or is held by a rewrite for all of `sharedLockWait`.
    public init(path: String, sharedLockWait: Double? = nil) throws {
        let fd = try Platform.openForReading(path)
        do {
            if let wait = sharedLockWait { try Self.share(fd, path: path, waitingUpTo: wait) }
            size = try Platform.regularFileSize(fd, path: path)
        } catch {
            Platform.closeFile(fd)
            throw error
        }
        self.path = path
        self.descriptor = fd
    }

    deinit { Platform.closeFile(descriptor) }

    /// Takes the shared lock over the whole file, trying again every 20 ms for up to `wait`
    /// seconds while a writer holds it. A filesystem without record locks is read unlocked.
    private static func share(_ fd: Int32, path: String, waitingUpTo wait: Double) throws {
        let deadline = ContinuousClock.now + .milliseconds(Int64(max(0, wait) * 1000))
        while mp4probe_range_tryshare(fd, 0, 0) == 1 {
            guard ContinuousClock.now < deadline else {
                throw MP4Error(.io, "\(path) is being rewritten in place by another process (it held the file for \(HTTPByteSource.secondsText(wait)) s); nothing was read: try again when it has ended")
            }
            usleep(20_000)
        }
    }

    public var name: String { path }

    /// Size, modification time and inode when the file was opened.
    public func validator() async throws -> String? {
        let status = try Platform.status(descriptor, path: path)
        return "\(status.size)-\(status.modified).\(status.modifiedNanoseconds)-\(status.inode)"
    }

    /// The file's size when it was opened.
    public func length() async throws -> UInt64 { size }

    public func read(_ range: Range<UInt64>) async throws -> [UInt8] {
        let upper = min(range.upperBound, size)
        guard range.lowerBound < upper else { return [] }
        guard let count = Int(exactly: upper - range.lowerBound) else {
            throw MP4Error(.io, "read of \(upper - range.lowerBound) bytes is too large", offset: range.lowerBound)
        }
        return try Platform.readFully(descriptor, offset: range.lowerBound, count: count, path: path)
    }
}
