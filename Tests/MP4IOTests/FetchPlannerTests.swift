import Testing
import MP4Core
@testable import MP4IO
import MP4TestSupport

/// The fetch planner's rules, one row each, without sockets or files: the decisions the cache
/// makes for its readers (the model is FragmentSeekTests).
@Suite struct FetchPlannerTests {
    typealias Step = FetchPlanner.Step
    typealias Effect = FetchPlanner.Effect

    /// A policy with small numbers: windows of 100 bytes, follow within 20, bridge gaps under
    /// 10, pieces of 50.
    static func planner() -> FetchPlanner {
        var policy = ReadAheadPolicy()
        policy.window = 100
        policy.followDistance = 20
        policy.bridgeGap = 10
        return FetchPlanner(policy: policy, piece: 50)
    }

    static let token: Int32 = 7

    /// Starts a fetch of `range` for a new reader of it; returns the reader and the fetch.
    static func started(_ planner: inout FetchPlanner, _ range: Range<UInt64>, present: ByteRangeSet = ByteRangeSet(),
                        kind: FetchPlanner.ReaderKind = .stream(windowed: true), priority: FetchPlanner.Priority = .playing) throws -> (FetchPlanner.ReaderID, FetchPlanner.FetchID) {
        let reader = planner.addReader(kind, range, priority: priority)
        guard case .claim(let claim) = planner.next(reader, present: present) else { throw Failure("no claim for \(range)") }
        guard case .follow(let fetch, _, _)? = planner.claimed(claim, for: reader, lockToken: token) else { throw Failure("no fetch for \(claim)") }
        _ = planner.takeEffects()
        return (reader, fetch)
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    @Test func aCachedRunIsServedInPieces() {
        var planner = Self.planner()
        let reader = planner.addReader(.stream(windowed: true), 0..<300, priority: .playing)
        #expect(planner.next(reader, present: ByteRangeSet([0..<120])) == .serve(0..<50))
        planner.advanced(reader, to: 100)
        #expect(planner.next(reader, present: ByteRangeSet([0..<120])) == .serve(100..<120))
        planner.advanced(reader, to: 300)
        #expect(planner.next(reader, present: ByteRangeSet([0..<120])) == .done)
    }

    /// A player's request gets a short first run from the cache and, when it began on a
    /// cached run shorter than that (a head the walk ahead fetched), a short first fetch past
    /// it (a player that read a header and is about to go); later runs and windows are whole,
    /// and one that began on a longer cached run fetches a whole window. A fill or a whole read
    /// is not shortened.
    @Test func aPlayersFirstRunAndFirstFetchAfterAShortCachedRunAreShort() {
        var policy = ReadAheadPolicy()
        policy.window = 100
        var planner = FetchPlanner(policy: policy, piece: 50, firstPiece: 20)
        let present = ByteRangeSet([0..<70, 200..<210])
        let player = planner.addReader(.stream(windowed: true), 0..<400, priority: .playing)
        #expect(planner.next(player, present: present) == .serve(0..<20))
        planner.advanced(player, to: 20)
        #expect(planner.next(player, present: present) == .serve(20..<70))
        planner.advanced(player, to: 70)
        #expect(planner.next(player, present: present) == .claim(70..<170), "after a long cached run: a whole window")

        let header = planner.addReader(.stream(windowed: true), 200..<400, priority: .playing)
        #expect(planner.next(header, present: present) == .serve(200..<210))
        planner.advanced(header, to: 210)
        #expect(planner.next(header, present: present) == .claim(210..<230), "after a short cached run: a short first fetch")
        #expect(planner.claimed(210..<230, for: header, lockToken: Self.token) != nil)
        planner.advanced(header, to: 230)
        #expect(planner.next(header, present: ByteRangeSet([0..<70, 200..<230])) == .claim(230..<330), "a whole window after it")

        let fresh = planner.addReader(.stream(windowed: true), 300..<400, priority: .playing)
        #expect(planner.next(fresh, present: present) == .claim(300..<400), "a request that began on missing bytes: a whole window")
        let whole = planner.addReader(.stream(windowed: false), 0..<400, priority: .playing)
        #expect(planner.next(whole, present: present) == .serve(0..<50))
        let fill = planner.addReader(.fill, 0..<400, priority: .playing)
        #expect(planner.next(fill, present: present) == .serve(0..<50))
    }

    /// A player's request of a film walked ahead starts short (`startsShort`): on missing
    /// bytes its first fetch is a first piece, then windows; a cached long run still gives a
    /// window after it. (In CI's AddressSanitizer suite, a walk behind the player had 2.5 MB
    /// of windows fetched for header reads: `FragmentedStartTests`.)
    @Test func aHeaderReadOfAWalkedFilmStartsShort() {
        var policy = ReadAheadPolicy()
        policy.window = 100
        var planner = FetchPlanner(policy: policy, piece: 50, firstPiece: 20)
        let header = planner.addReader(.stream(windowed: true), 300..<500, priority: .playing, startsShort: true)
        #expect(planner.next(header, present: ByteRangeSet()) == .claim(300..<320))
        #expect(planner.claimed(300..<320, for: header, lockToken: Self.token) != nil)
        planner.advanced(header, to: 320)
        #expect(planner.next(header, present: ByteRangeSet([300..<320])) == .claim(320..<420), "a whole window after it")
        let cached = planner.addReader(.stream(windowed: true), 0..<400, priority: .playing, startsShort: true)
        #expect(planner.next(cached, present: ByteRangeSet([0..<200])) == .serve(0..<20))
        planner.advanced(cached, to: 20)
        #expect(planner.next(cached, present: ByteRangeSet([0..<200])) == .serve(20..<70))
        planner.advanced(cached, to: 200)
        #expect(planner.next(cached, present: ByteRangeSet([0..<200])) == .claim(200..<300), "after a long cached run: a whole window")
        let fill = planner.addReader(.fill, 600..<900, priority: .playing, startsShort: true)
        #expect(planner.next(fill, present: ByteRangeSet()) == .claim(600..<900), "only a windowed reader starts short")
        // At a fragment's start the walk knows, its first piece is the walk's head (smaller).
        let atHead = planner.addReader(.stream(windowed: true), 1000..<1500, priority: .playing, startsShort: true, firstPiece: 8)
        #expect(planner.next(atHead, present: ByteRangeSet()) == .claim(1000..<1008))
        let larger = planner.addReader(.stream(windowed: true), 2000..<2500, priority: .playing, startsShort: true, firstPiece: 64)
        #expect(planner.next(larger, present: ByteRangeSet()) == .claim(2000..<2020), "never more than the first piece")
    }

    /// A player's request that begins on a head being fetched (the walk ahead's, not cached
    /// yet) is one that began on a short run: its first fetch past the head is short too. In a
    /// loaded test run, requests that stayed past such heads had whole windows fetched.
    @Test func aPlayerFollowingAShortFetchThenFetchesAFirstPiece() throws {
        var policy = ReadAheadPolicy()
        policy.window = 100
        var planner = FetchPlanner(policy: policy, piece: 50, firstPiece: 20)
        let present = ByteRangeSet([0..<70])
        #expect(planner.prefetch([300..<310], present: present, maxRequests: 1) == [300..<310])
        planner.claimedAhead(300..<310, for: FetchPlanner.prefetchReader, lockToken: Self.token)
        let header = planner.addReader(.stream(windowed: true), 300..<400, priority: .playing)
        guard case .follow(let id, through: let through, _) = planner.next(header, present: present) else {
            Issue.record("the request did not follow the head's fetch")
            return
        }
        #expect(through == 310)
        planner.progressed(id, written: 310)
        planner.advanced(header, to: 310)
        planner.ended(id)
        #expect(planner.next(header, present: ByteRangeSet([0..<70, 300..<310])) == .claim(310..<330), "after a short followed run: a short first fetch")

        let long = planner.addReader(.stream(windowed: true), 100..<400, priority: .playing)
        #expect(planner.prefetch([100..<200], present: present, maxRequests: 1) == [100..<200])
        planner.claimedAhead(100..<200, for: FetchPlanner.prefetchReader, lockToken: Self.token)
        guard case .follow(let other, through: 200, _) = planner.next(long, present: present) else {
            Issue.record("the request did not follow the window's fetch")
            return
        }
        planner.progressed(other, written: 200)
        planner.advanced(long, to: 200)
        planner.ended(other)
        #expect(planner.next(long, present: ByteRangeSet([0..<70, 100..<200, 300..<310])) == .claim(200..<300), "after a long followed run: a whole window")
    }

    @Test(arguments: [
        // (present, reader's range, expected claim): small cached gaps are fetched again, a
        // wider one is not; a windowed reader claims at most a window.
        ([200..<205], 0..<300, 0..<100),
        ([50..<55], 0..<90, 0..<90),
        ([50..<70], 0..<300, 0..<50),
    ] as [([Range<UInt64>], Range<UInt64>, Range<UInt64>)])
    func missingBytesAreClaimedBridgedAndWindowed(present: [Range<UInt64>], range: Range<UInt64>, claim: Range<UInt64>) {
        var planner = Self.planner()
        let reader = planner.addReader(.stream(windowed: true), range, priority: .playing)
        #expect(planner.next(reader, present: ByteRangeSet(present)) == .claim(claim))
    }

    @Test func aWholeReadClaimsTheWholeMissingRun() {
        var planner = Self.planner()
        let reader = planner.addReader(.stream(windowed: false), 0..<1000, priority: .playing)
        #expect(planner.next(reader, present: ByteRangeSet()) == .claim(0..<1000))
    }

    @Test func aClaimEndsWhereAnotherFetchBegins() throws {
        var planner = Self.planner()
        _ = try Self.started(&planner, 60..<90)
        let reader = planner.addReader(.stream(windowed: false), 0..<200, priority: .playing)
        #expect(planner.next(reader, present: ByteRangeSet()) == .claim(0..<60))
    }

    @Test func aReaderFollowsAFetchItIsCloseTo() throws {
        var planner = Self.planner()
        let (_, fetch) = try Self.started(&planner, 0..<100)
        planner.progressed(fetch, written: 30)
        let reader = planner.addReader(.stream(windowed: true), 45..<80, priority: .playing)
        #expect(planner.next(reader, present: ByteRangeSet()) == .follow(fetch, through: 80, aheadAt: nil))
        #expect(planner.fetches[fetch]?.owners.contains(reader) == true)
        #expect(planner.takeEffects().isEmpty)
    }

    /// A reader ahead of a fetch waits for it only while the fetch, at its measured rate,
    /// reaches the reader before a new request's first byte would (the origin's measured
    /// latency); always within `followAlways`, never beyond `followDistance`. With a fixed
    /// 256 KiB, ffmpeg opening a 300-fragment film through `serve` read every fragment's
    /// header behind one sequential fetch: 106 s to its first frame, 0.9 s direct.
    @Test func aReaderWaitsOnlyWhenTheFetchReachesItSoonerThanANewRequest() throws {
        var policy = ReadAheadPolicy()
        policy.window = 10_000
        policy.followDistance = 1_000
        policy.followAlways = 10
        var planner = FetchPlanner(policy: policy, piece: 50)
        let (_, fetch) = try Self.started(&planner, 0..<10_000)
        planner.progressed(fetch, written: 100)
        // Not measured yet: only within `followAlways`.
        let near = planner.addReader(.stream(windowed: true), 110..<200, priority: .playing)
        #expect(planner.next(near, present: ByteRangeSet()) == .follow(fetch, through: 200, aheadAt: nil))
        #expect(planner.followAllowance(try #require(planner.fetches[fetch])) == 10)
        // 1,000 B/s and 0.1 s to a first byte: it reaches 100 bytes further before a new request would.
        planner.progressed(fetch, written: 100, bytesPerSecond: 1_000)
        planner.measuredLatency(0.1)
        #expect(planner.followAllowance(try #require(planner.fetches[fetch])) == 100)
        let within = planner.addReader(.stream(windowed: true), 190..<300, priority: .playing)
        #expect(planner.next(within, present: ByteRangeSet()) == .follow(fetch, through: 300, aheadAt: nil))
        let beyond = planner.addReader(.stream(windowed: true), 250..<300, priority: .playing)
        #expect(planner.next(beyond, present: ByteRangeSet()) == .claim(250..<300))
        #expect(planner.takeEffects() == [.shrink(fetch, to: 250), .release(lockToken: Self.token, [250..<10_000])])
        // The latency is a moving average of the first bytes measured; a fast fetch is
        // followed up to `followDistance`, no further.
        planner.measuredLatency(0.5)
        #expect(abs(planner.originLatency - 0.2) < 1e-9)
        planner.progressed(fetch, written: 100, bytesPerSecond: 1e12)
        #expect(planner.followAllowance(try #require(planner.fetches[fetch])) == 1_000)
    }

    /// A fetch a reader that joined it found delivering nothing for the planner's patience (a
    /// server pausing between bursts) is not waited for beyond its progress, even within `followAlways`: the
    /// reader's next step claims its own range there, and the stalled fetch keeps its head for
    /// the readers behind. Once it moves on it is followed again. The patience is four times
    /// the origin's latency, never less than `stallPatience`.
    @Test func aStalledFetchIsNotWaitedFor() throws {
        var planner = Self.planner()
        let (first, fetch) = try Self.started(&planner, 0..<100)
        planner.progressed(fetch, written: 30, bytesPerSecond: 1e9)
        let reader = planner.addReader(.stream(windowed: true), 35..<100, priority: .playing)
        #expect(planner.next(reader, present: ByteRangeSet()) == .follow(fetch, through: 100, aheadAt: nil))
        // Its bytes are there after all: nothing changes.
        let hadIt = planner.followStalled(fetch, by: reader, written: 40, at: 35)
        #expect(!hadIt)
        // The reader it was started for waits for it (a player reading on through a paced origin).
        let own = planner.followStalled(fetch, by: first, written: 40, at: 40)
        #expect(!own)
        let stalled = planner.followStalled(fetch, by: reader, written: 40, at: 45)
        #expect(stalled)
        planner.unfollow(reader, fetch, at: 45)
        #expect(planner.takeEffects().isEmpty, "the first reader still wants it")
        #expect(planner.next(reader, present: ByteRangeSet()) == .claim(45..<100))
        #expect(planner.takeEffects() == [.shrink(fetch, to: 45), .release(lockToken: Self.token, [45..<100])])
        // The first reader, behind the stall, still follows the fetch's head.
        #expect(planner.next(first, present: ByteRangeSet()) == .follow(fetch, through: 45, aheadAt: nil))
        // Moved on: followed again.
        planner.progressed(fetch, written: 41)
        let later = planner.addReader(.stream(windowed: true), 43..<45, priority: .playing)
        #expect(planner.next(later, present: ByteRangeSet()) == .follow(fetch, through: 45, aheadAt: nil))
        #expect(planner.followPatience == 0.4, "four times the 0.1 s assumed before a measure")
        planner.measuredLatency(0.001)
        #expect(planner.followPatience == ReadAheadPolicy().stallPatience)
        for _ in 0..<20 { planner.measuredLatency(5) }
        #expect(planner.followPatience == 2, "at most 2 s")
    }

    /// A player that follows a preload's fetch makes it a player's (preloads then wait for it,
    /// ``OriginActivity``); a reader of lower or equal priority changes nothing.
    @Test func aPlayerFollowingAPreloadsFetchRaisesIt() throws {
        var planner = Self.planner()
        let (_, fetch) = try Self.started(&planner, 0..<100, kind: .fill, priority: .preload)
        planner.progressed(fetch, written: 30)
        let other = planner.addReader(.fill, 40..<100, priority: .preload)
        #expect(planner.next(other, present: ByteRangeSet()) == .follow(fetch, through: 100, aheadAt: nil))
        #expect(planner.takeEffects().isEmpty)
        let player = planner.addReader(.stream(windowed: true), 45..<80, priority: .playing)
        #expect(planner.next(player, present: ByteRangeSet()) == .follow(fetch, through: 80, aheadAt: nil))
        #expect(planner.takeEffects() == [.raise(fetch, .playing)])
        #expect(planner.fetches[fetch]?.priority == .playing)
        let second = planner.addReader(.stream(windowed: true), 50..<80, priority: .playing)
        _ = planner.next(second, present: ByteRangeSet())
        #expect(planner.takeEffects().isEmpty, "raised once")
    }

    /// A seek ahead of a sequential fetch: the fetch stops where the reader is (keeping its
    /// head and lock), the bytes after are released and claimed again for the reader.
    @Test func aFetchFarBehindIsCutShortAndTheReaderClaimsItsOwn() throws {
        var planner = Self.planner()
        let (_, fetch) = try Self.started(&planner, 0..<100)
        planner.progressed(fetch, written: 10)
        let reader = planner.addReader(.stream(windowed: true), 60..<300, priority: .playing)
        #expect(planner.next(reader, present: ByteRangeSet()) == .claim(60..<100))
        #expect(planner.takeEffects() == [.shrink(fetch, to: 60), .release(lockToken: Self.token, [60..<100])])
        #expect(planner.fetches[fetch]?.held == 0..<60)
    }

    @Test func aClaimAnotherProcessHoldsIsWaitedFor() {
        var planner = Self.planner()
        let reader = planner.addReader(.stream(windowed: true), 0..<50, priority: .playing)
        #expect(planner.next(reader, present: ByteRangeSet()) == .claim(0..<50))
        #expect(planner.claimed(nil, for: reader, lockToken: Self.token) == nil)
        #expect(planner.takeEffects().isEmpty)
    }

    /// Half-way through its window a windowed reader starts the next one, once; it belongs to
    /// the reader.
    @Test func theNextWindowStartsHalfWayOnce() throws {
        var planner = Self.planner()
        let reader = planner.addReader(.stream(windowed: true), 0..<1000, priority: .playing)
        #expect(planner.next(reader, present: ByteRangeSet()) == .claim(0..<100))
        guard case .follow(let fetch, let through, let aheadAt)? = planner.claimed(0..<100, for: reader, lockToken: Self.token) else {
            Issue.record("no fetch"); return
        }
        #expect(through == 100 && aheadAt == 50)
        let ahead = planner.readAhead(reader, after: fetch, present: ByteRangeSet())
        #expect(ahead == 100..<200)
        planner.claimedAhead(ahead, for: reader, lockToken: Self.token)
        #expect(planner.readAhead(reader, after: fetch, present: ByteRangeSet()) == nil, "asked twice")
        let effects = planner.takeEffects()
        #expect(effects.count == 2)
        guard case .start(let second, 100..<200, .playing) = effects.last else { Issue.record("\(effects)"); return }
        #expect(planner.fetches[second]?.owners == [reader])
    }

    @Test func noWindowAheadPastTheReadersEnd() throws {
        var planner = Self.planner()
        let reader = planner.addReader(.stream(windowed: true), 0..<80, priority: .playing)
        #expect(planner.next(reader, present: ByteRangeSet()) == .claim(0..<80))
        let step = planner.claimed(0..<80, for: reader, lockToken: Self.token)
        guard case .follow(_, 80, let aheadAt)? = step else { Issue.record("\(String(describing: step))"); return }
        #expect(aheadAt == nil)
    }

    /// The rule behind "a player that leaves costs nothing more": its fetch and the window
    /// fetched ahead for it both stop.
    @Test func aReaderThatLeavesStopsItsFetchAndItsReadAhead() throws {
        var planner = Self.planner()
        let (reader, fetch) = try Self.started(&planner, 0..<1000)
        planner.progressed(fetch, written: 60)
        planner.advanced(reader, to: 60)
        let ahead = planner.readAhead(reader, after: fetch, present: ByteRangeSet())
        #expect(ahead == 100..<200)
        planner.claimedAhead(ahead, for: reader, lockToken: Self.token)
        guard case .start(let second, _, _) = planner.takeEffects().last else { Issue.record("no start"); return }
        planner.leave(reader)
        #expect(planner.takeEffects() == [.stop(fetch), .stop(second)])
    }

    @Test func aFetchAnotherReaderFollowsGoesOn() throws {
        var planner = Self.planner()
        let (first, fetch) = try Self.started(&planner, 0..<100)
        planner.progressed(fetch, written: 40)
        let second = planner.addReader(.stream(windowed: true), 40..<100, priority: .playing)
        #expect(planner.next(second, present: ByteRangeSet()) == .follow(fetch, through: 100, aheadAt: nil))
        planner.leave(first)
        #expect(planner.takeEffects().isEmpty)
        planner.leave(second)
        #expect(planner.takeEffects() == [.stop(fetch)])
    }

    /// A reader that read all of a fetch lets it finish (its last commit).
    @Test func aFetchReadToItsEndIsNotStopped() throws {
        var planner = Self.planner()
        let (reader, fetch) = try Self.started(&planner, 0..<100)
        planner.progressed(fetch, written: 100)
        planner.unfollow(reader, fetch, at: 100)
        planner.leave(reader)
        #expect(planner.takeEffects().isEmpty)
    }

    @Test func aReaderWithoutProgressStalls() {
        var planner = Self.planner()
        let reader = planner.addReader(.stream(windowed: true), 0..<100, priority: .playing)
        for _ in 0..<4 { #expect(planner.next(reader, present: ByteRangeSet([0..<100])) == .serve(0..<50)) }
        #expect(planner.next(reader, present: ByteRangeSet([0..<100])) == .stalled)
    }

    /// Waiting for another process's fetch (a refused claim, looked at again and again) is not
    /// a stall.
    @Test func waitingForAnotherProcessIsNotAStall() {
        var planner = Self.planner()
        let reader = planner.addReader(.fill, 0..<100, priority: .playing)
        for _ in 0..<20 {
            #expect(planner.next(reader, present: ByteRangeSet()) == .claim(0..<100))
            #expect(planner.claimed(nil, for: reader, lockToken: Self.token) == nil)
        }
    }

    /// A prefetch starts what is neither present nor in flight, bridged, at most N requests;
    /// a newer one supersedes fetches nobody follows; a player leaving does not stop it.
    @Test func prefetchesAreBridgedSupersededAndOutliveThePlayer() throws {
        var planner = Self.planner()
        let (player, playing) = try Self.started(&planner, 0..<30)
        planner.progressed(playing, written: 5)
        let parts = planner.prefetch([0..<50, 55..<70, 200..<300, 400..<500], present: ByteRangeSet([30..<40]), maxRequests: 2)
        #expect(parts == [40..<70, 200..<300])
        let prefetch = FetchPlanner.prefetchReader
        for part in parts { planner.claimedAhead(part, for: prefetch, lockToken: Self.token) }
        let started = planner.takeEffects().compactMap { effect -> FetchPlanner.FetchID? in
            if case .start(let id, _, .prefetch) = effect { return id }
            return nil
        }
        #expect(started.count == 2)
        // The player follows the second prefetch fetch: it is the player's too now.
        planner.leave(player)
        _ = planner.takeEffects()
        let follower = planner.addReader(.stream(windowed: true), 200..<250, priority: .playing)
        #expect(planner.next(follower, present: ByteRangeSet()) == .follow(started[1], through: 250, aheadAt: nil))
        #expect(planner.fetches[started[1]]?.priority == .playing)
        #expect(planner.takeEffects() == [.raise(started[1], .playing)])
        planner.leave(follower)
        #expect(planner.takeEffects().isEmpty, "the player's leaving stopped a prefetch")
        // A new prefetch elsewhere supersedes both (nobody follows them).
        #expect(planner.prefetch([900..<950], present: ByteRangeSet(), maxRequests: 8) == [900..<950])
        #expect(planner.takeEffects() == [.stop(started[0]), .stop(started[1])])
    }

    @Test func aPrefetchStillWantedGoesOn() throws {
        var planner = Self.planner()
        let prefetch = FetchPlanner.prefetchReader
        #expect(planner.prefetch([0..<100], present: ByteRangeSet(), maxRequests: 8) == [0..<100])
        planner.claimedAhead(0..<100, for: prefetch, lockToken: Self.token)
        _ = planner.takeEffects()
        #expect(planner.prefetch([50..<100], present: ByteRangeSet(), maxRequests: 8).isEmpty)
        #expect(planner.takeEffects().isEmpty)
    }

    /// Bytes the walk ahead read itself (``FetchPlanner/adoptable(_:present:)``): the parts
    /// neither present nor being fetched, not bridged, and no prefetch is stopped (a prefetch
    /// stops the last one's fetches that it no longer wants).
    @Test func adoptedBytesStopNoPrefetchAndAreNotBridged() throws {
        var planner = Self.planner()
        let prefetch = FetchPlanner.prefetchReader
        #expect(planner.prefetch([0..<100], present: ByteRangeSet(), maxRequests: 8) == [0..<100])
        planner.claimedAhead(0..<100, for: prefetch, lockToken: Self.token)
        _ = planner.takeEffects()
        #expect(planner.adoptable(90..<130, present: ByteRangeSet([110..<115])) == [100..<110, 115..<130])
        #expect(planner.adoptable(300..<310, present: ByteRangeSet()) == [300..<310])
        #expect(planner.takeEffects().isEmpty, "adopting stopped the prefetch")
        // Two parts 5 bytes apart (closer than the bridge gap) stay two: the gap is not held.
        #expect(planner.adoptable(400..<430, present: ByteRangeSet([410..<415])) == [400..<410, 415..<430])
        #expect(planner.prefetch([400..<430], present: ByteRangeSet([410..<415]), maxRequests: 8) == [400..<430], "a prefetch bridges them")
        planner.claimedAhead(300..<310, for: prefetch, lockToken: Self.token)
        #expect(planner.adoptable(305..<320, present: ByteRangeSet()) == [310..<320], "what a fetch holds is not taken")
        #expect(planner.adoptable(0..<0, present: ByteRangeSet()).isEmpty)
    }

    @Test func whenTheOriginChangesEveryFetchStops() throws {
        var planner = Self.planner()
        let (_, first) = try Self.started(&planner, 0..<100)
        let (_, second) = try Self.started(&planner, 200..<300)
        planner.originChanged()
        #expect(planner.takeEffects() == [.stop(first), .stop(second)])
        // Nobody follows a stopping fetch.
        let reader = planner.addReader(.stream(windowed: false), 0..<100, priority: .playing)
        #expect(planner.next(reader, present: ByteRangeSet()) == .claim(0..<100))
    }

    /// Locks belong to the descriptor: a fetch that ends releases only the bytes no other
    /// fetch on the same descriptor holds.
    @Test func anEndingFetchReleasesOnlyItsOwnBytes() throws {
        var planner = Self.planner()
        let (_, old) = try Self.started(&planner, 0..<100, kind: .stream(windowed: false))
        planner.progressed(old, written: 10)
        // A seek ahead cuts it at 60 and claims 60..<100 again.
        let (_, new) = try Self.started(&planner, 60..<100, kind: .stream(windowed: false))
        planner.ended(old)
        #expect(planner.takeEffects() == [.release(lockToken: Self.token, [0..<60])])
        planner.ended(new)
        #expect(planner.takeEffects() == [.release(lockToken: Self.token, [60..<100])])
    }

    /// "The disk cannot take more" is one input: running fetches stop, readers get missing
    /// bytes straight from the origin, fills (which only cache) stall, nothing is prefetched;
    /// once the disk has room, claims come back.
    @Test func aFullDiskTurnsFetchesIntoPassThrough() throws {
        var planner = Self.planner()
        let (_, fetch) = try Self.started(&planner, 0..<100)
        planner.diskFull()
        #expect(planner.takeEffects() == [.stop(fetch)])
        let reader = planner.addReader(.stream(windowed: true), 200..<1000, priority: .playing)
        #expect(planner.next(reader, present: ByteRangeSet()) == .passThrough(200..<300))
        planner.advanced(reader, to: 300)
        #expect(planner.next(reader, present: ByteRangeSet([300..<350])) == .serve(300..<350))
        let fill = planner.addReader(.fill, 500..<600, priority: .playing)
        #expect(planner.next(fill, present: ByteRangeSet()) == .stalled)
        #expect(planner.prefetch([700..<800], present: ByteRangeSet(), maxRequests: 8).isEmpty)
        planner.diskHasRoom()
        #expect(planner.next(fill, present: ByteRangeSet()) == .claim(500..<600))
    }
}
