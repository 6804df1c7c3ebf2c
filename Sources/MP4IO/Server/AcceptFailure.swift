#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What the accept loop does when `accept` fails, decided without I/O from the error alone.
///
/// `poll` keeps reporting a listening socket ready when `accept` cannot succeed: a socket the
/// system reclaimed while an iOS app was suspended (`accept` then fails for good), or a process
/// out of descriptors (the connection stays queued). A loop that went straight back to `poll`
/// would spin a core; this one waits, or makes the listener again on the same port.
enum AcceptFailure: Equatable, Sendable {
    /// No connection waiting (or one that was interrupted): back to `poll`.
    case idle
    /// That connection failed before it was accepted (reset, aborted): accept the next.
    case next
    /// Out of descriptors or memory: the connection stays queued, `poll` stays ready; wait
    /// before trying again.
    case pause(milliseconds: Int32)
    /// The listening socket itself is gone (reclaimed, shut down, closed): make it again on
    /// the same address and port.
    case reopen

    static func action(errno code: Int32) -> AcceptFailure {
        switch code {
        case EAGAIN, EWOULDBLOCK, EINTR: return .idle
        case ECONNABORTED, ECONNRESET, EPROTO, EPERM: return .next
        case EMFILE, ENFILE, ENOBUFS, ENOMEM: return .pause(milliseconds: 100)
        default: return .reopen   // EBADF, EINVAL, ENOTSOCK, EOPNOTSUPP, ...
        }
    }

    /// How long to wait before the next attempt to make the listener again, after `attempts`
    /// failed ones (the port may still be held: the suspended app's old socket): 50 ms,
    /// doubling, at most 2 s.
    static func reopenDelay(afterAttempts attempts: Int) -> Int32 {
        Int32(min(2000, 50 << min(attempts, 6)))
    }
}
