// TLS over a socket with OpenSSL's libssl, loaded on first use (see mp4probe_tls.h).
//
// Nothing of OpenSSL is included: the few functions are declared here with opaque pointers
// and looked up with dlsym, and the few constants are OpenSSL's public ABI (the same values
// in 1.1 and 3.x). Sessions are used by one thread at a time (a connection belongs to one
// exchange); contexts are shared and made once per CA file.
#include "mp4probe_tls.h"

#include <stdio.h>
#include <string.h>

#if defined(__linux__)
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

// OpenSSL's constants (ssl.h, x509_vfy.h): stable ABI.
enum {
    SSL_ERROR_SSL_ = 1, SSL_ERROR_WANT_READ_ = 2, SSL_ERROR_WANT_WRITE_ = 3,
    SSL_ERROR_SYSCALL_ = 5, SSL_ERROR_ZERO_RETURN_ = 6,
    SSL_VERIFY_PEER_ = 1, SSL_FILETYPE_PEM_ = 1,
    SSL_CTRL_MODE_ = 33, SSL_CTRL_SET_READ_AHEAD_ = 41, SSL_CTRL_SET_TLSEXT_HOSTNAME_ = 55, SSL_CTRL_SET_MIN_PROTO_VERSION_ = 123,
    TLSEXT_NAMETYPE_host_name_ = 0, TLS1_2_VERSION_ = 0x0303,
    SSL_MODE_ENABLE_PARTIAL_WRITE_ = 0x1, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER_ = 0x2, SSL_MODE_RELEASE_BUFFERS_ = 0x10,
    X509_V_OK_ = 0, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS_ = 0x4,
};
// The session's read buffer with read-ahead: four records of 16 KiB and their overhead.
#define READ_BUFFER_ (4 * (16384 + 2048))
// OpenSSL 3: an end of stream without close_notify reads as the end (as in 1.1), not an
// error; the HTTP framing above tells a body cut short.
static const uint64_t SSL_OP_IGNORE_UNEXPECTED_EOF_ = 1u << 7;

static struct {
    unsigned long (*version)(void);
    const void *(*client_method)(void);
    const void *(*server_method)(void);
    void *(*ctx_new)(const void *method);
    void (*ctx_free)(void *ctx);
    void (*ctx_set_verify)(void *ctx, int mode, void *callback);
    int (*ctx_default_paths)(void *ctx);
    int (*ctx_load_locations)(void *ctx, const char *file, const char *path);
    long (*ctx_ctrl)(void *ctx, int command, long value, void *argument);
    uint64_t (*ctx_set_options)(void *ctx, uint64_t options);
    void (*ctx_set_read_buffer_len)(void *ctx, size_t length);
    int (*ctx_use_chain)(void *ctx, const char *file);
    int (*ctx_use_key)(void *ctx, const char *file, int type);
    void *(*ssl_new)(void *ctx);
    void (*ssl_free)(void *ssl);
    int (*set_fd)(void *ssl, int fd);
    long (*ssl_ctrl)(void *ssl, int command, long value, void *argument);
    void *(*get0_param)(void *ssl);
    int (*param_set1_host)(void *param, const char *name, size_t length);
    int (*param_set1_ip_asc)(void *param, const char *ip);
    void (*param_set_hostflags)(void *param, unsigned int flags);
    int (*connect)(void *ssl);
    int (*accept)(void *ssl);
    int (*read)(void *ssl, void *buffer, int size);
    int (*write)(void *ssl, const void *buffer, int size);
    int (*shutdown)(void *ssl);
    int (*get_error)(const void *ssl, int result);
    long (*verify_result)(const void *ssl);
    const char *(*verify_string)(long code);
    unsigned long (*err_get)(void);
    void (*err_string)(unsigned long code, char *buffer, size_t size);
    void (*err_clear)(void);
} ssl;

static pthread_once_t loading = PTHREAD_ONCE_INIT;
static char load_failure[256];

#define FIND(field, name)                                                                   \
    do {                                                                                    \
        *(void **)(&ssl.field) = dlsym(library, name);                                      \
        if (ssl.field == NULL) {                                                            \
            snprintf(load_failure, sizeof load_failure, "the libssl found lacks %s", name); \
            return;                                                                         \
        }                                                                                   \
    } while (0)

static void load(void) {
    void *library = dlopen("libssl.so.3", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) library = dlopen("libssl.so.1.1", RTLD_NOW | RTLD_LOCAL);
    if (library == NULL) {
        snprintf(load_failure, sizeof load_failure,
                 "https needs OpenSSL's libssl (libssl.so.3; Debian: apt-get install libssl3)");
        return;
    }
    FIND(version, "OpenSSL_version_num");
    FIND(client_method, "TLS_client_method");
    FIND(server_method, "TLS_server_method");
    FIND(ctx_new, "SSL_CTX_new");
    FIND(ctx_free, "SSL_CTX_free");
    FIND(ctx_set_verify, "SSL_CTX_set_verify");
    FIND(ctx_default_paths, "SSL_CTX_set_default_verify_paths");
    FIND(ctx_load_locations, "SSL_CTX_load_verify_locations");
    FIND(ctx_ctrl, "SSL_CTX_ctrl");
    FIND(ctx_set_options, "SSL_CTX_set_options");
    FIND(ctx_set_read_buffer_len, "SSL_CTX_set_default_read_buffer_len");
    FIND(ctx_use_chain, "SSL_CTX_use_certificate_chain_file");
    FIND(ctx_use_key, "SSL_CTX_use_PrivateKey_file");
    FIND(ssl_new, "SSL_new");
    FIND(ssl_free, "SSL_free");
    FIND(set_fd, "SSL_set_fd");
    FIND(ssl_ctrl, "SSL_ctrl");
    FIND(get0_param, "SSL_get0_param");
    FIND(param_set1_host, "X509_VERIFY_PARAM_set1_host");
    FIND(param_set1_ip_asc, "X509_VERIFY_PARAM_set1_ip_asc");
    FIND(param_set_hostflags, "X509_VERIFY_PARAM_set_hostflags");
    FIND(connect, "SSL_connect");
    FIND(accept, "SSL_accept");
    FIND(read, "SSL_read");
    FIND(write, "SSL_write");
    FIND(shutdown, "SSL_shutdown");
    FIND(get_error, "SSL_get_error");
    FIND(verify_result, "SSL_get_verify_result");
    FIND(verify_string, "X509_verify_cert_error_string");
    FIND(err_get, "ERR_get_error");
    FIND(err_string, "ERR_error_string_n");
    FIND(err_clear, "ERR_clear_error");
}

int mp4probe_tls_available(char *reason, size_t reason_size) {
    pthread_once(&loading, load);
    if (load_failure[0] == 0) return 1;
    if (reason != NULL && reason_size > 0) snprintf(reason, reason_size, "%s", load_failure);
    return 0;
}

// OpenSSL writes to the socket with write(2), which raises SIGPIPE when the peer has gone; a
// library must not kill its process nor change the process's signal handling. So every call
// that may write blocks SIGPIPE in the calling thread, takes away a SIGPIPE it raised (one
// that was not pending before), and restores the mask.
typedef struct { sigset_t old; int was_pending; } pipe_guard;

static void block_pipe(pipe_guard *guard) {
    sigset_t pipe, pending;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, &guard->old);
    sigemptyset(&pending);
    guard->was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
}

static void unblock_pipe(pipe_guard *guard) {
    int saved = errno;
    if (!guard->was_pending) {
        sigset_t pipe, pending;
        sigemptyset(&pipe);
        sigaddset(&pipe, SIGPIPE);
        sigemptyset(&pending);
        if (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE)) {
            struct timespec zero = {0, 0};
            while (sigtimedwait(&pipe, NULL, &zero) < 0 && errno == EINTR) {}
        }
    }
    pthread_sigmask(SIG_SETMASK, &guard->old, NULL);
    errno = saved;
}

struct mp4probe_tls {
    void *ssl;
    int client;
    char error[256];
};

static void say(char *buffer, size_t size, const char *text) {
    if (buffer != NULL && size > 0) snprintf(buffer, size, "%s", text);
}

/// OpenSSL's reason for its last failure, or `fallback`.
static void reason(char *buffer, size_t size, const char *fallback) {
    unsigned long code = ssl.err_get();
    if (code != 0 && buffer != NULL && size > 0) ssl.err_string(code, buffer, size);
    else say(buffer, size, fallback);
}

static void *new_context(const void *method, int verifies) {
    void *ctx = ssl.ctx_new(method);
    if (ctx == NULL) return NULL;
    ssl.ctx_ctrl(ctx, SSL_CTRL_SET_MIN_PROTO_VERSION_, TLS1_2_VERSION_, NULL);
    ssl.ctx_ctrl(ctx, SSL_CTRL_MODE_, SSL_MODE_ENABLE_PARTIAL_WRITE_ | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER_ | SSL_MODE_RELEASE_BUFFERS_, NULL);
    if (ssl.version() >= 0x30000000UL) ssl.ctx_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF_);
    // Read what the socket holds, several records at once, rather than each record's 5-byte
    // header and then its body: two read(2) calls a 16 KiB record took 131,072 calls for a
    // 1 GiB body. Bytes read ahead are not seen by poll(2): mp4probe_tls_recv reads until
    // OpenSSL wants the socket, and only then does the caller wait for it.
    ssl.ctx_ctrl(ctx, SSL_CTRL_SET_READ_AHEAD_, 1, NULL);
    ssl.ctx_set_read_buffer_len(ctx, READ_BUFFER_);
    if (verifies) ssl.ctx_set_verify(ctx, SSL_VERIFY_PEER_, NULL);
    return ctx;
}

// Client contexts, one per CA file (the system's store under ""), made once: loading the
// system store takes milliseconds. A few distinct files at most in a process.
static pthread_mutex_t contexts_lock = PTHREAD_MUTEX_INITIALIZER;
static struct { char *ca_file; void *ctx; } contexts[8];

/// The context for `ca_file`; `*transient` is set when it is not kept (the caller drops its
/// reference once the session holds one).
static void *client_context(const char *ca_file, int *transient, char *error, size_t error_size) {
    *transient = 0;
    const char *key = ca_file != NULL ? ca_file : "";
    void *found = NULL;
    pthread_mutex_lock(&contexts_lock);
    int slot = -1;
    for (int i = 0; i < 8; i++) {
        if (contexts[i].ctx == NULL) { if (slot < 0) slot = i; continue; }
        if (strcmp(contexts[i].ca_file, key) == 0) { found = contexts[i].ctx; break; }
    }
    if (found == NULL) {
        ssl.err_clear();
        void *ctx = new_context(ssl.client_method(), 1);
        int loaded = ctx != NULL && (ca_file != NULL ? ssl.ctx_load_locations(ctx, ca_file, NULL) : ssl.ctx_default_paths(ctx)) == 1;
        if (!loaded) {
            char detail[160];
            reason(detail, sizeof detail, "no detail");
            if (ca_file != NULL) snprintf(error, error_size, "the CA file %s could not be read as PEM certificates (%s)", ca_file, detail);
            else snprintf(error, error_size, "the system's CA certificates could not be loaded (%s)", detail);
            if (ctx != NULL) ssl.ctx_free(ctx);
        } else if (slot >= 0 && (contexts[slot].ca_file = strdup(key)) != NULL) {
            contexts[slot].ctx = ctx;
            found = ctx;
        } else {
            found = ctx;   // not kept: lives as long as its session
            *transient = 1;
        }
    }
    pthread_mutex_unlock(&contexts_lock);
    return found;
}

static mp4probe_tls *session(void *ctx, int fd, int client, char *error, size_t error_size) {
    mp4probe_tls *tls = calloc(1, sizeof *tls);
    if (tls == NULL) { say(error, error_size, "out of memory"); return NULL; }
    tls->client = client;
    tls->ssl = ssl.ssl_new(ctx);
    if (tls->ssl == NULL || ssl.set_fd(tls->ssl, fd) != 1) {
        reason(error, error_size, "the TLS session could not be made");
        if (tls->ssl != NULL) ssl.ssl_free(tls->ssl);
        free(tls);
        return NULL;
    }
    return tls;
}

mp4probe_tls *mp4probe_tls_client(int fd, const char *host, const char *ca_file, char *error, size_t error_size) {
    if (!mp4probe_tls_available(error, error_size)) return NULL;
    int transient;
    void *ctx = client_context(ca_file, &transient, error, error_size);
    if (ctx == NULL) return NULL;
    ssl.err_clear();
    mp4probe_tls *tls = session(ctx, fd, 1, error, error_size);
    if (transient) ssl.ctx_free(ctx);   // the session holds its own reference
    if (tls == NULL) return NULL;
    void *param = ssl.get0_param(tls->ssl);
    unsigned char address[16];
    int literal = inet_pton(AF_INET, host, address) == 1 || inet_pton(AF_INET6, host, address) == 1;
    int named;
    if (literal) {
        named = ssl.param_set1_ip_asc(param, host) == 1;   // no SNI for an address (RFC 6066)
    } else {
        ssl.param_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS_);
        named = ssl.param_set1_host(param, host, 0) == 1
             && ssl.ssl_ctrl(tls->ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME_, TLSEXT_NAMETYPE_host_name_, (void *)host) == 1;
    }
    if (!named) {
        snprintf(error, error_size, "the host name %s cannot be checked against a certificate", host);
        mp4probe_tls_free(tls);
        return NULL;
    }
    return tls;
}

mp4probe_tls *mp4probe_tls_server(int fd, const char *certificate_file, const char *key_file, char *error, size_t error_size) {
    if (!mp4probe_tls_available(error, error_size)) return NULL;
    ssl.err_clear();
    void *ctx = new_context(ssl.server_method(), 0);
    if (ctx == NULL || ssl.ctx_use_chain(ctx, certificate_file) != 1 || ssl.ctx_use_key(ctx, key_file, SSL_FILETYPE_PEM_) != 1) {
        reason(error, error_size, "the certificate or key could not be read");
        if (ctx != NULL) ssl.ctx_free(ctx);
        return NULL;
    }
    mp4probe_tls *tls = session(ctx, fd, 0, error, error_size);
    ssl.ctx_free(ctx);   // the session holds its own reference
    return tls;
}

/// Maps a failed SSL call's result; fills the session's error when it failed.
static int failure(mp4probe_tls *tls, int result) {
    int saved = errno;
    switch (ssl.get_error(tls->ssl, result)) {
    case SSL_ERROR_WANT_READ_: return MP4PROBE_TLS_WANT_READ;
    case SSL_ERROR_WANT_WRITE_: return MP4PROBE_TLS_WANT_WRITE;
    case SSL_ERROR_ZERO_RETURN_: return 0;
    case SSL_ERROR_SYSCALL_: {
        unsigned long code = ssl.err_get();
        if (code != 0) ssl.err_string(code, tls->error, sizeof tls->error);
        else if (saved == 0) return 0;   // the peer closed without close_notify (OpenSSL 1.1)
        else snprintf(tls->error, sizeof tls->error, "%s", strerror(saved));
        return MP4PROBE_TLS_FAILED;
    }
    default:
        reason(tls->error, sizeof tls->error, "TLS protocol error");
        return MP4PROBE_TLS_FAILED;
    }
}

int mp4probe_tls_handshake(mp4probe_tls *tls, int *certificate_failed) {
    if (certificate_failed != NULL) *certificate_failed = 0;
    ssl.err_clear();
    errno = 0;
    pipe_guard guard;
    block_pipe(&guard);
    int result = tls->client ? ssl.connect(tls->ssl) : ssl.accept(tls->ssl);
    unblock_pipe(&guard);
    if (result == 1) return 1;
    int code = failure(tls, result);
    if (code == 0) {   // closed during the handshake
        snprintf(tls->error, sizeof tls->error, "the server closed the connection during the handshake");
        return MP4PROBE_TLS_FAILED;
    }
    if (code == MP4PROBE_TLS_FAILED && tls->client) {
        long verified = ssl.verify_result(tls->ssl);
        if (verified != X509_V_OK_) {
            if (certificate_failed != NULL) *certificate_failed = 1;
            snprintf(tls->error, sizeof tls->error, "certificate: %s", ssl.verify_string(verified));
        }
    }
    return code;
}

ssize_t mp4probe_tls_recv(mp4probe_tls *tls, void *buffer, size_t size) {
    size_t total = 0;
    int code = 0;
    pipe_guard guard;   // a read may write (the answer to a key update)
    block_pipe(&guard);
    while (total < size) {
        size_t want = size - total;
        if (want > INT_MAX) want = INT_MAX;
        ssl.err_clear();
        errno = 0;
        int result = ssl.read(tls->ssl, (char *)buffer + total, (int)want);
        if (result > 0) { total += (size_t)result; continue; }
        code = failure(tls, result);
        break;
    }
    unblock_pipe(&guard);
    if (total > 0) return (ssize_t)total;   // what arrived first; an end or error on the next call
    return code;
}

ssize_t mp4probe_tls_send(mp4probe_tls *tls, const void *buffer, size_t size) {
    if (size == 0) return 0;
    if (size > INT_MAX) size = INT_MAX;
    ssl.err_clear();
    errno = 0;
    pipe_guard guard;
    block_pipe(&guard);
    int result = ssl.write(tls->ssl, buffer, (int)size);
    unblock_pipe(&guard);
    if (result > 0) return result;
    int code = failure(tls, result);
    if (code == 0) {
        snprintf(tls->error, sizeof tls->error, "the peer closed the connection");
        return MP4PROBE_TLS_FAILED;
    }
    return code;
}

const char *mp4probe_tls_error(const mp4probe_tls *tls) { return tls->error; }

void mp4probe_tls_free(mp4probe_tls *tls) {
    if (tls == NULL) return;
    ssl.err_clear();
    pipe_guard guard;
    block_pipe(&guard);
    ssl.shutdown(tls->ssl);   // close_notify if the socket takes it now; never waits
    unblock_pipe(&guard);
    ssl.err_clear();
    ssl.ssl_free(tls->ssl);
    free(tls);
}

#else

// Apple platforms: URLSession makes every request (system proxy, ATS, the system's trust).
struct mp4probe_tls { int unused; };

static void say(char *buffer, size_t size, const char *text) {
    if (buffer != NULL && size > 0) snprintf(buffer, size, "%s", text);
}

int mp4probe_tls_available(char *reason, size_t reason_size) {
    say(reason, reason_size, "TLS over sockets is not used on this platform (URLSession is)");
    return 0;
}

mp4probe_tls *mp4probe_tls_client(int fd, const char *host, const char *ca_file, char *error, size_t error_size) {
    (void)fd; (void)host; (void)ca_file;
    mp4probe_tls_available(error, error_size);
    return NULL;
}

mp4probe_tls *mp4probe_tls_server(int fd, const char *certificate_file, const char *key_file, char *error, size_t error_size) {
    (void)fd; (void)certificate_file; (void)key_file;
    mp4probe_tls_available(error, error_size);
    return NULL;
}

int mp4probe_tls_handshake(mp4probe_tls *tls, int *certificate_failed) {
    (void)tls;
    if (certificate_failed != NULL) *certificate_failed = 0;
    return MP4PROBE_TLS_FAILED;
}

ssize_t mp4probe_tls_recv(mp4probe_tls *tls, void *buffer, size_t size) {
    (void)tls; (void)buffer; (void)size;
    return MP4PROBE_TLS_FAILED;
}

ssize_t mp4probe_tls_send(mp4probe_tls *tls, const void *buffer, size_t size) {
    (void)tls; (void)buffer; (void)size;
    return MP4PROBE_TLS_FAILED;
}

const char *mp4probe_tls_error(const mp4probe_tls *tls) { (void)tls; return ""; }

void mp4probe_tls_free(mp4probe_tls *tls) { (void)tls; }

#endif
