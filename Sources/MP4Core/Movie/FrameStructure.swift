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
    /// Every sample lasts as long as the others, within a tick or a thousandth (the first and
    /// the last may differ).
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
    /// table, a time scale of 0, or more samples than `maxSamples`: one pass of constant
    /// memory, bounded like every query, ``ParseLimits/maxSamplesPerQuery``; a table of four
    /// billion samples took the test process's 24 GB before this bound).
    public static func measure(_ table: SampleTable, timescale: UInt32, maxSamples: Int = ParseLimits.default.maxSamplesPerQuery) -> FrameStructure? {
        guard table.sampleCount > 0, table.sampleCount <= maxSamples, timescale > 0 else { return nil }
        let scale = Double(timescale)
        // The shortest and longest durations, the first and last samples' aside (writers give
        // the first the start's offset: ffmpeg's fragments say 810 for a 512-tick frame).
        var shortest = Int64.max, longest = Int64.min, index = 0
        var total: Int64 = 0
        var previousDuration: Int64?
        var largestComposition = Int64.min, run = 0, longestRun = 0
        var syncComposition: Int64?
        var open = false
        // The GOP being summed, the highest rate of the GOPs closed so far, the longest GOP.
        var gop: (bytes: UInt64, duration: Int64)?
        var closedPeak: Double?, closedGOPs = 0
        var longestGOP: Int64 = 0
        func rate(_ gop: (bytes: UInt64, duration: Int64)) -> Double? {
            let seconds = Double(gop.duration) / scale
            return seconds > 0 ? Double(gop.bytes) * 8 / seconds : nil
        }
        table.forEachSample { sample in
            // The previous sample's duration, unless it was the first (the last is never added).
            if let previousDuration, index >= 2 {
                shortest = min(shortest, previousDuration)
                longest = max(longest, previousDuration)
            }
            previousDuration = sample.duration
            index += 1
            total = total.addingReportingOverflow(max(sample.duration, 0)).partialValue
            if sample.compositionTime < largestComposition {
                run += 1
                longestRun = max(longestRun, run)
            } else {
                run = 0
                largestComposition = sample.compositionTime
            }
            if sample.isSync || gop == nil {
                if let closed = gop {
                    closedGOPs += 1
                    if let value = rate(closed) { closedPeak = max(closedPeak ?? 0, value) }
                }
                if sample.isSync { syncComposition = sample.compositionTime }
                gop = (0, 0)
            } else if let syncComposition, sample.compositionTime < syncComposition {
                open = true
            }
            var current = gop ?? (0, 0)
            current.bytes &+= UInt64(sample.byteCount)
            current.duration = current.duration.addingReportingOverflow(max(sample.duration, 0)).partialValue
            gop = current
            longestGOP = max(longestGOP, current.duration)
            return true
        }
        var peak = closedPeak
        if let last = gop, closedGOPs == 0 || Double(last.duration) / scale >= 1, let value = rate(last) { peak = max(peak ?? 0, value) }
        // Constant: the durations differ by at most one tick, or a thousandth (29.97 fps in
        // milliseconds is 33 and 34).
        let spread = longest.subtractingReportingOverflow(shortest)
        let constant = shortest > longest || (!spread.overflow && spread.partialValue <= max(1, shortest / 1000))
        return FrameStructure(framesPerSecond: total > 0 ? Double(table.sampleCount) / (Double(total) / scale) : nil,
                              constantFrameRate: constant, maxConsecutiveBFrames: longestRun, openGOP: open,
                              longestGOPSeconds: Double(longestGOP) / scale, peakGOPBitRate: peak.flatMap { $0.isFinite && $0 < 1e18 ? UInt64($0.rounded()) : nil })
    }
}
