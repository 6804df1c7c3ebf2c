#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import MP4Core
import MP4ProbeSystem

/// How every file of a cache directory is opened: as if a trap could be there. Another local
/// user, a sync tool or a bug may have put a symbolic link (its target would be written with
/// the origin's bytes), a FIFO or a device (a read would wait forever), or a file of someone
/// else in place of an entry's file; the names are predictable (a hash of the URL).
///
/// - No symbolic link is followed (`O_NOFOLLOW`), nothing is waited on at open
///   (`O_NONBLOCK`, cleared once the file is known to be regular).
/// - Only a regular file owned by this user is accepted (`fstat` of what was opened).
/// - Created files are new (`O_EXCL`) and private (0600); the directory is created 0700.
///
/// A trap is an error of kind `.io` whose message names it (``isTrap(_:)``); an entry that
/// meets one removes the name (never what it points to) and starts again.
enum CacheFiles {
    /// What is at a name that is not a file of ours, or `nil` for a regular file we own.
    static func trapDescription(_ info: stat, anyOwner: Bool = false) -> String? {
        switch info.st_mode & S_IFMT {
        case S_IFREG:
            return anyOwner || info.st_uid == geteuid() ? nil : "a file owned by user \(info.st_uid)"
        case S_IFLNK: return "a symbolic link"
        case S_IFIFO: return "a FIFO"
        case S_IFCHR, S_IFBLK: return "a device"
        case S_IFSOCK: return "a socket"
        case S_IFDIR: return "a directory"
        default: return "not a regular file"
        }
    }

    static let trapMarker = "planted in the cache directory"

    /// Whether `error` reports a trap (and not, say, a full disk).
    static func isTrap(_ error: Error) -> Bool {
        (error as? MP4Error).map { $0.message.contains(trapMarker) } ?? false
    }

    static func trap(_ path: String, _ what: String) -> MP4Error {
        MP4Error(.io, "\(path) is \(what), \(trapMarker) or left by another user: not followed, not read")
    }

    /// Opens the cache file at `path`: for reading, or for update (`create`: made when
    /// missing, never through a link). `nil` when it does not exist (and `create` is false).
    /// - Throws: a trap (``isTrap(_:)``), or `.io` when the open fails otherwise.
    static func open(_ path: String, forUpdate: Bool, create: Bool = false, anyOwner: Bool = false) throws -> Int32? {
        let access = forUpdate ? O_RDWR : O_RDONLY
        for _ in 0..<8 {
            var fd = systemOpen(path, access | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
            if fd < 0 && errno == ENOENT {
                guard create else { return nil }
                fd = systemOpen(path, access | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0o600)
                if fd < 0 && errno == EEXIST { continue }   // another process made it first: open that
            }
            if fd < 0 {
                // O_NOFOLLOW on a link: ELOOP (Linux, Darwin); EMLINK on some BSDs.
                if errno == ELOOP || errno == EMLINK { throw trap(path, "a symbolic link") }
                if errno == ENXIO { throw trap(path, "a FIFO or device") }  // a FIFO with no reader, opened for writing
                throw Platform.ioError("cannot open \(path)")
            }
            var info = stat()
            guard fstat(fd, &info) == 0 else {
                let error = Platform.ioError("cannot stat \(path)")
                Platform.closeFile(fd)
                throw error
            }
            if let what = trapDescription(info, anyOwner: anyOwner) {
                Platform.closeFile(fd)
                throw trap(path, what)
            }
            let flags = fcntl(fd, F_GETFL)
            if flags >= 0 { _ = fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) }
            return fd
        }
        throw MP4Error(.io, "cannot open \(path): it keeps being created and removed")
    }

    /// Reads the whole cache file at `path` if it is at most `limit` bytes: `nil` when there is
    /// none; throws a trap, or `.malformed` when it is larger. `anyOwner`: a regular file of
    /// another user is read too (an in-place faststart's journal beside a shared film).
    static func read(_ path: String, limit: UInt64, anyOwner: Bool = false) throws -> [UInt8]? {
        guard let fd = try open(path, forUpdate: false, anyOwner: anyOwner) else { return nil }
        defer { Platform.closeFile(fd) }
        let size = try Platform.regularFileSize(fd, path: path)
        guard size <= limit else { throw MP4Error(.malformed, "\(path) is \(size) bytes, more than it can be (\(limit))") }
        let bytes = try Platform.readFully(fd, offset: 0, count: Int(size), path: path)
        return bytes
    }

    /// The status of the name `path` itself (a link is not followed): `nil` when nothing is
    /// there.
    static func linkStatus(_ path: String) -> stat? {
        var info = stat()
        return lstat(path, &info) == 0 ? info : nil
    }

    /// Removes a trap at `path`: the name only (`unlink` never follows a link); a directory
    /// planted there is left (and the entry stays unusable, reported).
    static func removeTrap(_ path: String) {
        _ = unlink(path)
    }

    /// Creates the cache directory, private to this user (0700), when it is missing. On iOS
    /// (and tvOS) a directory it creates gets the data protection that lets a locked device
    /// read it once it was unlocked after boot (`completeUntilFirstUserAuthentication`; its
    /// files inherit it): in an app whose default is `complete`, background audio from the
    /// cache would fail while the device is locked. A directory that exists is left as the
    /// app made it.
    static func makeDirectory(_ path: String) throws {
        if mkdir(path, 0o700) == 0 {
            _ = mp4probe_protect_until_first_unlock(path)
        } else if errno != EEXIST {
            throw Platform.ioError("cannot create the directory \(path)")
        }
    }
}

/// `open(2)` under a name that does not clash with ``CacheFiles/open(_:forUpdate:create:)``.
private func systemOpen(_ path: String, _ flags: Int32, _ mode: mode_t = 0) -> Int32 {
    open(path, flags, mode)
}
