#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import MP4ProbeSystem
import MP4Core

/// The locking protocol of a cache entry, between processes: one lock file per entry, and one
/// kind of lock on it, record locks owned by the open file description (`F_OFD_SETLK`).
///
/// - **Byte 0** is the table lock: held (waiting for it) while the table is read and replaced,
///   the data file reset, or the entry removed.
/// - **Byte 1 + n** stands for byte n of the resource: a process holds the bytes it is
///   fetching (without waiting), so another process follows its commits instead of fetching
///   them again.
///
/// Why one kind: Linux keeps `flock` locks and record locks apart, but Darwin keeps them in one
/// list per file, where they block each other when their owners differ, and `flock` has no
/// deadlock detection. A process that held a range lock (its fetch) and then took `flock` to
/// commit would wait for itself there. With record locks only, a description never conflicts
/// with itself, on either kernel, and what is tested here is what runs there.
enum EntryLocks {
    /// The table lock, waiting for other processes (and other descriptions in this one).
    static func lockTable(_ fd: Int32, path: String) throws {
        if mp4probe_range_lock_wait(fd, 0, 1) != 0 { throw Platform.ioError("cannot lock \(path)") }
    }

    static func unlockTable(_ fd: Int32) {
        mp4probe_range_unlock(fd, 0, 1)
    }

    /// Marks `range` of the resource as fetched by this description, unless another holds part
    /// of it. `true`: taken; `false`: another description holds part of it; `nil`: record
    /// locks are not supported here (then every process fetches what it needs).
    static func tryClaim(_ fd: Int32, _ range: Range<UInt64>) -> Bool? {
        guard let (start, length) = span(range) else { return nil }
        switch mp4probe_range_trylock(fd, start, length) {
        case 0: return true
        case 1: return false
        default: return nil
        }
    }

    static func release(_ fd: Int32, _ range: Range<UInt64>) {
        guard let (start, length) = span(range) else { return }
        mp4probe_range_unlock(fd, start, length)
    }

    /// The first byte of `range` that another description is fetching, or `nil`.
    static func conflict(_ fd: Int32, _ range: Range<UInt64>) -> UInt64? {
        guard let (start, length) = span(range) else { return nil }
        let conflict = mp4probe_range_conflict(fd, start, length)
        return conflict < 1 ? nil : UInt64(conflict - 1)
    }

    /// The part of `range` this description may fetch: trimmed to end where another's fetch
    /// begins; `nil` when another fetches its first byte. With `othersAllowed` false the
    /// lock is taken where it can be and `range` fetched anyway (a reader that waited too long
    /// for another process). Without record locks, `range` as it is.
    static func claim(_ fd: Int32, _ range: Range<UInt64>, othersAllowed: Bool) -> Range<UInt64>? {
        guard othersAllowed else {
            _ = tryClaim(fd, range)
            return range
        }
        var part = range
        if let conflict = conflict(fd, part) {
            guard conflict > part.lowerBound else { return nil }
            part = part.lowerBound..<conflict
        }
        return tryClaim(fd, part) == false ? nil : part
    }

    /// Resource bytes as lock-file bytes: shifted by one, past the table lock.
    private static func span(_ range: Range<UInt64>) -> (Int64, Int64)? {
        let limit = UInt64(Int64.max) - 1
        guard !range.isEmpty, range.lowerBound < limit else { return nil }
        return (Int64(range.lowerBound) + 1, Int64(min(UInt64(range.count), limit - range.lowerBound)))
    }

    /// Opens (creating) the lock file at `path` and takes its table lock; returns the
    /// descriptor. Lock files may be removed by their holder (eviction), so a lock taken on a
    /// file that is no longer at `path` is dropped and taken again on the new one (bounded).
    static func openAndLockTable(_ path: String) throws -> Int32 {
        for _ in 0..<1000 {
            // A trap at the lock file's name is an error here (never followed or waited
            // on); the entry that owns the name removes it (``EntryStore``).
            guard let fd = try CacheFiles.open(path, forUpdate: true, create: true) else { throw MP4Error(.io, "cannot create \(path)") }
            do {
                try lockTable(fd, path: path)
            } catch {
                Platform.closeFile(fd)
                throw error
            }
            if Platform.isSameFile(fd, path: path) { return fd }
            unlockTable(fd)
            Platform.closeFile(fd)
        }
        throw Platform.ioError("cannot lock \(path): it keeps being removed")
    }
}
