import Foundation
import MP4Core
import MP4ProbeSystem
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The one owner of an operation that writes a media file in place (an in-place faststart,
/// the recovery of an interrupted one, the copy path's replacement of its input): an exclusive
/// record lock over the whole file, held through a read-write descriptor.
///
/// The lock is the cache's kind (``EntryLocks``): owned by the open file description
/// (`F_OFD_SETLK`), so it conflicts between processes and between descriptions in one
/// process, on Linux and Darwin alike, and a second descriptor of the file closed by the
/// owner (its ``FileSource``) does not drop it. It is advisory: it binds mp4probe processes,
/// which is whom a journal's recovery must exclude (two recoveries of one journal each
/// removed the inserted space, and the film lost its head).
final class FileOwnerLock {
    /// The locked descriptor (open for reading and writing); -1 once released.
    private(set) var fd: Int32

    private init(fd: Int32) { self.fd = fd }

    /// Opens `path` for reading and writing and takes its owner lock, trying again every
    /// 20 ms for up to `wait` seconds while another description holds it; `nil` when another
    /// held it for the whole wait (an operation is under way).
    /// - Throws: ``MP4Error`` `.io` when the file cannot be opened for writing, or record
    ///   locks are not supported by its filesystem.
    static func take(_ path: String, waitingUpTo wait: Double) throws -> FileOwnerLock? {
        let deadline = Date().addingTimeInterval(max(0, wait))
        // A copy-path owner replaces the file (a rename): a lock won on the file it replaced
        // is dropped and taken on the one now at `path` (bounded).
        for _ in 0..<100 {
            let fd = open(path, O_RDWR | O_CLOEXEC | O_NONBLOCK)
            if fd < 0 { throw Platform.ioError("cannot open \(path) for writing") }
            var taken = false
            while !taken {
                // Length 0: from byte 0 to any size the file may grow to.
                switch mp4probe_range_trylock(fd, 0, 0) {
                case 0:
                    taken = true
                case 1 where Date() < deadline:
                    usleep(20_000)
                case 1:
                    Platform.closeFile(fd)
                    return nil
                default:
                    let error = Platform.ioError("cannot lock \(path)")
                    Platform.closeFile(fd)
                    throw error
                }
            }
            if Platform.isSameFile(fd, path: path) { return FileOwnerLock(fd: fd) }
            mp4probe_range_unlock(fd, 0, 0)
            Platform.closeFile(fd)
        }
        throw MP4Error(.io, "cannot lock \(path): it keeps being replaced")
    }

    /// Releases the lock and closes the descriptor (once; the owner's last step, after its
    /// journal is removed).
    func release() {
        guard fd >= 0 else { return }
        mp4probe_range_unlock(fd, 0, 0)
        Platform.closeFile(fd)
        fd = -1
    }

    deinit { release() }
}
