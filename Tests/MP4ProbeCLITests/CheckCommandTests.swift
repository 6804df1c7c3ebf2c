import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif
import Testing
@testable import MP4ProbeCLI
import MP4Core
import MP4TestSupport

/// `mp4probe check`: exit codes, every output format validated, policy files, directories
/// and `--fix`.
@Suite struct CheckCommandTests {
    static let fast = Fixtures.sample("faststart.mp4"), slow = Fixtures.sample("moov-at-end.mp4")

    @Test func exitCodes() async {
        #expect(await CommandTests.run(["check", Self.fast]).code == 0)
        #expect(await CommandTests.run(["check", Self.fast, Self.slow]).code == 1)
        #expect(await CommandTests.run(["check", Self.slow, "--allow-moov-at-end"]).code == 0)
        #expect(await CommandTests.run(["check", Self.fast, "/nonexistent/x.mp4"]).code == 4)
        #expect(await CommandTests.run(["check"]).code == 2)
        #expect(await CommandTests.run(["check", Self.fast, "--format", "xml"]).code == 2)
        #expect(await CommandTests.run(["check", Self.fast, "--max-keyframe-interval", "soon"]).code == 2)
        #expect(await CommandTests.run(["check", Self.fast, "--min-resolution", "big"]).code == 2)
        #expect(await CommandTests.run(["check", Self.fast, "--policy", "/nonexistent.json"]).code == 2)
    }

    /// `--conformance` fails ffmpeg's fragmented film on its `next_track_ID` (ffmpeg counts only
    /// tracks with samples in `moov`), which the default check passes; `--explain` prints the
    /// rule and its section, and refuses an unknown id.
    @Test func conformanceAndExplain() async {
        let fragmented = Fixtures.sample("fragmented.mp4")
        #expect(await CommandTests.run(["check", fragmented]).code == 0)
        let strict = await CommandTests.run(["check", "--conformance", fragmented, Self.fast])
        #expect(strict.code == 1 && strict.out.contains("error iso-next-track-id:") && strict.out.contains("§8.2.2.3"), "\(strict.out)")
        #expect(strict.out.contains("PASS  SampleMedia/faststart.mp4"), "\(strict.out)")
        let explained = await CommandTests.run(["check", "--explain", "iso-next-track-id"])
        #expect(explained.code == 0 && explained.out.contains("§8.2.2.3") && explained.out.contains("what to do:"), "\(explained.out)")
        #expect(await CommandTests.run(["check", "--explain", "not-faststart"]).code == 0)
        #expect(await CommandTests.run(["check", "--explain", "no-such-finding"]).code == 2)
    }

    /// `--preset`: ffmpeg's defaults fail YouTube's rules (three B-frames, edit lists) and pass
    /// Mux's; the flags apply on top; an unknown preset is a usage error; docs/check.md lists
    /// every rule of every preset.
    @Test func presets() async throws {
        let youtube = await CommandTests.run(["check", "--preset", "youtube", Self.fast])
        #expect(youtube.code == 1 && youtube.out.contains("error b-frames:") && youtube.out.contains("error edit-list:"), "\(youtube.out)")
        #expect(await CommandTests.run(["check", "--preset", "mux", Self.fast]).code == 0)
        #expect(await CommandTests.run(["check", "--preset", "mux", "--max-duration", "1", Self.fast]).code == 1)
        #expect(await CommandTests.run(["check", "--preset", "tiktok", Self.fast]).code == 2)
        // No platform requires moov at the front (YouTube and Cloudflare recommend it, Mux does
        // not say): a moov-at-end film passes their presets with a warning (it failed three),
        // and still fails the default check.
        for preset in ["youtube", "mux", "cloudflare"] {
            let slow = await CommandTests.run(["check", "--preset", preset, "--format", "jsonl", Self.slow])
            let findings = try #require(try CommandTests.json(slow.out.split(separator: "\n").first.map(String.init) ?? "")["findings"] as? [[String: Any]])
            let faststart = findings.filter { $0["id"] as? String == "not-faststart" }.compactMap { $0["severity"] as? String }
            #expect(faststart == ["warning"], "\(preset): \(slow.out)")
        }
        #expect(await CommandTests.run(["check", "--preset", "mux", Self.slow]).code == 0)
        #expect(await CommandTests.run(["check", Self.slow]).code == 1)
        let docs = String(decoding: try #require(FileSystem.read(Fixtures.packageRoot + "/docs/check.md")), as: UTF8.self)
        for preset in CheckPreset.allCases {
            for rule in preset.rules {
                #expect(docs.contains("| `\(preset.rawValue)` | `\(rule.key)` | `\(rule.value)` |"), "docs/check.md lacks \(preset.rawValue) \(rule.key)")
            }
        }
    }

    @Test func textOutput() async {
        let result = await CommandTests.run(["check", Self.fast, Self.slow])
        let lines = result.out.split(separator: "\n").map(String.init)
        #expect(lines.first?.hasPrefix("PASS  SampleMedia/faststart.mp4  (faststart, 2.0 s, avc1.64000D+mp4a.40.2") == true, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("FAIL  SampleMedia/moov-at-end.mp4") })
        #expect(lines.contains { $0.contains("error not-faststart:") && $0.contains("move moov to the front") })
        // The command that fixes it comes from the tool, not from the core's message.
        #expect(lines.contains { $0.contains("fix: mp4probe faststart --in-place") })
        #expect(lines.last == "2 files: 1 passed, 1 failed")
    }

    @Test func jsonFormatsFollowTheSchema() async throws {
        let doc = try CommandTests.json(await CommandTests.run(["check", "--format", "json", Self.fast, Self.slow, "--max-keyframe-interval", "2"]).out)
        #expect(Set(doc.keys) == ["schemaVersion", "policy", "files", "summary"])
        let files = try #require(doc["files"] as? [[String: Any]])
        #expect(files.map { $0["status"] as? String } == ["pass", "fail"])
        for file in files {
            #expect(Set(file.keys) == ["name", "status", "fixed", "metrics", "findings"])
            let metrics = try #require(file["metrics"] as? [String: Any])
            #expect(Set(metrics.keys) == ["fileSize", "kind", "majorBrand", "faststart", "startupBytes", "durationSeconds", "codecs", "width", "height", "maxKeyframeInterval", "interleaveSeconds", "interleaveBytes", "samplesChecked"])
        }
        let findings = try #require(files[1]["findings"] as? [[String: Any]])
        #expect(findings.first?["id"] as? String == "not-faststart" && findings.first?["severity"] as? String == "error")
        #expect((doc["summary"] as? [String: Any])?["failed"] as? Int == 1)
        #expect((doc["policy"] as? [String: Any])?["maxKeyframeInterval"] as? Double == 2)
        // jsonl: one document per line, in input order.
        let lines = await CommandTests.run(["check", "--format", "jsonl", "--jobs", "2", Self.slow, Self.fast, Self.slow]).out.split(separator: "\n")
        #expect(lines.count == 3)
        let names = try lines.map { try CommandTests.json(String($0))["name"] as? String }
        #expect(names == ["SampleMedia/moov-at-end.mp4", "SampleMedia/faststart.mp4", "SampleMedia/moov-at-end.mp4"])
    }

    final class JUnitCounter: NSObject, XMLParserDelegate {
        var testcases = 0, failures = 0, errors = 0
        var declared: [String: String] = [:]
        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
            switch name {
            case "testsuite": declared = attributes
            case "testcase": testcases += 1
            case "failure": failures += 1
            case "error": errors += 1
            default: break
            }
        }
    }

    @Test func junitIsWellFormedAndCounts() async throws {
        let text = await CommandTests.run(["check", "--format", "junit", Self.fast, Self.slow, "/nonexistent/a&b<c>.mp4"]).out
        let parser = XMLParser(data: Data(text.utf8))
        let counter = JUnitCounter()
        parser.delegate = counter
        #expect(parser.parse(), "not well-formed: \(String(describing: parser.parserError))\n\(text)")
        #expect(counter.testcases == 3 && counter.failures == 1 && counter.errors == 1)
        #expect(counter.declared["tests"] == "3" && counter.declared["failures"] == "1" && counter.declared["errors"] == "1")
        // A line break in a file name survives an attribute (a literal one reads back as a space).
        let newline = await CommandTests.run(["check", "--format", "junit", "/nonexistent/a\nb.mp4"]).out
        #expect(newline.contains("name=\"/nonexistent/a&#10;b.mp4\""), "\(newline)")
        // A file with two errors is one testcase with a <failure> for each (they were one).
        let two = await CommandTests.run(["check", "--format", "junit", Self.slow, "--max-keyframe-interval", "0.5"]).out
        let twoCounter = JUnitCounter()
        let twoParser = XMLParser(data: Data(two.utf8))
        twoParser.delegate = twoCounter
        #expect(twoParser.parse() && twoCounter.testcases == 1 && twoCounter.failures == 2, "\(two)")
        #expect(two.contains("<failure type=\"not-faststart\"") && two.contains("<failure type=\"keyframe-interval\""), "\(two)")
    }

    @Test func githubAnnotations() async throws {
        let text = await CommandTests.run(["check", "--format", "github", Self.slow, "--max-keyframe-interval", "0.5"]).out
        let annotations = text.split(separator: "\n").filter { $0.hasPrefix("::") }
        #expect(annotations.count == 2)
        let pattern = try NSRegularExpression(pattern: "^::(error|warning) file=[^,:]+,title=[^,:]+::[^\\r\\n]+$")
        for line in annotations.map(String.init) {
            #expect(pattern.firstMatch(in: line, range: NSRange(line.startIndex..., in: line)) != nil, "\(line)")
        }
        #expect(annotations[0].contains("title=mp4probe not-faststart::"))
        #expect(CheckReport.githubEscape("a,b:c%\n", property: true) == "a%2Cb%3Ac%25%0A")
    }

    @Test func policyFileDirectoriesAndFix() async throws {
        let directory = FileSystem.temporaryDirectory()
        defer {
            FileSystem.removeDirectory(directory + "/sub")
            FileSystem.removeDirectory(directory)
        }
        try FileManager.default.createDirectory(atPath: directory + "/sub", withIntermediateDirectories: true)
        FileSystem.write(try #require(FileSystem.read(Self.slow)), to: directory + "/sub/late.mp4")
        FileSystem.write(try #require(FileSystem.read(Self.fast)), to: directory + "/early.mp4")
        FileSystem.write([1, 2, 3], to: directory + "/notes.txt")
        FileSystem.write(#"{"maxKeyframeInterval": 0.5, "allowCodecs": ["avc1", "mp4a"]}"#.utf8.map { $0 }, to: directory + "/policy.json")
        // Directory recursion with the default extensions: two videos, not the .txt or .json.
        let listed = try CommandTests.json(await CommandTests.run(["check", "--format", "json", directory]).out)
        #expect((listed["files"] as? [[String: Any]])?.compactMap { $0["name"] as? String } == [directory + "/early.mp4", directory + "/sub/late.mp4"])
        let excluded = await CommandTests.run(["check", directory, "--exclude", "sub/*", "--exclude", "*/sub/*"])
        #expect(excluded.code == 0 && excluded.out.hasSuffix("1 file: 1 passed, 0 failed\n"), "\(excluded.out)")
        // The policy file applies; a flag overrides it.
        let strict = await CommandTests.run(["check", directory + "/early.mp4", "--policy", directory + "/policy.json"])
        #expect(strict.code == 1 && strict.out.contains("keyframe-interval"))
        #expect(await CommandTests.run(["check", directory + "/early.mp4", "--policy", directory + "/policy.json", "--max-keyframe-interval", "5"]).code == 0)
        FileSystem.write(#"{"maxKeyframeInterval": "soon"}"#.utf8.map { $0 }, to: directory + "/bad.json")
        #expect(await CommandTests.run(["check", directory + "/early.mp4", "--policy", directory + "/bad.json"]).code == 2)
        // A typo is a usage error with its position, not a rule switched off.
        FileSystem.write(#"{"maxKeyframeIntervall": 0.5}"#.utf8.map { $0 }, to: directory + "/typo.json")
        let typo = await CommandTests.run(["check", directory + "/early.mp4", "--policy", directory + "/typo.json"])
        #expect(typo.code == 2 && typo.err.contains("line 1, column 2") && typo.err.contains("did you mean") && !typo.err.contains("DecodingError"), "\(typo)")
        // --fix rewrites the layout-only failure in place, then it passes.
        let fixed = await CommandTests.run(["check", directory, "--fix"])
        #expect(fixed.code == 0 && fixed.out.contains("fixed: rewritten to faststart") && fixed.out.contains("1 fixed"), "\(fixed.out)")
        #expect(await CommandTests.run(["check", directory + "/sub/late.mp4"]).code == 0)
        #expect(FileSystem.entries(directory + "/sub") == ["late.mp4"])
    }

    /// No files to check (an empty directory, a directory of other files, a glob that matched
    /// nothing) is a usage error, never a pass.
    /// Scale-out (issue 20 item 6): two shards over a folder, their JSONL lines together, are
    /// exactly one unsharded run's lines (each file once); a list file gives the same records.
    @Test func shardsTogetherEqualOneRun() async throws {
        let all = await CommandTests.run(["check", "--format", "jsonl", Fixtures.sampleMedia])
        let first = await CommandTests.run(["check", "--format", "jsonl", "--shard", "1/2", Fixtures.sampleMedia])
        let second = await CommandTests.run(["check", "--format", "jsonl", "--shard", "2/2", Fixtures.sampleMedia])
        func lines(_ text: String) -> [String] { text.split(separator: "\n").map(String.init) }
        #expect(lines(all.out).count >= 20)
        #expect(!lines(first.out).isEmpty && !lines(second.out).isEmpty)
        #expect((lines(first.out) + lines(second.out)).sorted() == lines(all.out).sorted())
        #expect(await CommandTests.run(["check", "--shard", "3/2", Fixtures.sampleMedia]).code == 2)
        #expect(await CommandTests.run(["check", "--shard", "0/2", Fixtures.sampleMedia]).code == 2)

        let directory = FileSystem.temporaryDirectory()
        defer { FileSystem.removeDirectory(directory) }
        let names = ["faststart.mp4", "moov-at-end.mp4"]
        FileSystem.write(Array(("# uploads\n\n" + names.map { Fixtures.sample($0) }.joined(separator: "\n") + "\n").utf8), to: directory + "/list.txt")
        let listed = await CommandTests.run(["check", "--format", "jsonl", "--from-file", directory + "/list.txt"])
        let named = await CommandTests.run(["check", "--format", "jsonl"] + names.map { Fixtures.sample($0) })
        #expect(listed.code == 1 && listed.out == named.out && lines(listed.out).count == 2, "\(listed)")
        FileSystem.write([], to: directory + "/empty.txt")
        #expect(await CommandTests.run(["check", "--from-file", directory + "/empty.txt"]).code == 2)
    }

    @Test func nothingToCheckIsAUsageError() async throws {
        let directory = FileSystem.temporaryDirectory()
        defer { FileSystem.removeDirectory(directory) }
        let empty = await CommandTests.run(["check", directory])
        #expect(empty.code == 2 && empty.err.contains("no files to check"), "\(empty)")
        FileSystem.write(Array("notes".utf8), to: directory + "/notes.txt")
        #expect(await CommandTests.run(["check", directory]).code == 2)
        #expect(await CommandTests.run(["check", directory, "--include", "*.mov"]).code == 2)
    }
}
