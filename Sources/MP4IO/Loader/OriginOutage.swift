import MP4Core

/// What a player's read does when its origin cannot be reached: the decisions, without I/O
/// (``MediaResource`` executes them).
///
/// A player reading a preloaded film with the origin gone used to get the cached bytes, then a
/// closed connection (Chromium: `PIPELINE_ERROR_READ` at 2.8 s of a 3 s preload, 15 of 15
/// plays). A slow network makes a player wait, not fail; so does this:
/// - **Wait, bounded.** A read that fails because the origin is unreachable is tried again
///   from its first undelivered byte after 0.5, 1, 2, then every 4 s, for up to
///   ``patience`` seconds from the first failure; the player sees a stall, and the film goes
///   on if the origin comes back. A read whose player left stops at once (the task is
///   cancelled). Failures that waiting cannot mend are thrown at once: the origin refused
///   (`4xx`, a redirect not followed) or changed.
/// - **Promise only what can be delivered.** While the origin is known unreachable (its last
///   read failed, and none succeeded since), a range that starts in cached bytes is answered
///   with those bytes only: a `206` whose `Content-Range` ends where the cached run ends
///   (``deliverable(_:cached:)``), complete, instead of a promise of the whole film. The
///   player asks for the rest, and that request waits.
struct OriginOutage: Sendable {
    /// Seconds a read waits for an unreachable origin before it fails.
    let patience: Double
    private var firstFailure: ContinuousClock.Instant?
    private var attempts = 0

    init(patience: Double) { self.patience = patience }

    /// Whether waiting may mend `error`: an I/O failure of the origin that is neither a
    /// refusal (``MP4Error/Cause/refused(status:)``) nor a changed resource. Cancellation
    /// (the player left) never waits.
    static func isWorthWaiting(_ error: any Error) -> Bool {
        guard let error = error as? MP4Error, error.kind == .io else { return false }
        switch error.cause {
        case .sourceChanged?, .refused?: return false
        default: return true
        }
    }

    /// After a failure at `now`: the delay before the next try, or `nil` when the patience
    /// is spent (then the failure is thrown).
    mutating func delayAfterFailure(at now: ContinuousClock.Instant) -> Duration? {
        let first = firstFailure ?? now
        firstFailure = first
        attempts += 1
        let step = [0.5, 1, 2, 4][min(attempts - 1, 3)]
        let elapsed = now - first
        guard elapsed < .seconds(patience) else { return nil }
        return min(.seconds(step), .seconds(patience) - elapsed)
    }

    /// The part of `requested` to promise while the origin is unreachable: from its start to
    /// the end of the cached run that holds it (`cached`: the runs present); all of it when
    /// its first byte is not cached (that read waits for the origin).
    static func deliverable(_ requested: Range<UInt64>, cached: [Range<UInt64>]) -> Range<UInt64> {
        guard let run = cached.first(where: { $0.contains(requested.lowerBound) }) else { return requested }
        return requested.lowerBound..<min(requested.upperBound, run.upperBound)
    }
}

/// Which origins are unreachable now, for a loader: set by a player's read that failed for
/// want of the origin, cleared by one that reached it.
final class OriginReachability: Sendable {
    private let unreachable = Locked<Set<String>>([])

    func failed(_ origin: String) { unreachable.withLock { _ = $0.insert(origin) } }
    func reached(_ origin: String) { unreachable.withLock { _ = $0.remove(origin) } }
    func isUnreachable(_ origin: String) -> Bool { unreachable.withLock { $0.contains(origin) } }
}
