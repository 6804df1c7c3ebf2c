/// Which seek a byte offset of a progressive file stands for: how a proxy turns a player's
/// range request (`bytes=N-`, computed by the player from `moov`) back into the time the player
/// is seeking to, so that it can fetch the next seconds of every track ahead of the player
/// (see ``SeekPlanner/plan(at:duration:alignment:)``).
///
/// A player seeking to a time asks for the first byte any track needs there, which is at or
/// before the main track's keyframe (audio needs a little preroll, and interleaving puts it
/// first). So an offset stands for the first keyframe of the main track at or after it (the
/// first sample of a chunk, for tracks where every sample, or nearly every one, is a keyframe).
///
/// ```swift
/// let planner = SeekPlanner(file: file)
/// let map = ByteTimeMap(planner)
/// if let time = map.time(at: 12_345_678) {
///     let ahead = try planner.plan(at: time, duration: 10)   // the next 10 s, every track
/// }
/// ```
public struct ByteTimeMap: Sendable {
    /// Keyframe offsets of the main track, ascending, and their presentation times.
    private let offsets: [UInt64]
    private let times: [Double]

    /// The map of `planner`'s main track (16 bytes per keyframe, or per chunk).
    /// - Complexity: O(keyframes · log keyframes).
    public init(_ planner: SeekPlanner) {
        var points: [(offset: UInt64, time: Double)] = []
        if let main = planner.mainTrack {
            // A keyframe list as long as the samples (an `stss` listing nearly every sample)
            // would cost a sample lookup each: chunks say as much, for less.
            if let syncs = main.samples.syncSampleIndices, syncs.count <= Self.maxKeyframes {
                for index in syncs {
                    guard let sample = main.samples.sample(at: index) else { continue }
                    points.append((sample.byteOffset, main.presentationTime(of: index)))
                }
            } else {
                main.samples.forEachChunk { offset, first in points.append((offset, main.presentationTime(of: first))) }
            }
        }
        points = points.filter { $0.time.isFinite }.sorted { $0.offset < $1.offset }
        offsets = points.map(\.offset)
        times = points.map(\.time)
    }

    /// Above this many keyframes the map is built from chunk starts.
    static let maxKeyframes = 65_536

    /// How many keyframes (or chunks) the map holds.
    public var count: Int { offsets.count }

    /// The presentation time of the main track's first keyframe at or after `offset` (the
    /// last one when `offset` is past them all); `nil` for a track without samples.
    /// O(log keyframes).
    public func time(at offset: UInt64) -> Double? {
        guard !offsets.isEmpty else { return nil }
        var low = 0, high = offsets.count
        while low < high {
            let mid = (low + high) / 2
            if offsets[mid] < offset { low = mid + 1 } else { high = mid }
        }
        return times[min(low, times.count - 1)]
    }
}
