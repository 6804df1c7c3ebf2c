/// What the sample tables of a progressive file say about its layout: whether every sample's
/// bytes lie inside an `mdat` payload, the longest gap between keyframes, and how well audio and
/// video are interleaved (how far a progressive reader must read ahead to feed every track).
///
/// One pass over the chunks of each track (O(1) per chunk for constant-size samples, O(1) per
/// sample otherwise), bounded by ``ParseLimits/maxSamplesPerQuery``.
public struct SampleLayoutAnalysis: Sendable {
    /// Integrity findings (`chunk-outside-mdat`) and notes.
    public var findings: [Finding] = []
    /// Samples whose byte ranges were checked.
    public var samplesChecked = 0
    /// Longest gap between consecutive sync samples (or to the end) of a video track, seconds.
    public var maxKeyframeInterval: Double?
    /// Where that gap starts, seconds.
    public var maxKeyframeIntervalStart: Double?
    /// Most seconds one track is ahead of another at any point of a sequential read.
    public var interleaveSeconds: Double?
    /// Most bytes between two consecutive chunks of one track.
    public var interleaveBytes: UInt64?

    struct Chunk { var track: Int; var bytes: Range<UInt64>; var start: Double; var end: Double }

    /// The `mdat` payload ranges of `layout`, sorted. Subsegments that a segment index stood in
    /// for (``FileLayout/indexedRanges``: their `mdat` headers were not read) count whole: a
    /// sample inside one is inside its fragment's data as far as the index tells.
    static func payloads(_ layout: FileLayout) -> [Range<UInt64>] {
        (layout.mediaDataBoxes.map { ($0.offset + UInt64($0.header.headerSize))..<$0.availableEnd } + layout.indexedRanges.flatMap(\.subsegments))
            .sorted { $0.lowerBound < $1.lowerBound }
    }

    /// Whether `range` lies inside one of the sorted `payloads`.
    static func inPayload(_ range: Range<UInt64>, _ payloads: [Range<UInt64>]) -> Bool {
        var low = 0, high = payloads.count
        while low < high {
            let mid = (low + high) / 2
            if payloads[mid].lowerBound <= range.lowerBound { low = mid + 1 } else { high = mid }
        }
        return low > 0 && range.upperBound <= payloads[low - 1].upperBound
    }

    /// A `chunk-outside-mdat` finding when the chunk span `span` (samples `first..<first+count`
    /// of track `trackID`) is not inside an `mdat` payload; a span saturated to empty at an
    /// offset past the file counts too.
    static func outsideMediaData(_ span: Range<UInt64>, first: Int, count: Int, trackID: UInt32, layout: FileLayout, payloads: [Range<UInt64>], path: BoxPath?) -> Finding? {
        guard (!span.isEmpty || span.lowerBound > layout.fileSize) && !inPayload(span, payloads) else { return nil }
        let place = span.upperBound > layout.fileSize ? "past the end of the file (\(layout.fileSize) bytes): the file is truncated" : "outside every mdat payload"
        return Finding(.chunkOutsideMdat, message: "track \(trackID): samples \(first)..<\(first + count) at [\(span.lowerBound), \(span.upperBound)) lie \(place); players will fail there", offset: span.lowerBound, path: path)
    }

    /// The first run of samples of `table` outside every `mdat` payload, as a finding.
    static func firstOutsideMediaData(_ table: SampleTable, trackID: UInt32, layout: FileLayout, payloads: [Range<UInt64>], path: BoxPath?) -> Finding? {
        var index = 0
        var found: Finding?
        table.forEachChunkSpan(in: 0..<table.sampleCount) { span, count in
            if found == nil { found = outsideMediaData(span, first: index, count: count, trackID: trackID, layout: layout, payloads: payloads, path: path) }
            index += count
        }
        return found
    }

    public init(planner: SeekPlanner, layout: FileLayout, limits: ParseLimits = .default) {
        let payloads = Self.payloads(layout)
        var chunks: [Chunk] = []
        var budget = limits.maxSamplesPerQuery
        for (t, indexed) in planner.tracks.enumerated() {
            let samples = indexed.samples
            guard samples.sampleCount > 0 else { continue }
            let cost = samples.hasConstantSampleSize ? 0 : samples.sampleCount
            guard cost <= budget else {
                findings.append(Finding(.checkLimit, message: "track \(indexed.track.trackID) has \(samples.sampleCount) samples, more than the \(limits.maxSamplesPerQuery) one query may walk; its byte ranges were not checked", path: indexed.track.path))
                continue
            }
            budget -= cost
            let interleaves = indexed.track.kind == .audio || indexed.track.kind == .video
            let scale = Double(max(indexed.timeline.mediaTimescale, 1))
            var index = 0
            var reported = false
            samples.forEachChunkSpan(in: 0..<samples.sampleCount) { span, count in
                if !reported, let outside = Self.outsideMediaData(span, first: index, count: count, trackID: indexed.track.trackID, layout: layout, payloads: payloads, path: indexed.track.path) {
                    reported = true
                    findings.append(outside)
                }
                if interleaves && !span.isEmpty {
                    let last = index + count - 1
                    chunks.append(Chunk(track: t, bytes: span, start: indexed.decodePresentationTime(of: index), end: indexed.decodePresentationTime(of: last) + Double(samples.duration(of: last)) / scale))
                }
                index += count
            }
            samplesChecked += samples.sampleCount
            // Keyframe spacing on video tracks, in presentation order.
            if indexed.track.kind == .video {
                let end = indexed.presentationTime(of: samples.sampleCount - 1) + Double(samples.duration(of: samples.sampleCount - 1)) / scale
                let times = (samples.syncSampleIndices ?? []).map { indexed.presentationTime(of: $0) }.sorted()
                if samples.syncSampleIndices == nil {
                    let gap = Double(samples.duration(of: 0)) / scale
                    if gap > (maxKeyframeInterval ?? -1) { maxKeyframeInterval = gap; maxKeyframeIntervalStart = 0 }
                } else if times.isEmpty {
                    let gap = end - indexed.presentationTime(of: 0)
                    if gap > (maxKeyframeInterval ?? -1) { maxKeyframeInterval = gap; maxKeyframeIntervalStart = indexed.presentationTime(of: 0) }
                } else {
                    for (a, b) in zip(times, times.dropFirst() + [end]) where b - a > (maxKeyframeInterval ?? -1) {
                        maxKeyframeInterval = b - a
                        maxKeyframeIntervalStart = a
                    }
                }
            }
        }
        // Interleaving: read the chunks in file order; after each one, how far apart are the
        // times each track is covered to (among tracks with data still to come)?
        let tracks = Set(chunks.map(\.track))
        guard tracks.count >= 2 else {
            if !chunks.isEmpty { interleaveSeconds = 0; interleaveBytes = 0 }
            return
        }
        chunks.sort { $0.bytes.lowerBound < $1.bytes.lowerBound }
        var remaining: [Int: Int] = [:]
        var covered: [Int: Double] = [:]
        var lastEnd: [Int: UInt64] = [:]
        for chunk in chunks {
            remaining[chunk.track, default: 0] += 1
            covered[chunk.track] = min(covered[chunk.track] ?? .infinity, chunk.start)
        }
        var seconds = 0.0
        var bytes: UInt64 = 0
        let firstOffset = chunks[0].bytes.lowerBound
        for chunk in chunks {
            let gapStart = lastEnd[chunk.track] ?? firstOffset
            if chunk.bytes.lowerBound > gapStart { bytes = max(bytes, chunk.bytes.lowerBound - gapStart) }
            lastEnd[chunk.track] = chunk.bytes.upperBound
            covered[chunk.track] = max(covered[chunk.track] ?? 0, chunk.end)
            remaining[chunk.track, default: 1] -= 1
            let active = covered.filter { (remaining[$0.key] ?? 0) > 0 }.map(\.value)
            let all = covered.values
            if let low = active.min(), let high = all.max(), high > low { seconds = max(seconds, high - low) }
        }
        interleaveSeconds = seconds
        interleaveBytes = bytes
    }
}
