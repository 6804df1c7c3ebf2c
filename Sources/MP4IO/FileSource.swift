import MP4Core

/// A ``ByteSource`` over a local file, read with positional reads (`pread`): no seeking
/// state, safe for concurrent reads, and the file is never loaded whole.
public final class FileSource: ByteSource {
    /// The path given at creation.
    public let path: String
    private let descriptor: Int32
    private let size: UInt64

    /// Opens `path` for reading.
    /// - Throws: ``MP4Error`` of kind ``MP4Error/Kind/io`` when the file cannot be opened or is
    ///   not a regular file.
    public init(path: String) throws {
        let fd = try Platform.openForReading(path)
        do {
            size = try Platform.regularFileSize(fd, path: path)
        } catch {
            Platform.closeFile(fd)
            throw error
        }
        self.path = path
        self.descriptor = fd
    }

    deinit { Platform.closeFile(descriptor) }

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
