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
        /// The byte ranges the plan needs (besides the headers and `moov`).
        public var ranges: [Range<UInt64>]
        /// Bytes this preload fetched from the origin (0: all were cached).
        public var fetchedBytes: UInt64
        /// Bytes of the resource present afterwards.
        public var cachedBytes: UInt64
    }

    /// The most a preload fetches between two looks at its gate: at a phone's 1 MB/s, a
    /// quarter second of the origin's bandwidth that a player arriving meanwhile waits for.
    public static let pieceSize: UInt64 = 256 << 10

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
    /// present in its cache. `gate` is awaited before each piece of at most ``pieceSize``
    /// bytes (a loader's waits while a player reads). Cancelling the calling task stops it,
    /// keeping what arrived.
    public static func run(_ source: CachedByteSource, seconds: Double, limits: ParseLimits = .default,
                           gate: @Sendable () async throws -> Void = {}) async throws -> Outcome {
        guard seconds.isFinite, seconds >= 0 else { throw MP4Error(.invalidRequest, "preload seconds must be a finite number >= 0, not \(seconds)") }
        let before = await source.statistics.upstreamBytes
        let file = try await MP4File.open(source, options: MP4File.Options(limits: limits))
        let plan = try await SeekPlanner.plan(file, from: source, at: 0, duration: seconds + reorderMargin, limits: limits)
        await source.markPreloaded()   // before the fill: a player that reads meanwhile unmarks it
        var wanted = ByteRangeSet()
        for range in plan.ranges + fragments(file.layout, for: plan.ranges) where !range.isEmpty { wanted.insert(range) }
        for range in wanted.ranges {
            var offset = range.lowerBound
            while offset < range.upperBound {
                try await gate()
                try Task.checkCancellation()
                let end = min(range.upperBound, offset + pieceSize)
                try await source.fill(offset..<end)
                offset = end
            }
        }
        let after = await source.statistics.upstreamBytes
        return Outcome(seconds: seconds, windowEnd: plan.windowEnd, ranges: wanted.ranges,
                       fetchedBytes: after - min(after, before), cachedBytes: await source.cachedRanges.byteCount)
    }
}

/// The player reads in flight in one loader, so that preloads yield to them: a preload waits
/// until no read has been in flight for ``grace`` (players ask again right after an answer;
/// a preload that slipped in between would take the bandwidth of the video on screen).
final class PlayerActivity: Sendable {
    /// How long after the last read ends a preload waits.
    static let grace: Duration = .milliseconds(250)
    private let state = Locked<(reading: Int, lastEnd: ContinuousClock.Instant?)>((0, nil))

    func begin() { state.withLock { $0.reading += 1 } }
    func end() { state.withLock { $0.reading -= 1; $0.lastEnd = .now } }

    /// Whether a player reads now, or did less than ``grace`` ago.
    var isBusy: Bool {
        state.withLock { state in
            state.reading > 0 || state.lastEnd.map { ContinuousClock.now - $0 < Self.grace } == true
        }
    }

    /// Returns once no player has read for ``grace`` (checked every 50 ms); throws when the
    /// waiting task is cancelled.
    func waitUntilQuiet() async throws {
        while isBusy { try await Task.sleep(for: .milliseconds(50)) }
    }
}

/// The preloads of one loader, by origin: a second preload of one origin joins the first,
/// `cancel` stops it, and at most `limit` fetch at once (the others wait their turn, first
/// come first served).
actor PreloadTable {
    private var running: [String: (id: UInt64, task: Task<Preload.Outcome, any Error>)] = [:]
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
            task = ServingTask.startThrowing { [self] in
                await acquire()
                do {
                    try Task.checkCancellation()
                    let outcome = try await body()
                    await release()
                    return outcome
                } catch {
                    await release()
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

    func cancel(_ origin: String) { running.removeValue(forKey: origin)?.task.cancel() }

    func isRunning(_ origin: String) -> Bool { running[origin] != nil }
}
