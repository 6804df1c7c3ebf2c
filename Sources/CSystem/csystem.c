#define _GNU_SOURCE
#include "csystem.h"
#include <errno.h>
#include <unistd.h>
#include <fcntl.h>

ssize_t mp4probe_copy_file_range(int in_fd, int64_t in_offset, int out_fd, int64_t out_offset, size_t length) {
#if defined(__linux__)
    off64_t in = (off64_t)in_offset, out = (off64_t)out_offset;
    return copy_file_range(in_fd, &in, out_fd, &out, length, 0);
#else
    (void)in_fd; (void)in_offset; (void)out_fd; (void)out_offset; (void)length;
    errno = ENOSYS;
    return -1;
#endif
}

int64_t mp4probe_seek_data(int fd, int64_t offset) {
#if defined(SEEK_DATA)
    return (int64_t)lseek(fd, (off_t)offset, SEEK_DATA);
#else
    (void)fd; (void)offset;
    errno = EINVAL;
    return -1;
#endif
}

int64_t mp4probe_seek_hole(int fd, int64_t offset) {
#if defined(SEEK_HOLE)
    return (int64_t)lseek(fd, (off_t)offset, SEEK_HOLE);
#else
    (void)fd; (void)offset;
    errno = EINVAL;
    return -1;
#endif
}

void mp4probe_start_writeback(int fd, int64_t offset, int64_t length, int wait_before) {
#if defined(__linux__)
    unsigned int flags = SYNC_FILE_RANGE_WRITE;
    if (wait_before) flags |= SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WAIT_AFTER;
    (void)sync_file_range(fd, (off64_t)offset, (off64_t)length, flags);
#else
    (void)fd; (void)offset; (void)length; (void)wait_before;
#endif
}
