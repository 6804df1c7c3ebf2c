/// The samples of one progressive track, answered from the compact `stbl` tables
/// (ISO/IEC 14496-12 §8.6–§8.7) by binary search over run starts.
///
/// Memory is proportional to the tables' bytes: `stts`, `ctts` and `stsc` become arrays of
/// runs (one element per table entry), `stsz`/`stz2` and `stco`/`co64` stay raw and are decoded
/// on demand. Nothing is ever expanded per sample. Tolerated defects (bad `stsc` entries, chunk
/// offsets no sample fills, tables that disagree on the sample count) become ``findings``; the
/// usable sample count is the smallest that every table can describe.
public struct SampleTable: Sendable {
    /// One sample, with times in the media time scale (before edit lists).
    public struct Sample: Sendable, Hashable {
        /// 0-based position in decode order.
        public var index: Int
        /// Decode time (`stts`).
        public var decodeTime: Int64
        /// Composition time: decode time plus the `ctts` offset.
        public var compositionTime: Int64
        /// Duration (`stts` delta).
        public var duration: Int64
        /// Absolute file offset of the sample's first byte.
        public var byteOffset: UInt64
        /// Size in bytes.
        public var byteCount: UInt32
        /// Whether it is a sync sample (`stss`, or every sample without `stss`).
        public var isSync: Bool
        /// 0-based chunk index.
        public var chunkIndex: Int
        /// 1-based index into `stsd`.
        public var sampleDescriptionNumber: UInt32

        /// File offset one past the sample's last byte (saturating: a hostile chunk offset near
        /// 2^64 must not trap; such a sample lies outside the file anyway).
        public var endOffset: UInt64 {
            let (end, overflow) = byteOffset.addingReportingOverflow(UInt64(byteCount))
            return overflow ? UInt64.max : end
        }
    }

    struct TimeRun: Sendable { var firstSample: Int; var count: Int; var firstTime: Int64; var delta: Int64 }
    /// A run of chunks with the same samples-per-chunk: 24 bytes, one per valid `stsc` entry.
    struct ChunkRun: Sendable {
        var firstSample: Int
        var firstChunkIndex: UInt32
        var chunkCount: UInt32
        var perChunk: UInt32
        var descriptionNumber: UInt32
        var firstChunk: Int { Int(firstChunkIndex) }
        var samplesPerChunk: Int { Int(perChunk) }
    }

    /// Samples that every table describes.
    public let sampleCount: Int
    /// Problems found while building the table.
    public let findings: [Finding]
    let timeRuns: [TimeRun]
    /// First sample of each `ctts` entry (cumulative counts); offsets are read from
    /// ``compositionOffsets`` in place, so the index costs 8 bytes per entry.
    let offsetRunStarts: [Int]
    let compositionOffsets: SampleColumn?
    /// 0-based sync sample indices, ascending; `nil` when every sample is a sync sample.
    let syncIndices: [Int]?
    let chunkRuns: [ChunkRun]
    let sizes: SampleColumn?
    let constantSize: UInt32
    let chunkOffsets: SampleColumn?

    /// A table from prepared parts (movie fragments, see `FragmentTableBuilder`: plain
    /// columns, no packed boxes).
    init(sampleCount: Int, findings: [Finding], timeRuns: [TimeRun], offsetRunStarts: [Int], compositionOffsets: SampleColumn?, syncIndices: [Int]?, chunkRuns: [ChunkRun], sizes: SampleColumn?, constantSize: UInt32, chunkOffsets: SampleColumn?) {
        self.sampleCount = sampleCount
        self.findings = findings
        self.timeRuns = timeRuns
        self.offsetRunStarts = offsetRunStarts
        self.compositionOffsets = compositionOffsets
        self.syncIndices = syncIndices
        self.chunkRuns = chunkRuns
        self.sizes = sizes
        self.constantSize = constantSize
        self.chunkOffsets = chunkOffsets
    }

    /// Builds the table of the track whose `stbl` is `stbl` at `path`.
    public init(stbl: BoxNode, path: BoxPath) {
        var findings: [Finding] = []
        let table = stbl.table
        let sizes = table(.stsz) ?? table(.stz2)
        let chunkOffsets = table(.stco) ?? table(.co64)
        let stsc = table(.stsc)
        let stts = table(.stts)
        self.sizes = sizes.map { .packed($0, column: 0) }
        self.constantSize = sizes.map { $0.kind == .sampleSize ? $0.constantSampleSize : 0 } ?? 0
        self.chunkOffsets = chunkOffsets.map { .packed($0, column: 0) }
        var limit = Int(clamping: sizes?.sampleCount ?? 0)
        if sizes == nil { findings.append(Finding(.missingSampleSizes, message: "stbl has no stsz/stz2: the track has no usable samples", path: path)) }
        if chunkOffsets == nil { findings.append(Finding(.missingChunkOffsets, message: "stbl has no stco/co64: the track has no usable samples", path: path)); limit = 0 }

        // stts: runs of equal durations.
        var timeRuns: [TimeRun] = []
        var sample = 0
        var time: Int64 = 0
        if let stts {
            timeRuns.reserveCapacity(stts.entryCount)
            for i in 0..<stts.entryCount {
                let count = Int(stts.field(i, 0)), delta = stts.field(i, 1)
                guard count > 0 else { continue }
                let (span, overflow1) = Int64(count).multipliedReportingOverflow(by: delta)
                let (next, overflow2) = time.addingReportingOverflow(span)
                if overflow1 || overflow2 || sample > Int.max - count {
                    findings.append(Finding(.timeOverflow, message: "stts times overflow 64 bits after sample \(sample); later samples are ignored", path: path))
                    break
                }
                timeRuns.append(TimeRun(firstSample: sample, count: count, firstTime: time, delta: delta))
                sample += count
                time = next
            }
        } else {
            findings.append(Finding(.missingStts, message: "stbl has no stts: sample times are unknown", path: path))
        }
        if sample != limit, sizes != nil, stts != nil {
            findings.append(Finding(.sampleCountMismatch, message: "stts describes \(sample) samples, the size table \(limit); using \(min(sample, limit))", path: path))
        }
        limit = min(limit, sample)

        // stsc: runs of chunks with the same samples-per-chunk.
        var chunkRuns: [ChunkRun] = []
        let chunkCount = chunkOffsets?.entryCount ?? 0
        var described = 0
        if let stsc {
            // One streaming pass: a valid entry becomes a run once the next valid entry (or
            // the end of the chunk list) says where it stops.
            var pending: (first: Int, perChunk: Int, description: UInt32)?
            var previousFirst = 0
            var stopped = false
            func close(_ entry: (first: Int, perChunk: Int, description: UInt32), nextFirst: Int) {
                let start = entry.first - 1
                guard !stopped else { return }
                guard start < chunkCount else {
                    findings.append(Finding(.stscPastChunks, message: "stsc refers to chunk \(entry.first) but there are only \(chunkCount) chunks", path: path))
                    stopped = true
                    return
                }
                let chunks = min(nextFirst - 1, chunkCount) - start
                let (samples, overflow) = chunks.multipliedReportingOverflow(by: entry.perChunk)
                if overflow || described > Int.max - samples || entry.perChunk > Int(UInt32.max) { stopped = true; return }
                if entry.perChunk > 0 {
                    chunkRuns.append(ChunkRun(firstSample: described, firstChunkIndex: UInt32(start), chunkCount: UInt32(chunks), perChunk: UInt32(entry.perChunk), descriptionNumber: entry.description))
                }
                described += samples
            }
            for i in 0..<stsc.entryCount {
                let first = Int(stsc.field(i, 0))
                if first < 1 || first <= previousFirst {
                    findings.append(Finding(.badStscEntry, message: "stsc entry \(i + 1) has first_chunk \(first), not after the previous one; skipped", path: path))
                    continue
                }
                if pending == nil && first != 1 {
                    findings.append(Finding(.badStscEntry, message: "stsc starts at chunk \(first), not 1: earlier chunks hold no samples", path: path))
                }
                if let entry = pending { close(entry, nextFirst: first) }
                pending = (first, Int(stsc.field(i, 1)), UInt32(truncatingIfNeeded: stsc.field(i, 2)))
                previousFirst = first
            }
            if let entry = pending { close(entry, nextFirst: chunkCount + 1) }
        } else if limit > 0 {
            findings.append(Finding(.missingStsc, message: "stbl has no stsc: samples cannot be placed in chunks", path: path))
        }
        if described < limit {
            findings.append(Finding(.samplesWithoutChunk, message: "stsc/stco place only \(described) of \(limit) samples; the rest are ignored", path: path))
        } else if described > limit, let last = chunkRuns.last, limit > 0 {
            var usedChunks = 0
            for run in chunkRuns where run.firstSample < limit {
                let needed: Int = (limit - run.firstSample + run.samplesPerChunk - 1) / run.samplesPerChunk
                usedChunks += min(Int(run.chunkCount), needed)
            }
            if usedChunks < chunkCount && last.samplesPerChunk > 0 {
                findings.append(Finding(.unusedChunks, message: "\(chunkCount - usedChunks) chunk offset(s) hold no sample (stco lists more chunks than the samples fill)", path: path))
            }
        }
        limit = min(limit, described)

        // ctts: cumulative run starts; offsets stay in the table.
        var offsetRunStarts: [Int] = []
        let ctts = table(.ctts)
        if let ctts {
            offsetRunStarts.reserveCapacity(ctts.entryCount + 1)
            var s = 0
            for i in 0..<ctts.entryCount {
                offsetRunStarts.append(s)
                let (next, overflow) = s.addingReportingOverflow(Int(ctts.field(i, 0)))
                if overflow { break }
                s = next
            }
            offsetRunStarts.append(s)
        }
        // stss: sync samples.
        var syncIndices: [Int]?
        if let stss = table(.stss) {
            var indices: [Int] = []
            indices.reserveCapacity(stss.entryCount)
            var sorted = true
            for i in 0..<stss.entryCount {
                let number = Int(stss.field(i, 0))
                guard number >= 1, number <= limit else { continue }
                if let last = indices.last, number - 1 <= last { sorted = false }
                indices.append(number - 1)
            }
            if !sorted {
                findings.append(Finding(.unsortedStss, message: "stss sample numbers are not strictly increasing; sorted", path: path))
                indices = Array(Set(indices)).sorted()
            }
            syncIndices = indices
        }
        self.sampleCount = limit
        self.timeRuns = timeRuns
        self.offsetRunStarts = offsetRunStarts
        self.compositionOffsets = ctts.map { .packed($0, column: 1) }
        self.syncIndices = syncIndices
        self.chunkRuns = chunkRuns
        self.findings = findings
    }

    /// The last run whose first sample is ≤ `index` (binary search).
    static func lastRun<T>(_ runs: [T], atOrBefore index: Int, key: (T) -> Int) -> Int? {
        var low = 0, high = runs.count
        while low < high {
            let mid = (low + high) / 2
            if key(runs[mid]) <= index { low = mid + 1 } else { high = mid }
        }
        return low == 0 ? nil : low - 1
    }

    /// Decode time of sample `index`. O(log runs).
    public func decodeTime(of index: Int) -> Int64 {
        guard let r = Self.lastRun(timeRuns, atOrBefore: index, key: \.firstSample) else { return 0 }
        let run = timeRuns[r]
        return run.firstTime &+ Int64(index - run.firstSample) &* run.delta
    }

    func duration(of index: Int) -> Int64 {
        guard let r = Self.lastRun(timeRuns, atOrBefore: index, key: \.firstSample) else { return 0 }
        return timeRuns[r].delta
    }

    /// Composition offset of sample `index`. O(log runs).
    public func compositionOffset(of index: Int) -> Int64 {
        guard let column = compositionOffsets, offsetRunStarts.count > 1,
              let r = Self.lastRun(offsetRunStarts, atOrBefore: index, key: { $0 }), r < offsetRunStarts.count - 1, r < column.count
        else { return 0 }
        return column.compositionOffset(r)
    }

    /// The smallest composition offset of any sample (0 without `ctts`), negative when the
    /// track uses negative offsets (`ctts` v1). O(`ctts` entries).
    public var smallestCompositionOffset: Int64 {
        guard let column = compositionOffsets, offsetRunStarts.count > 1 else { return 0 }
        var smallest: Int64 = 0
        for r in 0..<min(offsetRunStarts.count - 1, column.count) where offsetRunStarts[r + 1] > offsetRunStarts[r] && offsetRunStarts[r] < sampleCount {
            smallest = min(smallest, column.compositionOffset(r))
        }
        return smallest
    }

    /// Whether sample `index` is a sync sample. O(log sync samples).
    public func isSync(_ index: Int) -> Bool {
        guard let syncIndices else { return true }
        guard let i = Self.lastRun(syncIndices, atOrBefore: index, key: { $0 }) else { return false }
        return syncIndices[i] == index
    }

    func size(of index: Int) -> UInt32 {
        if constantSize != 0 { return constantSize }
        guard let sizes, index < sizes.count else { return 0 }
        return UInt32(truncatingIfNeeded: sizes.value(index))
    }

    func chunkOffset(_ chunk: Int) -> UInt64 {
        guard let chunkOffsets, chunk < chunkOffsets.count else { return 0 }
        return UInt64(bitPattern: chunkOffsets.value(chunk))
    }

    /// Sample `index` (0-based), or `nil` when out of range. O(log runs + samples before it in
    /// its chunk).
    public func sample(at index: Int) -> Sample? { sample(at: index, after: nil) }

    /// The runs of each table that hold one sample: found by binary search for a sample
    /// looked up alone (``runs(at:)``), moved forward one sample at a time by a walk in decode
    /// order (``advance(_:to:)``), which costs O(1) a sample. (A walk that searched each table
    /// for each sample spent three quarters of `inspect`'s time of a two-hour film there.)
    private struct Runs {
        var chunk: Int?, time: Int?, offset: Int?, sync: Int?
    }

    private func runs(at index: Int) -> Runs {
        Runs(chunk: Self.lastRun(chunkRuns, atOrBefore: index, key: \.firstSample),
             time: Self.lastRun(timeRuns, atOrBefore: index, key: \.firstSample),
             offset: Self.lastRun(offsetRunStarts, atOrBefore: index, key: { $0 }),
             sync: syncIndices.flatMap { Self.lastRun($0, atOrBefore: index, key: { $0 }) })
    }

    /// `runs`, found for an earlier sample, moved to sample `index`: each is the last run
    /// whose first sample is <= `index`, as ``lastRun(_:atOrBefore:key:)`` finds it (the
    /// tables' first samples never decrease).
    private func advance(_ runs: inout Runs, to index: Int) {
        Self.forward(&runs.chunk, to: index, count: chunkRuns.count) { chunkRuns[$0].firstSample }
        Self.forward(&runs.time, to: index, count: timeRuns.count) { timeRuns[$0].firstSample }
        Self.forward(&runs.offset, to: index, count: offsetRunStarts.count) { offsetRunStarts[$0] }
        if let syncIndices { Self.forward(&runs.sync, to: index, count: syncIndices.count) { syncIndices[$0] } }
    }

    /// Moves `run` (the last of `count` runs whose first sample, `first(run)`, is <= an earlier
    /// index; nil: none) forward to the last whose first sample is <= `index`.
    private static func forward(_ run: inout Int?, to index: Int, count: Int, first: (Int) -> Int) {
        var next = (run ?? -1) + 1
        while next < count && first(next) <= index {
            run = next
            next += 1
        }
    }

    /// Sample `index`; when `previous` is the sample before it in the same chunk, its offset
    /// follows from `previous` in O(1) instead of summing the chunk's earlier sizes.
    private func sample(at index: Int, after previous: Sample?) -> Sample? {
        guard index >= 0, index < sampleCount else { return nil }
        return sample(at: index, runs: runs(at: index), after: previous)
    }

    /// Sample `index`, its tables' `runs` found.
    private func sample(at index: Int, runs: Runs, after previous: Sample?) -> Sample? {
        guard index >= 0, index < sampleCount, let r = runs.chunk else { return nil }
        let run = chunkRuns[r]
        let within = index - run.firstSample
        let chunk = run.firstChunk + within / run.samplesPerChunk
        var offset: UInt64
        if let previous, previous.chunkIndex == chunk, previous.index == index - 1 {
            offset = previous.endOffset
        } else {
            let firstInChunk = index - within % run.samplesPerChunk
            offset = chunkOffset(chunk)
            if constantSize != 0 {
                offset &+= UInt64(index - firstInChunk) &* UInt64(constantSize)
            } else {
                for i in firstInChunk..<index { offset &+= UInt64(size(of: i)) }
            }
        }
        var dts: Int64 = 0, duration: Int64 = 0
        if let t = runs.time {
            let timeRun = timeRuns[t]
            dts = timeRun.firstTime &+ Int64(index - timeRun.firstSample) &* timeRun.delta
            duration = timeRun.delta
        }
        var compositionOffset: Int64 = 0
        if let column = compositionOffsets, offsetRunStarts.count > 1, let o = runs.offset, o < offsetRunStarts.count - 1, o < column.count {
            compositionOffset = column.compositionOffset(o)
        }
        let isSync = syncIndices.map { indices in runs.sync.map { indices[$0] == index } ?? false } ?? true
        return Sample(index: index, decodeTime: dts, compositionTime: dts &+ compositionOffset, duration: duration, byteOffset: offset, byteCount: size(of: index),
                      isSync: isSync, chunkIndex: chunk, sampleDescriptionNumber: run.descriptionNumber)
    }

    /// Calls `body` for samples `range` in decode order, O(1) per sample after the first;
    /// stops when `body` returns `false`.
    public func forEachSample(in range: Range<Int>? = nil, _ body: (Sample) -> Bool) {
        let range = (range ?? 0..<sampleCount).clamped(to: 0..<sampleCount)
        guard let first = range.first else { return }
        var runs = runs(at: first)
        var previous: Sample?
        for index in range {
            if index > first { advance(&runs, to: index) }
            guard let current = sample(at: index, runs: runs, after: previous), body(current) else { return }
            previous = current
        }
    }

    /// Whether every sample has the same size (`stsz` with a constant size, typical of PCM).
    public var hasConstantSampleSize: Bool { constantSize != 0 }

    /// Calls `body` with the byte span of each run of consecutive samples in `range` that
    /// share a chunk, in decode order, and the number of samples in it. O(1) per chunk when
    /// sizes are constant (PCM: thousands of one-frame samples per chunk), O(1) per sample
    /// otherwise.
    public func forEachChunkSpan(in range: Range<Int>, _ body: (Range<UInt64>, Int) -> Void) {
        let range = range.clamped(to: 0..<sampleCount)
        guard !range.isEmpty else { return }
        if constantSize == 0 {
            // Chunk by chunk, summing sizes: only the chunk table's run moves, and no sample's
            // times are looked up (building each sample cost a two-hour film's `inspect` half
            // its time). The first chunk's start is where its first sample in `range` begins;
            // the end is summed saturating, as ``Sample/endOffset`` is.
            var index = range.lowerBound
            var r = Self.lastRun(chunkRuns, atOrBefore: index, key: \.firstSample)
            while index < range.upperBound {
                Self.forward(&r, to: index, count: chunkRuns.count) { chunkRuns[$0].firstSample }
                guard let current = r else { return }
                let run = chunkRuns[current]
                let within = index - run.firstSample
                let chunk = run.firstChunk + within / run.samplesPerChunk
                let firstInChunk = index - within % run.samplesPerChunk
                var start = chunkOffset(chunk)
                for i in firstInChunk..<index { start &+= UInt64(size(of: i)) }
                let end = min(firstInChunk + run.samplesPerChunk, range.upperBound)
                var stop = start
                for i in index..<end {
                    let (sum, overflow) = stop.addingReportingOverflow(UInt64(size(of: i)))
                    stop = overflow ? UInt64.max : sum
                }
                body(start..<stop, end - index)
                index = end
            }
            return
        }
        var index = range.lowerBound
        let size = UInt64(constantSize)
        while index < range.upperBound {
            guard let r = Self.lastRun(chunkRuns, atOrBefore: index, key: \.firstSample) else { return }
            let run = chunkRuns[r]
            let within = index - run.firstSample
            let chunk = run.firstChunk + within / run.samplesPerChunk
            let firstInChunk = index - within % run.samplesPerChunk
            let end = min(firstInChunk + run.samplesPerChunk, range.upperBound)
            let start = chunkOffset(chunk) &+ UInt64(index - firstInChunk) &* size
            let (stop, overflow) = start.addingReportingOverflow(UInt64(end - index) &* size)
            body(start..<(overflow ? UInt64.max : stop), end - index)
            index = end
        }
    }

    /// Calls `body` with each chunk's bytes (its offset to the end of its last sample; a span
    /// that would pass 2^64 ends there) and its sample count, in chunk order: the samples of a
    /// chunk are contiguous by definition. O(chunks) with constant sizes, else one size lookup
    /// per sample and nothing else (``forEachChunkSpan(in:_:)`` builds every sample: its time
    /// and sync flag too).
    public func forEachChunkExtent(_ body: (Range<UInt64>, Int) -> Void) {
        for run in chunkRuns {
            for k in 0..<Int(run.chunkCount) {
                let first = run.firstSample + k * run.samplesPerChunk
                guard first < sampleCount else { return }
                let count = min(run.samplesPerChunk, sampleCount - first)
                var bytes: UInt64 = 0
                if constantSize != 0 {
                    bytes = UInt64(constantSize).multipliedReportingOverflow(by: UInt64(count)).overflow ? UInt64.max : UInt64(constantSize) * UInt64(count)
                } else {
                    for i in first..<(first + count) { bytes &+= UInt64(size(of: i)) }
                }
                let start = chunkOffset(run.firstChunk + k)
                let (end, overflow) = start.addingReportingOverflow(bytes)
                body(start..<(overflow ? UInt64.max : end), count)
            }
        }
    }

    /// Calls `body` with each chunk's file offset and the index of its first sample, in chunk
    /// order. O(chunks).
    public func forEachChunk(_ body: (UInt64, Int) -> Void) {
        for run in chunkRuns {
            for k in 0..<Int(run.chunkCount) {
                let first = run.firstSample + k * run.samplesPerChunk
                guard first < sampleCount else { return }
                body(chunkOffset(run.firstChunk + k), first)
            }
        }
    }

    /// The last sample whose decode time is ≤ `time`, or `nil` when every sample is later.
    /// O(log runs).
    public func lastSample(decodedAtOrBefore time: Int64) -> Int? {
        guard let r = Self.lastRun(timeRuns, atOrBefore: Int(clamping: time), key: { Int(clamping: $0.firstTime) }) else { return nil }
        let run = timeRuns[r]
        let steps = run.delta > 0 ? Int(clamping: (time - run.firstTime) / run.delta) : run.count - 1
        return min(run.firstSample + min(steps, run.count - 1), sampleCount - 1)
    }

    /// 0-based sync sample indices ≤ / ≥ `index`. O(log sync samples).
    public func syncSample(atOrBefore index: Int) -> Int? {
        guard let syncIndices else { return index >= 0 && sampleCount > 0 ? min(index, sampleCount - 1) : nil }
        return Self.lastRun(syncIndices, atOrBefore: index, key: { $0 }).map { syncIndices[$0] }
    }

    /// The first sync sample at or after `index`.
    public func syncSample(atOrAfter index: Int) -> Int? {
        guard let syncIndices else { return index < sampleCount ? max(index, 0) : nil }
        let before = Self.lastRun(syncIndices, atOrBefore: index - 1, key: { $0 }).map { $0 + 1 } ?? 0
        return before < syncIndices.count ? syncIndices[before] : nil
    }

    /// All sync sample indices (every sample when there is no `stss`), for callers that
    /// search by presentation time.
    public var syncSampleIndices: [Int]? { syncIndices }
}

/// One column of a ``SampleTable``: the entries of a box, read in place from its bytes
/// (`stsz`, `stco`, `ctts`: no copy of a table of millions), or plain values built from movie
/// fragments (no fake boxes packed only to be decoded again).
enum SampleColumn: Sendable {
    /// Field `column` of a box's entries.
    case packed(SampleTableData, column: Int)
    /// Sizes of fragment samples.
    case sizes([UInt32])
    /// Chunk offsets of fragment runs.
    case offsets([UInt64])
    /// Composition offsets of fragment runs.
    case compositionOffsets([Int32])

    var count: Int {
        switch self {
        case .packed(let table, _): return table.entryCount
        case .sizes(let values): return values.count
        case .offsets(let values): return values.count
        case .compositionOffsets(let values): return values.count
        }
    }

    /// Entry `index` (< ``count``).
    @inline(__always)
    func value(_ index: Int) -> Int64 {
        switch self {
        case .packed(let table, let column): return table.field(index, column)
        case .sizes(let values): return Int64(values[index])
        case .offsets(let values): return Int64(bitPattern: values[index])
        case .compositionOffsets(let values): return Int64(values[index])
        }
    }

    /// Entry `index` as a composition offset: a version-0 `ctts` value above 2^31 is read as
    /// negative (such files exist in the wild).
    func compositionOffset(_ index: Int) -> Int64 {
        let offset = value(index)
        if case .packed(let table, _) = self, table.version == 0, offset > Int64(Int32.max) { return Int64(Int32(truncatingIfNeeded: offset)) }
        return offset
    }
}
