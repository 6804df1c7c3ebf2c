// System calls that Glibc's Swift overlay does not expose (copy_file_range, SEEK_DATA /
// SEEK_HOLE), wrapped so that Swift code can call them on every platform: where the platform
// lacks one, the wrapper fails with ENOSYS / EINVAL and the caller falls back.
#ifndef MP4PROBE_CSYSTEM_H
#define MP4PROBE_CSYSTEM_H

#include <stdint.h>
#include <sys/types.h>
#include <sys/stat.h>

/// The modification time of `info` (`st_mtim` on Linux, `st_mtimespec` on Darwin).
void mp4probe_modified_time(const struct stat *info, int64_t *seconds, int64_t *nanoseconds);

/// copy_file_range(2): copies up to `length` bytes between two file descriptors inside the
/// kernel. Returns the bytes copied, or -1 with errno (ENOSYS, EXDEV, EINVAL...) to fall back.
ssize_t mp4probe_copy_file_range(int in_fd, int64_t in_offset, int out_fd, int64_t out_offset, size_t length);

/// lseek(fd, offset, SEEK_DATA): the next offset ≥ `offset` holding data, or -1 (ENXIO past
/// the last data, EINVAL where unsupported).
int64_t mp4probe_seek_data(int fd, int64_t offset);

/// lseek(fd, offset, SEEK_HOLE): the next hole at or after `offset` (the end of the file counts
/// as a hole), or -1.
int64_t mp4probe_seek_hole(int fd, int64_t offset);

/// Byte-range write lock on [start, start + length) of fd's file, without waiting: 0 taken,
/// 1 held by another descriptor (another process), -1 unsupported or failed.
int mp4probe_range_trylock(int fd, int64_t start, int64_t length);
/// A shared (read) lock on the same range, without waiting: it conflicts only with write
/// locks. 0 taken, 1 a write lock is held by another descriptor, -1 unsupported or failed.
int mp4probe_range_tryshare(int fd, int64_t start, int64_t length);
/// The same lock, waiting while another open file description holds part of it: 0 taken, -1
/// error (errno).
int mp4probe_range_lock_wait(int fd, int64_t start, int64_t length);
void mp4probe_range_unlock(int fd, int64_t start, int64_t length);
/// Where the first lock another descriptor holds over [start, start + length) begins (at
/// least start), or -1 when there is none.
int64_t mp4probe_range_conflict(int fd, int64_t start, int64_t length);

/// Starts writing `length` bytes at `offset` of `fd` back to disk without waiting
/// (sync_file_range with SYNC_FILE_RANGE_WRITE), so that a final fsync has little left to do.
/// When `wait_before` is set, first waits for earlier writeback of that range to finish,
/// which bounds the dirty pages a long copy leaves behind. A no-op where unsupported.
void mp4probe_start_writeback(int fd, int64_t offset, int64_t length, int wait_before);

// Sockets for the HTTP/1.1 client (and the server): thin wrappers so that Swift code calls
// the same functions on Glibc, Musl and Darwin (SOCK_STREAM, MSG_NOSIGNAL / SO_NOSIGPIPE and
// getaddrinfo's types differ between them).

/// Why `mp4probe_tcp_connect` failed.
enum {
    MP4PROBE_CONNECT_UNRESOLVED = 1,   ///< the host name did not resolve
    MP4PROBE_CONNECT_REFUSED = 2,      ///< every address refused or was unreachable
    MP4PROBE_CONNECT_TIMED_OUT = 3,    ///< no address answered within the timeout
};

/// Resolves `host` (a name or an IPv4/IPv6 literal without brackets) and connects to `port` on
/// each address in turn, waiting at most `timeout_ms` per address. Returns a connected socket
/// (non-blocking, close-on-exec, TCP_NODELAY, no SIGPIPE), or -1 with `*failure` set to one of
/// the values above and errno to the last error.
int mp4probe_tcp_connect(const char *host, int port, int timeout_ms, int *failure);

/// Waits until `fd` is readable (`for_write` 0) or writable (1), at most `timeout_ms`.
/// Returns 1 when ready (or hung up / in error: the next read or write says which), 0 on
/// timeout, -1 with errno.
int mp4probe_wait(int fd, int for_write, int timeout_ms);

/// Waits until the peer of the connected socket `fd` hangs up or sends something, at most
/// `timeout_ms`: 1 then (the caller looks which), 0 on timeout, -1 with errno.
int mp4probe_wait_hangup(int fd, int timeout_ms);

/// A pipe for waking a thread that waits in `mp4probe_wait_or_wake`: `fds[0]` is read, a
/// byte written to `fds[1]` wakes it. Both ends non-blocking and close-on-exec. 0, or -1.
int mp4probe_wake_pipe(int fds[2]);

/// Waits until `fd` is readable or `wake_fd` is, at most `timeout_ms` (-1: no limit), with no
/// other wake-up. Returns 1 when `fd` is ready, 2 when `wake_fd` is (whether or not `fd` is
/// too), 0 on timeout, -1 with errno.
int mp4probe_wait_or_wake(int fd, int wake_fd, int timeout_ms);

/// Tests only: makes the listening socket `fd` stand for one the system took away as XNU
/// does from a suspended iOS app (marked defunct): `fd` becomes another listening socket, on
/// an ephemeral port, so that `poll` never reports it ready for the old port and `accept`
/// says EWOULDBLOCK, and the old port is let go. 0, or -1 with errno.
int mp4probe_make_listener_defunct(int fd);

/// recv(2) without blocking: bytes read, 0 at end of stream, -1 with errno (EAGAIN when nothing
/// is there yet).
ssize_t mp4probe_recv(int fd, void *buffer, size_t length);

/// send(2) without blocking and without SIGPIPE: bytes sent, -1 with errno (EAGAIN when the
/// socket buffer is full, EPIPE when the peer is gone).
ssize_t mp4probe_send(int fd, const void *buffer, size_t length);

/// shutdown(fd, SHUT_RDWR): wakes anyone waiting on `fd` (cancellation) without closing it.
void mp4probe_shutdown(int fd);
/* A write to this socket after the peer left fails (EPIPE) instead of raising SIGPIPE, where
   the system has a socket option for it (SO_NOSIGPIPE: Darwin; Linux passes MSG_NOSIGNAL to
   each send instead): for sockets made or accepted outside mp4probe_tcp_connect/accept. */
void mp4probe_no_sigpipe(int fd);
/* Ends the sending direction only (a FIN after what was sent); the peer may still send. */
void mp4probe_shutdown_write(int fd);

/// A listening TCP socket on the numeric address `host` (`127.0.0.1`, `::1`) and `port` (0: the
/// system picks one, written to `*bound_port`): non-blocking, close-on-exec, SO_REUSEADDR.
/// Returns the socket, or -1 with errno.
int mp4probe_tcp_listen(const char *host, int port, int backlog, int *bound_port);

/// Accepts one connection without blocking: a non-blocking, close-on-exec, TCP_NODELAY
/// socket with a 256 KiB send buffer, or -1 with errno (EAGAIN when none is waiting).
int mp4probe_tcp_accept(int fd);

// Temporary files removed when the process is interrupted (SIGINT, SIGTERM, SIGHUP): the
// registry is a fixed table in C so that the signal handler only calls unlink(2), which is
// async-signal-safe, on paths that were copied in beforehand.

/// Registers `path` (copied; up to 4095 bytes) for removal on SIGINT/SIGTERM/SIGHUP once
/// `mp4probe_remove_temporaries_on_signals` has installed the handlers (it installs nothing
/// itself: signal handlers belong to the program, not to a library). Returns a slot number for
/// `mp4probe_forget_temporary`, or -1 when the table (64 slots) is full.
int mp4probe_register_temporary(const char *path);

/// Installs SIGINT, SIGTERM and SIGHUP handlers (once; signals that are ignored are left
/// alone) that remove the registered temporary files and then end the process as the signal
/// would have. Process-wide: for a command-line program, not for a library's users.
void mp4probe_remove_temporaries_on_signals(void);

/// Forgets a slot (the file was renamed into place or removed).
void mp4probe_forget_temporary(int slot);

/// fallocate(FALLOC_FL_INSERT_RANGE): inserts `length` bytes (a hole) at `offset`, shifting
/// the rest of the file up; both must be multiples of the filesystem block. -1 with errno
/// (EOPNOTSUPP where the filesystem or platform cannot, EINVAL when misaligned).
int mp4probe_insert_range(int fd, int64_t offset, int64_t length);
/// Drops the clean cached pages of [offset, offset + length) (POSIX_FADV_DONTNEED), split
/// into `parts` ranges dropped at once on as many threads (at most 8). Inserting space at the
/// start of a file makes the kernel drop every cached page of it, one thread, 4 KiB at a time
/// on ext4; doing it first on every core makes that wait shorter. Dirty pages are left to the
/// insertion, which writes them back. Changes no data.
void mp4probe_drop_cached_pages(int fd, int64_t offset, int64_t length, int parts);
/// fallocate(FALLOC_FL_COLLAPSE_RANGE): removes [offset, offset + length), shifting the rest
/// down (the inverse of mp4probe_insert_range).
int mp4probe_collapse_range(int fd, int64_t offset, int64_t length);
/// ioctl(FICLONERANGE): makes [destination_offset, +length) of destination_fd share the
/// extents of [source_offset, +length) of source_fd (reflink). -1 with errno (EOPNOTSUPP,
/// EXDEV, EINVAL when misaligned) to fall back to copying.
int mp4probe_clone_range(int source_fd, int64_t source_offset, int64_t length, int destination_fd, int64_t destination_offset);

/// Creates `path` (it must not exist) as a clone of the whole file open at `source_fd`, sharing
/// its blocks: `fclonefileat` on Darwin (APFS), `FICLONE` on Linux (XFS, Btrfs). Returns a
/// descriptor open for writing on the new file, or -1 with errno (and no file left behind)
/// where the filesystem cannot.
int mp4probe_clone_file(int source_fd, const char *path, unsigned int permissions);

/// What a flush is for (`mp4probe_sync`).
enum {
    /// The bytes written to `fd` before reach the disk before any written after (a cache's
    /// data before the table that claims it; a lost tail only claims less): `F_BARRIERFSYNC`
    /// on Darwin (no drive flush), `fdatasync` on Linux (which has no barrier).
    MP4PROBE_SYNC_ORDERED = 0,
    /// The data of `fd` is on stable storage (not its metadata where reading the data back
    /// does not need it): `F_FULLFSYNC` on Darwin, `fdatasync` on Linux.
    MP4PROBE_SYNC_DURABLE_DATA = 1,
    /// The file, data and metadata, is on stable storage (a user's output, a journal, a
    /// directory after a rename): `F_FULLFSYNC` on Darwin, `fsync` on Linux.
    MP4PROBE_SYNC_DURABLE = 2,
};

/// Flushes `fd` for `purpose` (one of the values above). Where the filesystem refuses the
/// Darwin calls (network, FAT), plain `fsync`. 0, or -1 with errno.
int mp4probe_sync(int fd, int purpose);
/// `mp4probe_sync(fd, MP4PROBE_SYNC_DURABLE)`.
int mp4probe_full_sync(int fd);
/// Whether another open file description has the file open for writing (a read lease is
/// refused): 1 yes, 0 no, -1 cannot tell (no leases here, not the file's owner...).
int mp4probe_opened_for_writing_elsewhere(int read_only_fd);

/// On iOS and tvOS: gives the directory `path` the data protection class "complete until
/// first user authentication" (class C), which the files made in it inherit: readable while
/// the device is locked, once it was unlocked after boot. Elsewhere does nothing. 0, or -1
/// with errno.
int mp4probe_protect_until_first_unlock(const char *path);

/// The filesystem type of `path` (statfs f_type, e.g. 0x58465342 XFS), or -1.
int64_t mp4probe_filesystem_type(const char *path);

/// Gives memory the allocator holds free back to the system (glibc's `malloc_trim`: freed
/// blocks otherwise stay resident in its arenas; Darwin's allocator returns free pages by
/// itself, `malloc_zone_pressure_relief` asks it now). Call after a burst was released.
void mp4probe_release_free_memory(void);

// TLS over sockets for the HTTP/1.1 client (Linux).
#include "mp4probe_tls.h"

#endif
