// The one place where Glibc and Darwin differ for the I/O module.
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

import MP4Core

/// Thin, typed wrappers over the POSIX calls the I/O module uses.
enum Platform {
    /// Opens `path` read-only.
    static func openForReading(_ path: String) throws -> Int32 {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 { throw ioError("cannot open \(path)") }
        return fd
    }

    /// The size of the file behind `fd`, refusing directories and other non-files.
    static func regularFileSize(_ fd: Int32, path: String) throws -> UInt64 {
        var info = stat()
        if fstat(fd, &info) != 0 { throw ioError("cannot stat \(path)") }
        let type = info.st_mode & S_IFMT
        if type == S_IFDIR { throw MP4Error(.io, "\(path) is a directory") }
        guard type == S_IFREG || type == S_IFBLK else { throw MP4Error(.io, "\(path) is not a regular file") }
        return UInt64(info.st_size)
    }

    /// Reads exactly `count` bytes at `offset` unless the file ends first.
    static func readFully(_ fd: Int32, offset: UInt64, count: Int, path: String) throws -> [UInt8] {
        var result = [UInt8](repeating: 0, count: count)
        var done = 0
        try result.withUnsafeMutableBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            while done < count {
                let n = pread(fd, base + done, count - done, off_t(offset + UInt64(done)))
                if n < 0 {
                    if errno == EINTR { continue }
                    throw ioError("read of \(count) bytes at \(offset) failed in \(path)")
                }
                if n == 0 { break }
                done += n
            }
        }
        if done < count { result.removeLast(count - done) }
        return result
    }

    static func closeFile(_ fd: Int32) { _ = close(fd) }

    /// An I/O error with the system's message for the current `errno`.
    static func ioError(_ what: String) -> MP4Error {
        let code = errno
        let reason = strerror(code).map { String(cString: $0) } ?? "errno \(code)"
        return MP4Error(.io, "\(what): \(reason)")
    }
}
