/// What of a movie plays from the bytes present, in seconds rather than bytes: the time ranges
/// in which every track's samples are present, and the longest of them from the start (what a
/// player can play without the origin). A decision without I/O: the caller says which byte
/// ranges are present (a cache's table).
///
/// Times are presentation seconds of each sample's decode time (through the edit list, as
/// ``SeekPlanner/IndexedTrack/decodePresentationTime(of:)``); a range of a track runs from the
/// first present sample's time to the time of the first missing sample after it (or the
/// track's end). A track counts from its own first sample: audio that starts 0.02 s after
/// video does not make the prefix 0.
public struct PlayableTime: Sendable, Equatable {
    /// The longest prefix from the start whose samples on every track are present, seconds;
    /// 0 when the first sample of some track is missing.
    public var prefixSeconds: Double
    /// The time ranges (seconds) in which every track's samples are present, in order.
    public var ranges: [Range<Double>]

    public init(prefixSeconds: Double, ranges: [Range<Double>]) {
        self.prefixSeconds = prefixSeconds
        self.ranges = ranges
    }

    /// Nothing plays.
    public static let none = PlayableTime(prefixSeconds: 0, ranges: [])

    /// What plays in `planner`'s movie when the bytes `present` (a cache's table) are there. O(chunks × log ranges), and sample by sample only inside
    /// chunks that are partly present (a plan that ends mid-chunk): a status poll of a
    /// two-hour film with a few seconds cached took 127 ms when every missing chunk was
    /// looked at sample by sample.
    public static func of(_ planner: SeekPlanner, present bytes: ByteRangeSet) -> PlayableTime {
        let tracks = planner.tracks.filter { $0.samples.sampleCount > 0 }
        guard !tracks.isEmpty else { return .none }
        var common: [Range<Double>]?
        var starts: [Double] = []
        var budget = maxSampleVisits
        for track in tracks {
            let (runs, start) = presentRuns(track, bytes, budget: &budget)
            starts.append(start)
            common = common.map { intersect($0, runs) } ?? runs
        }
        let ranges = common ?? []
        // The prefix: the common range that begins where the latest track begins.
        let begin = starts.max() ?? 0
        let prefix = ranges.first.flatMap { $0.lowerBound <= begin + 1e-6 && $0.upperBound > begin ? $0.upperBound : nil } ?? 0
        return PlayableTime(prefixSeconds: prefix, ranges: ranges)
    }

    /// The most samples one call looks at one by one (inside chunks that are partly present).
    /// Past it, what is left of such chunks counts as missing: the answer can only be shorter,
    /// never longer. A hostile table of 4,294,967,295 samples in a chunk that runs past the
    /// end of a 457-byte file kept a status poll (and the preload of that file) busy without
    /// end.
    static let maxSampleVisits = 1 << 20

    /// The time ranges of `track` whose samples are present, and the time of its first sample.
    private static func presentRuns(_ track: SeekPlanner.IndexedTrack, _ bytes: ByteRangeSet, budget: inout Int) -> ([Range<Double>], Double) {
        let count = track.samples.sampleCount
        let first = track.decodePresentationTime(of: 0)
        let end = max(track.presentationEnd ?? first, first)
        var runs: [Range<Double>] = []
        var runStart: Int?
        var index = 0
        // A run of samples present in decode order plays until the earliest presentation time
        // among the samples after it (with B-frames, the first missing sample in decode order
        // is not the first frame that cannot be shown; reordering is local).
        func earliestPresentation(from next: Int) -> Double {
            var earliest = Double.infinity
            for index in next..<min(count, next + 4 * SeekPlanner.reorderWindow) { earliest = min(earliest, track.presentationTime(of: index)) }
            return earliest
        }
        func close(at next: Int) {
            guard let start = runStart else { return }
            let from = track.decodePresentationTime(of: start)
            let to = next < count ? min(earliestPresentation(from: next), end) : end
            if to > from {
                if let last = runs.last, last.upperBound >= from { runs[runs.count - 1] = last.lowerBound..<max(last.upperBound, to) } else { runs.append(from..<to) }
            }
            runStart = nil
        }
        track.samples.forEachChunkSpan(in: 0..<count) { span, samples in
            if span.isEmpty || bytes.contains(span) {
                if runStart == nil { runStart = index }
            } else if !bytes.overlaps(span) {
                close(at: index)
            } else if budget <= 0 {
                close(at: index)   // out of budget: counted as missing
            } else {
                // Part of a chunk may be there (a seek plan ends mid-chunk): sample by sample,
                // within the budget (the rest of the chunk then counts as missing).
                var sampleIndex = index
                track.samples.forEachSample(in: index..<(index + samples)) { sample in
                    budget -= 1
                    guard budget > 0 else {
                        close(at: sampleIndex)
                        return false
                    }
                    if sample.byteCount == 0 || bytes.contains(sample.byteOffset..<sample.endOffset) {
                        if runStart == nil { runStart = sampleIndex }
                    } else {
                        close(at: sampleIndex)
                    }
                    sampleIndex += 1
                    return true
                }
            }
            index += samples
        }
        close(at: count)
        return (runs, first)
    }

    /// The intersection of two sorted lists of disjoint ranges.
    static func intersect(_ a: [Range<Double>], _ b: [Range<Double>]) -> [Range<Double>] {
        var result: [Range<Double>] = []
        var i = 0, j = 0
        while i < a.count && j < b.count {
            let lower = max(a[i].lowerBound, b[j].lowerBound), upper = min(a[i].upperBound, b[j].upperBound)
            if lower < upper { result.append(lower..<upper) }
            if a[i].upperBound < b[j].upperBound { i += 1 } else { j += 1 }
        }
        return result
    }
}
