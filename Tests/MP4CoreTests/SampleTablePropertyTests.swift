import Testing
@testable import MP4Core
import MP4TestSupport

/// The binary-search index against a naive linear expansion, over random run-length tables.
@Suite struct SampleTablePropertyTests {
    typealias B = BoxBuilder

    struct Naive {
        var dts: [Int64] = [], cts: [Int64] = [], offset: [UInt64] = [], size: [UInt32] = [], sync: [Bool] = [], chunk: [Int] = []
    }

    /// Random tables and the expansion a naive reader would compute.
    static func randomTables(_ random: inout SeededRandom) -> (stbl: [UInt8], naive: Naive) {
        let count = Int.random(in: 0...400, using: &random)
        var naive = Naive()
        // stts runs (zero durations allowed)
        var stts: [(Int, Int64)] = []
        var left = count
        while left > 0 {
            let n = Int.random(in: 1...min(left, 50), using: &random)
            stts.append((n, Int64.random(in: 0...3000, using: &random)))
            left -= n
        }
        var t: Int64 = 0
        for (n, d) in stts { for _ in 0..<n { naive.dts.append(t); t += d } }
        // ctts runs (v1, may be negative)
        var ctts: [(Int, Int32)] = []
        left = count
        while left > 0 {
            let n = Int.random(in: 1...min(left, 7), using: &random)
            ctts.append((n, Int32.random(in: -500...3000, using: &random)))
            left -= n
        }
        for (n, o) in ctts { for _ in 0..<n { naive.cts.append(naive.dts[naive.cts.count] + Int64(o)) } }
        // sizes: constant or listed
        let constant: UInt32 = Bool.random(using: &random) ? UInt32.random(in: 1...900, using: &random) : 0
        naive.size = (0..<count).map { _ in constant != 0 ? constant : UInt32.random(in: 0...5000, using: &random) }
        // stsc runs and chunk offsets with gaps
        var stsc: [(Int, Int)] = []  // (firstChunk 1-based, samplesPerChunk)
        var chunkSizes: [Int] = []
        left = count
        while left > 0 {
            let perChunk = Int.random(in: 1...12, using: &random)
            let chunks = Int.random(in: 1...5, using: &random)
            stsc.append((chunkSizes.count + 1, perChunk))
            for _ in 0..<chunks { chunkSizes.append(perChunk) }
            left -= perChunk * chunks
        }
        var offsets: [UInt64] = []
        var position = UInt64.random(in: 0...100_000, using: &random)
        var sample = 0
        for (c, perChunk) in chunkSizes.enumerated() {
            offsets.append(position)
            for _ in 0..<perChunk where sample < count {
                naive.offset.append(position)
                naive.chunk.append(c)
                position += UInt64(naive.size[sample])
                sample += 1
            }
            position += UInt64.random(in: 0...64, using: &random)
        }
        // stss or none
        let hasStss = Bool.random(using: &random)
        naive.sync = (0..<count).map { i in !hasStss || i == 0 || Int.random(in: 0..<10, using: &random) == 0 }
        let syncNumbers = naive.sync.enumerated().filter(\.element).map { UInt32($0.offset + 1) }

        var boxes = B.fullBox("stts", B.u32(UInt32(stts.count)) + stts.flatMap { B.u32(UInt32($0.0)) + B.u32(UInt32($0.1)) })
        boxes += B.fullBox("ctts", version: 1, B.u32(UInt32(ctts.count)) + ctts.flatMap { B.u32(UInt32($0.0)) + B.u32(UInt32(bitPattern: $0.1)) })
        boxes += B.fullBox("stsc", B.u32(UInt32(stsc.count)) + stsc.flatMap { B.u32(UInt32($0.0)) + B.u32(UInt32($0.1)) + B.u32(1) })
        boxes += B.fullBox("stsz", B.u32(constant) + B.u32(UInt32(count)) + (constant == 0 ? naive.size.flatMap { B.u32($0) } : []))
        let large = offsets.last.map { $0 > UInt64(UInt32.max) } ?? false || Bool.random(using: &random)
        boxes += large ? B.fullBox("co64", B.u32(UInt32(offsets.count)) + offsets.flatMap { B.u64($0) }) : B.fullBox("stco", B.u32(UInt32(offsets.count)) + offsets.flatMap { B.u32(UInt32($0)) })
        if hasStss { boxes += B.fullBox("stss", B.u32(UInt32(syncNumbers.count)) + syncNumbers.flatMap { B.u32($0) }) }
        return (B.box("stbl", boxes), naive)
    }

    static func table(_ stbl: [UInt8]) throws -> SampleTable {
        var parser = BoxTreeParser()
        return SampleTable(stbl: try parser.parse(stbl, at: 0, path: .top("stbl")), path: .top("stbl"))
    }

    @Test func indexAgreesWithLinearScan() throws {
        var random = SeededRandom(seed: 20261121)
        for _ in 0..<300 {
            let (stbl, naive) = Self.randomTables(&random)
            let table = try Self.table(stbl)
            let n = naive.dts.count
            #expect(table.sampleCount == n)
            var walked = 0
            table.forEachSample { s in
                #expect(s.decodeTime == naive.dts[s.index] && s.compositionTime == naive.cts[s.index])
                #expect(s.byteOffset == naive.offset[s.index] && s.byteCount == naive.size[s.index])
                #expect(s.isSync == naive.sync[s.index] && s.chunkIndex == naive.chunk[s.index])
                walked += 1
                return true
            }
            #expect(walked == n)
            for _ in 0..<20 where n > 0 {
                let i = Int.random(in: 0..<n, using: &random)
                let s = try #require(table.sample(at: i))
                #expect(s.byteOffset == naive.offset[i] && s.decodeTime == naive.dts[i])
                // time -> sample: the last sample decoded at or before t
                let t = Int64.random(in: -10...(naive.dts.last ?? 0) + 5000, using: &random)
                let expected = naive.dts.lastIndex { $0 <= t }
                if let found = table.lastSample(decodedAtOrBefore: t) {
                    // With zero durations several samples share a time: any of them is the last with dts <= t only if it is the final one.
                    #expect(naive.dts[found] <= t && (found == n - 1 || naive.dts[found + 1] > t), "t=\(t) found \(found) expected \(String(describing: expected))")
                } else {
                    #expect(expected == nil)
                }
                let before = naive.sync[...i].lastIndex(of: true)
                #expect(table.syncSample(atOrBefore: i) == before)
                let after = naive.sync[i...].firstIndex(of: true)
                #expect(table.syncSample(atOrAfter: i) == after)
            }
            #expect(table.sample(at: n) == nil && table.sample(at: -1) == nil)
            // Chunk spans (the planner's walk, per chunk for constant sizes) cover exactly the
            // samples' bytes, in order.
            for _ in 0..<5 where n > 0 {
                let a = Int.random(in: 0..<n, using: &random), b = Int.random(in: a...n, using: &random)
                var spans: [Range<UInt64>] = [], counted = 0
                table.forEachChunkSpan(in: a..<b) { span, count in spans.append(span); counted += count }
                let expected = (a..<b).map { naive.offset[$0]..<(naive.offset[$0] + UInt64(naive.size[$0])) }
                #expect(counted == b - a)
                #expect(SeekPlanner.merge(spans.filter { !$0.isEmpty }) == SeekPlanner.merge(expected.filter { !$0.isEmpty }))
            }
        }
    }

    /// A walk in decode order (``SampleTable/forEachSample(in:_:)``, which moves each table's
    /// run forward a sample at a time) gives the samples the look-ups of single samples give
    /// (a binary search in each table), and the chunk spans (``SampleTable/forEachChunkSpan(in:_:)``,
    /// which sums sizes chunk by chunk) are those of the samples walked, from any first sample:
    /// random tables, and every track (fragments indexed too) of SampleMedia, its malformed
    /// files and the corpus.
    @Test func aWalkGivesWhatLookUpsGive() async throws {
        var random = SeededRandom(seed: 20261127)
        var tables: [SampleTable] = []
        for _ in 0..<100 { tables.append(try Self.table(Self.randomTables(&random).stbl)) }
        var paths = Fixtures.sampleFiles.map(Fixtures.sample) + Fixtures.malformedSampleFiles.map { Fixtures.sampleMedia + "/malformed/" + $0 }
        if let corpus = Fixtures.sharedCorpus {
            for kind in ["valid", "malformed"] { paths += FileSystem.list(corpus + "/" + kind).sorted().map { corpus + "/" + kind + "/" + $0 } }
        }
        var files = 0
        for path in paths {
            guard let bytes = FileSystem.read(path), let file = try? await MP4File.open(MemorySource(bytes)) else { continue }
            files += 1
            let planner = (try? await SeekPlanner.index(file, from: MemorySource(bytes))) ?? SeekPlanner(file: file)
            tables += planner.tracks.map(\.samples)
        }
        // SampleMedia opens 36 files here; the corpus adds over a hundred when it is beside the package.
        #expect(files >= (Fixtures.hasCorpus ? 120 : 30), "\(files) files opened")
        var walked = 0, differing: [String] = []
        for table in tables where table.sampleCount > 0 {
            let n = table.sampleCount
            // From the first sample, and from two others, a few thousand samples each.
            for start in [0, Int.random(in: 0..<n, using: &random), Int.random(in: 0..<n, using: &random)] {
                let end = min(n, start + 3_000)
                var next = start
                table.forEachSample(in: start..<end) { sample in
                    if sample.index != next || sample != table.sample(at: sample.index) { differing.append("sample \(sample.index) of \(n)") }
                    next += 1
                    walked += 1
                    return true
                }
                #expect(next == end)
                // The chunk spans of the same samples, as a walk of the samples gives them.
                var spans: [String] = [], expected: [String] = []
                table.forEachChunkSpan(in: start..<end) { span, count in spans.append("\(span) \(count)") }
                var span: (range: Range<UInt64>, chunk: Int, count: Int)?
                table.forEachSample(in: start..<end) { sample in
                    if let current = span, current.chunk == sample.chunkIndex, current.range.upperBound == sample.byteOffset {
                        span = (current.range.lowerBound..<sample.endOffset, current.chunk, current.count + 1)
                    } else {
                        if let current = span { expected.append("\(current.range) \(current.count)") }
                        span = (sample.byteOffset..<max(sample.byteOffset, sample.endOffset), sample.chunkIndex, 1)
                    }
                    return true
                }
                if let current = span { expected.append("\(current.range) \(current.count)") }
                if spans != expected { differing.append("chunk spans of \(start)..<\(end) of \(n)") }
            }
        }
        #expect(walked > 10_000)
        #expect(differing.isEmpty, "\(differing.count) samples differ: \(differing.prefix(10))")
    }

    /// The one-pass sum of a size or offset table is the sum of its entries, read one at a
    /// time (stsz, stz2 at 4, 8 and 16 bits, stco, co64), wrapping included; an entry count
    /// larger than the bytes (a hostile table) sums what is there instead of trapping.
    @Test func sumOfFirstFieldsIsTheSumOfTheEntries() {
        var random = SeededRandom(seed: 31)
        for round in 0..<200 {
            let count = Int.random(in: 0...300, using: &random)
            let kind: SampleTableData.Kind = [.sampleSize, .compactSampleSize, .chunkOffset, .chunkLargeOffset][round % 4]
            let fieldSize = [4, 8, 16][round % 3]
            let width = kind == .compactSampleSize ? (count * fieldSize + 7) / 8 : count * (kind == .chunkLargeOffset ? 8 : 4)
            let bytes = (0..<width).map { _ in UInt8.random(in: 0...255, using: &random) }
            let table = SampleTableData(kind: kind, version: 0, entryCount: count, constantSampleSize: 0, sampleCount: UInt32(count), fieldSize: fieldSize, entryBytes: bytes[...])
            var expected: UInt64 = 0
            for i in 0..<count { expected &+= UInt64(bitPattern: table.field(i, 0)) }
            #expect(table.sumOfFirstFields == expected, "\(kind) \(count)")
        }
        let short = SampleTableData(kind: .sampleSize, version: 0, entryCount: 1_000, constantSampleSize: 0, sampleCount: 1_000, fieldSize: 0, entryBytes: [0, 0, 1, 0, 0, 0, 0, 2][...])
        #expect(short.sumOfFirstFields == 258)
    }

    @Test func emptyAndSingleSampleTracks() throws {
        let empty = try Self.table(B.box("stbl", B.fullBox("stts", B.u32(0)) + B.fullBox("stsc", B.u32(0)) + B.fullBox("stsz", B.u32(0) + B.u32(0)) + B.fullBox("stco", B.u32(0))))
        #expect(empty.sampleCount == 0 && empty.sample(at: 0) == nil && empty.lastSample(decodedAtOrBefore: 100) == nil)
        let one = try Self.table(B.box("stbl", B.fullBox("stts", B.u32(1) + B.u32(1) + B.u32(0)) + B.fullBox("stsc", B.u32(1) + B.u32(1) + B.u32(1) + B.u32(1)) + B.fullBox("stsz", B.u32(10) + B.u32(1)) + B.fullBox("stco", B.u32(1) + B.u32(500))))
        #expect(one.sample(at: 0)?.byteOffset == 500 && one.lastSample(decodedAtOrBefore: 0) == 0)
    }

    /// A 200-byte table describing a billion samples answers in microseconds, without
    /// expanding anything.
    @Test func hugeCountsStayCompact() throws {
        let billion: UInt32 = 1_000_000_000
        let stbl = B.box("stbl", B.fullBox("stts", B.u32(1) + B.u32(billion) + B.u32(1)) + B.fullBox("stsc", B.u32(1) + B.u32(1) + B.u32(1000) + B.u32(1)) + B.fullBox("stsz", B.u32(4) + B.u32(billion)) + B.fullBox("stco", B.u32(1) + B.u32(0)))
        let table = try Self.table(stbl)
        // One chunk of 1000 samples: the rest have no chunk, so the usable count is 1000.
        #expect(table.sampleCount == 1000)
        #expect(table.findings.contains { $0.id == "samples-without-chunk" })
        let started = FileSystem.now()
        #expect(table.sample(at: 999)?.byteOffset == 3996)
        #expect(table.lastSample(decodedAtOrBefore: 1 << 40) == 999)
        #expect(FileSystem.now() - started < 1)
    }

    @Test func badStscEntriesAreSkippedWithFindings() throws {
        let stsc = B.fullBox("stsc", B.u32(3) + B.u32(1) + B.u32(2) + B.u32(1) + B.u32(0) + B.u32(5) + B.u32(1) + B.u32(1) + B.u32(9) + B.u32(1))
        let stbl = B.box("stbl", B.fullBox("stts", B.u32(1) + B.u32(4) + B.u32(10)) + stsc + B.fullBox("stsz", B.u32(3) + B.u32(4)) + B.fullBox("stco", B.u32(3) + B.u32(100) + B.u32(200) + B.u32(300)))
        let table = try Self.table(stbl)
        #expect(table.findings.filter { $0.id == "bad-stsc-entry" }.count == 2)
        #expect(table.sampleCount == 4 && table.sample(at: 3)?.byteOffset == 200 + 3)
        #expect(table.findings.contains { $0.id == "unused-chunks" })
    }
}
