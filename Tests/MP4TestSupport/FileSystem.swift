#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import MP4IO

/// File helpers for tests, on the production wrappers of `MP4IO.Platform` (listing, reading,
/// writing, sizes, the clock) rather than copies of them.
public enum FileSystem {
    /// Whether `path` is a directory.
    public static func isDirectory(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFDIR
    }

    /// Names of the regular files in `directory` (not recursive).
    public static func list(_ directory: String) -> [String] {
        entries(directory).filter { name in
            var info = stat()
            return stat(directory + "/" + name, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
        }
    }

    /// The whole file, or `nil`.
    public static func read(_ path: String) -> [UInt8]? {
        guard let fd = try? Platform.openForReading(path) else { return nil }
        defer { Platform.closeFile(fd) }
        guard let size = try? Platform.regularFileSize(fd, path: path) else { return nil }
        return try? Platform.readFully(fd, offset: 0, count: Int(size), path: path)
    }

    /// Writes `bytes` to `path` (replacing it). Returns whether it worked.
    @discardableResult
    public static func write(_ bytes: [UInt8], to path: String) -> Bool {
        writeSparse(path, size: UInt64(bytes.count), pieces: [(0, bytes)])
    }

    /// Creates `path` as a sparse file of `size` bytes holding `pieces` at their offsets and
    /// holes elsewhere (a multi-gigabyte file costs only the pieces' bytes on disk).
    @discardableResult
    public static func writeSparse(_ path: String, size: UInt64, pieces: [(UInt64, [UInt8])]) -> Bool {
        guard let fd = try? Platform.openForUpdate(path) else { return false }
        defer { Platform.closeFile(fd) }
        do {
            try Platform.truncate(fd, size: 0, path: path)
            try Platform.truncate(fd, size: size, path: path)
            for (offset, bytes) in pieces { try Platform.writeFully(fd, bytes, offset: offset, path: path) }
            return true
        } catch {
            return false
        }
    }

    /// A new empty directory under /tmp, removed with everything in it when the test process
    /// exits (unless `MP4PROBE_KEEP_TEST_DIRECTORIES` is set, to look at what a test left).
    public static func temporaryDirectory(_ prefix: String = "mp4probe-test") -> String {
        var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
        let path = template.withUnsafeMutableBufferPointer { buffer -> String? in
            guard let base = buffer.baseAddress, let made = mkdtemp(base) else { return nil }
            return String(cString: made)
        }
        // Never "/tmp" itself: every test removes its directory, with everything in it.
        guard let path else { fatalError("cannot make a directory under /tmp: \(String(cString: strerror(errno)))") }
        made.withLock { made in
            if made.isEmpty, getenv("MP4PROBE_KEEP_TEST_DIRECTORIES") == nil {
                atexit { for path in FileSystem.made.withLock({ $0 }) { FileSystem.removeDirectory(path) } }
            }
            made.append(path)
        }
        return path
    }

    /// The directories ``temporaryDirectory(_:)`` made in this process (/tmp here held 702
    /// nginx directories and about 140 others left by earlier suite runs).
    private static let made = Locked<[String]>([])

    /// Removes `path` and everything under it: a link is removed, never followed (tests plant
    /// links to files elsewhere in cache directories), and a directory a test made unreadable
    /// is made readable first.
    public static func removeDirectory(_ path: String) { removeTree(path, depth: 0) }

    private static func removeTree(_ path: String, depth: Int) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            unlink(path)
            return
        }
        guard depth < 32 else { return }
        chmod(path, 0o700)
        for name in entries(path) where name != "." && name != ".." { removeTree(path + "/" + name, depth: depth + 1) }
        rmdir(path)
    }

    /// Every entry of `directory`, hidden ones included (files, links, directories).
    public static func entries(_ directory: String) -> [String] { Platform.list(directory) }

    /// Whether `path` exists.
    public static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    /// Bytes the file occupies on disk (less than its size when sparse).
    public static func allocatedBytes(_ path: String) -> UInt64 { Platform.usage(path)?.allocated ?? 0 }

    /// Permission bits of `path`.
    public static func permissions(_ path: String) -> UInt32 {
        var info = stat()
        guard stat(path, &info) == 0 else { return 0 }
        return UInt32(info.st_mode) & 0o7777
    }

    public static func setPermissions(_ path: String, _ mode: UInt32) { chmod(path, mode_t(mode)) }

    /// A monotonic clock in seconds.
    public static func now() -> Double { Platform.now() }
}
