import MP4Core

/// The decisions of one cache entry's fetches, with no I/O of its own (the model is
/// ``FragmentSeekSearch``): given what is cached, the fetches running, the readers (position,
/// end, priority) and the ``ReadAheadPolicy``, it answers what a reader does next (serve a run
/// from the data file, follow a fetch, claim a range to fetch) and which fetches start, shrink
/// and stop. ``CacheEntry`` is its driver: it claims ranges (range locks between processes),
/// runs fetches (``OriginFetch``) and reads the data file as told.
///
/// The rules, each in one place:
/// - a reader follows a fetch that covers its position and is less than
///   ``ReadAheadPolicy/followDistance`` behind it (less when the fetch is measured slower than
///   a new request); one further behind, or found stalled, is cut short there and a fetch
///   starts at the position (a seek never waits for a sequential download, nor for a server's
///   pause);
/// - a streaming reader fetches in windows of ``ReadAheadPolicy/window`` bytes, the next
///   started half-way through the current one, owned by the reader;
/// - a fetch stops when every reader that wants it has left (the reader it was started for,
///   those that follow it); a prefetch's fetches belong to the prefetch, which a newer one
///   supersedes;
/// - a reader that makes no progress for four steps in a row stalls (its bytes keep being
///   reset by another process, or keep failing their checksums); waiting for another
///   process's fetch is not a step;
/// - when the origin changed, every fetch stops;
/// - when the disk cannot take more (a write failed with `ENOSPC`/`EDQUOT`), missing bytes
///   are passed through from the origin to the reader without being cached, until the disk
///   has room again; a fill, which only caches, stalls.
struct FetchPlanner: Sendable {
    typealias FetchID = UInt64
    typealias ReaderID = UInt64

    /// Who comes first when the origin's bandwidth is shared: a player's read, then the
    /// loader's prefetch, then a preload.
    enum Priority: Int, Comparable, Sendable {
        case preload = 0, prefetch = 1, playing = 2
        static func < (a: Priority, b: Priority) -> Bool { a.rawValue < b.rawValue }
    }

    enum ReaderKind: Sendable, Equatable {
        /// Bytes handed on as they are written; `windowed`: fetched in windows of the policy's
        /// size (a player that may leave), else whole missing runs (a `moov` read).
        case stream(windowed: Bool)
        /// Makes bytes present; done with a run once the table claims it.
        case fill
        /// The prefetch: wants ranges, reads nothing.
        case prefetch
    }

    struct Reader: Sendable, Equatable {
        var kind: ReaderKind
        var priority: Priority
        var position: UInt64
        var end: UInt64
        /// Start of the last window fetched ahead for it (each at most once).
        var aheadFrom: UInt64?
        /// Steps in a row at the same position.
        var stalls = 0
        var lastStep: UInt64?
        /// Whether it has had its first run yet (bytes from the data file, or a running fetch
        /// followed); whether that first run was a short one (ending before a first piece: a
        /// head the walk ahead fetched, or fetches now); whether it has claimed a range to fetch.
        var served = false
        var firstRunShort = false
        var claimedBefore = false
        /// The most its first fetch takes, when below the planner's first piece.
        var firstPieceLimit: UInt64?

        /// Whether it is a player's request that has had no run yet (its first is short).
        var awaitsFirstRun: Bool { !served && kind == .stream(windowed: true) }

        /// It has a run (served from the data file, or a running fetch followed): a player's
        /// first one says whether it was short (ends before a first piece, short of its end).
        mutating func hadRun(_ run: Range<UInt64>, firstPiece: UInt64) {
            if awaitsFirstRun { firstRunShort = run.upperBound - run.lowerBound < firstPiece && run.upperBound < end }
            served = true
        }
    }

    struct Fetch: Sendable, Equatable {
        /// The range it was started for.
        var range: Range<UInt64>
        /// Where it stops: `range.upperBound`, or earlier once another fetch took over.
        var end: UInt64
        /// End of the bytes it has written (as last reported).
        var written: UInt64
        /// The readers that want it. Empty: it stops.
        var owners: Set<ReaderID>
        /// The readers it was started for (a reader's read, its window ahead, the prefetch).
        var startedFor: Set<ReaderID> = []
        var priority: Priority
        /// The descriptor its range lock was taken on (opaque here; locks belong to it).
        var lockToken: Int32
        /// Told to stop: no reader follows it, it only holds its lock until it ends.
        var isStopping = false
        /// Bytes per second it delivers, as measured by its executor (nil: not yet).
        var bytesPerSecond: Double?
        /// Its progress when a reader found it delivering nothing for ``FetchPlanner/followPatience``:
        /// while it has not moved on, no reader waits for bytes it has not written.
        var stalledAt: UInt64?

        /// Stalled where it is (see ``stalledAt``).
        var isStalled: Bool { stalledAt == written }

        /// The bytes it holds locked.
        var held: Range<UInt64> { range.lowerBound..<max(range.lowerBound, end) }
    }

    /// What a reader does next.
    enum Step: Sendable, Equatable {
        /// Read this run from the data file and hand it on.
        case serve(Range<UInt64>)
        /// Take the bytes of this fetch, from the reader's position up to `through`; at
        /// `aheadAt` (when set) ask ``FetchPlanner/readAhead(_:after:present:)`` for the next window.
        case follow(FetchID, through: UInt64, aheadAt: UInt64?)
        /// Claim this range (no other process may be fetching it), then report with
        /// ``claimed(_:for:lockToken:)``.
        case claim(Range<UInt64>)
        /// Read this range from the origin and hand it on without caching it (the disk cannot
        /// take more).
        case passThrough(Range<UInt64>)
        /// The reader is at its end.
        case done
        /// No progress in four steps.
        case stalled
    }

    /// What happens to fetches.
    enum Effect: Sendable, Equatable {
        case start(FetchID, Range<UInt64>, Priority)
        /// A reader of higher priority now wants a running fetch (a player follows a
        /// preload's fetch): it counts as that reader's from now on.
        case raise(FetchID, Priority)
        /// Stop at the next piece, keeping what was committed.
        case stop(FetchID)
        /// End at the offset instead (another fetch starts there).
        case shrink(FetchID, to: UInt64)
        /// Release these bytes' range locks (taken on `lockToken`).
        case release(lockToken: Int32, [Range<UInt64>])
    }

    let policy: ReadAheadPolicy
    /// The stream piece: the largest run served from the data file in one step.
    let piece: UInt64
    /// The largest first run served to a player's request (a windowed stream), and the
    /// largest first fetch of one that began on a shorter cached run. ffmpeg, mpv and Chromium open a
    /// fragmented film without an index with a request per fragment and read a few KiB of each
    /// (ffmpeg: one 8 KiB receive); a cached first run of a whole piece (up to 1 MiB) was read,
    /// copied and sent for each, 0.5 MB a request on average, and one that lingered past the
    /// cached head cost the origin a 2 MiB window (nginx sends its first 512 KB at once).
    let firstPiece: UInt64
    private(set) var readers: [ReaderID: Reader] = [:]
    private(set) var fetches: [FetchID: Fetch] = [:]
    private var nextID: UInt64 = 1
    private var effects: [Effect] = []
    /// The reader that owns the prefetch's fetches (always there, never leaves).
    static let prefetchReader: ReaderID = 0
    /// A write to the cache failed for want of space: nothing new is cached.
    private(set) var diskIsFull = false
    /// Seconds from a request to its first byte, as measured on this origin (a moving
    /// average; 0.1 s, a mobile network's, until the first measure).
    private(set) var originLatency: Double = 0.1
    private var latencyMeasured = false

    init(policy: ReadAheadPolicy, piece: UInt64 = 256 << 10, firstPiece: UInt64 = 64 << 10) {
        self.policy = policy
        self.piece = max(piece, 1)
        self.firstPiece = max(firstPiece, 1)
        readers[Self.prefetchReader] = Reader(kind: .prefetch, priority: .prefetch, position: 0, end: 0)
    }

    /// The effects decided since the last call, in order, for the driver to carry out.
    mutating func takeEffects() -> [Effect] {
        defer { effects = [] }
        return effects
    }

    private mutating func newID() -> UInt64 {
        defer { nextID += 1 }
        return nextID
    }

    // MARK: Readers

    /// A reader of `range`.
    /// `startsShort`: a windowed reader whose first fetch is a first piece, as after a short
    /// first run (a player's request of a film walked ahead: it reads a fragment's header and
    /// goes; when the walk is behind on a loaded machine, its request had a window fetched).
    /// `firstPiece`: that first fetch's most bytes when below ``firstPiece`` (a read at a
    /// fragment's start: the fragment's head, as the walk would fetch it).
    mutating func addReader(_ kind: ReaderKind, _ range: Range<UInt64>, priority: Priority, startsShort: Bool = false, firstPiece limit: UInt64? = nil) -> ReaderID {
        let id = newID()
        var reader = Reader(kind: kind, priority: priority, position: range.lowerBound, end: range.upperBound)
        reader.firstRunShort = startsShort && kind == .stream(windowed: true)
        reader.firstPieceLimit = limit.map { max($0, 1) }
        readers[id] = reader
        return id
    }

    /// A running fetch's progress and, once measured, its rate (its executor reports them;
    /// decisions use the latest).
    mutating func progressed(_ fetch: FetchID, written: UInt64, bytesPerSecond: Double? = nil) {
        guard let current = fetches[fetch]?.written else { return }
        if let bytesPerSecond, bytesPerSecond.isFinite, bytesPerSecond > 0 { fetches[fetch]?.bytesPerSecond = bytesPerSecond }
        if written > current { fetches[fetch]?.written = written }
    }

    /// A request to the origin got its first byte `seconds` after it was sent.
    mutating func measuredLatency(_ seconds: Double) {
        guard seconds.isFinite, seconds >= 0 else { return }
        let sample = min(seconds, 10)
        originLatency = latencyMeasured ? originLatency * 0.75 + sample * 0.25 : sample
        latencyMeasured = true
    }

    /// How far ahead of `fetch`'s progress a reader waits for it: what the fetch delivers
    /// in the time a new request takes to its first byte, between ``ReadAheadPolicy/followAlways``
    /// and ``ReadAheadPolicy/followDistance``. A fetch not measured yet is followed only
    /// within `followAlways`: a new request is as soon as its first byte.
    func followAllowance(_ fetch: Fetch) -> UInt64 {
        let floor = min(policy.followAlways, policy.followDistance)
        guard let rate = fetch.bytesPerSecond else { return floor }
        let reach = rate * originLatency
        guard reach.isFinite, reach < Double(policy.followDistance) else { return policy.followDistance }
        return max(floor, UInt64(max(reach, 0)))
    }

    /// How long a reader waits for a fetch that delivers nothing before it reports it with
    /// ``followStalled(_:by:written:at:)``: ``ReadAheadPolicy/stallPatience``, or four times the
    /// origin's latency (a new request's first byte) when that is longer, never more than 2 s
    /// (a latency measured on a loaded machine made it 9.8 s).
    var followPatience: Double { min(max(policy.stallPatience, 4 * originLatency), 2) }

    /// `reader` waited ``followPatience`` for `fetch` to write past `position` and it wrote
    /// nothing: until it moves on, readers beyond its progress start requests of their own
    /// (the next step cuts it short at the reader's position). False when the fetch has the
    /// byte after all (the reader reads it), is gone, or was started for this reader: a
    /// reader waits for its own fetches (a player reading on through a paced origin does
    /// not open a new request at every pause); one that joined another's fetch does not.
    mutating func followStalled(_ fetch: FetchID, by reader: ReaderID, written: UInt64, at position: UInt64) -> Bool {
        progressed(fetch, written: written)
        guard let running = fetches[fetch], running.written <= position, !running.startedFor.contains(reader) else { return false }
        fetches[fetch]?.stalledAt = running.written
        return true
    }

    /// The reader handed on (or, a fill, saw claimed) everything before `position`.
    mutating func advanced(_ reader: ReaderID, to position: UInt64) {
        guard let current = readers[reader]?.position, position > current else { return }
        readers[reader]?.position = position
    }

    /// What `reader` does next, with `present` the bytes the table claims.
    mutating func next(_ reader: ReaderID, present: ByteRangeSet) -> Step {
        guard var state = readers[reader] else { return .done }
        defer { readers[reader] = state }
        let position = state.position
        guard position < state.end else { return .done }
        if state.lastStep == position {
            state.stalls += 1
            if state.stalls > 3 { return .stalled }
        } else {
            (state.lastStep, state.stalls) = (position, 0)
        }
        var missing = present.missingParts(in: position..<state.end)
        let firstMissing = missing.next()
        guard let first = firstMissing, first.lowerBound == position else {
            // A player's request gets a short first run: many read a box header and go.
            let end = min(firstMissing?.lowerBound ?? state.end, position + (state.awaitsFirstRun ? min(piece, firstPiece) : piece))
            state.hadRun(position..<end, firstPiece: firstPiece)
            return .serve(position..<end)
        }
        var end = first.upperBound
        // Small cached gaps between missing parts are fetched again rather than paid for with
        // another request.
        while let part = missing.next() {
            guard part.lowerBound - end < policy.bridgeGap else { break }
            end = part.upperBound
        }
        if let (id, running) = runningFetch(covering: position) {
            // Follow a fetch about to reach the position (sooner than a new request would);
            // one further behind (the reader sought ahead: a moov at the end, the next
            // fragment's header) stops there, and a fetch starts at the position.
            if running.written > position || (!running.isStalled && position - running.written <= followAllowance(running)) {
                // A player's request that begins on a head the walk fetches now is one that
                // began on a short run, as if the head were cached already (a loaded machine
                // sees the player go later: the walk's heads then had windows after them).
                let through = min(running.end, state.end)
                state.hadRun(position..<through, firstPiece: firstPiece)
                fetches[id]?.owners.insert(reader)
                if state.priority > running.priority {
                    fetches[id]?.priority = state.priority
                    effects.append(.raise(id, state.priority))
                }
                return .follow(id, through: through, aheadAt: aheadPoint(of: running, for: state))
            }
            shrink(id, to: position)
            end = min(end, running.range.upperBound)
        }
        end = endBeforeOtherFetches(from: position, end: end)
        if case .stream(windowed: true) = state.kind {
            if end - position > policy.window { end = position + policy.window }
            // A request that began on a short cached run (a head the walk ahead fetched) and
            // reads on past it may be a player that read the header and is about to go: its
            // first fetch is small, the windows follow once it reads on. One that began on a
            // longer run (a file's cached start) fetches whole windows at once.
            if state.firstRunShort && !state.claimedBefore { end = min(end, position + min(firstPiece, state.firstPieceLimit ?? firstPiece)) }
            state.claimedBefore = true
        }
        if diskIsFull {
            // Nothing new can be cached: a reader gets the bytes straight from the origin; a
            // fill, which only caches, makes no progress.
            if state.kind == .fill { return .stalled }
            state.stalls = 0
            state.lastStep = nil
            return .passThrough(position..<end)
        }
        return .claim(position..<end)
    }

    /// The driver claimed `range` for `reader` (or nil: another process fetches its first
    /// byte); returns what the reader does then: follow the new fetch, or wait for the other
    /// process (nil).
    mutating func claimed(_ range: Range<UInt64>?, for reader: ReaderID, lockToken: Int32) -> Step? {
        guard let range, !range.isEmpty, let state = readers[reader] else {
            // Waiting for another process is not a stall: its commits come in their own time.
            readers[reader]?.lastStep = nil
            return nil
        }
        let id = start(range, owners: [reader], priority: state.priority, lockToken: lockToken)
        guard let fetch = fetches[id] else { return nil }
        return .follow(id, through: min(fetch.end, state.end), aheadAt: aheadPoint(of: fetch, for: state))
    }

    /// Where a windowed reader following `fetch` asks for the next window: half-way through
    /// the window, when the fetch ends before the reader does.
    private func aheadPoint(of fetch: Fetch, for reader: Reader) -> UInt64? {
        guard case .stream(windowed: true) = reader.kind, fetch.range.upperBound < reader.end else { return nil }
        return fetch.range.upperBound - min(fetch.range.upperBound, policy.window / 2)
    }

    /// The next window for a windowed reader half-way through the fetch it follows: the
    /// missing bytes from that fetch's end, when nothing fetches them yet. The driver claims
    /// it and reports with ``claimedAhead(_:for:lockToken:)``.
    mutating func readAhead(_ reader: ReaderID, after fetch: FetchID, present: ByteRangeSet) -> Range<UInt64>? {
        guard var state = readers[reader], case .stream(windowed: true) = state.kind, let followed = fetches[fetch] else { return nil }
        let from = followed.range.upperBound
        guard !diskIsFull, from < state.end, state.aheadFrom != from else { return nil }
        state.aheadFrom = from
        readers[reader] = state
        guard runningFetch(covering: from) == nil,
              let part = present.missing(in: from..<min(state.end, from + policy.window)).first, part.lowerBound == from else { return nil }
        return from..<endBeforeOtherFetches(from: from, end: part.upperBound)
    }

    /// The driver claimed (part of) a window ahead for `reader`: it belongs to the reader.
    mutating func claimedAhead(_ range: Range<UInt64>?, for reader: ReaderID, lockToken: Int32) {
        guard let range, !range.isEmpty, let state = readers[reader] else { return }
        _ = start(range, owners: [reader], priority: state.priority, lockToken: lockToken)
    }

    /// `reader` stops following `fetch` at `position`: when nobody else wants it and it has
    /// bytes left to fetch, it stops.
    mutating func unfollow(_ reader: ReaderID, _ fetch: FetchID, at position: UInt64) {
        advanced(reader, to: position)
        disown(fetch, by: reader, doneThrough: position)
    }

    /// `reader` is gone (done, failed, or its player left): every fetch it alone wanted
    /// stops, read-ahead windows included.
    mutating func leave(_ reader: ReaderID) {
        guard reader != Self.prefetchReader, readers.removeValue(forKey: reader) != nil else { return }
        // Only the fetches it owns (a reader leaves at the end of every request; the walk
        // ahead keeps a few dozen fetches waiting for their commits).
        for id in fetches.compactMap({ $0.value.owners.contains(reader) ? $0.key : nil }).sorted() { disown(id, by: reader, doneThrough: nil) }
    }

    /// `reader` no longer wants `fetch`: the fetch stops when nobody does and it has bytes
    /// left (before `doneThrough`, what the reader read of it, else its progress).
    mutating func disown(_ fetch: FetchID, by reader: ReaderID, doneThrough: UInt64?) {
        guard fetches[fetch]?.owners.remove(reader) != nil, let running = fetches[fetch] else { return }
        if running.owners.isEmpty && !running.isStopping && (doneThrough ?? running.written) < running.end { stop(fetch) }
    }

    // MARK: Fetches

    /// A fetch ended (done, failed, stopped): it is forgotten, and the bytes it alone held
    /// locked are released.
    mutating func ended(_ fetch: FetchID) {
        guard let running = fetches.removeValue(forKey: fetch) else { return }
        release(running.held, token: running.lockToken, except: fetch)
    }

    /// A write to the cache failed for want of space: fetches stop, readers pass through.
    mutating func diskFull() {
        diskIsFull = true
        for id in fetches.keys.sorted() where fetches[id]?.isStopping == false { stop(id) }
    }

    /// The disk has room again (eviction freed some): missing bytes are cached again.
    mutating func diskHasRoom() { diskIsFull = false }

    /// The origin is no longer the entry's resource: every fetch stops.
    mutating func originChanged() {
        for id in fetches.keys.sorted() where fetches[id]?.isStopping == false { stop(id) }
    }

    /// The fetch that covers `offset` and is not stopping.
    func runningFetch(covering offset: UInt64) -> (FetchID, Fetch)? {
        fetches.first { !$0.value.isStopping && $0.value.range.lowerBound <= offset && offset < $0.value.end }.map { ($0.key, $0.value) }
    }

    func runningFetch(overlapping range: Range<UInt64>) -> FetchID? {
        fetches.first { !$0.value.isStopping && $0.value.held.overlaps(range) }?.key
    }

    /// `end`, or earlier where another running fetch begins after `from`.
    private func endBeforeOtherFetches(from: UInt64, end: UInt64) -> UInt64 {
        var end = end
        for running in fetches.values where !running.isStopping && running.range.lowerBound > from && running.range.lowerBound < end {
            end = running.range.lowerBound
        }
        return end
    }

    private mutating func start(_ range: Range<UInt64>, owners: Set<ReaderID>, priority: Priority, lockToken: Int32) -> FetchID {
        let id = newID()
        fetches[id] = Fetch(range: range, end: range.upperBound, written: range.lowerBound, owners: owners, startedFor: owners, priority: priority, lockToken: lockToken)
        effects.append(.start(id, range, priority))
        return id
    }

    private mutating func stop(_ fetch: FetchID) {
        guard fetches[fetch]?.isStopping == false else { return }
        fetches[fetch]?.isStopping = true
        effects.append(.stop(fetch))
    }

    /// Cuts `fetch` short at `offset`: it keeps its head, and the bytes after are released.
    private mutating func shrink(_ fetch: FetchID, to offset: UInt64) {
        guard let running = fetches[fetch], offset < running.end else { return }
        fetches[fetch]?.end = offset
        effects.append(.shrink(fetch, to: offset))
        release(offset..<running.end, token: running.lockToken, except: fetch)
    }

    /// Releases `range` on `token`, except the bytes other fetches on the same token hold
    /// (locks belong to the descriptor, not to a fetch).
    private mutating func release(_ range: Range<UInt64>, token: Int32, except fetch: FetchID) {
        guard !range.isEmpty else { return }
        var released = ByteRangeSet([range])
        for (id, other) in fetches where id != fetch && other.lockToken == token { released.remove(other.held) }
        if !released.ranges.isEmpty { effects.append(.release(lockToken: token, released.ranges)) }
    }
}
