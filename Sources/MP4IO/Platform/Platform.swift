// The one place where Glibc and Darwin differ for the I/O module.
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

import MP4ProbeSystem
import MP4Core

/// Thin, typed wrappers over the POSIX calls the I/O module uses (`package`: the test support
/// uses them too, rather than copies).
package enum Platform {
    /// Opens `path` read-only.
    package static func openForReading(_ path: String) throws -> Int32 {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        if fd < 0 { throw ioError("cannot open \(path)") }
        return fd
    }

    /// The size of the file behind `fd`, refusing directories and other non-files.
    package static func regularFileSize(_ fd: Int32, path: String) throws -> UInt64 {
        var info = stat()
        if fstat(fd, &info) != 0 { throw ioError("cannot stat \(path)") }
        let type = info.st_mode & S_IFMT
        if type == S_IFDIR { throw MP4Error(.io, "\(path) is a directory") }
        guard type == S_IFREG || type == S_IFBLK else { throw MP4Error(.io, "\(path) is not a regular file") }
        return UInt64(max(0, info.st_size))
    }

    /// Reads exactly `count` bytes at `offset` unless the file ends first.
    package static func readFully(_ fd: Int32, offset: UInt64, count: Int, path: String) throws -> [UInt8] {
        // Not zeroed first: pread fills it, and only what it filled is kept (zeroing a 7 MB
        // moov's buffer was a twentieth of `info` on it).
        try [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            initialized = 0
            guard let base = buffer.baseAddress else { return }
            adviseHugePages(UnsafeMutableRawPointer(base), count)
            while initialized < count {
                let n = pread(fd, base + initialized, count - initialized, off_t(offset + UInt64(initialized)))
                if n < 0 {
                    if errno == EINTR { continue }
                    throw ioError("read of \(count) bytes at \(offset) failed in \(path)")
                }
                if n == 0 { break }
                initialized += n
            }
        }
    }

    /// Asks for transparent huge pages for the 2 MiB-aligned part of a large buffer about to
    /// be filled (Linux, where THP is on `madvise`): a 7 MB `moov` then costs a few page
    /// faults instead of 1,800 (`info` on the two-hour film: 2,428 → 895 in all, perf stat).
    /// Does nothing for buffers under 4 MiB.
    static func adviseHugePages(_ base: UnsafeMutableRawPointer, _ count: Int) {
        #if os(Linux)
        let huge = 2 << 20
        guard count >= 2 * huge else { return }
        let start = (Int(bitPattern: base) + huge - 1) & ~(huge - 1)
        let end = (Int(bitPattern: base) + count) & ~(huge - 1)
        guard end > start, let aligned = UnsafeMutableRawPointer(bitPattern: start) else { return }
        _ = madvise(aligned, end - start, MADV_HUGEPAGE)
        #endif
    }

    package static func closeFile(_ fd: Int32) { _ = close(fd) }

    /// Identity and state of an open file.
    struct FileStatus: Equatable {
        var device: UInt64
        var inode: UInt64
        var size: UInt64
        var modified: Int64
        var modifiedNanoseconds: Int64
        var permissions: UInt32
        /// Hard links to the file (names in directories).
        var links: UInt64 = 1
        /// A regular file (not a device, pipe, directory or socket).
        var isRegularFile = true
    }

    static func status(_ fd: Int32, path: String) throws -> FileStatus {
        var info = stat()
        if fstat(fd, &info) != 0 { throw ioError("cannot stat \(path)") }
        var seconds: Int64 = 0, nanoseconds: Int64 = 0
        mp4probe_modified_time(&info, &seconds, &nanoseconds)
        return FileStatus(device: UInt64(truncatingIfNeeded: info.st_dev), inode: UInt64(truncatingIfNeeded: info.st_ino), size: UInt64(max(0, info.st_size)), modified: seconds, modifiedNanoseconds: nanoseconds, permissions: UInt32(info.st_mode) & 0o7777, links: UInt64(info.st_nlink),
                          isRegularFile: (info.st_mode & S_IFMT) == S_IFREG)
    }

    /// Whether `path` itself is a symbolic link (not followed).
    static func isSymbolicLink(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFLNK
    }

    /// The file a symbolic link finally points to (every link and `..` resolved), or nil when
    /// the chain is broken or loops.
    static func resolvedPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// The directory part of `path` (`.` when it has none) and its last component, split at
    /// the last `/` as the string stands (no lookup, no current directory).
    package static func split(_ path: String) -> (directory: String, name: String) {
        guard let slash = path.lastIndex(of: "/") else { return (".", path) }
        let directory = String(path[..<slash])
        return (directory.isEmpty ? "/" : directory, String(path[path.index(after: slash)...]))
    }

    /// `name` in `directory` (no doubled slash at the root).
    package static func path(in directory: String, _ name: String) -> String {
        directory.hasSuffix("/") ? directory + name : directory + "/" + name
    }

    /// Whether something exists at `path` (a broken symbolic link does not).
    package static func exists(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0
    }

    /// Writes all of `text` to `fd` (standard output, a pipe): retries short writes and EINTR,
    /// gives up silently on any other error (a closed pipe).
    package static func writeAll(_ fd: Int32, _ text: String) {
        var text = text
        text.withUTF8 { buffer in
            var done = 0
            while done < buffer.count {
                let written = write(fd, buffer.baseAddress.map { $0 + done }, buffer.count - done)
                if written < 0 && errno == EINTR { continue }
                if written <= 0 { return }
                done += written
            }
        }
    }

    /// Unblocks SIGINT, SIGTERM and SIGHUP on the calling thread. A process started by a
    /// thread that blocks them (Foundation's `Process` from a Swift concurrency thread, whose
    /// mask children inherit) would otherwise never see them while this thread works, and a
    /// rewrite could not be interrupted.
    package static func unblockTerminationSignals() {
        var set = sigset_t()
        sigemptyset(&set)
        for signal in [SIGINT, SIGTERM, SIGHUP] { sigaddset(&set, signal) }
        pthread_sigmask(SIG_UNBLOCK, &set, nil)
    }

    /// The status of `path` when it exists.
    static func status(path: String) -> FileStatus? {
        // Never waits at the open (a FIFO without a writer would block it forever).
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else { return nil }
        defer { closeFile(fd) }
        return try? status(fd, path: path)
    }

    /// Creates a new file that must not exist yet, for writing.
    static func createExclusive(_ path: String, permissions: UInt32) throws -> Int32 {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode_t(permissions))
        if fd < 0 { throw ioError("cannot create \(path)") }
        return fd
    }

    /// Writes all of `bytes` at `offset`.
    package static func writeFully(_ fd: Int32, _ bytes: [UInt8], offset: UInt64, path: String) throws {
        try writeFully(fd, bytes[...], offset: offset, path: path)
    }

    /// Writes all of `bytes` at `offset`.
    package static func writeFully(_ fd: Int32, _ bytes: ArraySlice<UInt8>, offset: UInt64, path: String) throws {
        var done = 0
        try bytes.withUnsafeBytes { buffer in
            guard let base = buffer.baseAddress else { return }
            while done < buffer.count {
                let n = pwrite(fd, base + done, buffer.count - done, off_t(offset + UInt64(done)))
                if n < 0 {
                    if errno == EINTR { continue }
                    throw ioError("write of \(buffer.count) bytes at \(offset) failed in \(path)")
                }
                if n == 0 { throw ioError("write of \(buffer.count) bytes at \(offset) made no progress in \(path)") }
                done += n
            }
        }
    }

    /// Whether the filesystem holding `directory` may share extents between files
    /// (`FICLONERANGE`): XFS or Btrfs. Asked before a clone is tried, so that other
    /// filesystems pay nothing for it.
    static func filesystemMayClone(_ directory: String) -> Bool {
        let type = mp4probe_filesystem_type(directory)
        return type == 0x5846_5342 || type == 0x9123_683E  // XFS, Btrfs
    }

    /// Copies `range` of `input` to `output` at `outputOffset` inside the kernel where it can
    /// (`copy_file_range`), else through `buffer` (8 MiB, allocated the first time it is needed:
    /// pass an empty one). Holes of the input (`SEEK_DATA`/`SEEK_HOLE`)
    /// are skipped, so they stay holes in an output that was sized beforehand. Calls
    /// `progress` with the bytes done so far (holes included).
    static func copy(_ input: Int32, _ range: Range<UInt64>, to output: Int32, at outputOffset: UInt64, buffer: inout [UInt8], names: (String, String), progress: (UInt64) throws -> Void) throws {
        var position = range.lowerBound
        var kernelCopy = true
        while position < range.upperBound {
            // Where the next data starts and ends.
            var dataStart = position
            let foundData = mp4probe_seek_data(input, Int64(position))
            if foundData < 0 {
                if errno == ENXIO { try progress(range.upperBound - range.lowerBound); return }  // only a hole remains
            } else {
                dataStart = UInt64(foundData)
            }
            if dataStart >= range.upperBound { try progress(range.upperBound - range.lowerBound); return }
            let foundHole = mp4probe_seek_hole(input, Int64(dataStart))
            let dataEnd = foundHole < 0 ? range.upperBound : min(range.upperBound, max(UInt64(foundHole), dataStart + 1))
            var at = dataStart
            while at < dataEnd {
                let step = Int(min(dataEnd - at, 64 << 20))
                let target = outputOffset + (at - range.lowerBound)
                var copied = -1
                if kernelCopy {
                    copied = mp4probe_copy_file_range(input, Int64(at), output, Int64(target), step)
                    if copied < 0 {
                        let code = errno
                        if code == EINTR { continue }
                        if code == ENOSPC || code == EIO || code == EDQUOT || code == EFBIG { throw ioError("write to \(names.1) failed") }
                        kernelCopy = false  // ENOSYS, EXDEV, EINVAL...: fall back to read/write
                    }
                }
                if !kernelCopy {
                    if buffer.isEmpty { buffer = [UInt8](repeating: 0, count: 8 << 20) }
                    let count = min(step, buffer.count)
                    let n = buffer.withUnsafeMutableBytes { pread(input, $0.baseAddress, count, off_t(at)) }
                    if n < 0 {
                        if errno == EINTR { continue }
                        throw ioError("read at \(at) failed in \(names.0)")
                    }
                    copied = n
                    if n > 0 { try writeFully(output, buffer[0..<n], offset: target, path: names.1) }
                }
                if copied == 0 { throw MP4Error(.io, "\(names.0) ended at \(at), before \(range.upperBound): did it shrink during the rewrite?", offset: at) }
                // Start writing this block to disk now, and wait for the one before the
                // previous: the final fsync then has little left, and dirty pages stay bounded.
                mp4probe_start_writeback(output, Int64(target), Int64(copied), 0)
                if target >= 128 << 20 { mp4probe_start_writeback(output, Int64(target - (128 << 20)), 64 << 20, 1) }
                at += UInt64(copied)
                try progress(at - range.lowerBound)
            }
            position = dataEnd
        }
    }

    package static func truncate(_ fd: Int32, size: UInt64, path: String) throws {
        if ftruncate(fd, off_t(size)) != 0 { throw ioError("cannot size \(path) to \(size) bytes") }
    }

    /// What a flush is for: the platform's call for each is chosen in C (`mp4probe_sync`),
    /// where the Darwin header check sees it.
    package enum SyncPurpose: Int32, Sendable {
        /// What was written before reaches the disk before what is written after, as a cache
        /// needs (its data before the table that claims it; what a crash loses is fetched
        /// again): `F_BARRIERFSYNC` on Darwin, without a drive flush; `fdatasync` on Linux.
        case ordered = 0
        /// The data on stable storage: `F_FULLFSYNC` on Darwin, `fdatasync` on Linux.
        case durableData = 1
        /// Data and metadata on stable storage, as a user's file and a journal need:
        /// `F_FULLFSYNC` on Darwin (its `fsync` stops at the drive's cache), `fsync` on Linux.
        case durable = 2
    }

    /// Flushes `fd` for `purpose`.
    static func sync(_ fd: Int32, path: String, for purpose: SyncPurpose = .durable) throws {
        for slowDisk in beforeSync.withLock({ Array($0.values) }) { slowDisk(path, purpose) }
        if mp4probe_sync(fd, purpose.rawValue) != 0 { throw ioError("cannot flush \(path) to disk") }
    }

    /// Tests only: called before each flush with the file's path (a slow disk, simulated),
    /// each test's under a name of its own (tests run side by side).
    package static let beforeSync = Locked<[String: @Sendable (String, SyncPurpose) -> Void]>([:])

    static func setPermissions(_ fd: Int32, _ permissions: UInt32, path: String) throws {
        if fchmod(fd, mode_t(permissions)) != 0 { throw ioError("cannot set the permissions of \(path)") }
    }

    static func renameFile(_ from: String, to: String) throws {
        if rename(from, to) != 0 { throw ioError("cannot rename \(from) to \(to)") }
    }

    static func removeFile(_ path: String) { _ = unlink(path) }

    /// Whether a process with this ID exists (kill with signal 0; EPERM means it exists).
    static func processExists(_ pid: Int32) -> Bool {
        kill(pid, 0) == 0 || errno == EPERM
    }

    /// Flushes a directory entry change (a rename) to disk.
    static func syncDirectory(_ path: String) {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return }
        _ = mp4probe_sync(fd, SyncPurpose.durable.rawValue)
        closeFile(fd)
    }

    static var processID: Int32 { getpid() }

    /// Opens (creating when missing) `path` for reading and writing.
    package static func openForUpdate(_ path: String, permissions: UInt32 = 0o644) throws -> Int32 {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, mode_t(permissions))
        if fd < 0 { throw ioError("cannot open \(path)") }
        return fd
    }

    /// Whether `fd` is the file at `path` now (same device and inode): a lock file may have
    /// been removed (`cache evict`) or replaced after it was opened.
    static func isSameFile(_ fd: Int32, path: String) -> Bool {
        var open = stat(), named = stat()
        guard fstat(fd, &open) == 0, stat(path, &named) == 0 else { return false }
        return open.st_dev == named.st_dev && open.st_ino == named.st_ino
    }

    /// Sets the modification time of `path` to now (the cache's least-recently-used clock).
    static func touch(_ path: String) { _ = lutimes(path, nil) }

    /// Modification time (seconds) and bytes allocated on disk of `path`.
    /// (Of the name itself: a symbolic link is not followed, as in a cache directory.)
    package static func usage(_ path: String) -> (modified: Double, allocated: UInt64, size: UInt64)? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        var seconds: Int64 = 0, nanoseconds: Int64 = 0
        mp4probe_modified_time(&info, &seconds, &nanoseconds)
        let modified = Double(seconds) + Double(nanoseconds) / 1e9
        return (modified, UInt64(max(0, info.st_blocks)) * 512, UInt64(max(0, info.st_size)))
    }

    /// The inode and size of `path` (one `stat`), when it exists.
    static func identity(_ path: String) -> (inode: UInt64, size: UInt64)? {
        var info = stat()
        guard lstat(path, &info) == 0 else { return nil }
        return (UInt64(truncatingIfNeeded: info.st_ino), UInt64(max(0, info.st_size)))
    }

    /// Names in `directory`.
    package static func list(_ directory: String) -> [String] {
        guard let dir = opendir(directory) else { return [] }
        defer { closedir(dir) }
        var names: [String] = []
        // The name is read in place: a `dirent` is only as long as its name (`d_reclen`), so
        // copying the whole `d_name` field read past the end of the buffer readdir returned
        // (AddressSanitizer: heap-buffer-overflow, on a directory of 600 cache files).
        let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name) ?? 0
        while let entry = readdir(dir) {
            let name = String(cString: (UnsafeRawPointer(entry) + nameOffset).assumingMemoryBound(to: CChar.self))
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    static func makeDirectory(_ path: String) throws {
        if mkdir(path, 0o755) != 0 && errno != EEXIST { throw ioError("cannot create the directory \(path)") }
    }

    /// Whether standard error is a terminal (progress goes there only then).
    static var standardErrorIsTerminal: Bool { isatty(2) == 1 }

    /// Wall-clock seconds, for progress rates.
    package static func now() -> Double {
        var t = timespec()
        clock_gettime(CLOCK_MONOTONIC, &t)
        return Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
    }

    /// Random bytes for temporary names, without Foundation.
    static func randomSuffix() -> String {
        String(UInt64.random(in: 0...UInt64.max), radix: 36)
    }

    /// An I/O error with the system's message for the current `errno`.
    static func ioError(_ what: String) -> MP4Error {
        let code = errno
        var reason = strerror(code).map { String(cString: $0) } ?? "errno \(code)"
        if code == ENOSPC { reason += " (the disk is full)" }
        if code == EDQUOT { reason += " (disk quota exceeded)" }
        return MP4Error(.io, "\(what): \(reason)").caused(by: .system(errno: code))
    }
}
