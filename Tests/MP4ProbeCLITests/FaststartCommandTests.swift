import Foundation
import Testing
@testable import MP4ProbeCLI
import MP4TestSupport
import MP4IO
import MP4Core

/// `mp4probe faststart`: arguments, exit codes, dry run, JSON, and refusals.
@Suite struct FaststartCommandTests {
    @Test func rewritesAndReports() async throws {
        let directory = FileSystem.temporaryDirectory()
        defer { FileSystem.removeDirectory(directory) }
        let output = directory + "/out.mp4"
        let result = await CommandTests.run(["faststart", Fixtures.sample("moov-at-end.mp4"), output, "--verify"])
        #expect(result.code == 0, "\(result)")
        #expect(result.out.contains("moved moov (2.8 KiB) from 79,297 to 40") && result.out.contains("98 relocated"))
        #expect(result.out.contains("verified:  faststart, 145 samples byte-identical"))
        #expect(result.err.isEmpty, "no progress line off a terminal: \(result.err)")
        let info = await CommandTests.run([output])
        #expect(info.out.contains("Faststart:  yes"))
        // Already faststart: an identical copy, exit 0.
        let copy = await CommandTests.run(["faststart", output, directory + "/copy.mp4"])
        #expect(copy.code == 0 && copy.out.contains("already faststart") && FileSystem.read(directory + "/copy.mp4") == FileSystem.read(output))
        let fragmented = await CommandTests.run(["faststart", Fixtures.sample("fragmented.mp4"), directory + "/f.mp4"])
        #expect(fragmented.code == 0 && fragmented.out.contains("is fragmented"))
    }

    @Test func dryRunWritesNothingAndPrintsThePlan() async throws {
        let directory = FileSystem.temporaryDirectory()
        defer { FileSystem.removeDirectory(directory) }
        let text = await CommandTests.run(["faststart", "--dry-run", Fixtures.sample("moov-at-end.mp4"), directory + "/out.mp4"])
        #expect(text.code == 0 && text.out.contains("would move moov") && text.out.contains("layout:    ftyp@0 free@32 moov@40 mdat@2958"))
        #expect(FileSystem.entries(directory).isEmpty)
        let json = try CommandTests.json(await CommandTests.run(["faststart", "--dry-run", "--json", Fixtures.sample("moov-at-end.mp4")]).out)
        #expect(json["verdict"] as? String == "rewrite" && json["dryRun"] as? Bool == true)
        #expect(json["relocatedOffsets"] as? Int == 98 && json["promotedToCo64"] as? Int == 0)
        #expect(json["outputSize"] as? Int == 82_215 && (json["layout"] as? [[String: Any]])?.count == 4)
        #expect(Set(json.keys) == ["schemaVersion", "input", "output", "dryRun", "method", "verdict", "inputSize", "outputSize", "moovSizeBefore", "moovSizeAfter", "relocatedOffsets", "promotedToCo64", "layout", "verifiedSamples", "notes"])
    }

    /// `--in-place` inserts space where the filesystem can (JSON `method` `insert`, the same
    /// keys as a copy plus `insertedBytes`); `--atomic` copies and renames.
    @Test func inPlaceInsertsWhereItCanAndAtomicCopies() async throws {
        let directory = FileSystem.temporaryDirectory()
        defer { FileSystem.removeDirectory(directory) }
        let original = try #require(FileSystem.read(Fixtures.sample("moov-at-end.mp4")))
        FileSystem.write(original, to: directory + "/a.mp4")
        FileSystem.write(original, to: directory + "/b.mp4")
        let inserted = try CommandTests.json(await CommandTests.run(["faststart", "--in-place", "--json", directory + "/a.mp4"]).out)
        if InPlaceFaststart.filesystemInsertsSpace(in: directory) {
            #expect(inserted["method"] as? String == "insert" && inserted["insertedBytes"] as? Int == 4096)
            #expect(Set(inserted.keys) == ["schemaVersion", "input", "output", "dryRun", "method", "verdict", "inputSize", "outputSize", "moovSizeBefore", "moovSizeAfter", "relocatedOffsets", "promotedToCo64", "insertedBytes", "layout", "verifiedSamples", "notes"])
            let text = await CommandTests.run(["faststart", "--in-place", directory + "/a.mp4"])
            #expect(text.code == 0 && text.out.contains("already faststart"))
        } else {
            print("the temporary directory's filesystem cannot insert space: --in-place copied")
            #expect(inserted["method"] as? String == "copy")
        }
        let copied = try CommandTests.json(await CommandTests.run(["faststart", "--in-place", "--atomic", "--json", directory + "/b.mp4"]).out)
        #expect(copied["method"] as? String == "copy" && copied["outputSize"] as? Int == original.count)
        #expect(await CommandTests.run(["check", directory + "/a.mp4", directory + "/b.mp4"]).code == 0)
    }

    @Test func exitCodes() async throws {
        let directory = FileSystem.temporaryDirectory()
        defer { FileSystem.removeDirectory(directory) }
        #expect(await CommandTests.run(["faststart", Fixtures.sample("moov-at-end.mp4")]).code == 2)
        #expect(await CommandTests.run(["faststart", "--in-place", "a.mp4", "b.mp4"]).code == 2)
        // A URL is read through its faststart view, but never rewritten in place or written to.
        #expect(await CommandTests.run(["faststart", "--in-place", "https://example.com/a.mp4"]).code == 2)
        #expect(await CommandTests.run(["faststart", Fixtures.sample("moov-at-end.mp4"), "https://example.com/o.mp4"]).code == 2)
        #expect(await CommandTests.run(["faststart", directory + "/missing.mp4", directory + "/o.mp4"]).code == 4)
        #expect(await CommandTests.run(["faststart", Fixtures.sample("moov-at-end.mp4"), directory + "/no/such/dir/o.mp4"]).code == 4)
        // Refused: a moov with cmov. Exit 6, nothing written.
        let ftyp = BoxBuilder.box("ftyp", Array("qt  ".utf8) + BoxBuilder.u32(0))
        let bytes = ftyp + BoxBuilder.box("mdat", [1, 2, 3]) + BoxBuilder.box("moov", children: [BoxBuilder.box("cmov")])
        FileSystem.write(bytes, to: directory + "/cmov.mov")
        let refused = await CommandTests.run(["faststart", directory + "/cmov.mov", directory + "/out.mov"])
        #expect(refused.code == 6 && refused.err.contains("refused") && refused.err.contains("cmov"), "\(refused)")
        #expect(!FileSystem.exists(directory + "/out.mov"))
        // The input as output without --in-place.
        let same = await CommandTests.run(["faststart", directory + "/cmov.mov", directory + "/cmov.mov"])
        #expect(same.code == 6 && same.err.contains("--in-place"))
        #expect(ExitCode.rewriteRefused.rawValue == 6)
    }

    /// moov-at-end.mp4 with the first `stco` entry of its first track set to `offset`.
    static func withFirstChunk(at offset: UInt32) throws -> [UInt8] {
        var bytes = try #require(FileSystem.read(Fixtures.sample("moov-at-end.mp4")))
        let stco = Array("stco".utf8)
        let at = try #require((0..<(bytes.count - 4)).first { Array(bytes[$0..<($0 + 4)]) == stco })
        // type, version and flags, entry count, then the first entry.
        bytes.replaceSubrange((at + 12)..<(at + 16), with: ByteWriter.bigEndian(UInt64(offset), width: 4))
        return bytes
    }

    /// A chunk that begins in the `free` box before `mdat`, or one that runs past the end of
    /// the file (a truncated upload), is refused as invalid input (exit 3) with the reason, by
    /// the copy, `--in-place` and `--verify` alike, and nothing is written. (The copy relocated
    /// the first chunk onto moov's bytes and exited 0; `--verify` called the second "a bug in
    /// the rewrite", exit 70.)
    @Test(arguments: [("in free", UInt32(36)), ("past the end", UInt32(82_000))])
    func chunksOutsideMediaDataAreRefused(_ name: String, _ offset: UInt32) async throws {
        let directory = FileSystem.temporaryDirectory()
        defer { FileSystem.removeDirectory(directory) }
        let input = directory + "/in.mp4"
        let bytes = try Self.withFirstChunk(at: offset)
        FileSystem.write(bytes, to: input)
        for arguments in [["faststart", input, directory + "/out.mp4"], ["faststart", "--verify", input, directory + "/out.mp4"], ["faststart", "--in-place", input]] {
            let result = await CommandTests.run(arguments)
            #expect(result.code == 3, "\(name), \(arguments): \(result)")
            #expect(result.err.contains(offset == 36 ? "outside every mdat payload" : "past the end of the file"), "\(name): \(result.err)")
            #expect(!FileSystem.exists(directory + "/out.mp4"))
            #expect(FileSystem.read(input) == bytes, "\(name): the input changed")
        }
    }

    /// A reader of a film removes the temporaries beside it that processes which are gone
    /// left (an output's, an in-place journal's: a kill before their rename), and mentions
    /// those of a running process, which it leaves. `info` and `check` (which lists each
    /// directory once). Before, a killed rewrite's journal temporary stayed for good, unseen.
    @Test(arguments: ["info", "check"])
    func readersSweepAndMentionLeftovers(_ command: String) async throws {
        let directory = FileSystem.temporaryDirectory()
        defer { FileSystem.removeDirectory(directory) }
        let film = directory + "/film.mp4"
        #expect(FileSystem.write(try #require(FileSystem.read(Fixtures.sample("faststart.mp4"))), to: film))
        // A process that is gone: one started and waited for.
        let gone = try #require(Executables.find("true").map { tool -> Int32 in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: tool)
            try? process.run()
            process.waitUntilExit()
            return process.processIdentifier
        })
        let dead = [directory + "/.film.mp4.mp4probe-\(gone)-a1.tmp", directory + "/..film.mp4.mp4probe-journal.mp4probe-\(gone)-b2.tmp"]
        let alive = directory + "/..film.mp4.mp4probe-journal.mp4probe-1-c3.tmp"
        let other = directory + "/.other.mp4.mp4probe-\(gone)-d4.tmp"
        for path in dead + [alive, other] { #expect(FileSystem.write([1, 2, 3], to: path)) }
        let result = await CommandTests.run([command, film])
        #expect(result.code == 0, "\(result)")
        for path in dead { #expect(!FileSystem.exists(path), "\(path) is still there") }
        #expect(FileSystem.exists(alive) && result.err.contains(alive) && result.err.contains("process 1, which is running"), "\(result.err)")
        #expect(FileSystem.exists(other), "a temporary of another file was removed")
    }
}
