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

    /// Makes the headers, the `moov` and the first `seconds` of every track of `source`
    /// present in its cache. Cancelling the calling task stops it, keeping what arrived.
    public static func run(_ source: CachedByteSource, seconds: Double, limits: ParseLimits = .default) async throws -> Outcome {
        guard seconds.isFinite, seconds >= 0 else { throw MP4Error(.invalidRequest, "preload seconds must be a finite number >= 0, not \(seconds)") }
        let before = await source.statistics.upstreamBytes
        let file = try await MP4File.open(source, options: MP4File.Options(limits: limits))
        let plan = try await SeekPlanner.plan(file, from: source, at: 0, duration: seconds, limits: limits)
        for range in plan.ranges { try await source.fill(range) }
        let after = await source.statistics.upstreamBytes
        return Outcome(seconds: seconds, windowEnd: plan.windowEnd, ranges: plan.ranges,
                       fetchedBytes: after - min(after, before), cachedBytes: await source.cachedRanges.byteCount)
    }
}
