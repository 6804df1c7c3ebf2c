import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import MP4Core
import MP4ProbeSystem

/// The listening socket of an ``HTTPServer`` and the loop that accepts on it, on a serving
/// queue (a ``ServingTask/Lane``; the next one after each connection accepted). It sleeps until a connection, a stop or a check (a wake pipe; no timer
/// while idle but one wait of ``ListenerWatch/waitLimit``), and keeps the socket alive: what
/// to do after each wait is ``ListenerWatch``'s decision, what to do when `accept` fails
/// ``AcceptFailure``'s; this type carries them out. Each accepted connection is handed to
/// the server, which decides whether to serve it.
final class Listener: Sendable {
    let host: String
    /// The port it listens on (kept when the socket is made again).
    let port: Int

    private struct State {
        var stopped = false
        /// The listening socket (-1 while it is being made again, and once the loop ended).
        var fd: Int32 = -1
        /// The write end of the wake pipe (-1 once the loop ended).
        var wake: Int32 = -1
        var acceptFailures = 0
        var reopenings = 0
    }
    private let state = Locked(State())
    private let wakeRead: Int32

    /// Binds `host:port` (0: a free port).
    /// - Throws: ``MP4Error`` `.io` when the address cannot be bound.
    init(host: String, port: Int) throws {
        var bound: Int32 = 0
        let fd = mp4probe_tcp_listen(host, Int32(port), 128, &bound)
        guard fd >= 0 else {
            throw MP4Error(.io, "cannot listen on \(host):\(port): \(String(cString: strerror(errno)))")
        }
        var pipe: [Int32] = [-1, -1]
        guard mp4probe_wake_pipe(&pipe) == 0 else {
            let reason = String(cString: strerror(errno))
            Platform.closeFile(fd)
            throw MP4Error(.io, "cannot make the server's wake pipe: \(reason)")
        }
        self.host = host
        self.port = Int(bound)
        wakeRead = pipe[0]
        state.withLock { $0.fd = fd; $0.wake = pipe[1] }
    }

    /// Starts the loop. `accepted` gets each connection's socket and the lane the loop
    /// accepted it on (``ServingTask/Lane``), where it is to be served; meanwhile the loop goes
    /// on on another lane (leader and followers: the thread that accepted a connection serves
    /// it, and the wake-up of the next thread to listen is not on the request's path).
    /// `accepted` must start the connection's task on that lane or put it back.
    func run(_ accepted: @escaping @Sendable (Int32, ServingTask.Lane) -> Void) {
        let first = state.withLock { $0.fd }
        let lane = ServingTask.Lane.take()
        lane.queue.async { [self] in loop(first, lane, accepted) }
    }

    /// `accept` calls that failed other than for want of a connection, and the times the
    /// socket was made again.
    var statistics: (failures: Int, reopenings: Int) { state.withLock { ($0.acceptFailures, $0.reopenings) } }

    /// Checks that the socket takes connections, and makes it again when it does not.
    func check() { wake(ListenerWatch.checkByte) }

    /// Ends the loop and closes the socket.
    func stop() {
        state.withLock { $0.stopped = true }
        wake(ListenerWatch.stopByte)
    }

    /// Shuts the socket down as Linux lets one be taken (`accept` then fails while `poll`
    /// reports it ready): for tests.
    func simulateReclaimed() {
        state.withLock { if $0.fd >= 0 { mp4probe_shutdown($0.fd) } }
    }

    /// Takes the socket away as XNU does from a suspended iOS app (`poll` never fires,
    /// `accept` says EWOULDBLOCK, the port is let go): for tests. (The loop is woken to wait
    /// again: Linux keeps a socket a `poll` is waiting on.)
    func simulateDefunct() {
        state.withLock { if $0.fd >= 0 { _ = mp4probe_make_listener_defunct($0.fd) } }
        wake(0)
    }

    private func wake(_ byte: UInt8) {
        state.withLock { state in
            guard state.wake >= 0 else { return }
            var byte = byte
            _ = write(state.wake, &byte, 1)   // a full pipe already holds a wake-up
        }
    }

    /// Waits and accepts on `lane`'s queue until a connection is accepted (then the loop goes
    /// on on a new lane and `accepted` gets the connection on this one) or the loop ends.
    private func loop(_ first: Int32, _ lane: ServingTask.Lane, _ accepted: @escaping @Sendable (Int32, ServingTask.Lane) -> Void) {
        var fd = first
        var handedOver = false
        defer {
            if !handedOver {
                lane.putBack()
                end(fd)
            }
        }
        let limit = ListenerWatch.waitLimit
        let limitMilliseconds = Int32(limit.components.seconds * 1000)
        while fd >= 0 {
            let began = ContinuousClock.now
            let ready = mp4probe_wait_or_wake(fd, wakeRead, limitMilliseconds)
            let elapsed = began.duration(to: .now)
            let asked = ready == 2 ? drainWakePipe() : []
            let action = ListenerWatch.afterWait(listenerReady: ready == 1, stopAsked: asked.contains(ListenerWatch.stopByte) || state.withLock { $0.stopped },
                                                 checkAsked: asked.contains(ListenerWatch.checkByte), elapsed: elapsed, timeout: limit)
            switch action {
            case .stop: return
            case .wait: continue
            case .check:
                if !takesConnections(fd) { fd = reopen(replacing: fd) }
            case .accept:
                let (next, client) = acceptOne(fd)
                fd = next
                guard let client else { continue }
                handedOver = true
                let following = ServingTask.Lane.take()
                let listening = fd
                following.queue.async { [self] in loop(listening, following, accepted) }
                accepted(client, lane)
                return
            }
        }
    }

    /// The loop has ended: the socket and the wake pipe are closed.
    private func end(_ fd: Int32) {
        if fd >= 0 { Platform.closeFile(fd) }
        Platform.closeFile(wakeRead)
        state.withLock { state in
            if state.wake >= 0 { Platform.closeFile(state.wake) }
            state.wake = -1
            state.fd = -1
        }
    }

    /// Accepts one waiting connection, if any; returns the socket to go on with (a new one
    /// after ``AcceptFailure/reopen``, -1 once stopped) and the connection.
    private func acceptOne(_ fd: Int32) -> (Int32, client: Int32?) {
        while true {
            let client = mp4probe_tcp_accept(fd)
            if client >= 0 { return (fd, client) }
            let action = AcceptFailure.action(errno: errno)
            if action != .idle { state.withLock { $0.acceptFailures += 1 } }
            switch action {
            case .idle: return (fd, nil)
            case .next: continue
            case .pause(let milliseconds):
                _ = poll(nil, 0, milliseconds)
                return (fd, nil)
            case .reopen:
                return (reopen(replacing: fd), nil)
            }
        }
    }

    /// The bytes waiting in the wake pipe.
    private func drainWakePipe() -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 64)
        while true {
            let n = buffer.withUnsafeMutableBytes { read(wakeRead, $0.baseAddress, $0.count) }
            guard n > 0 else { return bytes }
            bytes += buffer[0..<n]
        }
    }

    /// Whether the socket `fd` takes connections: a connection to its own address and port
    /// must be made and make `fd` ready within a second (it is then accepted as any other,
    /// and ends at once).
    private func takesConnections(_ fd: Int32) -> Bool {
        var failure: Int32 = 0
        let probe = mp4probe_tcp_connect(host, Int32(port), 1000, &failure)
        guard probe >= 0 else { return false }
        defer { Platform.closeFile(probe) }
        return mp4probe_wait(fd, 0, 1000) > 0
    }

    /// Makes the socket again on the same address and port, retrying with a growing delay
    /// while the port is still held, until it succeeds or the loop is stopped. Returns the
    /// new socket, or -1 once stopped.
    private func reopen(replacing old: Int32) -> Int32 {
        state.withLock { $0.fd = -1 }
        Platform.closeFile(old)
        var attempts = 0
        while !state.withLock({ $0.stopped }) {
            var bound: Int32 = 0
            let fd = mp4probe_tcp_listen(host, Int32(port), 128, &bound)
            if fd >= 0 {
                let kept = state.withLock { state -> Bool in
                    guard !state.stopped else { return false }
                    state.fd = fd
                    state.reopenings += 1
                    return true
                }
                if !kept { Platform.closeFile(fd); return -1 }
                return fd
            }
            _ = poll(nil, 0, AcceptFailure.reopenDelay(afterAttempts: attempts))
            attempts += 1
        }
        return -1
    }
}
