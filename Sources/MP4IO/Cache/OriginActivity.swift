/// The fetches a loader's players and prefetches have running at the origin, so that preloads
/// stand aside for them (a playing reader before a prefetch before a preload).
///
/// The cache entries report here when they start and end a fetch whose priority is above
/// ``FetchPlanner/Priority/preload`` (``CacheEntry`` does, for the sources a ``MediaLoader``
/// opens); a preload fills only while ``isBusy`` is false. A player reading bytes already
/// cached is not at the origin, so the next videos' preloads go on meanwhile.
final class OriginActivity: Sendable {
    /// How long after the last such fetch ends preloads still wait: players ask again right
    /// after an answer, and a preload that slipped in between would take the bandwidth of the
    /// video on screen.
    static let grace: Duration = .milliseconds(250)

    private struct State {
        var fetching = 0
        var lastEnd: ContinuousClock.Instant?
    }
    private let state = Locked(State())

    /// A fetch for a player or a prefetch starts.
    func started() { state.withLock { $0.fetching += 1 } }

    /// It ended (each ``started()`` is ended once).
    func ended() {
        state.withLock { state in
            state.fetching = max(state.fetching - 1, 0)
            state.lastEnd = .now
        }
    }

    /// Whether a player's or a prefetch's fetch runs, or ended less than ``grace`` ago.
    var isBusy: Bool {
        state.withLock { state in
            state.fetching > 0 || state.lastEnd.map { ContinuousClock.now - $0 < Self.grace } == true
        }
    }
}
