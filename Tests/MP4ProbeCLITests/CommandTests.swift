import Foundation
import Testing
@testable import MP4ProbeCLI
import MP4TestSupport

/// Runs the CLI in-process and checks output, JSON schema and exit codes.
@Suite struct CommandTests {
    struct Result { var code: Int32; var out: String; var err: String }

    static func run(_ arguments: [String]) async -> Result {
        let out = CapturedOutput(), err = CapturedOutput()
        let code = await MP4Probe.run(arguments, output: out, errors: err)
        return Result(code: code, out: out.text.replacingOccurrences(of: Fixtures.sampleMedia + "/", with: "SampleMedia/"), err: err.text)
    }

    static func json(_ text: String) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
    }

    @Test func summaryVerdicts() async {
        let fast = await Self.run([Fixtures.sample("faststart.mp4")])
        #expect(fast.code == 0 && fast.err.isEmpty)
        #expect(fast.out.contains("Faststart:  yes — moov at 32 (2.8 KiB), before mdat at 2,958"))
        #expect(fast.out.contains("avc1.64000D") && fast.out.contains("mp4a.40.2") && fast.out.contains("320x240"))
        let end = await Self.run(["info", Fixtures.sample("moov-at-end.mp4")])
        #expect(end.out.contains("Faststart:  NO — moov at end (offset 79,297, 2.8 KiB); players that read ranges (browsers, AVPlayer, ExoPlayer, ffmpeg) fetch moov first: an extra round trip and 2.8 KiB before the first frame; a player or server without ranges must download the whole 80.3 KiB before playback"))
    }

    /// The executable runs its command on the main thread (`MP4Probe.start`): `info` on a
    /// local file and `--version` never wait, so they start no thread at all (an async main
    /// handed the command to the concurrency runtime's worker threads: three threads, 0.3-0.6 ms
    /// of a 3-4 ms run, measured against an async-main build). Counted with strace; a shell that runs a command before its last is the control
    /// that strace sees threads and processes being made.
    @Test(.enabled(if: Executables.mp4probe != nil && Executables.find("strace") != nil && Executables.find("timeout") != nil, "needs the built mp4probe, timeout and strace (apt-get install -y strace): the start-up thread count is not checked"))
    func commandsThatNeverWaitStartNoThreads() async throws {
        let mp4probe = try #require(Executables.mp4probe), strace = try #require(Executables.find("strace")), timeout = try #require(Executables.find("timeout"))
        let directory = FileSystem.temporaryDirectory()
        defer { FileSystem.removeDirectory(directory) }
        func clones(_ command: [String]) async -> Int? {
            let trace = directory + "/trace.txt"
            // Bounded: a traced child that hangs (a shell's `wait` did) must not hang the suite.
            _ = await Executables.runOffPool(timeout, ["-s", "KILL", "30", strace, "-f", "-qq", "-e", "trace=clone,clone3,fork,vfork", "-o", trace] + command)
            guard let text = FileSystem.read(trace).map({ String(decoding: $0, as: UTF8.self) }) else { return nil }
            return text.split(separator: "\n").filter { $0.contains("clone") || $0.contains("fork") }.count
        }
        let control = await clones(["/bin/sh", "-c", "/bin/true; /bin/true"])
        #expect((control ?? 0) >= 1, "strace did not see the shell start a process: the check below would prove nothing")
        #expect(await clones([mp4probe, "info", Fixtures.sample("moov-at-end.mp4")]) == 0)
        #expect(await clones([mp4probe, "--version"]) == 0)
    }

    /// Every command's help renders as text: no escaped newline left in an option's help, no
    /// line wider than 100 columns.
    @Test func everyHelpPageRenders() async {
        let general = await Self.run(["--help"])
        for line in general.out.split(separator: "\n") { #expect(line.count <= 100, "mp4probe --help: \(line)") }
        for command in CommandTable.all {
            let name = command.spec.name
            let help = await Self.run([name, "--help"])
            #expect(help.code == 0 && (help.out.hasPrefix("Usage: mp4probe \(name)") || help.out.hasPrefix("Usage: mp4probe [\(name)]")), "\(name)")
            #expect(!help.out.contains("\\n") && !help.out.contains("\\t"), "an escape sequence in the help of \(name)")
            for line in help.out.split(separator: "\n") {
                #expect(line.count <= 100, "\(name): \(line)")
            }
        }
    }

    @Test func exitCodes() async {
        #expect(await Self.run([]).code == 2)
        #expect(await Self.run(["--help"]).code == 0)
        #expect(await Self.run(["info", "--help"]).code == 0)
        #expect(await Self.run(["boxes", "-h"]).code == 0)
        #expect(await Self.run(["info", "--bogus", Fixtures.sample("faststart.mp4")]).code == 2)
        #expect(await Self.run(["boxes", "--depth", "x", Fixtures.sample("faststart.mp4")]).code == 2)
        #expect(await Self.run(["info"]).code == 2)
        #expect(await Self.run(["frobnicate"]).code == 2)
        let missing = await Self.run([Fixtures.sample("nope.mp4")])
        #expect(missing.code == 4 && missing.err.contains("nope.mp4") && missing.out.isEmpty)
        let text = await Self.run([Fixtures.sample("malformed/not-mp4.txt")])
        #expect(text.code == 3 && text.err.contains("not-mp4.txt"))
        let deep = await Self.run([Fixtures.sample("malformed/deep-nesting-64.mp4")])
        #expect(deep.code == 5 && deep.err.contains("at byte") && deep.err.contains("moov/trak") && deep.err.contains("--max-depth"))
        #expect(await Self.run(["--max-moov-size", "1K", Fixtures.sample("faststart.mp4")]).code == 5)
        #expect(await Self.run(["info", "--max-moov-size", "lots", Fixtures.sample("faststart.mp4")]).code == 2)
        // A URL nobody listens on: an I/O error after the bounded retries.
        let refused = await Self.run(["http://127.0.0.1:1/a.mp4"])
        #expect(refused.code == 4 && refused.err.contains("gave up"), "\(refused)")
    }

    /// Strings from a file never reach a terminal raw: a tag or a handler name with escape
    /// sequences or line breaks is shown with `\u{1B}`-style escapes in text output (JSON
    /// escapes them anyway).
    @Test func controlCharactersFromTheFileAreEscaped() async throws {
        typealias B = BoxBuilder
        let hostile = "\u{1B}[31mRED\nFindings: none\u{7}"
        let ilst = B.box("ilst", B.box("©nam", B.box("data", B.u32(1) + B.u32(0) + Array(hostile.utf8))))
        let meta = B.fullBox("meta", B.fullBox("hdlr", B.u32(0) + Array("mdir".utf8) + [UInt8](repeating: 0, count: 12) + Array(hostile.utf8) + [0]) + ilst)
        let bytes = B.box("ftyp", Array("isom".utf8) + B.u32(0)) + B.box("moov", children: [B.fullBox("mvhd", B.u32(0) + B.u32(0) + B.u32(1000) + B.u32(0) + [UInt8](repeating: 0, count: 80)), B.box("udta", meta)])
        let directory = FileSystem.temporaryDirectory()
        defer { FileSystem.removeDirectory(directory) }
        FileSystem.write(bytes, to: directory + "/hostile.mp4")
        for arguments in [["info"], ["boxes"]] {
            let result = await Self.run(arguments + [directory + "/hostile.mp4"])
            #expect(!result.out.contains("\u{1B}") && !result.out.contains("\u{7}") && !result.out.contains("\nFindings: none"), "\(arguments): \(result.out)")
            #expect(result.out.contains("\\u{1B}[31mRED\\u{A}Findings: none\\u{7}"), "\(arguments): \(result.out)")
        }
    }

    @Test func infoJSONFollowsTheSchema() async throws {
        let result = await Self.run(["info", "--json", Fixtures.sample("moov-at-end.mp4")])
        let doc = try Self.json(result.out)
        #expect(doc["schemaVersion"] as? Int == 2)
        #expect((doc["tags"] as? [String: Any])?["encoder"] as? String == "Lavf59.27.100")
        #expect(doc["kind"] as? String == "progressive")
        let layout = try #require(doc["layout"] as? [String: Any])
        #expect(layout["moviePlacement"] as? String == "moov-after-mdat")
        #expect(layout["isFastStart"] as? Bool == false)
        #expect(layout["startupByteCount"] as? Int == 82215)
        let boxes = try #require(layout["boxes"] as? [[String: Any]])
        #expect(boxes.map { $0["type"] as? String ?? "" } == ["ftyp", "free", "mdat", "moov"])
        let tracks = try #require(doc["tracks"] as? [[String: Any]])
        #expect(tracks.map { $0["codecString"] as? String ?? "" } == ["avc1.64000D", "mp4a.40.2"])
        for track in tracks {
            for key in ["trackId", "kind", "codec", "timescale", "durationSeconds", "sampleCount", "language", "editList", "sampleEntries"] {
                #expect(track[key] != nil, "track lacks \(key)")
            }
        }
        let findings = try #require(doc["findings"] as? [[String: Any]])
        #expect(findings.contains { $0["id"] as? String == "not-faststart" && $0["severity"] as? String == "warning" })
        let compact = await Self.run(["info", "--json", "--compact", Fixtures.sample("moov-at-end.mp4")])
        #expect(compact.out.split(separator: "\n").count == 1)
        #expect(NSDictionary(dictionary: try Self.json(compact.out)).isEqual(to: doc))
    }

    @Test func boxTree() async throws {
        let result = await Self.run(["boxes", Fixtures.sample("faststart.mp4")])
        #expect(result.code == 0)
        #expect(result.out.contains("mdat @2958 size 79257  (media data, not read)"))
        #expect(result.out.contains("    stts @"))
        #expect(result.out.contains("trak[2]"))
        let top = await Self.run(["boxes", "--depth", "1", Fixtures.sample("faststart.mp4")])
        #expect(!top.out.contains("mvhd") && top.out.contains("child boxes"))
        let full = await Self.run(["boxes", "--full", "--entries", "2", Fixtures.sample("faststart.mp4")])
        #expect(full.out.contains("[0] sampleCount=50 sampleDelta=512"))
        #expect(full.out.contains("more entries"))
        let json = try Self.json(await Self.run(["boxes", "--json", Fixtures.sample("fragmented-sidx.mp4")]).out)
        let boxes = try #require(json["boxes"] as? [[String: Any]])
        #expect(boxes.map { $0["type"] as? String ?? "" }.prefix(4) == ["ftyp", "moov", "sidx", "sidx"])
        let sidx = try #require(boxes[2]["fields"] as? [String: Any])
        #expect(sidx["referenceCount"] as? Int == 2)  // one reference per fragment
    }

    /// Goldens: `info --json` for every sample and `boxes --json --full` for two, compared
    /// byte for byte. Record with MP4PROBE_RECORD_GOLDENS=1 swift test --filter goldens.
    @Test(arguments: Fixtures.sampleFiles)
    func goldens(name: String) async throws {
        let directory = Fixtures.packageRoot + "/Tests/MP4ProbeCLITests/Goldens"
        var cases: [(String, [String])] = [("\(name).info.json", ["info", "--json", Fixtures.sample(name)])]
        if name == "faststart.mp4" || name == "fragmented-sidx.mp4" {
            cases.append(("\(name).boxes.json", ["boxes", "--json", "--full", Fixtures.sample(name)]))
            cases.append(("\(name).boxes.txt", ["boxes", Fixtures.sample(name)]))
            cases.append(("\(name).info.txt", ["info", Fixtures.sample(name)]))
        }
        for (golden, arguments) in cases {
            let output = await Self.run(arguments).out
            let path = directory + "/" + golden
            if ProcessInfo.processInfo.environment["MP4PROBE_RECORD_GOLDENS"] != nil {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
                try output.write(toFile: path, atomically: true, encoding: .utf8)
            } else {
                let expected = try #require(try? String(contentsOfFile: path, encoding: .utf8), "missing golden \(golden)")
                #expect(output == expected, "\(golden) differs from its golden")
            }
        }
    }

    /// Listings: a track that does not exist is a usage error naming the tracks; a table that
    /// claims billions of samples is a resource limit before any output (it used to grow to
    /// 2.9 GB and abort); --range and --limit select; the streamed JSON parses and holds
    /// exactly the selected samples.
    @Test func sampleListingsAreBoundedAndStreamed() async throws {
        let missingTrack = await Self.run(["samples", Fixtures.sample("faststart.mp4"), "--track", "9"])
        #expect(missingTrack.code == 2 && missingTrack.err.contains("its tracks are 1, 2"), "\(missingTrack)")
        for format in [["--json"], []] {
            let huge = await Self.run(["samples", Fixtures.sample("malformed/stts-4-billion-samples.mp4")] + format)
            #expect(huge.code == 5 && huge.err.contains("--limit"), "\(huge.code) \(huge.err)")
            // No listing: with --json only the error document.
            if format.isEmpty { #expect(huge.out.isEmpty) } else { #expect(huge.out.hasPrefix("{\n  \"error\"") && huge.out.count < 1000, "\(huge.out)") }
        }
        let bounded = await Self.run(["samples", Fixtures.sample("malformed/stts-4-billion-samples.mp4"), "--json", "--limit", "3"])
        #expect(bounded.code == 0)
        let json = try Self.json(bounded.out)
        let tracks = try #require(json["tracks"] as? [[String: Any]])
        #expect(tracks.allSatisfy { ($0["samples"] as? [Any])?.count ?? -1 <= 3 })

        let ranged = await Self.run(["samples", Fixtures.sample("faststart.mp4"), "--json", "--compact", "--range", "10-14", "--limit", "3"])
        let rangedTracks = try #require(try Self.json(ranged.out)["tracks"] as? [[String: Any]])
        for track in rangedTracks {
            let indexes = (track["samples"] as? [[String: Any]] ?? []).compactMap { $0["index"] as? Int }
            #expect(indexes == [10, 11, 12], "\(indexes)")
        }
        let all = await Self.run(["samples", Fixtures.sample("faststart.mp4"), "--json"])
        let allTracks = try #require(try Self.json(all.out)["tracks"] as? [[String: Any]])
        #expect(allTracks.allSatisfy { ($0["samples"] as? [Any])?.count == $0["sampleCount"] as? Int })
        #expect(await Self.run(["samples", Fixtures.sample("faststart.mp4"), "--range", "5-2"]).code == 2)
        #expect(await Self.run(["samples", Fixtures.sample("faststart.mp4"), "--range", "x"]).code == 2)
    }

    /// Records the largest single write: a streamed report writes in pieces.
    final class WriteSizes: TextOutput, @unchecked Sendable {
        private let lock = NSLock()
        private var largest = 0, total = 0
        func write(_ text: String) {
            lock.lock(); defer { lock.unlock() }
            largest = max(largest, text.utf8.count)
            total += text.utf8.count
        }
        var sizes: (largest: Int, total: Int) { lock.lock(); defer { lock.unlock() }; return (largest, total) }
    }

    /// `boxes --full` streams table entries (issue 13 item 2): a 400,000-entry stsz printed as
    /// text and JSON never goes out in one piece (it used to be built whole: 497 MB of memory
    /// for the JSON of a two-hour film's tables).
    @Test func fullBoxListingsAreStreamed() async throws {
        typealias B = BoxBuilder
        let count: UInt32 = 400_000
        var sizes: [UInt8] = []
        sizes.reserveCapacity(Int(count) * 4)
        for i in 0..<count { sizes += B.u32(i % 5000 + 1) }
        let stbl = B.box("stbl", children: [B.fullBox("stsz", B.u32(0) + B.u32(count) + sizes)])
        let moov = B.box("moov", children: [B.box("trak", children: [B.box("mdia", children: [B.box("minf", children: [stbl])])])])
        let directory = FileSystem.temporaryDirectory()
        defer { FileSystem.removeDirectory(directory) }
        let path = directory + "/tables.mp4"
        FileSystem.write(B.box("ftyp", Array("isom".utf8) + B.u32(0) + Array("isom".utf8)) + moov, to: path)
        for format in [["--json", "--compact"], []] {
            let sink = WriteSizes()
            let code = await MP4Probe.run(["boxes", "--full", path] + format, output: sink, errors: CapturedOutput())
            let (largest, total) = sink.sizes
            #expect(code == 0)
            #expect(total > 2_000_000 && largest < 300_000, "\(format): \(total) bytes in pieces of at most \(largest)")
        }
    }

    /// Fragmented files (issue 15): the duration and sample counts are measured from the moofs
    /// of a local file, as ffprobe reports them (format 2.080 s; video 2.000 s, 50 samples;
    /// audio 2.080 s, 95 samples); they used to be 0.0 with "not in moov".
    @Test func fragmentedDurationsAgreeWithFFprobe() async throws {
        for name in ["fragmented.mp4", "fragmented-sidx.mp4", "fragmented-short.mp4"] {
            let doc = try Self.json(await Self.run(["info", "--json", Fixtures.sample(name)]).out)
            #expect(abs((doc["durationSeconds"] as? Double ?? 0) - 2.08) < 0.001, "\(name)")
            let tracks = try #require(doc["tracks"] as? [[String: Any]])
            #expect(tracks.map { $0["sampleCount"] as? Int } == [50, 95], "\(name)")
            #expect(tracks.map { (($0["durationSeconds"] as? Double ?? 0) * 1000).rounded() } == [2000, 2080], "\(name)")
            #expect(tracks.allSatisfy { $0["factsFromFragments"] as? Bool == true })
        }
    }

    /// A segment cut from a longer stream: mehd declares 10.96 s, the fragments hold 2.0 s
    /// (what ffprobe reports); info keeps mehd's value and says so.
    @Test(.enabled(if: Fixtures.hasCorpus, Fixtures.noCorpus)) func mehdThatTheFragmentsDoNotHoldIsReported() async throws {
        let corpus = try #require(Fixtures.sharedCorpus)
        let result = await Self.run(["info", corpus + "/valid/mp4ff__mp4__testdata__vvc_400kbps_2s.mp4"])
        #expect(result.out.contains("fragment-duration-mismatch") && result.out.contains("hold 2.0 s"), "\(result.out)")
    }

    /// Every report of every command on every malformed sample, in this process: a trap in an
    /// output path (the CLI fuzzing found `samples` converting a 1.5e14 s time to an integer)
    /// would end the test run.
    @Test(arguments: Fixtures.malformedSampleFiles)
    func everyReportSurvivesTheMalformedSamples(name: String) async {
        let path = Fixtures.sample("malformed/" + name)
        for arguments in [["info"], ["info", "--json"], ["boxes", "--full", "--entries", "50"], ["boxes", "--json", "--full", "--entries", "50"],
                          ["samples", "--limit", "50"], ["samples", "--json", "--limit", "50"], ["seek", "--json"], ["faststart", "--dry-run", "--json"],
                          ["check", "--format", "jsonl", "--max-keyframe-interval", "1"]] {
            var full = arguments
            if arguments.first == "seek" { full.insert(contentsOf: [path, "0.5"], at: 1) } else { full.append(path) }
            let result = await Self.run(full)
            #expect([0, 1, 2, 3, 4, 5, 6].contains(result.code), "\(full): exit \(result.code)")
        }
    }
}
