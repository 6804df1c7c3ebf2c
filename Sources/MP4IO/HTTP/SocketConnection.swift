import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import MP4ProbeSystem

/// A TCP connection, in the clear or over TLS (``startTLS(host:caFile:timeout:)``), with a
/// read buffer: non-blocking reads and writes that are tried at once and, only when the socket
/// is not ready, wait (poll, bounded by the timeout) on the connection's own dispatch queue,
/// never on a Swift concurrency thread. Cancelling the task that waits shuts the socket down,
/// which ends the wait.
///
/// Used by one task at a time (an exchange owns it; idle ones sit in ``HTTP1Client``'s pool).
/// (`@unchecked Sendable`: its buffer and TLS session are used by one task at a time, as said;
/// `closed` is `Locked`.)
final class SocketConnection: @unchecked Sendable {
    /// `scheme://host:port`, the key of the keep-alive pool.
    let key: String
    private let fd: Int32
    /// The queue a wait runs on when it does not run inline (made at its first use).
    private var waiter: DispatchQueue {
        waiterQueue.withLock { queue in
            if let queue { return queue }
            let made = DispatchQueue(label: "mp4probe.socket.\(key)")
            queue = made
            return made
        }
    }
    private let waiterQueue = Locked<DispatchQueue?>(nil)
    /// Waits in the calling thread when that is a serving task's own queue
    /// (``ServingTask/isOnOwnQueue``): a server's connection, used by its connection's task
    /// alone. A wait on the ``waiter`` queue instead costs two thread switches, which a player
    /// that opens a request per fragment header pays at each (ffmpeg: 300 a film).
    private let waitsInline: Bool
    /// Set by a task that owns its queue and everything on it (a cache entry's origin fetch):
    /// the connections it uses wait inline too. A player's body, which may read the origin
    /// itself (the disk is full), does not set it: the watch beside it, on the same queue,
    /// must go on looking whether the player has gone.
    @TaskLocal static var waitsInlineInTask = false
    private let closed = Locked(false)
    /// The TLS session, once ``startTLS(host:caFile:timeout:)`` made one.
    private var tls: OpaquePointer?

    /// Received bytes not consumed yet: `buffer[start..<end]`.
    private(set) var buffer: [UInt8]
    private(set) var start = 0
    private(set) var end = 0
    static let bufferSize = 256 << 10

    /// `waitsInline`: see ``waitsInline``; only for a connection no other task waits on while
    /// its owner may block (an origin connection's reads also run inside a player's body,
    /// beside the watch that must see the player go).
    /// `capacity`: the buffer's first size; it grows as needed up to ``bufferSize`` (a
    /// server's connection starts small: a player's request head is a few hundred bytes, and
    /// allocating 256 KiB for each was 2 % of the server's CPU with ffmpeg's 300 requests).
    init(fd: Int32, key: String, waitsInline: Bool = false, capacity: Int = SocketConnection.bufferSize) {
        self.fd = fd
        self.key = key
        self.waitsInline = waitsInline
        // Not zeroed: only the bytes a receive wrote are ever read.
        let size = max(1, min(capacity, Self.bufferSize))
        self.buffer = [UInt8](unsafeUninitializedCapacity: size) { _, count in count = size }
    }

    deinit { close() }

    /// Connects to `host:port` (name resolution and connect run on a dispatch queue).
    static func connect(host: String, port: Int, timeout: WaitLimit, scheme: String = "http") async throws -> SocketConnection {
        let milliseconds = Int32(clamping: Int(timeout.seconds * 1000))
        // Not cancellable midway (getaddrinfo cannot be interrupted); bounded by the timeout
        // per address, and a cancelled task drops the connection once it is made.
        let (fd, failure): (Int32, Int32) = await withCheckedContinuation { continuation in
            DispatchQueue(label: "mp4probe.connect").async {
                var failure: Int32 = 0
                let connect = { mp4probe_tcp_connect(host, Int32(port), milliseconds, &failure) }
                let fd = timeout.budget.map { $0.measuring(connect) } ?? connect()
                continuation.resume(returning: (fd, failure))
            }
        }
        if Task.isCancelled {
            if fd >= 0 { Platform.closeFile(fd) }
            throw URLError(.cancelled)
        }
        guard fd >= 0 else {
            switch failure {
            case Int32(MP4PROBE_CONNECT_UNRESOLVED): throw URLError(.cannotFindHost)
            case Int32(MP4PROBE_CONNECT_TIMED_OUT): throw URLError(.timedOut)
            default: throw URLError(.cannotConnectToHost)
            }
        }
        return SocketConnection(fd: fd, key: "\(scheme)://\(host):\(port)")
    }

    /// Whether TLS over sockets can be used here (OpenSSL's libssl found, on Linux); else
    /// `https:` goes through URLSession.
    static let tlsAvailable: Bool = mp4probe_tls_available(nil, 0) == 1

    /// Connects to `host:port` and makes a TLS session on it: the certificate must chain to
    /// the CAs in `caFile` (PEM), or to the system's when nil, and name `host`. A certificate
    /// that fails throws `serverCertificateUntrusted` with OpenSSL's reason as its description;
    /// another handshake failure `secureConnectionFailed`.
    static func connectTLS(host: String, port: Int, caFile: String?, timeout: WaitLimit) async throws -> SocketConnection {
        let connection = try await connect(host: host, port: port, timeout: timeout, scheme: "https")
        do {
            try await connection.startTLS(host: host, caFile: caFile, timeout: timeout)
        } catch {
            connection.close()
            throw error
        }
        return connection
    }

    private func startTLS(host: String, caFile: String?, timeout: WaitLimit) async throws {
        var reason = [CChar](repeating: 0, count: 256)
        guard let session = mp4probe_tls_client(fd, host, caFile, &reason, reason.count) else {
            throw URLError(.secureConnectionFailed, userInfo: [NSLocalizedDescriptionKey: "TLS: " + String(decoding: reason.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)])
        }
        tls = session
        while true {
            var certificateFailed: Int32 = 0
            let result = mp4probe_tls_handshake(session, &certificateFailed)
            if result == 1 { return }
            switch result {
            case Int32(MP4PROBE_TLS_WANT_READ): try await wait(forWrite: false, timeout: timeout)
            case Int32(MP4PROBE_TLS_WANT_WRITE): try await wait(forWrite: true, timeout: timeout)
            default:
                let said = String(cString: mp4probe_tls_error(session))
                throw URLError(certificateFailed != 0 ? .serverCertificateUntrusted : .secureConnectionFailed,
                               userInfo: [NSLocalizedDescriptionKey: said.isEmpty ? "TLS handshake failed" : "TLS: " + said])
            }
        }
    }

    /// Shuts the socket down (both directions) without closing it: wakes a task waiting on it.
    func shutdown() { mp4probe_shutdown(fd) }

    /// Ends the sending direction and reads what the peer still sends, discarding it, until it
    /// hangs up, `maxBytes` were read or `timeout` passed (nginx's lingering close). A socket
    /// closed with unread bytes is reset, and a reset can throw away the answer the peer has
    /// not read yet: a client that sends a 10 MB body before it reads got "connection reset",
    /// never the 413 sent before it.
    func drainBeforeClose(timeout: WaitLimit, maxBytes: Int = 64 << 20) async {
        guard tls == nil else { return }
        mp4probe_shutdown_write(fd)
        var read = 0
        while read < maxBytes {
            consume(end - start)
            guard let count = try? await fill(timeout: timeout), count > 0 else { return }
            read += count
        }
    }

    /// Closes the socket (once).
    func close() {
        let wasOpen = closed.withLock { closed -> Bool in
            defer { closed = true }
            return !closed
        }
        guard wasOpen else { return }
        // The session first: it may send close_notify on the socket, which must still be ours.
        if let tls { mp4probe_tls_free(tls) }
        tls = nil
        Platform.closeFile(fd)
    }

    /// Whether the peer has gone (closed or reset the connection), looked at without waiting
    /// and without consuming anything: `false` while it is there, or has sent bytes (a next
    /// request). A peer that only half-closed after its request counts as gone, as nginx counts
    /// it ("client prematurely closed connection").
    func peerHasGone() -> Bool {
        guard !closed.withLock({ $0 }) else { return true }
        var byte: UInt8 = 0
        let count = recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        if count >= 0 { return count == 0 }
        let error = errno
        return error != EAGAIN && error != EWOULDBLOCK && error != EINTR
    }

    /// Waits at most `duration` for the peer to hang up (or send something), and returns
    /// whether it has gone (``peerHasGone()``). Where the connection waits inline, the wait
    /// ends as soon as the peer goes; elsewhere it is a sleep of `duration`.
    func hasGone(within duration: Duration) async -> Bool {
        if waitsInline && ServingTask.isOnOwnQueue {
            let milliseconds = Int32(clamping: duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000)
            let fd = self.fd
            _ = await withTaskCancellationHandler {
                mp4probe_wait_hangup(fd, milliseconds)
            } onCancel: {
                mp4probe_shutdown(fd)
            }
        } else {
            try? await Task.sleep(for: duration)
        }
        return peerHasGone()
    }

    /// Waits until the socket is readable or writable; throws `timedOut` after `timeout`
    /// seconds, `cancelled` when the task is cancelled.
    private func wait(forWrite: Bool, timeout: WaitLimit) async throws {
        let milliseconds = Int32(clamping: Int(timeout.seconds * 1000))
        let fd = self.fd
        let inline = (waitsInline || Self.waitsInlineInTask) && ServingTask.isOnOwnQueue
        // A task on its caller's queue waits there briefly, then off it (``ServingTask/briefInlineWaits``).
        let shared = inline ? ServingTask.mayWaitBrieflyInline : nil
        let brief = shared == true ? min(ServingTask.briefInlineWait, milliseconds) : nil
        // The poll itself, with what it lasted taken off the limit's budget when it has one.
        let budget = timeout.budget
        let poll: @Sendable (Int32) -> Int32 = { limit in
            budget.map { $0.measuring { mp4probe_wait(fd, forWrite ? 1 : 0, limit) } } ?? mp4probe_wait(fd, forWrite ? 1 : 0, limit)
        }
        let ready: Int32 = await withTaskCancellationHandler {
            if inline && shared == nil { return poll(milliseconds) }
            if let brief {
                let ready = poll(brief)
                if ready != 0 || brief == milliseconds { return ready }
            }
            let rest = milliseconds - (brief ?? 0)
            return await withCheckedContinuation { continuation in
                waiter.async { continuation.resume(returning: poll(rest)) }
            }
        } onCancel: {
            mp4probe_shutdown(fd)
        }
        if Task.isCancelled { throw URLError(.cancelled) }
        if ready == 0 { throw URLError(.timedOut) }
        if ready < 0 { throw URLError(.networkConnectionLost) }
    }

    /// Sends all of `bytes`.
    func send(_ bytes: [UInt8], timeout: WaitLimit) async throws {
        try await send(bytes[...], timeout: timeout)
    }

    /// Sends all of `bytes` (a piece of a larger buffer, not copied).
    func send(_ bytes: ArraySlice<UInt8>, timeout: WaitLimit) async throws {
        var sent = 0
        while sent < bytes.count {
            if let tls {
                let count = bytes.withUnsafeBytes { raw in mp4probe_tls_send(tls, raw.baseAddress! + sent, raw.count - sent) }
                if count > 0 { sent += count; continue }
                if count == MP4PROBE_TLS_WANT_WRITE || count == MP4PROBE_TLS_WANT_READ {
                    try await wait(forWrite: count == MP4PROBE_TLS_WANT_WRITE, timeout: timeout)
                    continue
                }
                throw URLError(.networkConnectionLost)
            }
            let count = bytes.withUnsafeBytes { raw in
                mp4probe_send(fd, raw.baseAddress! + sent, raw.count - sent)
            }
            if count > 0 { sent += count; continue }
            let error = errno
            if count < 0 && (error == EAGAIN || error == EWOULDBLOCK) {
                try await wait(forWrite: true, timeout: timeout)
                continue
            }
            throw URLError(.networkConnectionLost)
        }
    }

    /// Receives more bytes after `end` (moving the unconsumed bytes to the front first when the
    /// buffer is full). Returns how many arrived: 0 at the end of the stream.
    @discardableResult
    func fill(timeout: WaitLimit) async throws -> Int {
        if start == end { start = 0; end = 0 }
        if end == buffer.count && start == 0 && buffer.count < Self.bufferSize {
            buffer += [UInt8](repeating: 0, count: min(buffer.count, Self.bufferSize - buffer.count))
        }
        if end == buffer.count {
            guard start > 0 else { return -1 }   // full of unconsumed bytes: the caller's bound
            buffer.withUnsafeMutableBytes { raw in
                let base = raw.baseAddress!
                memmove(base, base + start, end - start)
            }
            end -= start
            start = 0
        }
        while true {
            if let tls {
                let count = buffer.withUnsafeMutableBytes { raw in mp4probe_tls_recv(tls, raw.baseAddress! + end, raw.count - end) }
                if count > 0 { end += count; return count }
                if count == 0 { return 0 }
                if count == MP4PROBE_TLS_WANT_READ || count == MP4PROBE_TLS_WANT_WRITE {
                    try await wait(forWrite: count == MP4PROBE_TLS_WANT_WRITE, timeout: timeout)
                    continue
                }
                throw URLError(.networkConnectionLost)
            }
            let count = buffer.withUnsafeMutableBytes { raw in
                mp4probe_recv(fd, raw.baseAddress! + end, raw.count - end)
            }
            if count > 0 { end += count; return count }
            if count == 0 { return 0 }
            let error = errno
            if error == EAGAIN || error == EWOULDBLOCK {
                try await wait(forWrite: false, timeout: timeout)
                continue
            }
            throw URLError(error == ETIMEDOUT ? .timedOut : .networkConnectionLost)
        }
    }

    /// Marks `count` buffered bytes consumed.
    func consume(_ count: Int) {
        start += min(count, end - start)
    }

    /// The unconsumed bytes.
    var available: ArraySlice<UInt8> { buffer[start..<end] }
}
