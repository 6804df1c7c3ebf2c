/// What a video track's sample table says of its frames, read from the table alone (no media
/// byte): the frame rate and whether it is constant, the longest run of B-frames, whether GOPs
/// are open, the longest GOP and the peak bit rate over a GOP. The facts ingest rules ask
/// (YouTube: at most 2 consecutive B-frames and closed GOPs; Mux: 16 Mbps per GOP; Apple: no
/// more than 60 fps).
///
/// - A B-frame here is a frame presented before a frame decoded earlier (its composition time
///   is below the largest one decoded so far); a run counts such frames one after another in
///   decode order: IPBBPBB has runs of 2, a B-pyramid of three B-frames a run of 3. Without
///   composition offsets there are none.
/// - A GOP is open when a frame decoded after a sync sample is presented before it (leading
///   frames that reference the previous GOP: x265's default CRA pictures, x264's `--open-gop`).
/// - The peak bit rate is over each GOP's bytes and duration; a last GOP shorter than a second
///   is left out when there are others (a closing keyframe alone would be a spike no player
///   sees).
public struct FrameStructure: Sendable, Hashable, Codable {
    /// Frames per second: the sample count over the summed durations (ffprobe's `avg_frame_rate`).
    public var framesPerSecond: Double?
    /// Every sample lasts as long as the first (the last may differ).
    public var constantFrameRate: Bool
    /// The longest run of B-frames in decode order.
    public var maxConsecutiveBFrames: Int
    /// Some frame decoded after a sync sample is presented before it.
    public var openGOP: Bool
    /// The longest time from one sync sample to the next (or to the end), seconds.
    public var longestGOPSeconds: Double?
    /// The highest bit rate of one GOP, bits per second.
    public var peakGOPBitRate: UInt64?

    /// Measures `table` of a track whose media time scale is `timescale` (nil for an empty
    /// table or a time scale of 0).
    public static func measure(_ table: SampleTable, timescale: UInt32) -> FrameStructure? {
        guard table.sampleCount > 0, timescale > 0 else { return nil }
        let scale = Double(timescale)
        var firstDuration: Int64?
        var constant = true
        var total: Int64 = 0
        var previousDuration: Int64?
        var largestComposition = Int64.min, run = 0, longestRun = 0
        var syncComposition: Int64?
        var open = false
        var gops: [(bytes: UInt64, duration: Int64)] = []
        table.forEachSample { sample in
            // A duration other than the first, unless it is the last sample's.
            if let previousDuration, let firstDuration, previousDuration != firstDuration { constant = false }
            if firstDuration == nil { firstDuration = sample.duration }
            previousDuration = sample.duration
            total &+= max(sample.duration, 0)
            if sample.compositionTime < largestComposition {
                run += 1
                longestRun = max(longestRun, run)
            } else {
                run = 0
                largestComposition = sample.compositionTime
            }
            if sample.isSync || gops.isEmpty {
                if sample.isSync { syncComposition = sample.compositionTime }
                gops.append((0, 0))
            } else if let syncComposition, sample.compositionTime < syncComposition {
                open = true
            }
            gops[gops.count - 1].bytes += UInt64(sample.byteCount)
            gops[gops.count - 1].duration &+= max(sample.duration, 0)
            return true
        }
        var counted = gops
        if counted.count > 1, let last = counted.last, Double(last.duration) / scale < 1 { counted.removeLast() }
        let peak = counted.compactMap { gop -> Double? in
            let seconds = Double(gop.duration) / scale
            return seconds > 0 ? Double(gop.bytes) * 8 / seconds : nil
        }.max()
        let longest = gops.map { Double($0.duration) / scale }.max()
        return FrameStructure(framesPerSecond: total > 0 ? Double(table.sampleCount) / (Double(total) / scale) : nil,
                              constantFrameRate: constant, maxConsecutiveBFrames: longestRun, openGOP: open,
                              longestGOPSeconds: longest, peakGOPBitRate: peak.flatMap { $0.isFinite && $0 < 1e18 ? UInt64($0.rounded()) : nil })
    }
}
