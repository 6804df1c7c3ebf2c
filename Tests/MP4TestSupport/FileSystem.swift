#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Minimal file helpers for tests (no Foundation in the core's test support).
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
        guard let file = fopen(path, "rb") else { return nil }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let n = fread(&buffer, 1, buffer.count, file)
            if n <= 0 { break }
            bytes.append(contentsOf: buffer[0..<n])
        }
        return bytes
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
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        guard ftruncate(fd, off_t(size)) == 0 else { return false }
        for (offset, bytes) in pieces {
            let written = bytes.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, off_t(offset)) }
            guard written == bytes.count else { return false }
        }
        return true
    }

    /// A new empty directory under /tmp.
    public static func temporaryDirectory(_ prefix: String = "mp4probe-test") -> String {
        var template = Array("/tmp/\(prefix)-XXXXXX".utf8CString)
        return template.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress, let made = mkdtemp(base) else { return "/tmp" }
            return String(cString: made)
        }
    }

    /// Removes a directory and the regular files in it.
    public static func removeDirectory(_ path: String) {
        for name in list(path) { unlink(path + "/" + name) }
        rmdir(path)
    }

    /// Every entry of `directory`, hidden ones included (files, links, directories).
    public static func entries(_ directory: String) -> [String] {
        guard let dir = opendir(directory) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) { pointer in
                pointer.withMemoryRebound(to: CChar.self, capacity: 256) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    /// Whether `path` exists.
    public static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    /// Bytes the file occupies on disk (less than its size when sparse).
    public static func allocatedBytes(_ path: String) -> UInt64 {
        var info = stat()
        guard stat(path, &info) == 0 else { return 0 }
        return UInt64(info.st_blocks) * 512
    }

    /// Permission bits of `path`.
    public static func permissions(_ path: String) -> UInt32 {
        var info = stat()
        guard stat(path, &info) == 0 else { return 0 }
        return UInt32(info.st_mode) & 0o7777
    }

    public static func setPermissions(_ path: String, _ mode: UInt32) { chmod(path, mode_t(mode)) }

    /// A monotonic clock in seconds.
    public static func now() -> Double {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
    }
}
