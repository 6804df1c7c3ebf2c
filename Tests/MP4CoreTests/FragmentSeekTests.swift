import Testing
@testable import MP4Core
import MP4TestSupport

/// Seeking in fragmented files: plans made from `sidx`/`mfra` with a partial fragment load
/// must equal the plans of a full index, while reading fewer `moof`s.
@Suite struct FragmentSeekTests {
    /// Fragmented files with a `sidx` or `mfra`: SampleMedia and, when present, the corpus.
    static let files: [String] = {
        var files = ["fragmented.mp4", "fragmented-sidx.mp4", "fragmented-short.mp4"].map { Fixtures.sample($0) }
        if let corpus = Fixtures.sharedCorpus {
            files += [
                "bento4__Test__Data__video-h264-002.mp4",
                "bento4__Test__Data__audio-aac-002.mp4",
                "androidx-media__libraries__test_data__src__test__assets__media__mp4__sample_fragmented_seekable_multiple_sidx.mp4",
                "androidx-media__libraries__test_data__src__test__assets__media__mp4__sample_fragmented_sgpd_v2.mp4",
                "androidx-media__libraries__test_data__src__test__assets__media__mp4__sample_ac3_fragmented.mp4",
                "fq__format__isobmff__testdata__fragmented.mp4",
                "go-mp4__testdata__sample_fragmented.mp4",
                "mp4ff__mp4__testdata__bbb5s_aac_sidx.mp4",
                "mp4ff__mp4__testdata__v300_multiple_segments.mp4",
            ].map { corpus + "/valid/" + $0 }.filter { FileSystem.read($0) != nil }
        }
        return files
    }()

    @Test(arguments: files)
    func locatedPlansEqualFullIndexPlans(path: String) async throws {
        let bytes = try #require(FileSystem.read(path))
        let source = MemorySource(bytes, name: path)
        let file = try await MP4File.open(source)
        #expect(file.isFragmented)
        let full = try await SeekPlanner.index(file, from: source)
        #expect(full.coversFileStart)
        let main = try #require(full.mainTrack)
        let count = main.samples.sampleCount
        let end = main.presentationTime(of: count - 1)
        let moofs = file.layout.boxes.filter { $0.type == .moof }.count
        var partialLoads = 0
        for step in 0..<40 {
            let time = max(0, end * Double(step) / 40)
            let duration = step % 4 == 0 ? 0 : Double(step % 3) * 0.3
            for alignment in [SeekPlan.Alignment.previousSync, .exactSample] {
                let expected = try full.plan(at: time, duration: duration, alignment: alignment)
                let counting = CountingSource(source)
                let located = try await SeekPlanner.plan(file, from: counting, at: time, duration: duration, alignment: alignment)
                #expect(located.keyframeTime == expected.keyframeTime, "\(path) @\(time)+\(duration) \(alignment)")
                #expect(located.ranges == expected.ranges, "\(path) @\(time)+\(duration) \(alignment): \(located.ranges) vs \(expected.ranges)")
                #expect(located.startOffset == expected.startOffset && located.endOffset == expected.endOffset)
                if !located.sampleIndicesCountFromFileStart { partialLoads += 1 }
                // Sample indices of a partial load are relative; the counts agree.
                for (a, b) in zip(located.tracks, expected.tracks) {
                    #expect(a.trackID == b.trackID && a.lastSampleIndex - a.firstSampleIndex == b.lastSampleIndex - b.firstSampleIndex)
                    if located.sampleIndicesCountFromFileStart { #expect(a.firstSampleIndex == b.firstSampleIndex) }
                }
            }
        }
        // With more than two fragments, most seeks read only part of them.
        if moofs > 4 { #expect(partialLoads >= 40, "\(path): \(partialLoads) of 80 plans read part of the \(moofs) fragments") }
    }

    @Test func shortFragmentsReadOnlyTheFragmentsAroundTheTime() async throws {
        let bytes = try #require(FileSystem.read(Fixtures.sample("fragmented-short.mp4")))
        let file = try await MP4File.open(MemorySource(bytes, name: "fragmented-short.mp4"))
        let moofs = file.layout.boxes.filter { $0.type == .moof }
        let counting = CountingSource(MemorySource(bytes, name: "fragmented-short.mp4"))
        let plan = try await SeekPlanner.plan(file, from: counting, at: 1.5)
        #expect(!plan.sampleIndicesCountFromFileStart)
        let reads = await counting.log.ranges
        let moofReads = reads.filter { r in moofs.contains { $0.offset == r.lowerBound } }.count
        // One sidx, then each moof at most once: from the keyframe at 1.08 s to past 1.5 s.
        #expect(moofReads > 0 && moofReads <= 7, "\(moofReads) of \(moofs.count) moofs read: \(reads)")
        #expect(plan.keyframeTime == 1.08)  // no edit list: the first pts is 0.08 s
    }

    @Test func everyTrunFlagCombinationResolvesDefaults() throws {
        // A moof with two trafs, no base offsets (implicit chaining), defaults from tfhd and
        // trex, and runs with each optional field present or absent.
        for flags: UInt32 in [0x000, 0x001, 0x005, 0x101, 0x201, 0x301, 0x401, 0x801, 0xF01, 0xB05] {
            var builder = FragmentTableBuilder(trackID: 1, defaults: TrackExtendsBox(trackID: 1, defaultSampleDescriptionIndex: 1, defaultSampleDuration: 10, defaultSampleSize: 100, defaultSampleFlags: 0x10000), maxSamples: 1000, allSamplesSync: false)
            var records: [UInt8] = []
            let count = 3
            for i in 0..<count {
                func u32(_ v: UInt32) { records += [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }
                if flags & 0x100 != 0 { u32(20) }
                if flags & 0x200 != 0 { u32(UInt32(50 + i)) }
                if flags & 0x400 != 0 { u32(i == 1 ? 0 : 0x10000) }
                if flags & 0x800 != 0 { u32(UInt32(bitPattern: Int32(i == 2 ? -5 : 7))) }
            }
            let recordSize = [0x100, 0x200, 0x400, 0x800].filter { flags & UInt32($0) != 0 }.count * 4
            let run = TrackRunBox(flags: flags, version: 1, sampleCount: count, dataOffset: flags & 1 != 0 ? 40 : nil, firstSampleFlags: flags & 4 != 0 ? 0 : nil, recordSize: recordSize, records: records[...])
            let header = TrackFragmentHeaderBox(trackID: 1, baseDataOffset: nil, sampleDescriptionIndex: nil, defaultSampleDuration: nil, defaultSampleSize: nil, defaultSampleFlags: nil, durationIsEmpty: false, defaultBaseIsMoof: true)
            let traf = BoxNode(header: BoxHeader(type: .traf, offset: 1008, headerSize: 8, size: 8), content: .container, children: [
                BoxNode(header: BoxHeader(type: .tfdt, offset: 1016, headerSize: 8, size: 16), content: .model(AnyBoxModel(TrackFragmentDecodeTimeBox(baseMediaDecodeTime: 500)))),
                BoxNode(header: BoxHeader(type: .trun, offset: 1032, headerSize: 8, size: 8), content: .model(AnyBoxModel(run))),
            ])
            let end = builder.append(traf: traf, path: .top(.traf), header: header, moofOffset: 1000, implicitBase: 1000, fileLength: 10_000)
            let table = builder.build()
            #expect(table.sampleCount == count)
            var offset: UInt64 = flags & 1 != 0 ? 1040 : 1000
            for i in 0..<count {
                let s = try #require(table.sample(at: i))
                let duration: Int64 = flags & 0x100 != 0 ? 20 : 10
                let size: UInt32 = flags & 0x200 != 0 ? UInt32(50 + i) : 100
                #expect(s.decodeTime == 500 + Int64(i) * duration, "flags \(flags) sample \(i)")
                #expect(s.byteOffset == offset && s.byteCount == size, "flags \(flags) sample \(i)")
                let composition: Int64 = flags & 0x800 != 0 ? (i == 2 ? -5 : 7) : 0
                #expect(s.compositionTime == s.decodeTime + composition)
                let sync: Bool = i == 0 && flags & 4 != 0 ? true : (flags & 0x400 != 0 ? i == 1 : false)
                #expect(s.isSync == sync, "flags \(flags) sample \(i)")
                offset += UInt64(size)
            }
            #expect(end == offset)
        }
    }

    @Test func hostileRunCountsAreBounded() throws {
        // 100 million samples claimed by a 20-byte trun without per-sample fields.
        var builder = FragmentTableBuilder(trackID: 1, defaults: nil, maxSamples: 1_000_000, allSamplesSync: false)
        let run = TrackRunBox(flags: 0, version: 0, sampleCount: 100_000_000, dataOffset: nil, firstSampleFlags: nil, recordSize: 0, records: [])
        let header = TrackFragmentHeaderBox(trackID: 1, baseDataOffset: 0, sampleDescriptionIndex: nil, defaultSampleDuration: nil, defaultSampleSize: nil, defaultSampleFlags: nil, durationIsEmpty: false, defaultBaseIsMoof: false)
        let traf = BoxNode(header: BoxHeader(type: .traf, offset: 0, headerSize: 8, size: 8), content: .container, children: [
            BoxNode(header: BoxHeader(type: .trun, offset: 8, headerSize: 8, size: 20), content: .model(AnyBoxModel(run))),
        ])
        let clock = ContinuousClock()
        let start = clock.now
        _ = builder.append(traf: traf, path: .top(.traf), header: header, moofOffset: 0, implicitBase: 0, fileLength: 100)
        #expect(clock.now - start < .seconds(5))
        #expect(builder.build().sampleCount == 0)
        #expect(builder.findings.contains { $0.id == "fragment-sample-limit" })
    }
}

/// Fragments taken from a segment index (``MP4File/Options/followsSegmentIndex``, what the CLI
/// does over HTTP) are the same fragments a walk of every header finds, also when one
/// subsegment holds several fragments (beyond the 64 KiB read at its start).
@Suite struct IndexedFragmentTests {
    @Test(.requires("ffmpeg"), .hangGuard) func subsegmentsOfSeveralFragmentsAreWalkedWhole() async throws {
        typealias B = BoxBuilder
        let directory = FileSystem.temporaryDirectory()
        defer { FileSystem.removeDirectory(directory) }
        let path = directory + "/fragments.mp4"
        let ffmpeg = try #require(Executables.find("ffmpeg"))
        _ = await Executables.runOffPool(ffmpeg, ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=s=320x240:r=25:d=12", "-c:v", "libx264", "-preset", "ultrafast",
                                                  "-b:v", "800k", "-g", "25", "-movflags", "+frag_keyframe+empty_moov+default_base_moof+skip_trailer", path])
        let original = try #require(FileSystem.read(path))
        let layout = try await TopLevelScanner.scan(MemorySource(original))
        let moov = try #require(layout.movieBox)
        let fragments = layout.boxes.filter { $0.type == .moof || $0.type == .mdat }
        #expect(fragments.count >= 20, "\(fragments.count) boxes: the film should have 10+ fragments")
        // A sidx of two references, each covering half of the fragments (moof + mdat pairs).
        let half = (fragments.count / 2) & ~1
        let first = fragments[0].offset, middle = fragments[half].offset, end = fragments.last?.availableEnd ?? 0
        let sidx = B.fullBox("sidx", B.u32(1) + B.u32(1000) + B.u32(0) + B.u32(0) + B.u16(0) + B.u16(2)
            + B.u32(UInt32(middle - first)) + B.u32(6000) + B.u32(0x9000_0000)
            + B.u32(UInt32(end - middle)) + B.u32(6000) + B.u32(0x9000_0000))
        // default_base_moof: moving the fragments does not move their data offsets.
        let bytes = Array(original[0..<Int(moov.availableEnd)]) + sidx + Array(original[Int(moov.availableEnd)...])
        var options = MP4File.Options()
        options.followsSegmentIndex = true
        let indexed = try await MP4File.open(MemorySource(bytes), options: options)
        #expect(indexed.layout.indexedRanges.first?.subsegments.count == 2)
        let walked = try await MP4File.open(MemorySource(bytes))
        let fromIndex = try await SeekPlanner.index(indexed, from: MemorySource(bytes))
        let fromWalk = try await SeekPlanner.index(walked, from: MemorySource(bytes))
        for (a, b) in zip(fromIndex.tracks, fromWalk.tracks) {
            #expect(a.samples.sampleCount == b.samples.sampleCount && a.samples.sampleCount > 250)
            var left: [SampleTable.Sample] = [], right: [SampleTable.Sample] = []
            a.samples.forEachSample { left.append($0); return true }
            b.samples.forEachSample { right.append($0); return true }
            #expect(left == right)
        }
    }
}
