import Foundation
import Testing
@testable import MP4Core
@testable import MP4IO
import MP4TestSupport

/// The faststart rewrite's invariants, on every SampleMedia file and every moov-at-end file of
/// the corpus: the output is faststart, every sample's bytes are unchanged, every top-level box
/// but `moov` is byte-identical, a second run changes nothing, and failures leave nothing behind.
@Suite(.serialized) struct FaststartRewriterTests {
    typealias B = BoxBuilder

    static let inputs: [String] = {
        var files = Fixtures.sampleFiles.map { Fixtures.sample($0) }
        if let corpus = Fixtures.sharedCorpus, let bytes = FileSystem.read(corpus + "/manifest.tsv") {
            let lines = String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline).map { $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init) }
            if let header = lines.first, let c = header.firstIndex(of: "category"), let f = header.firstIndex(of: "file"), let m = header.firstIndex(of: "moov_before_mdat") {
                files += lines.dropFirst().filter { $0.count == header.count && $0[c] == "valid" && $0[m] == "no" }.map { corpus + "/" + $0[f] }
            }
        }
        return files
    }()

    /// Corpus files the rewrite refuses, with the reason it must give.
    static let expectedRefusals: [String: String] = [:]

    /// Checks the invariants between `input` and `output`; returns the samples compared.
    static func checkInvariants(input: String, output: String, dropsPadding: Bool = false) async throws -> Int {
        let a = try #require(FileSystem.read(input)), b = try #require(FileSystem.read(output))
        let fileA = try await MP4File.open(MemorySource(a, name: input))
        let fileB = try await MP4File.open(MemorySource(b, name: output))
        #expect(fileB.layout.moviePlacement != .afterMediaData, "\(output) is not faststart")
        // Every top-level box other than moov is byte-identical and in the same order.
        // With padding dropped, every top-level free/skip is gone and the rest is unchanged.
        let isPadding = { (box: TopLevelBox) in box.type == .free || box.type == .skip }
        let boxesA = fileA.layout.boxes.filter { $0.type != .moov && !(dropsPadding && isPadding($0)) }, boxesB = fileB.layout.boxes.filter { $0.type != .moov }
        if dropsPadding { #expect(!fileB.layout.boxes.contains(where: isPadding), "\(output) still has padding") }
        #expect(boxesA.map(\.type) == boxesB.map(\.type))
        for (x, y) in zip(boxesA, boxesB) {
            #expect(a[Int(x.offset)..<Int(x.availableEnd)] == b[Int(y.offset)..<Int(y.availableEnd)], "\(input): '\(x.type)' at \(x.offset) changed")
        }
        // Same tracks and samples; every sample's bytes equal.
        let tracksA = SeekPlanner(file: fileA).tracks, tracksB = SeekPlanner(file: fileB).tracks
        #expect(tracksA.count == tracksB.count)
        var compared = 0
        for (ta, tb) in zip(tracksA, tracksB) {
            #expect(ta.samples.sampleCount == tb.samples.sampleCount)
            var mismatches = 0
            var samplesA: [SampleTable.Sample] = []
            ta.samples.forEachSample { samplesA.append($0); return true }
            tb.samples.forEachSample { s in
                let r = samplesA[s.index]
                if r.byteCount != s.byteCount || r.decodeTime != s.decodeTime || r.isSync != s.isSync || s.endOffset > UInt64(b.count)
                    || a[Int(r.byteOffset)..<Int(r.endOffset)] != b[Int(s.byteOffset)..<Int(s.endOffset)] {
                    mismatches += 1
                }
                compared += 1
                return true
            }
            #expect(mismatches == 0, "\(input) track \(ta.track.trackID): \(mismatches) samples differ")
        }
        // The moov tree has the same shape (co64 may replace stco).
        func shape(_ file: MP4File) -> [String] {
            var types: [String] = []
            file.movieBox?.walk(path: .top(.moov)) { node, path in
                types.append(path.description.split(separator: "/").map { $0 == "stco" ? "co64" : String($0) }.joined(separator: "/"))
                return .descend
            }
            return types
        }
        #expect(shape(fileA) == shape(fileB))
        return compared
    }

    @Test(arguments: inputs)
    func rewriteKeepsEverySampleAndEveryOtherBox(input: String) async throws {
        let directory = FileSystem.temporaryDirectory()
        defer { FileSystem.removeDirectory(directory) }
        let output = directory + "/out.mp4", again = directory + "/again.mp4"
        let name = String(input.split(separator: "/").last ?? "")
        let before = FileSystem.read(input)
        let result: FaststartRewriter.Result
        do {
            result = try await FaststartRewriter.rewrite(input: input, output: output, options: .init(verifies: true))
        } catch let error as MP4Error where error.kind == .unsupported {
            let reason = try #require(Self.expectedRefusals[name], "\(name) refused: \(error)")
            #expect(error.message.contains(reason))
            #expect(!FileSystem.exists(output) && FileSystem.entries(directory).isEmpty)
            return
        }
        #expect(FileSystem.read(input) == before, "the input changed")
        #expect(result.wroteOutput)
        let compared = try await Self.checkInvariants(input: input, output: output)
        if result.plan.verdict == .rewrite { #expect(result.verifiedSampleCount == compared) }
        // A second run finds nothing to do and writes an identical copy.
        let second = try await FaststartRewriter.rewrite(input: output, output: again)
        #expect(second.plan.verdict != .rewrite)
        #expect(FileSystem.read(again) == FileSystem.read(output))
        // Only the outputs are in the directory: no temporary files left.
        #expect(FileSystem.entries(directory) == ["again.mp4", "out.mp4"])
    }

    /// `--drop-free` on every input (ffmpeg's moov-at-end files have a `free` before `mdat`):
    /// the output is faststart with no padding left. It used to drop the padding after choosing
    /// where moov goes, which put moov after mdat again ("moved moov", exit 0, not faststart).
    @Test(arguments: inputs)
    func droppingPaddingStillMovesMoovFirst(input: String) async throws {
        let directory = FileSystem.temporaryDirectory()
        defer { FileSystem.removeDirectory(directory) }
        let output = directory + "/out.mp4"
        let result: FaststartRewriter.Result
        do {
            result = try await FaststartRewriter.rewrite(input: input, output: output, options: .init(dropsPadding: true, verifies: true))
        } catch let error as MP4Error where error.kind == .unsupported {
            return   // refusals are the test above's subject
        }
        guard result.plan.verdict == .rewrite else { return }
        _ = try await Self.checkInvariants(input: input, output: output, dropsPadding: true)
    }

    @Test func inPlaceKeepsPermissionsAndRefusesTheInputAsOutput() async throws {
        let directory = FileSystem.temporaryDirectory()
        defer { FileSystem.removeDirectory(directory) }
        let path = directory + "/movie.mp4"
        let original = try #require(FileSystem.read(Fixtures.sample("moov-at-end.mp4")))
        FileSystem.write(original, to: path)
        FileSystem.setPermissions(path, 0o640)
        await #expect(throws: MP4Error.self) { try await FaststartRewriter.rewrite(input: path, output: path) }
        #expect(FileSystem.read(path) == original)
        let result = try await FaststartRewriter.rewrite(input: path, output: path, options: .init(inPlace: true, verifies: true))
        #expect(result.plan.verdict == .rewrite && result.verifiedSampleCount == 145)
        #expect(FileSystem.permissions(path) == 0o640)
        #expect(FileSystem.entries(directory) == ["movie.mp4"])
        FileSystem.write(original, to: directory + "/original.mp4")
        _ = try await Self.checkInvariants(input: directory + "/original.mp4", output: path)
        // In place again: nothing to do, the file is not touched.
        let rewritten = FileSystem.read(path)
        let second = try await FaststartRewriter.rewrite(input: path, output: path, options: .init(inPlace: true))
        #expect(!second.wroteOutput && FileSystem.read(path) == rewritten)
    }

    /// Links (issue 13 item 5): `--in-place LINK` used to replace the symbolic link with a
    /// regular file and leave its target moov-at-end; a hard-linked file was split in two.
    /// Now a symbolic link is written through (it stays a link, its target is rewritten), and
    /// replacing a file with other hard links is refused with nothing changed.
    @Test func symbolicLinksAreWrittenThroughAndHardLinksRefused() async throws {
        let directory = FileSystem.temporaryDirectory()
        defer { FileSystem.removeDirectory(directory) }
        let original = try #require(FileSystem.read(Fixtures.sample("moov-at-end.mp4")))
        FileSystem.write(original, to: directory + "/target.mp4")
        #expect(symlink("target.mp4", directory + "/link.mp4") == 0)
        let result = try await FaststartRewriter.rewrite(input: directory + "/link.mp4", output: directory + "/link.mp4", options: .init(inPlace: true, verifies: true))
        #expect(result.wroteOutput)
        #expect(Platform.isSymbolicLink(directory + "/link.mp4"))
        let rewritten = try #require(FileSystem.read(directory + "/target.mp4"))
        #expect(rewritten != original && rewritten.count == original.count)
        let file = try await MP4File.open(FileSource(path: directory + "/target.mp4"))
        #expect(file.layout.isFastStart)
        #expect(FileSystem.entries(directory) == ["link.mp4", "target.mp4"])

        // OUT a link to an existing file: written through as well.
        FileSystem.write([1, 2, 3], to: directory + "/out-target.mp4")
        #expect(symlink(directory + "/out-target.mp4", directory + "/out-link.mp4") == 0)
        FileSystem.write(original, to: directory + "/input.mp4")
        _ = try await FaststartRewriter.rewrite(input: directory + "/input.mp4", output: directory + "/out-link.mp4")
        #expect(Platform.isSymbolicLink(directory + "/out-link.mp4") && FileSystem.read(directory + "/out-target.mp4") == rewritten)
        // A dangling link is refused.
        #expect(symlink(directory + "/missing.mp4", directory + "/dangling.mp4") == 0)
        await #expect(throws: MP4Error.self) { try await FaststartRewriter.rewrite(input: directory + "/input.mp4", output: directory + "/dangling.mp4") }
        #expect(!FileSystem.exists(directory + "/missing.mp4"))

        // Hard links: refused, both names keep the original bytes.
        FileSystem.write(original, to: directory + "/a.mp4")
        #expect(link(directory + "/a.mp4", directory + "/b.mp4") == 0)
        do {
            _ = try await FaststartRewriter.rewrite(input: directory + "/a.mp4", output: directory + "/a.mp4", options: .init(inPlace: true))
            Issue.record("a hard-linked file was replaced")
        } catch let error as MP4Error {
            #expect(error.kind == .unsupported && error.message.contains("2 hard links"), "\(error)")
        }
        #expect(FileSystem.read(directory + "/a.mp4") == original && FileSystem.read(directory + "/b.mp4") == original)
        #expect(Platform.status(path: directory + "/a.mp4")?.links == 2)
    }

    /// A sparse moov-at-end file of just over 4 GiB with two samples, the last just below
    /// 2^32 (see ``offsetsPast4GiBPromoteStcoToCo64()``).
    struct SparseNear4GiB {
        var size: UInt64, movieCount: Int, first: UInt64, last: UInt64, sampleA: [UInt8], sampleB: [UInt8]
    }

    static func writeSparseNear4GiB(to input: String) -> SparseNear4GiB? {
        let ftyp = B.box("ftyp", Array("isom".utf8) + B.u32(0) + Array("isom".utf8))
        let mdatStart = UInt64(ftyp.count)
        let first = mdatStart + 8, last = (UInt64(1) << 32) - 100
        let sampleA: [UInt8] = Array(repeating: 0xAA, count: 40), sampleB: [UInt8] = (0..<60).map { UInt8($0) }
        let mdatEnd = last + UInt64(sampleB.count)
        let mdatHeader = B.u32(UInt32(mdatEnd - mdatStart)) + Array("mdat".utf8)
        let stbl = B.box("stbl", children: [
            B.fullBox("stsd", B.u32(0)),
            B.fullBox("stts", B.u32(1) + B.u32(2) + B.u32(1000)),
            B.fullBox("stss", B.u32(1) + B.u32(1)),
            B.fullBox("stsc", B.u32(1) + B.u32(1) + B.u32(1) + B.u32(1)),
            B.fullBox("stsz", B.u32(0) + B.u32(2) + B.u32(UInt32(sampleA.count)) + B.u32(UInt32(sampleB.count))),
            B.fullBox("stco", B.u32(2) + B.u32(UInt32(first)) + B.u32(UInt32(last))),
        ])
        let trak = B.box("trak", children: [
            B.fullBox("tkhd", flags: 3, B.u32(0) + B.u32(0) + B.u32(1) + B.u32(0) + B.u32(2000) + [UInt8](repeating: 0, count: 60)),
            B.box("mdia", children: [
                B.fullBox("mdhd", B.u32(0) + B.u32(0) + B.u32(1000) + B.u32(2000) + B.u32(0)),
                B.fullBox("hdlr", B.u32(0) + Array("vide".utf8) + [UInt8](repeating: 0, count: 13)),
                B.box("minf", children: [stbl]),
            ]),
        ])
        let moov = B.box("moov", children: [B.fullBox("mvhd", B.u32(0) + B.u32(0) + B.u32(1000) + B.u32(2000) + [UInt8](repeating: 0, count: 80)), trak])
        let size = mdatEnd + UInt64(moov.count)
        let pieces: [(UInt64, [UInt8])] = [(0, ftyp), (mdatStart, mdatHeader), (first, sampleA), (last, sampleB), (mdatEnd, moov)]
        guard FileSystem.writeSparse(input, size: size, pieces: pieces) else { return nil }
        return SparseNear4GiB(size: size, movieCount: moov.count, first: first, last: last, sampleA: sampleA, sampleB: sampleB)
    }

    /// A moov-at-end file whose chunk offsets sit just below 2^32, written sparse: moving moov
    /// in front pushes them past 2^32, so stco must become co64.
    @Test func offsetsPast4GiBPromoteStcoToCo64() async throws {
        let directory = FileSystem.temporaryDirectory()
        defer { FileSystem.removeDirectory(directory) }
        let input = directory + "/big.mp4", output = directory + "/big-faststart.mp4"
        let sparse = try #require(Self.writeSparseNear4GiB(to: input))
        let (size, first, last, sampleA, sampleB) = (sparse.size, sparse.first, sparse.last, sparse.sampleA, sparse.sampleB)
        let clock = ContinuousClock(), started = clock.now
        let result = try await FaststartRewriter.rewrite(input: input, output: output, options: .init(verifies: true))
        let elapsed = clock.now - started
        #expect(result.plan.promotedTableCount == 1)
        #expect(result.plan.outputSize == size + 8)  // two entries grow by 4 bytes each
        #expect(result.verifiedSampleCount == 2)
        // Holes stayed holes: a 4 GiB output occupies a few blocks, not 4 GiB.
        #expect(FileSystem.allocatedBytes(output) < 16 << 20, "\(FileSystem.allocatedBytes(output)) bytes allocated")
        #expect(elapsed < .seconds(60))
        let file = try await MP4File.open(try FileSource(path: output))
        let track = try #require(SeekPlanner(file: file).tracks.first)
        #expect(file.movie?.tracks.first?.usesLargeChunkOffsets == true)
        let s0 = try #require(track.samples.sample(at: 0)), s1 = try #require(track.samples.sample(at: 1))
        let moovSize = UInt64(sparse.movieCount) + 8
        #expect(s0.byteOffset == first + moovSize && s1.byteOffset == last + moovSize && s1.byteOffset > UInt64(UInt32.max))
        let source = try FileSource(path: output)
        #expect(try await source.read(s1.byteOffset..<s1.endOffset) == sampleB)
        #expect(try await source.read(s0.byteOffset..<s0.endOffset) == sampleA)
    }

    @Test func failuresLeaveNothingBehind() async throws {
        let directory = FileSystem.temporaryDirectory()
        defer { FileSystem.removeDirectory(directory) }
        let input = Fixtures.sample("moov-at-end.mp4")
        let original = FileSystem.read(input)
        // Destination directory missing, not a directory, or not writable (read-only /proc).
        for output in [directory + "/missing/out.mp4", input + "/out.mp4", "/proc/mp4probe-out.mp4"] {
            do {
                _ = try await FaststartRewriter.rewrite(input: input, output: output)
                Issue.record("wrote \(output)")
            } catch let error as MP4Error {
                #expect(error.kind == .io, "\(error)")
            }
            #expect(!FileSystem.exists(output))
        }
        // A simulated disk-full after 10,000 bytes: no output, no temporary file.
        var options = FaststartRewriter.Options()
        options.failsAfterBytes = 10_000
        await #expect(throws: MP4Error.self) { try await FaststartRewriter.rewrite(input: input, output: directory + "/out.mp4", options: options) }
        #expect(FileSystem.entries(directory).isEmpty)
        // The same for an in-place rewrite: the file stays as it was.
        let copy = directory + "/copy.mp4"
        FileSystem.write(try #require(original), to: copy)
        options.inPlace = true
        await #expect(throws: MP4Error.self) { try await FaststartRewriter.rewrite(input: copy, output: copy, options: options) }
        #expect(FileSystem.read(copy) == original && FileSystem.entries(directory) == ["copy.mp4"])
        // An input truncated in the middle of mdat is refused.
        let truncated = directory + "/truncated.mp4"
        FileSystem.write(Array(try #require(original).prefix(40_000)) + [], to: truncated)
        do {
            _ = try await FaststartRewriter.rewrite(input: truncated, output: directory + "/t-out.mp4")
            Issue.record("rewrote a truncated file")
        } catch let error as MP4Error {
            // moov-at-end cut inside mdat has no moov at all: nothing to move.
            #expect(error.kind == .unsupported)
        }
        #expect(!FileSystem.exists(directory + "/t-out.mp4"))
        #expect(FileSystem.read(input) == original)
    }

    @Test func refusesWhatItCannotRelocate() async throws {
        let directory = FileSystem.temporaryDirectory()
        defer { FileSystem.removeDirectory(directory) }
        let ftyp = B.box("ftyp", Array("qt  ".utf8) + B.u32(0) + Array("qt  ".utf8))
        let mdat = B.box("mdat", [UInt8](repeating: 1, count: 100))
        let cases: [(String, [UInt8], String)] = [
            ("cmov", ftyp + mdat + B.box("moov", children: [B.box("cmov", children: [B.fullBox("dcom", Array("zlib".utf8))])]), "compressed"),
            ("outside", ftyp + mdat + B.box("moov", children: [B.box("trak", children: [B.box("mdia", children: [B.box("minf", children: [B.box("stbl", children: [B.fullBox("stco", B.u32(1) + B.u32(90_000))])])])])]), "lies in no box"),
            ("two-moov", ftyp + mdat + B.box("moov") + B.box("moov"), "several moov"),
            ("truncated", ftyp + mdat + B.box("moov") + B.u32(500) + Array("udta".utf8) + [UInt8](repeating: 0, count: 10), "truncated"),
            ("top-meta", ftyp + B.fullBox("meta", B.box("iloc")) + mdat + B.box("moov"), "top-level meta"),
        ]
        // A box that holds offsets but does not parse is refused, never copied unrelocated
        // (an stco whose count overruns it used to be skipped silently).
        let brokenStco = ftyp + mdat + B.box("moov", children: [B.box("trak", children: [B.box("mdia", children: [B.box("minf", children: [B.box("stbl", children: [B.fullBox("stco", B.u32(2) + B.u32(20))])])])])])
        for (name, bytes) in [("broken-stco", brokenStco), ("broken-saio", ftyp + mdat + B.box("moov", children: [B.fullBox("saio", B.u32(9) + B.u32(20))]))] {
            let input = directory + "/\(name).mp4", output = directory + "/\(name)-out.mp4"
            FileSystem.write(bytes, to: input)
            await #expect(throws: MP4Error.self, "\(name)") { _ = try await FaststartRewriter.rewrite(input: input, output: output) }
            #expect(!FileSystem.exists(output) && FileSystem.read(input) == bytes)
        }
        for (name, bytes, reason) in cases {
            let input = directory + "/\(name).mp4", output = directory + "/\(name)-out.mp4"
            FileSystem.write(bytes, to: input)
            do {
                _ = try await FaststartRewriter.rewrite(input: input, output: output)
                Issue.record("\(name): rewritten")
            } catch let error as MP4Error {
                #expect(error.kind == .unsupported && error.message.contains(reason), "\(name): \(error)")
            }
            #expect(!FileSystem.exists(output) && FileSystem.read(input) == bytes)
        }
    }
}

/// `iloc` extents stored in this file move with the media.
@Suite struct FaststartItemLocationTests {
    typealias B = BoxBuilder

    @Test func ilocExtentsAreRelocated() async throws {
        let directory = FileSystem.temporaryDirectory()
        defer { FileSystem.removeDirectory(directory) }
        var bytes = try #require(FileSystem.read(Fixtures.sample("moov-at-end.mp4")))
        let layout = try await TopLevelScanner.scan(MemorySource(bytes))
        let moov = try #require(layout.movieBox), mdat = try #require(layout.firstMediaDataBox)
        #expect(moov.availableEnd == UInt64(bytes.count))
        let target = UInt32(mdat.offset + 8 + 1000)
        // iloc v1: offset and length 4 bytes, no base, no index; one item, construction 0,
        // data reference 0, one extent of 16 bytes at `target`.
        let iloc = B.fullBox("iloc", version: 1, [0x44, 0x00] + [0, 1] + [0, 1] + [0, 0] + [0, 0] + [0, 1] + B.u32(target) + B.u32(16))
        let meta = B.fullBox("meta", B.fullBox("hdlr", B.u32(0) + Array("pict".utf8) + [UInt8](repeating: 0, count: 13)) + iloc)
        bytes += meta
        let newSize = UInt32(moov.size) + UInt32(meta.count)
        bytes.replaceSubrange(Int(moov.offset)..<Int(moov.offset + 4), with: B.u32(newSize))
        let input = directory + "/in.mp4", output = directory + "/out.mp4"
        FileSystem.write(bytes, to: input)
        let result = try await FaststartRewriter.rewrite(input: input, output: output, options: .init(verifies: true))
        #expect(result.plan.relocatedOffsetCount == 98 + 1)
        let out = try #require(FileSystem.read(output))
        // Find the iloc in the output and read its extent offset.
        let position = try #require((0..<(out.count - 4)).first { out[$0..<($0 + 4)] == ArraySlice("iloc".utf8) })
        let field = position + 4 + 4 + 2 + 2 + 2 + 2 + 2 + 2
        let moved = Int(UInt32(out[field]) << 24 | UInt32(out[field + 1]) << 16 | UInt32(out[field + 2]) << 8 | UInt32(out[field + 3]))
        #expect(moved == Int(target) + Int(newSize))
        #expect(out[moved..<(moved + 16)] == bytes[Int(target)..<(Int(target) + 16)])
    }

    /// SIGINT, SIGTERM or SIGHUP in the middle of `mp4probe faststart` removes the temporary
    /// file before the process ends (it used to stay behind, full size, every time); the
    /// process still ends by the signal. Input: moov-at-end.mp4 with its mdat grown to 160 MB
    /// of data (not holes), so the copy takes long enough to interrupt.
    @Test(.enabled(if: Executables.mp4probe != nil, "the mp4probe executable is not built beside the tests (swift build first): the interrupt test is skipped"))
    func interruptedRewritesLeaveNoTemporaryFile() async throws {
        let executable = try #require(Executables.mp4probe)
        let directory = FileSystem.temporaryDirectory()
        defer { FileSystem.removeDirectory(directory) }
        let sample = try #require(FileSystem.read(Fixtures.sample("moov-at-end.mp4")))
        let file = try await MP4File.open(MemorySource(sample))
        let mdat = try #require(file.layout.boxes.first { $0.type == .mdat && $0.header.headerSize == 8 })
        let extra = 160 << 20
        let newSize = UInt32(mdat.size) + UInt32(extra)
        var grown = Array(sample[..<Int(mdat.offset)])
        grown += [UInt8(newSize >> 24), UInt8(newSize >> 16 & 0xFF), UInt8(newSize >> 8 & 0xFF), UInt8(newSize & 0xFF)]
        grown += sample[(Int(mdat.offset) + 4)..<Int(mdat.availableEnd)]
        grown += [UInt8](repeating: 0x5A, count: extra)
        grown += sample[Int(mdat.availableEnd)...]
        let input = directory + "/big.mp4"
        FileSystem.write(grown, to: input)
        grown = []
        var random = SeededRandom(seed: 7)
        var interrupted = 0
        for round in 0..<12 where interrupted < 4 {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = ["faststart", input, directory + "/out.mp4"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            usleep(UInt32.random(in: 30_000...90_000, using: &random))
            let signal = [SIGINT, SIGTERM, SIGHUP][round % 3]
            if process.isRunning { kill(process.processIdentifier, signal) }
            process.waitUntilExit()
            if process.terminationReason == .uncaughtSignal {
                interrupted += 1
                #expect(process.terminationStatus == signal)
            }
            let left = FileSystem.entries(directory).filter { $0 != "big.mp4" && $0 != "out.mp4" }
            #expect(left.isEmpty, "round \(round): \(left) left behind")
            try? FileManager.default.removeItem(atPath: directory + "/out.mp4")
        }
        #expect(interrupted >= 4, "only \(interrupted) signals hit a running rewrite")

        // SIGKILL cannot be caught: the next rewrite to the same destination removes the
        // temporary files of processes that are gone, and only those.
        let stale = ".out.mp4.mp4probe-2147483000-deadbeef.tmp", alive = ".out.mp4.mp4probe-1-cafe.tmp", other = ".other.mp4.mp4probe-2147483000-x.tmp"
        for name in [stale, alive, other] { FileSystem.write([1, 2, 3], to: directory + "/" + name) }
        _ = try await FaststartRewriter.rewrite(input: Fixtures.sample("moov-at-end.mp4"), output: directory + "/out.mp4")
        #expect(!FileSystem.exists(directory + "/" + stale))
        #expect(FileSystem.exists(directory + "/" + alive) && FileSystem.exists(directory + "/" + other))
    }
}
