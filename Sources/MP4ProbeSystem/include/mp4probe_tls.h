// TLS for the HTTP/1.1 client over sockets, on Linux: OpenSSL's libssl, loaded with dlopen
// the first time an https connection is made (libssl.so.3, else libssl.so.1.1; the library
// libcurl and so FoundationNetworking already use). No OpenSSL header is needed to build.
// On Apple platforms URLSession makes every request, and these functions report that TLS is
// not available here.
#ifndef MP4PROBE_TLS_H
#define MP4PROBE_TLS_H

#include <stddef.h>
#include <sys/types.h>

/// One TLS session over a connected non-blocking socket.
typedef struct mp4probe_tls mp4probe_tls;

/// What an operation returns besides a byte count.
enum {
    MP4PROBE_TLS_FAILED = -1,      ///< failed: `mp4probe_tls_error` says why
    MP4PROBE_TLS_WANT_READ = -2,   ///< wait until the socket is readable, then call again
    MP4PROBE_TLS_WANT_WRITE = -3,  ///< wait until the socket is writable, then call again
};

/// Whether TLS can be used here: 1, or 0 with the reason in `reason` (the library is missing,
/// or this platform uses URLSession instead).
int mp4probe_tls_available(char *reason, size_t reason_size);

/// A client session on `fd` for `host` (a name, or an IP literal without brackets): the
/// certificate chain is verified against the CA certificates in `ca_file` (PEM) when given,
/// else against the system's store, and the certificate must name `host`. TLS 1.2 or newer.
/// NULL with the reason in `error` when it cannot be set up.
mp4probe_tls *mp4probe_tls_client(int fd, const char *host, const char *ca_file, char *error, size_t error_size);

/// A server session on `fd` with the certificate chain and key in the PEM files given (tests'
/// stand-in origins). NULL with the reason in `error`.
mp4probe_tls *mp4probe_tls_server(int fd, const char *certificate_file, const char *key_file, char *error, size_t error_size);

/// Performs (or goes on with) the handshake: 1 when done, or one of the values above. When it
/// fails because the certificate is not trusted, `*certificate_failed` is set to 1.
int mp4probe_tls_handshake(mp4probe_tls *tls, int *certificate_failed);

/// Reads decrypted bytes into `buffer`, as many as are available up to `size` (several
/// records): the count, 0 at the end of the stream, or one of the values above.
ssize_t mp4probe_tls_recv(mp4probe_tls *tls, void *buffer, size_t size);

/// Sends up to `size` bytes: the count taken, or one of the values above.
ssize_t mp4probe_tls_send(mp4probe_tls *tls, const void *buffer, size_t size);

/// Why the last operation on `tls` failed (a sentence fragment, empty when unknown).
const char *mp4probe_tls_error(const mp4probe_tls *tls);

/// Sends close_notify when it can without waiting, and frees the session (not the socket).
void mp4probe_tls_free(mp4probe_tls *tls);

#endif
