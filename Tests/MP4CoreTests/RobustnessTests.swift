import Testing
@testable import MP4Core
import MP4TestSupport

/// Hostile input: every prefix of the interesting part of each sample, seeded bit flips, and
/// the named malformed files. The answer must be a value or a typed ``MP4Error``: never a
/// trap, a hang, or an allocation beyond the limits.
@Suite struct RobustnessTests {
    /// Opens `bytes` fully (layout, moov, summary, every table entry and box field) and
    /// returns whether it produced a file (false for a typed error).
    @discardableResult
    static func exercise(_ bytes: [UInt8], deep: Bool = true) async -> Bool {
        do {
            let source = MemorySource(bytes)
            let file = try await MP4File.open(source, options: .init(loadsAllBoxes: true))
            for node in file.topLevelNodes {
                node.walk(path: BoxPath()) { child, _ in
                    if let table = child.sampleTable {
                        // Touch the first and last entries: decoding must stay within the box.
                        if table.entryCount > 0 { _ = table.entry(at: 0); _ = table.entry(at: table.entryCount - 1) }
                    }
                    return .descend
                }
            }
            _ = file.movie?.tracks.map { ($0.codecStringSummary, $0.bitRate, $0.durationSeconds) }
            // The sample tables (fragments too), the seek planner, the faststart plan and the
            // check must cope with the same input.
            let planner = (try? await SeekPlanner.index(file, from: source)) ?? SeekPlanner(file: file)
            if deep {
                _ = try? await FaststartPlan.make(file, source: source)
                _ = FileCheck.evaluate(file, policy: CheckPolicy(maxKeyframeInterval: 1, maxInterleave: 1))
            }
            for indexed in planner.tracks {
                var walked = 0
                indexed.samples.forEachSample { _ in walked += 1; return walked < 2_000 }
                _ = indexed.samples.sample(at: indexed.samples.sampleCount - 1)
            }
            // Plans cost O(samples in the window), PCM O(chunks in the window).
            for time in [0.0, 0.7, 1.9] { _ = try? planner.plan(at: time, duration: 0.5) }
            return true
        } catch is MP4Error {
            return false
        } catch {
            Issue.record("untyped error \(error)")
            return false
        }
    }

    /// Under AddressSanitizer (CI's first suite), a third of the mutants and of the cut points
    /// (every box's first 16 bytes still cut at each byte): the two sweeps took 245 of that
    /// suite's 800 or so CPU-seconds (112 and 133 s, measured alone; 35 and 52 s now), CI ran
    /// 23 minutes against its 20, and the same CI run fuzzes the parser under AddressSanitizer
    /// with libFuzzer. The plain suite runs them whole.
    static let thinning = Executables.underSanitizer ? 3 : 1

    /// The prefixes worth cutting at: every byte of the headers and moov, a stride elsewhere
    /// (``thinning``).
    static func cutPoints(_ bytes: [UInt8]) async throws -> [Int] {
        let layout = try await TopLevelScanner.scan(MemorySource(bytes))
        var points = Set(stride(from: 0, to: bytes.count, by: 997))
        var headers = Set<Int>()
        for box in layout.boxes {
            let start = Int(box.offset)
            let dense = box.type == .mdat ? start + 40 : Int(box.availableEnd)
            for p in start...min(dense, bytes.count) { points.insert(p) }
            for p in start...min(start + 16, bytes.count) { headers.insert(p) }
        }
        return points.sorted().enumerated().filter { $0.offset % thinning == 0 || headers.contains($0.element) }.map(\.element)
    }

    @Test(arguments: ["faststart.mp4", "moov-at-end.mp4", "fragmented-sidx.mp4", "quicktime.mov", "audio-edit-list.m4a", "hevc.mp4", "vp9-opus.mp4", "av1-opus.mp4", "alac.m4a", "ac3.mp4", "largesize-mdat.mp4", "uuid-box.mp4"])
    func truncationSweep(name: String) async throws {
        let bytes = try #require(FileSystem.read(Fixtures.sample(name)))
        let started = FileSystem.now()
        var results = 0
        // Every prefix through parse, tables and plans; every 8th also through the faststart
        // plan and the check (the bit flips run all of them on every mutant).
        for (i, cut) in try await Self.cutPoints(bytes).enumerated() {
            if await Self.exercise(Array(bytes[0..<cut]), deep: i % 8 == 0) { results += 1 }
        }
        #expect(results > 0)
        #expect(FileSystem.now() - started < 120, "sweep of \(name) took too long")
    }

    @Test(arguments: ["faststart.mp4", "moov-at-end.mp4", "fragmented.mp4", "quicktime.mov", "hevc.mp4", "vp9-opus.mp4"])
    func seededBitFlips(name: String) async throws {
        let original = try #require(FileSystem.read(Fixtures.sample(name)))
        let layout = try await TopLevelScanner.scan(MemorySource(original))
        // Flip bits where structure lives: everything but mdat payloads.
        var regions: [Range<Int>] = []
        for box in layout.boxes {
            let start = Int(box.offset)
            regions.append(start..<(box.type == .mdat ? start + 16 : Int(box.availableEnd)))
        }
        var random = SeededRandom(seed: 0x6D70_3470 ^ UInt64(name.utf8.count))
        for _ in 0..<(1500 / Self.thinning) {
            var bytes = original
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                let region = regions[Int.random(in: 0..<regions.count, using: &random)]
                let index = Int.random(in: region, using: &random)
                bytes[index] ^= UInt8(1 << Int.random(in: 0..<8, using: &random))
            }
            let started = FileSystem.now()
            await Self.exercise(bytes)
            #expect(FileSystem.now() - started < 5)
        }
    }

    @Test(arguments: Fixtures.malformedSampleFiles)
    func namedMalformedFile(name: String) async throws {
        let bytes = try #require(FileSystem.read(Fixtures.sample("malformed/" + name)))
        let started = FileSystem.now()
        let opened = await Self.exercise(bytes)
        let elapsed = FileSystem.now() - started
        #expect(elapsed < 5, "\(name) took \(elapsed) s")
        print("robustness: \(name) handled in \(Int(elapsed * 1000)) ms")
        // What each file must produce: a typed error, or a result with the named finding.
        let expectations: [String: (opens: Bool, finding: String?)] = [
            "box-size-below-header.mp4": (true, "invalid-box-size"),
            "child-overruns-parent.mp4": (true, "box-overruns-parent"),
            "deep-nesting-64.mp4": (false, nil),
            "elst-count-past-box.mp4": (true, "invalid-box"),
            "empty.mp4": (false, nil),
            // Found by the fuzzer (trapped in Sample.endOffset: a chunk offset near 2^64 plus a size).
            "fuzz-sample-end-overflow.mp4": (true, "invalid-box-header"),
            // Found by the CLI fuzzing (a tfdt near 2^63: ptsTime 1.5e14 s trapped the text listing).
            "fuzz-huge-presentation-time.mp4": (true, "mdat-past-eof"),
            "largesize-2-pow-63.mp4": (true, "mdat-past-eof"),
            "largesize-below-16.mp4": (true, "invalid-box-size"),
            "mdhd-timescale-zero.mp4": (true, "zero-timescale"),
            "moov-64bit-size-huge.mp4": (true, "moov-truncated"),
            "moov-size-past-eof.mp4": (true, "box-truncated"),
            "not-mp4.png": (false, nil),
            "not-mp4.txt": (false, nil),
            "overlapping-boxes.mp4": (true, "box-overruns-parent"),
            "stco-count-past-box.mp4": (true, "invalid-box"),
            "stsd-entry-size-huge.mp4": (true, "box-overruns-parent"),
            "stsz-count-4-billion.mp4": (true, "invalid-box"),
            "stts-4-billion-samples.mp4": (true, "missing-sample-description"),
            "trun-100-million-samples.mp4": (true, nil),
            "trailing-garbage.mp4": (true, "trailing-bytes"),
            "truncated-box-header.mp4": (true, "trailing-bytes"),
            "truncated-in-mdat.mp4": (true, "mdat-past-eof"),
            "truncated-in-moov.mp4": (true, "moov-truncated"),
        ]
        let expected = try #require(expectations[name], "no expectation recorded for \(name)")
        #expect(opened == expected.opens)
        if let id = expected.finding {
            let file = try await MP4File.open(MemorySource(bytes))
            #expect(file.findings.contains { $0.id == id }, "\(name): \(file.findings.map(\.id))")
        }
    }

    /// The bombs: a 457-byte file claiming 4,294,967,295 samples, a 20-byte trun claiming
    /// 100,000,000: bounded results, quickly, without allocating per claimed sample.
    @Test func bombsGiveBoundedResults() async throws {
        let stts = try #require(FileSystem.read(Fixtures.sample("malformed/stts-4-billion-samples.mp4")))
        let file = try await MP4File.open(MemorySource(stts))
        let planner = SeekPlanner(file: file)
        let track = try #require(planner.tracks.first)
        #expect(track.samples.sampleCount == 4_294_967_295)
        #expect(track.samples.sample(at: 4_294_967_294)?.byteOffset == 4_294_967_294)
        let plan = try planner.plan(at: 1000, duration: 1000)  // a million samples, one chunk: O(1)
        #expect(plan.ranges == [1_000_000..<2_000_001])
        let check = FileCheck.evaluate(file, policy: CheckPolicy())
        #expect(check.findings.contains { $0.id == "chunk-outside-mdat" })
        let trun = try #require(FileSystem.read(Fixtures.sample("malformed/trun-100-million-samples.mp4")))
        let fragmented = try await MP4File.open(MemorySource(trun))
        let index = try await FragmentIndex.load(fragmented, from: MemorySource(trun))
        #expect(index.findings.contains { $0.id == "fragment-sample-limit" })
        #expect(index.tables[1]?.sampleCount == 0)
    }

    @Test func deepNestingErrorSaysWhere() async throws {
        let bytes = try #require(FileSystem.read(Fixtures.sample("malformed/deep-nesting-64.mp4")))
        do {
            _ = try await MP4File.open(MemorySource(bytes))
        } catch let e as MP4Error {
            #expect(e.kind == .limitExceeded && e.offset != nil && (e.path?.depth ?? 0) > 32)
        }
    }
}
