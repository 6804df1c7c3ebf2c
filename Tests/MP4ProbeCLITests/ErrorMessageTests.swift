import Foundation
import Testing
import MP4ProbeCLI
import MP4TestSupport

/// Every command reports failures through one renderer; these goldens pin what a person reads
/// for the commonest failures (the file, what is wrong, where, what to do) and the exit code.
/// Record with MP4PROBE_RECORD_GOLDENS=1 swift test --filter ErrorMessageTests.
@Suite struct ErrorMessageTests {
    /// Command lines, with `SampleMedia/` standing for the package's sample directory.
    static let cases: [[String]] = [
        ["SampleMedia/malformed/not-mp4.txt"],
        ["SampleMedia/malformed/not-mp4.png"],
        ["SampleMedia/malformed/empty.mp4"],
        ["SampleMedia/nope.mp4"],
        ["SampleMedia/malformed"],
        ["SampleMedia/malformed/deep-nesting-64.mp4"],
        ["--max-moov-size", "1K", "SampleMedia/faststart.mp4"],
        ["seek", "SampleMedia/faststart.mp4", "99"],
        ["samples", "SampleMedia/faststart.mp4", "--track", "9"],
        ["samples", "SampleMedia/malformed/stts-4-billion-samples.mp4"],
        ["info", "--bogus", "SampleMedia/faststart.mp4"],
        ["info", "-"],
        ["frobnicate"],
        ["faststart", "SampleMedia/moov-at-end.mp4", "-"],
        ["faststart", "SampleMedia/malformed/not-mp4.txt", "/nonexistent-dir/out.mp4"],
        ["check", "--policy", "SampleMedia/README.md", "SampleMedia/faststart.mp4"],
        ["--json", "--compact", "SampleMedia/malformed/not-mp4.txt"],
        ["--json", "--compact", "SampleMedia/nope.mp4"],
        ["serve", "--preload-jobs", "0"],
    ]

    static func transcript() async -> String {
        var text = ""
        for arguments in cases {
            let resolved = arguments.map { $0.hasPrefix("SampleMedia") ? Fixtures.sampleMedia + $0.dropFirst("SampleMedia".count) : $0 }
            let out = CapturedOutput(), err = CapturedOutput()
            let code = await MP4Probe.run(resolved, output: out, errors: err)
            text += "$ mp4probe " + arguments.joined(separator: " ") + "\n"
            if arguments.contains("--json") { text += out.text }
            text += err.text + "exit \(code)\n\n"
        }
        return text.replacingOccurrences(of: Fixtures.sampleMedia, with: "SampleMedia")
    }

    @Test func messagesMatchTheGolden() async throws {
        let path = Fixtures.packageRoot + "/Tests/MP4ProbeCLITests/Goldens/errors.txt"
        let text = await Self.transcript()
        if ProcessInfo.processInfo.environment["MP4PROBE_RECORD_GOLDENS"] != nil {
            try text.write(toFile: path, atomically: true, encoding: .utf8)
            return
        }
        let expected = try #require(try? String(contentsOfFile: path, encoding: .utf8), "missing golden errors.txt")
        #expect(text == expected, "error messages differ from Goldens/errors.txt:\n\(text)")
    }

    /// What no message may contain: Swift type or case names, the old "[path @ offset]" syntax.
    @Test func messagesSpeakTheUsersLanguage() async {
        let text = await Self.transcript()
        for leak in ["notMP4:", "limitExceeded:", "invalidRequest:", "ParseLimits", "DecodingError", "NSURLErrorDomain", "..<", "SeekPlanner"] {
            #expect(!text.contains(leak), "\(leak) in:\n\(text)")
        }
    }
}
