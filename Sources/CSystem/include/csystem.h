// System calls that Glibc's Swift overlay does not expose (copy_file_range, SEEK_DATA /
// SEEK_HOLE), wrapped so that Swift code can call them on every platform: where the platform
// lacks one, the wrapper fails with ENOSYS / EINVAL and the caller falls back.
#ifndef MP4PROBE_CSYSTEM_H
#define MP4PROBE_CSYSTEM_H

#include <stdint.h>
#include <sys/types.h>

/// copy_file_range(2): copies up to `length` bytes between two file descriptors inside the
/// kernel. Returns the bytes copied, or -1 with errno (ENOSYS, EXDEV, EINVAL...) to fall back.
ssize_t mp4probe_copy_file_range(int in_fd, int64_t in_offset, int out_fd, int64_t out_offset, size_t length);

/// lseek(fd, offset, SEEK_DATA): the next offset ≥ `offset` holding data, or -1 (ENXIO past
/// the last data, EINVAL where unsupported).
int64_t mp4probe_seek_data(int fd, int64_t offset);

/// lseek(fd, offset, SEEK_HOLE): the next hole at or after `offset` (the end of the file counts
/// as a hole), or -1.
int64_t mp4probe_seek_hole(int fd, int64_t offset);

/// Starts writing `length` bytes at `offset` of `fd` back to disk without waiting
/// (sync_file_range with SYNC_FILE_RANGE_WRITE), so that a final fsync has little left to do.
/// When `wait_before` is set, first waits for earlier writeback of that range to finish,
/// which bounds the dirty pages a long copy leaves behind. A no-op where unsupported.
void mp4probe_start_writeback(int fd, int64_t offset, int64_t length, int wait_before);

#endif
