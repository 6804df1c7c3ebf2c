import MP4Core

/// Preloading by time: the `moov` and the bytes of the first seconds of every track, as the
/// seek plan says (pre-roll and the decoder's needs included), whatever the layout. A byte
/// preload of a moov-at-end file caches bytes that hold no index, and nothing plays; this
/// caches what a player needs to start (`fetch --seconds`, ``MediaLoader/preload(_:seconds:)``,
/// `serve`'s `_/preload`).
public enum Preload {
    /// What one preload did.
    public struct Outcome: Sendable, Equatable {
        /// The seconds asked for, and the seek plan's window end (at least that, unless the
        /// film is shorter).
        public var seconds: Double
        public var windowEnd: Double
        /// The byte ranges filled besides the headers and `moov`: the plan's, and in a
        /// fragmented file the fragments they are in (``fragments(_:for:)``).
        public var ranges: [Range<UInt64>]
        /// Bytes this preload fetched from the origin (0: all were cached).
        public var fetchedBytes: UInt64
        /// Bytes of the resource present afterwards.
        public var cachedBytes: UInt64
    }

    /// How far past the seconds asked the plan reaches: a decoder that reorders frames
    /// (B-frames) shows the last frames before N only once it has the next reference, and
    /// ffmpeg playing the first 3 s of a preload without it lacked its last video and audio
    /// frame (218 of 220 frame lines; the seek-plan decode tests plan 0.2 s more for the same
    /// reason).
    public static let reorderMargin = 0.25

    /// The byte ranges a player needs besides the samples of `plan` in a fragmented file:
    /// each fragment (its `moof` to the next) whose media the plan reads, whole. A player
    /// reads a fragment as a unit: ffmpeg reads its samples in file order across tracks, so
    /// with the `moof`s alone it reached uncached video past 3 s before the audio of 2.5 s,
    /// and played 84 of 127 audio frames of a 3 s preload.
    static func fragments(_ layout: FileLayout, for ranges: [Range<UInt64>]) -> [Range<UInt64>] {
        let boxes = layout.boxes
        var needed: [Range<UInt64>] = []
        for (index, box) in boxes.enumerated() where box.type == .moof {
            let next = boxes[(index + 1)...].first { $0.type == .moof || $0.type == .mfra }?.offset ?? layout.fileSize
            let fragment = box.offset..<max(box.offset, next)
            if ranges.contains(where: { $0.overlaps(fragment) }) { needed.append(fragment) }
        }
        return needed
    }

    /// Makes the headers, the `moov` and the first `seconds` of every track of `source`
    /// present in its cache. While `busy` says a player or a prefetch fetches (a
    /// ``MediaLoader`` passes its ``OriginActivity``), the preload stands aside
    /// (``fill(_:of:yieldingWhile:)``). Cancelling the calling task stops it, keeping what
    /// arrived.
    public static func run(_ source: CachedByteSource, seconds: Double, limits: ParseLimits = .default,
                           yieldingWhile busy: (@Sendable () -> Bool)? = nil) async throws -> Outcome {
        guard seconds.isFinite, seconds >= 0 else { throw MP4Error(.invalidRequest, "preload seconds must be a finite number >= 0, not \(seconds)") }
        let before = await source.statistics.upstreamBytes
        let file = try await MP4File.open(source, options: MP4File.Options(limits: limits))
        let plan = try await SeekPlanner.plan(file, from: source, at: 0, duration: seconds + reorderMargin, limits: limits)
        await source.markPreloaded()   // before the fill: a player that reads meanwhile unmarks it
        var wanted = ByteRangeSet()
        for range in plan.ranges + fragments(file.layout, for: plan.ranges) where !range.isEmpty { wanted.insert(range) }
        for range in wanted.ranges { try await fill(range, of: source, yieldingWhile: busy) }
        let after = await source.statistics.upstreamBytes
        return Outcome(seconds: seconds, windowEnd: plan.windowEnd, ranges: wanted.ranges,
                       fetchedBytes: after - min(after, before), cachedBytes: await source.cachedRanges.byteCount)
    }

    /// How often a preload looks whether a player reads.
    static let look: Duration = .milliseconds(50)

    /// Fills `range` of `source` in one request when no player reads. It starts only while
    /// `busy` is false; when a player starts reading meanwhile, the fill stops within a look
    /// (what arrived is kept) and goes on from there once the player is quiet again. (Pieces
    /// of 256 KiB with a look between each, the first design, cost one origin request per
    /// piece, a round trip each on a phone.)
    static func fill(_ range: Range<UInt64>, of source: CachedByteSource, yieldingWhile busy: (@Sendable () -> Bool)?) async throws {
        guard let busy else { return try await source.fill(range) }
        while true {
            while busy() { try await Task.sleep(for: look) }
            let interrupted = try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask { try await source.fill(range); return false }
                group.addTask {
                    while !busy() { try await Task.sleep(for: look) }
                    return true
                }
                let first = try await group.next() ?? false
                group.cancelAll()
                return first
            }
            if !interrupted { return }
        }
    }
}

/// The origins a loader's players have read since the loader last preloaded them, so that a
/// preloaded entry is unmarked at its first read (``CacheDirectory/preloadShare``). (Whether a
/// preload may fetch is ``OriginActivity``'s.)
final class PlayedOrigins: Sendable {
    /// The most origins remembered (forgetting them costs only a repeated unmark).
    static let remembered = 4096
    private let read = Locked(Set<String>())

    /// A player reads `origin`: true when it is the first read since the loader started or
    /// last preloaded `origin` (the caller unmarks its entry then).
    func firstRead(_ origin: String) -> Bool {
        read.withLock { read in
            if read.count >= Self.remembered { read.removeAll() }
            return read.insert(origin).inserted
        }
    }

    /// `origin` is being preloaded (and marked): its next read unmarks it again.
    func preloading(_ origin: String) { read.withLock { _ = $0.remove(origin) } }
}

/// The preloads of one loader, by origin: a second preload of one origin joins the first,
/// `cancel` stops it, and at most `limit` fetch at once (the others wait their turn, first
/// come first served). Why the last preload of an origin failed is kept until it is
/// preloaded again (at most ``keptFailures`` origins).
actor PreloadTable {
    static let keptFailures = 256
    private var running: [String: (id: UInt64, task: Task<Preload.Outcome, any Error>)] = [:]
    private var failures: [String: String] = [:]
    private var nextID: UInt64 = 0
    private let limit: Int
    private var active = 0
    private var queue: [CheckedContinuation<Void, Never>] = []

    init(limit: Int) { self.limit = max(limit, 1) }

    func run(_ origin: String, _ body: @escaping @Sendable () async throws -> Preload.Outcome) async throws -> Preload.Outcome {
        let task: Task<Preload.Outcome, any Error>
        let id: UInt64
        if let existing = running[origin] {
            (id, task) = existing
        } else {
            nextID += 1
            id = nextID
            failures[origin] = nil
            task = ServingTask.startThrowing { [self] in
                await acquire()
                do {
                    try Task.checkCancellation()
                    let outcome = try await body()
                    await release()
                    return outcome
                } catch {
                    await release()
                    if !(error is CancellationError) { await failed(origin, error) }
                    throw error
                }
            }
            running[origin] = (id, task)
        }
        defer { finish(origin, id) }
        return try await withTaskCancellationHandler { try await task.value } onCancel: { task.cancel() }
    }

    private func acquire() async {
        if active < limit {
            active += 1
            return
        }
        await withCheckedContinuation { queue.append($0) }   // the slot is handed over on release
    }

    private func release() {
        if queue.isEmpty { active -= 1 } else { queue.removeFirst().resume() }
    }

    private func finish(_ origin: String, _ id: UInt64) {
        if running[origin]?.id == id { running.removeValue(forKey: origin) }
    }

    private func failed(_ origin: String, _ error: any Error) {
        if failures.count >= Self.keptFailures { failures.removeAll() }
        failures[origin] = (error as? MP4Error)?.message ?? "\(error)"
    }

    func cancel(_ origin: String) { running.removeValue(forKey: origin)?.task.cancel() }

    /// Whether a preload of `origin` runs (or waits its turn), and why its last one failed.
    func state(of origin: String) -> (isRunning: Bool, failure: String?) { (running[origin] != nil, failures[origin]) }

    /// Preloads running or waiting their turn.
    var count: Int { running.count }
}
