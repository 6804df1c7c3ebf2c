#define _GNU_SOURCE
#include "mp4probe_system.h"
#include <errno.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/stat.h>

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

void mp4probe_modified_time(const struct stat *info, int64_t *seconds, int64_t *nanoseconds) {
#if defined(__APPLE__)
    *seconds = (int64_t)info->st_mtimespec.tv_sec;
    *nanoseconds = (int64_t)info->st_mtimespec.tv_nsec;
#else
    *seconds = (int64_t)info->st_mtim.tv_sec;
    *nanoseconds = (int64_t)info->st_mtim.tv_nsec;
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

#include <netdb.h>
#include <poll.h>
#include <string.h>
#include <stdio.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

static int wait_connected(int fd, int timeout_ms) {
    struct pollfd p = { .fd = fd, .events = POLLOUT };
    int ready;
    do { ready = poll(&p, 1, timeout_ms); } while (ready < 0 && errno == EINTR);
    if (ready == 0) { errno = ETIMEDOUT; return -1; }
    if (ready < 0) return -1;
    int error = 0;
    socklen_t length = sizeof error;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) < 0) return -1;
    if (error != 0) { errno = error; return -1; }
    return 0;
}

/* The stream addresses of host:port (getaddrinfo with `flags`), or NULL. */
static struct addrinfo *resolve(const char *host, int port, int flags) {
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    struct addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = flags | AI_NUMERICSERV;
    struct addrinfo *list = NULL;
    if (getaddrinfo(host, service, &hints, &list) != 0) return NULL;
    return list;
}

/* A connected stream socket as every mp4probe connection is: close-on-exec, non-blocking,
   TCP_NODELAY, no SIGPIPE where the platform has the option. */
static void configure_stream(int fd) {
    (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
    (void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    int one = 1;
    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
#if defined(SO_NOSIGPIPE)
    (void)setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof one);
#endif
}

int mp4probe_tcp_connect(const char *host, int port, int timeout_ms, int *failure) {
    struct addrinfo *list = resolve(host, port, AI_ADDRCONFIG);
    /* AI_ADDRCONFIG hides loopback addresses on hosts with no configured address */
    if (list == NULL) list = resolve(host, port, 0);
    if (list == NULL) { *failure = MP4PROBE_CONNECT_UNRESOLVED; errno = ENOENT; return -1; }
    int result = -1;
    *failure = MP4PROBE_CONNECT_REFUSED;
    for (struct addrinfo *a = list; a != NULL; a = a->ai_next) {
        int fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        if (fd < 0) continue;
        configure_stream(fd);
        int connected = connect(fd, a->ai_addr, a->ai_addrlen);
        if (connected < 0 && (errno == EINPROGRESS || errno == EINTR)) connected = wait_connected(fd, timeout_ms);
        if (connected == 0) { result = fd; break; }
        if (errno == ETIMEDOUT) *failure = MP4PROBE_CONNECT_TIMED_OUT;
        int saved = errno;
        close(fd);
        errno = saved;
    }
    freeaddrinfo(list);
    return result;
}

int mp4probe_tcp_listen(const char *host, int port, int backlog, int *bound_port) {
    struct addrinfo *list = resolve(host, port, AI_NUMERICHOST | AI_PASSIVE);
    if (list == NULL) { errno = EINVAL; return -1; }
    int fd = socket(list->ai_family, list->ai_socktype, list->ai_protocol);
    if (fd < 0) { freeaddrinfo(list); return -1; }
    (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
    int one = 1;
    (void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, list->ai_addr, list->ai_addrlen) != 0 || listen(fd, backlog) != 0) {
        int saved = errno;
        close(fd);
        freeaddrinfo(list);
        errno = saved;
        return -1;
    }
    freeaddrinfo(list);
    (void)fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    struct sockaddr_storage address;
    socklen_t length = sizeof address;
    if (getsockname(fd, (struct sockaddr *)&address, &length) == 0) {
        if (address.ss_family == AF_INET) *bound_port = ntohs(((struct sockaddr_in *)&address)->sin_port);
        else if (address.ss_family == AF_INET6) *bound_port = ntohs(((struct sockaddr_in6 *)&address)->sin6_port);
    }
    return fd;
}

int mp4probe_tcp_accept(int fd) {
    int client;
#if defined(__linux__)
    /* Non-blocking and close-on-exec from the start: two fewer calls per connection. */
    do { client = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC); } while (client < 0 && errno == EINTR);
    if (client < 0) return -1;
    int one = 1;
    (void)setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
#else
    do { client = accept(fd, NULL, NULL); } while (client < 0 && errno == EINTR);
    if (client < 0) return -1;
    configure_stream(client);
#endif
    /* A bounded send buffer: a client that stops reading (a prober that hangs up after the
       moov, a player that pauses) holds at most this much of what the server wrote, not the
       megabytes a loopback socket's buffer grows to, each of which the proxy would have
       fetched from the origin (ffprobe through the faststart view of a 3.86 MB film: all of it
       before, 2.54 MB after; ProberCostTests). */
    int send_buffer = 256 << 10;
    (void)setsockopt(client, SOL_SOCKET, SO_SNDBUF, &send_buffer, sizeof send_buffer);
    return client;
}

int mp4probe_wait(int fd, int for_write, int timeout_ms) {
    struct pollfd p = { .fd = fd, .events = for_write ? POLLOUT : POLLIN };
    int ready;
    do { ready = poll(&p, 1, timeout_ms); } while (ready < 0 && errno == EINTR);
    return ready < 0 ? -1 : (ready == 0 ? 0 : 1);
}

int mp4probe_wait_hangup(int fd, int timeout_ms) {
#if defined(POLLRDHUP)
    short events = POLLIN | POLLRDHUP;
#else
    short events = POLLIN;   /* a peer's FIN makes the socket readable (end of stream) */
#endif
    struct pollfd p = { .fd = fd, .events = events };
    int ready;
    do { ready = poll(&p, 1, timeout_ms); } while (ready < 0 && errno == EINTR);
    return ready < 0 ? -1 : (ready == 0 ? 0 : 1);
}

int mp4probe_wake_pipe(int fds[2]) {
    if (pipe(fds) != 0) return -1;
    for (int i = 0; i < 2; i++) {
        if (fcntl(fds[i], F_SETFD, FD_CLOEXEC) != 0 || fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) | O_NONBLOCK) != 0) {
            int saved = errno;
            close(fds[0]); close(fds[1]);
            errno = saved;
            return -1;
        }
    }
    return 0;
}

int mp4probe_wait_or_wake(int fd, int wake_fd, int timeout_ms) {
    struct pollfd p[2] = { { .fd = fd, .events = POLLIN }, { .fd = wake_fd, .events = POLLIN } };
    int ready;
    do { ready = poll(p, 2, timeout_ms); } while (ready < 0 && errno == EINTR);
    if (ready < 0) return -1;
    if (ready == 0) return 0;
    if (p[1].revents) return 2;
    return 1;
}

int mp4probe_make_listener_defunct(int fd) {
    int bound = 0;
    int other = mp4probe_tcp_listen("127.0.0.1", 0, 1, &bound);
    if (other < 0) return -1;
    int result = dup2(other, fd) < 0 ? -1 : 0;
    close(other);
    if (result == 0) {
        int flags = fcntl(fd, F_GETFD);
        if (flags >= 0) (void)fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
    }
    return result;
}

ssize_t mp4probe_recv(int fd, void *buffer, size_t length) {
    ssize_t n;
    do { n = recv(fd, buffer, length, MSG_DONTWAIT); } while (n < 0 && errno == EINTR);
    return n;
}

ssize_t mp4probe_send(int fd, const void *buffer, size_t length) {
#if defined(MSG_NOSIGNAL)
    int flags = MSG_NOSIGNAL | MSG_DONTWAIT;
#else
    int flags = MSG_DONTWAIT;
#endif
    ssize_t n;
    do { n = send(fd, buffer, length, flags); } while (n < 0 && errno == EINTR);
    return n;
}

void mp4probe_shutdown(int fd) {
    (void)shutdown(fd, SHUT_RDWR);
}

void mp4probe_no_sigpipe(int fd) {
#if defined(SO_NOSIGPIPE)
    int one = 1;
    (void)setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof one);
#else
    (void)fd;
#endif
}

void mp4probe_shutdown_write(int fd) {
    (void)shutdown(fd, SHUT_WR);
}

#include <signal.h>
#include <stdatomic.h>

#define MP4PROBE_TEMP_SLOTS 64
#define MP4PROBE_TEMP_PATH 4096
static char temporary_paths[MP4PROBE_TEMP_SLOTS][MP4PROBE_TEMP_PATH];
static atomic_int temporary_used[MP4PROBE_TEMP_SLOTS];
static atomic_int handlers_installed;

static void remove_temporaries_and_reraise(int signal_number) {
    for (int i = 0; i < MP4PROBE_TEMP_SLOTS; i++) {
        if (atomic_load(&temporary_used[i]) == 2) (void)unlink(temporary_paths[i]);
    }
    /* The default action now: the process ends as the signal says (exit status 128+n). */
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = SIG_DFL;
    sigemptyset(&action.sa_mask);
    (void)sigaction(signal_number, &action, NULL);
    (void)raise(signal_number);
}

void mp4probe_remove_temporaries_on_signals(void) {
    int expected = 0;
    if (!atomic_compare_exchange_strong(&handlers_installed, &expected, 1)) return;
    int signals[] = { SIGINT, SIGTERM, SIGHUP };
    for (unsigned i = 0; i < sizeof signals / sizeof signals[0]; i++) {
        struct sigaction previous;
        if (sigaction(signals[i], NULL, &previous) == 0 && previous.sa_handler == SIG_IGN) continue;  /* nohup */
        struct sigaction action;
        memset(&action, 0, sizeof action);
        action.sa_handler = remove_temporaries_and_reraise;
        sigemptyset(&action.sa_mask);
        (void)sigaction(signals[i], &action, NULL);
    }
}

int mp4probe_register_temporary(const char *path) {
    size_t length = strlen(path);
    if (length >= MP4PROBE_TEMP_PATH) return -1;
    for (int i = 0; i < MP4PROBE_TEMP_SLOTS; i++) {
        int expected = 0;
        if (atomic_compare_exchange_strong(&temporary_used[i], &expected, 1)) {
            memcpy(temporary_paths[i], path, length + 1);
            atomic_store(&temporary_used[i], 2);   /* visible to the handler only when whole */
            return i;
        }
    }
    return -1;
}

void mp4probe_forget_temporary(int slot) {
    if (slot >= 0 && slot < MP4PROBE_TEMP_SLOTS) atomic_store(&temporary_used[slot], 0);
}

/* Record locks on a cache entry's lock file: the one kind of lock the cache takes (see
   EntryLocks.swift). Open-file-description locks (owned by the open file, not the process, so
   closing another descriptor of the file keeps them, and two descriptions in one process
   exclude each other): Linux 3.15+, and Darwin, whose SDKs name the commands from macOS 14 /
   iOS 17 on (the kernel had them before: the numbers are XNU's). Classic POSIX record locks
   where neither exists. Never mixed with flock: Darwin keeps both in one list per file, where
   they block each other. */
#if defined(__APPLE__)
#ifndef F_OFD_SETLK
#define F_OFD_SETLK 90
#endif
#ifndef F_OFD_SETLKW
#define F_OFD_SETLKW 91
#endif
#ifndef F_OFD_GETLK
#define F_OFD_GETLK 92
#endif
#endif
#if defined(F_OFD_SETLK)
#define MP4PROBE_SETLK F_OFD_SETLK
#define MP4PROBE_SETLKW F_OFD_SETLKW
#define MP4PROBE_GETLK F_OFD_GETLK
#else
#define MP4PROBE_SETLK F_SETLK
#define MP4PROBE_SETLKW F_SETLKW
#define MP4PROBE_GETLK F_GETLK
#endif

static struct flock range_description(short type, int64_t start, int64_t length) {
    struct flock lock;
    memset(&lock, 0, sizeof lock);
    lock.l_type = type;
    lock.l_whence = SEEK_SET;
    lock.l_start = (off_t)start;
    lock.l_len = (off_t)length;
    return lock;
}

static int range_lock(int fd, short type, int64_t start, int64_t length, int wait) {
    struct flock lock = range_description(type, start, length);
    int result;
    do { result = fcntl(fd, wait ? MP4PROBE_SETLKW : MP4PROBE_SETLK, &lock); } while (result != 0 && errno == EINTR);
    if (result == 0) return 0;
    return (errno == EAGAIN || errno == EACCES) ? 1 : -1;
}

int mp4probe_range_trylock(int fd, int64_t start, int64_t length) {
    return range_lock(fd, F_WRLCK, start, length, 0);
}

int mp4probe_range_tryshare(int fd, int64_t start, int64_t length) {
    return range_lock(fd, F_RDLCK, start, length, 0);
}

int mp4probe_range_lock_wait(int fd, int64_t start, int64_t length) {
    return range_lock(fd, F_WRLCK, start, length, 1);
}

void mp4probe_range_unlock(int fd, int64_t start, int64_t length) {
    (void)range_lock(fd, F_UNLCK, start, length, 0);
}

int64_t mp4probe_range_conflict(int fd, int64_t start, int64_t length) {
    struct flock lock = range_description(F_WRLCK, start, length);
    if (fcntl(fd, MP4PROBE_GETLK, &lock) != 0 || lock.l_type == F_UNLCK) return -1;
    return lock.l_start > start ? (int64_t)lock.l_start : start;
}

#if defined(__linux__)
#include <linux/falloc.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#endif

int mp4probe_insert_range(int fd, int64_t offset, int64_t length) {
#if defined(__linux__) && defined(FALLOC_FL_INSERT_RANGE)
    return fallocate(fd, FALLOC_FL_INSERT_RANGE, (off_t)offset, (off_t)length);
#else
    (void)fd; (void)offset; (void)length;
    errno = EOPNOTSUPP;
    return -1;
#endif
}

#if defined(__linux__)
#include <pthread.h>
struct mp4probe_drop_part { int fd; int64_t offset, length; };
static void *mp4probe_drop_part_run(void *argument) {
    struct mp4probe_drop_part *part = argument;
    (void)posix_fadvise(part->fd, (off_t)part->offset, (off_t)part->length, POSIX_FADV_DONTNEED);
    return NULL;
}
#endif

void mp4probe_drop_cached_pages(int fd, int64_t offset, int64_t length, int parts) {
#if defined(__linux__)
    if (parts < 1) parts = 1;
    if (parts > 8) parts = 8;
    struct mp4probe_drop_part part[8];
    pthread_t thread[8];
    int started[8] = { 0 };
    int64_t step = (length / parts + 4095) & ~(int64_t)4095;
    for (int i = 0; i < parts; i++) {
        int64_t start = offset + step * i;
        int64_t end = i == parts - 1 ? offset + length : start + step;
        if (end > offset + length) end = offset + length;
        part[i] = (struct mp4probe_drop_part){ fd, start, end > start ? end - start : 0 };
        if (part[i].length == 0) continue;
        /* The last part runs on this thread; a thread that cannot start runs here too. */
        if (i < parts - 1 && pthread_create(&thread[i], NULL, mp4probe_drop_part_run, &part[i]) == 0) started[i] = 1;
        else mp4probe_drop_part_run(&part[i]);
    }
    for (int i = 0; i < parts; i++) if (started[i]) pthread_join(thread[i], NULL);
#else
    (void)fd; (void)offset; (void)length; (void)parts;
#endif
}

int mp4probe_collapse_range(int fd, int64_t offset, int64_t length) {
#if defined(__linux__) && defined(FALLOC_FL_COLLAPSE_RANGE)
    return fallocate(fd, FALLOC_FL_COLLAPSE_RANGE, (off_t)offset, (off_t)length);
#else
    (void)fd; (void)offset; (void)length;
    errno = EOPNOTSUPP;
    return -1;
#endif
}

int mp4probe_clone_range(int source_fd, int64_t source_offset, int64_t length, int destination_fd, int64_t destination_offset) {
#if defined(__linux__) && defined(FICLONERANGE)
    struct file_clone_range range;
    range.src_fd = source_fd;
    range.src_offset = (uint64_t)source_offset;
    range.src_length = (uint64_t)length;
    range.dest_offset = (uint64_t)destination_offset;
    return ioctl(destination_fd, FICLONERANGE, &range);
#else
    (void)source_fd; (void)source_offset; (void)length; (void)destination_fd; (void)destination_offset;
    errno = EOPNOTSUPP;
    return -1;
#endif
}

#if defined(__APPLE__)
#include <sys/attr.h>
#include <sys/clonefile.h>
#endif

int mp4probe_clone_file(int source_fd, const char *path, unsigned int permissions) {
#if defined(__APPLE__)
    if (fclonefileat(source_fd, AT_FDCWD, path, 0) != 0) return -1;
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || fchmod(fd, (mode_t)permissions) != 0) {
        int saved = errno;
        if (fd >= 0) close(fd);
        unlink(path);
        errno = saved;
        return -1;
    }
    return fd;
#elif defined(__linux__) && defined(FICLONE)
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, (mode_t)permissions);
    if (fd < 0) return -1;
    if (ioctl(fd, FICLONE, source_fd) != 0) {
        int saved = errno;
        close(fd);
        unlink(path);
        errno = saved;
        return -1;
    }
    return fd;
#else
    (void)source_fd; (void)path; (void)permissions;
    errno = EOPNOTSUPP;
    return -1;
#endif
}

int mp4probe_sync(int fd, int purpose) {
    int result;
#if defined(__APPLE__)
    /* fsync on Darwin stops at the drive's cache, which may reorder writes. */
#if defined(F_BARRIERFSYNC)
    if (purpose == MP4PROBE_SYNC_ORDERED && fcntl(fd, F_BARRIERFSYNC) == 0) return 0;
#endif
#if defined(F_FULLFSYNC)
    if (purpose != MP4PROBE_SYNC_ORDERED && fcntl(fd, F_FULLFSYNC) == 0) return 0;
#endif
    /* Filesystems that refuse them (network, FAT): the flush they can do. */
    do { result = fsync(fd); } while (result != 0 && errno == EINTR);
#else
    /* Linux has no write barrier: ordering takes the flush; the data without the metadata
       that reading it back does not need. */
    if (purpose == MP4PROBE_SYNC_DURABLE) {
        do { result = fsync(fd); } while (result != 0 && errno == EINTR);
    } else {
        do { result = fdatasync(fd); } while (result != 0 && errno == EINTR);
    }
#endif
    return result;
}

int mp4probe_full_sync(int fd) { return mp4probe_sync(fd, MP4PROBE_SYNC_DURABLE); }

int mp4probe_opened_for_writing_elsewhere(int read_only_fd) {
#if defined(__linux__) && defined(F_SETLEASE)
    // A read lease is refused (EAGAIN) while any other open file description has the file
    // open for writing.
    if (fcntl(read_only_fd, F_SETLEASE, F_RDLCK) == 0) {
        fcntl(read_only_fd, F_SETLEASE, F_UNLCK);
        return 0;
    }
    return errno == EAGAIN ? 1 : -1;
#else
    (void)read_only_fd;
    return -1;
#endif
}

#if defined(__linux__)
#include <sys/vfs.h>
#endif

#if defined(__APPLE__)
#include <TargetConditionals.h>
#endif

int mp4probe_protect_until_first_unlock(const char *path) {
#if defined(__APPLE__) && TARGET_OS_IPHONE && defined(F_SETPROTECTIONCLASS)
    /* Class C: Apple's NSFileProtectionCompleteUntilFirstUserAuthentication (the class numbers
       are not in the public headers: A = 1 complete ... D = 4 none). */
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -1;
    int result = fcntl(fd, F_SETPROTECTIONCLASS, 3);
    int saved = errno;
    close(fd);
    errno = saved;
    return result;
#else
    (void)path;
    return 0;
#endif
}

int64_t mp4probe_filesystem_type(const char *path) {
#if defined(__linux__)
    struct statfs info;
    if (statfs(path, &info) != 0) return -1;
    return (int64_t)(uint32_t)info.f_type;
#else
    (void)path;
    return -1;
#endif
}

#if defined(__GLIBC__)
#include <malloc.h>
#elif defined(__APPLE__)
#include <malloc/malloc.h>
#endif

/* Under AddressSanitizer the allocator is ASan's, not glibc's: malloc_trim then walks arenas
   that hold nothing and crashed (SEGV in mtrim, in a CI run of the sanitized suite). */
#if defined(__has_feature)
#  if __has_feature(address_sanitizer)
#    define MP4PROBE_UNDER_ASAN 1
#  endif
#endif
#if defined(__SANITIZE_ADDRESS__) && !defined(MP4PROBE_UNDER_ASAN)
#  define MP4PROBE_UNDER_ASAN 1
#endif

void mp4probe_release_free_memory(void) {
#if defined(MP4PROBE_UNDER_ASAN)
    /* nothing: ASan's allocator keeps its own quarantine */
#elif defined(__GLIBC__)
    (void)malloc_trim(0);
#elif defined(__APPLE__)
    (void)malloc_zone_pressure_relief(NULL, 0);
#endif
}
