/// When the accept loop asks whether its listening socket still takes connections, decided
/// without I/O.
///
/// XNU takes a suspended iOS app's listening socket away without a word (it is marked
/// defunct): `poll` never reports it ready again and `accept` says `EWOULDBLOCK`, so a loop
/// that only waits for connections waits forever, and players get "connection refused". The
/// loop sleeps until a connection, a stop or a check (no timer while idle: a phone's energy),
/// and checks the socket (``HTTPServer`` connects to itself) when
/// - the app asks (``HTTPServer/checkListener()``, from its return to the foreground), or
/// - a wait lasted well past its timeout: the process did not run meanwhile (suspended,
///   stopped, the machine asleep). A suspension shorter than what was left of the wait is
///   not seen this way; the app's call is what covers it.
struct ListenerWatch: Equatable, Sendable {
    /// What the loop does next.
    enum Action: Equatable, Sendable {
        /// Accept the connections waiting.
        case accept
        /// Check that the socket still takes connections; make it again when it does not.
        case check
        /// Wait again.
        case wait
        /// The server stopped.
        case stop
    }

    /// The longest single wait: a gap past it is noticed at the latest this long after the
    /// process runs again. Each elapsed wait is one wake-up of an idle server.
    static let waitLimit: Duration = .seconds(60)
    /// How much longer than asked a wait may take before it counts as a gap (a loaded
    /// machine's scheduling delay is well under it).
    static let gapAllowance: Duration = .seconds(5)

    /// After a wait of at most `timeout` that ended after `elapsed`: with the listener ready,
    /// and with a stop or a check asked for (bytes read from the wake pipe).
    static func afterWait(listenerReady: Bool, stopAsked: Bool, checkAsked: Bool, elapsed: Duration, timeout: Duration = waitLimit) -> Action {
        if stopAsked { return .stop }
        if checkAsked || elapsed > timeout + gapAllowance { return .check }
        return listenerReady ? .accept : .wait
    }

    /// The wake pipe's bytes: what ``HTTPServer/stop()`` and ``HTTPServer/checkListener()``
    /// write.
    static let stopByte: UInt8 = 0x73      // "s"
    static let checkByte: UInt8 = 0x63     // "c"
}
