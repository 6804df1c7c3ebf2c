/// Builds the ``SampleTable`` of one track from its movie fragments (ISO/IEC 14496-12 §8.8):
/// each `traf`'s `trun`s are appended as chunks, with the defaults of `tfhd` and `trex`
/// resolved per sample, decode times from `tfdt` (or continuing from the previous fragment),
/// and data offsets resolved from `tfhd`/`trun` as the standard says.
///
/// The result is the same compact table a progressive track has: durations and composition
/// offsets run-length coded, one chunk per `trun`, 4 bytes per sample for sizes, held as plain
/// columns (``SampleColumn``) rather than packed into boxes. A `trun`
/// without per-sample fields can claim billions of samples in 20 bytes; the total is bounded by
/// ``ParseLimits/maxFragmentSamples``.
struct FragmentTableBuilder {
    let trackID: UInt32
    let defaults: TrackExtendsBox?
    let maxSamples: Int
    /// Whether every sample counts as sync whatever its flags (audio).
    let allSamplesSync: Bool
    private(set) var findings: [Finding] = []
    private(set) var sampleCount = 0
    /// Whether the limit stopped the build.
    private(set) var isCut = false
    /// Whether a traf without `tfdt` followed nothing, so its decode times are only relative.
    private(set) var hasUnanchoredTimes = false

    private var timeRuns: [SampleTable.TimeRun] = []
    private var nextDecodeTime: Int64 = 0
    private var offsetRuns: [(count: Int, offset: Int32)] = []
    private var hasCompositionOffsets = false
    private var sizes: [UInt32] = []
    private var chunkOffsets: [UInt64] = []
    private var chunkCount = 0
    private var chunkRuns: [SampleTable.ChunkRun] = []
    /// Sync sample indices, only once a non-sync sample was seen (until then every sample is
    /// sync and nothing is stored: a claimed run of sync samples costs no memory here).
    private var syncIndices: [Int]?

    init(trackID: UInt32, defaults: TrackExtendsBox?, maxSamples: Int, allSamplesSync: Bool) {
        self.trackID = trackID
        self.allSamplesSync = allSamplesSync
        self.defaults = defaults
        self.maxSamples = maxSamples
    }

    /// Appends the samples of `traf` (at `path`) whose `moof` starts at `moofOffset`.
    /// `implicitBase` is where its data starts when neither `tfhd` nor the moof-relative flag
    /// says otherwise (the `moof` for the first `traf`, else the end of the previous `traf`'s
    /// data). Returns the end of this `traf`'s data.
    mutating func append(traf: BoxNode, path: BoxPath, header: TrackFragmentHeaderBox, moofOffset: UInt64, implicitBase: UInt64, fileLength: UInt64) -> UInt64 {
        let base: UInt64 = header.baseDataOffset ?? (header.defaultBaseIsMoof ? moofOffset : implicitBase)
        if let t = traf.first(.tfdt)?.model(TrackFragmentDecodeTimeBox.self)?.baseMediaDecodeTime {
            let time = Int64(clamping: t)
            if let last = timeRuns.last, time < last.firstTime {
                findings.append(Finding(.fragmentTimeBackwards, message: "tfdt \(t) is before earlier samples of track \(trackID) (\(nextDecodeTime)); kept in order", path: path.appending(.tfdt)))
            } else {
                if !timeRuns.isEmpty && time != nextDecodeTime && time < nextDecodeTime {
                    findings.append(Finding(.fragmentTimeOverlap, message: "tfdt \(t) overlaps the previous fragment of track \(trackID), which ends at \(nextDecodeTime)", path: path.appending(.tfdt)))
                }
                nextDecodeTime = time
            }
        } else if timeRuns.isEmpty {
            hasUnanchoredTimes = true
        }
        let descriptionNumber = header.sampleDescriptionIndex ?? defaults?.defaultSampleDescriptionIndex ?? 1
        let defaultDuration = header.defaultSampleDuration ?? defaults?.defaultSampleDuration ?? 0
        let defaultSize = header.defaultSampleSize ?? defaults?.defaultSampleSize ?? 0
        let defaultFlags = header.defaultSampleFlags ?? defaults?.defaultSampleFlags ?? 0
        var dataEnd = base
        let runs = traf.children.enumerated().filter { $0.element.type == .trun }
        for (runNumber, (_, node)) in runs.enumerated() {
            guard let run = node.model(TrackRunBox.self) else { continue }
            let runPath = path.appending(.trun, ordinalNumber: runs.count > 1 ? runNumber + 1 : nil)
            guard !isCut else { return dataEnd }
            guard run.sampleCount <= maxSamples - sampleCount else {
                findings.append(Finding(.fragmentSampleLimit, message: "track \(trackID) has more than \(maxSamples) fragment samples (the limit); later samples are not indexed", path: runPath))
                isCut = true
                return dataEnd
            }
            // Where this run's data starts: the data offset is relative to the base; without
            // it a run continues where the previous one ended.
            var start = runNumber == 0 ? base : dataEnd
            if let relative = run.dataOffset {
                let (value, overflow) = Int64(clamping: base).addingReportingOverflow(Int64(relative))
                guard !overflow, value >= 0 else {
                    findings.append(Finding(.trunOffsetInvalid, message: "trun data offset \(relative) from base \(base) is before the start of the file; run skipped", path: runPath))
                    continue
                }
                start = UInt64(value)
            }
            if run.sampleCount == 0 { dataEnd = start; continue }
            var offset = start
            let hasDuration = run.flags & 0x100 != 0, hasSize = run.flags & 0x200 != 0
            let hasFlags = run.flags & 0x400 != 0, hasOffset = run.flags & 0x800 != 0
            var column = 0
            let durationColumn = hasDuration ? column : -1; column += hasDuration ? 4 : 0
            let sizeColumn = hasSize ? column : -1; column += hasSize ? 4 : 0
            let flagsColumn = hasFlags ? column : -1; column += hasFlags ? 4 : 0
            let offsetColumn = hasOffset ? column : -1
            let records = run.records
            @inline(__always) func u32(_ sample: Int, _ at: Int) -> UInt32 {
                let p = records.startIndex + sample * run.recordSize + at
                return UInt32(records[p]) << 24 | UInt32(records[p + 1]) << 16 | UInt32(records[p + 2]) << 8 | UInt32(records[p + 3])
            }
            sizes.reserveCapacity(sizes.count + run.sampleCount)
            for i in 0..<run.sampleCount {
                let duration = Int64(durationColumn >= 0 ? u32(i, durationColumn) : defaultDuration)
                let size = sizeColumn >= 0 ? u32(i, sizeColumn) : defaultSize
                let flags = i == 0 ? (run.firstSampleFlags ?? (flagsColumn >= 0 ? u32(i, flagsColumn) : defaultFlags)) : (flagsColumn >= 0 ? u32(i, flagsColumn) : defaultFlags)
                let composition = offsetColumn >= 0 ? Int32(bitPattern: u32(i, offsetColumn)) : 0
                // A sync sample: sample_is_non_sync_sample (bit 16) clear and sample_depends_on
                // not 1 ("depends on others").
                let isSync = flags & 0x0001_0000 == 0 && flags & 0x0300_0000 != 0x0100_0000
                appendSample(sampleCount + i, duration: duration, size: size, compositionOffset: composition, isSync: isSync)
                offset &+= UInt64(size)
            }
            if offset > fileLength {
                findings.append(Finding(.trunPastEnd, message: "trun data [\(start), \(offset)) ends past the end of the file (\(fileLength) bytes)", path: runPath))
            }
            appendChunk(offset: start, samples: run.sampleCount, description: descriptionNumber)
            sampleCount += run.sampleCount
            dataEnd = offset
        }
        return dataEnd
    }

    /// Appends the samples of the track's `moov` tables, before any fragment: a hybrid file
    /// (ffmpeg `-movflags frag_keyframe` without `empty_moov`) keeps its first samples in
    /// `moov` and the rest in fragments, and they form one sequence. Costs 4 bytes per sample,
    /// within ``ParseLimits/maxFragmentSamples``.
    mutating func appendMovieSamples(_ table: SampleTable, path: BoxPath) {
        guard table.sampleCount > 0, !isCut else { return }
        guard table.sampleCount <= maxSamples - sampleCount else {
            findings.append(Finding(.fragmentSampleLimit, message: "track \(trackID) has more than \(maxSamples) samples in moov and fragments (the limit); its fragments are not indexed", path: path))
            isCut = true
            return
        }
        var chunk: (index: Int, offset: UInt64, count: Int, description: UInt32)?
        table.forEachSample { sample in
            if let current = chunk, current.index != sample.chunkIndex {
                appendChunk(offset: current.offset, samples: current.count, description: current.description)
                sampleCount += current.count
                chunk = nil
            }
            appendSample(sampleCount + (chunk?.count ?? 0), duration: sample.duration, size: sample.byteCount, compositionOffset: Int32(clamping: sample.compositionTime &- sample.decodeTime), isSync: sample.isSync)
            if var current = chunk {
                current.count += 1
                chunk = current
            } else {
                chunk = (sample.chunkIndex, sample.byteOffset, 1, sample.sampleDescriptionNumber)
            }
            return true
        }
        if let current = chunk {
            appendChunk(offset: current.offset, samples: current.count, description: current.description)
            sampleCount += current.count
        }
    }

    /// Appends one sample's duration, composition offset, sync flag and size (its chunk is
    /// appended by the caller). Audio samples are all sync, as ffmpeg reads them.
    private mutating func appendSample(_ index: Int, duration: Int64, size: UInt32, compositionOffset: Int32, isSync: Bool) {
        appendTime(duration, sample: index)
        if compositionOffset != 0 { hasCompositionOffsets = true }
        if let last = offsetRuns.last, last.offset == compositionOffset {
            offsetRuns[offsetRuns.count - 1].count += 1
        } else {
            offsetRuns.append((1, compositionOffset))
        }
        let sync = allSamplesSync || isSync
        if !sync && syncIndices == nil { syncIndices = Array(0..<index) }
        if sync { syncIndices?.append(index) }
        sizes.append(size)
    }

    private mutating func appendTime(_ duration: Int64, sample: Int) {
        if let last = timeRuns.last, last.delta == duration, last.firstTime &+ Int64(last.count) &* last.delta == nextDecodeTime {
            timeRuns[timeRuns.count - 1].count += 1
        } else {
            timeRuns.append(SampleTable.TimeRun(firstSample: sample, count: 1, firstTime: nextDecodeTime, delta: duration))
        }
        nextDecodeTime = nextDecodeTime.addingReportingOverflow(duration).overflow ? nextDecodeTime : nextDecodeTime + duration
    }

    private mutating func appendChunk(offset: UInt64, samples: Int, description: UInt32) {
        chunkOffsets.append(offset)
        if let last = chunkRuns.last, last.perChunk == UInt32(samples), last.descriptionNumber == description {
            chunkRuns[chunkRuns.count - 1].chunkCount += 1
        } else {
            chunkRuns.append(SampleTable.ChunkRun(firstSample: sampleCount, firstChunkIndex: UInt32(chunkCount), chunkCount: 1, perChunk: UInt32(clamping: samples), descriptionNumber: description))
        }
        chunkCount += 1
    }

    /// The finished table.
    func build() -> SampleTable {
        var offsetRunStarts: [Int] = []
        var compositionOffsets: SampleColumn?
        if hasCompositionOffsets {
            var values: [Int32] = []
            values.reserveCapacity(offsetRuns.count)
            var start = 0
            for run in offsetRuns {
                offsetRunStarts.append(start)
                start += run.count
                values.append(run.offset)
            }
            offsetRunStarts.append(start)
            compositionOffsets = .compositionOffsets(values)
        }
        return SampleTable(sampleCount: sampleCount, findings: findings, timeRuns: timeRuns, offsetRunStarts: offsetRunStarts, compositionOffsets: compositionOffsets, syncIndices: syncIndices, chunkRuns: chunkRuns, sizes: .sizes(sizes), constantSize: 0, chunkOffsets: .offsets(chunkOffsets))
    }
}
