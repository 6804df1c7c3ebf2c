import Foundation
import Testing
import MP4Core
@testable import MP4ProbeCLI
import MP4TestSupport

/// Every command with each of its flags, on truncated and mutated films: an input problem is
/// exit 3 (or 6, a rewrite refused) with its reason, never exit 70 ("a bug in mp4probe"), and
/// never a trap (issue 62: `faststart --verify` of a film cut by `head -c` said "internal
/// error", exit 70, found by a user, not by search).
@Suite struct CommandFuzzTests {
    /// The invocations tried on each input; `IN` and `OUT` are replaced by paths.
    static let invocations: [[String]] = [
        ["info", "IN"], ["info", "IN", "--json"], ["boxes", "IN", "--full"], ["boxes", "IN", "--json"],
        ["samples", "IN", "--json"], ["seek", "IN", "1.5"], ["seek", "IN", "0", "--duration", "2", "--json"],
        ["check", "IN"], ["check", "--conformance", "IN"], ["check", "--format", "junit", "IN"],
        ["inspect", "IN", "-o", "OUT.html"],
        ["faststart", "IN", "OUT"], ["faststart", "--verify", "IN", "OUT"], ["faststart", "--drop-free", "--verify", "IN", "OUT"],
        ["faststart", "--dry-run", "IN", "--json"], ["faststart", "--in-place", "IN"], ["faststart", "--in-place", "--atomic", "--verify", "IN"],
    ]

    /// Cuts and mutations of `bytes`: cut at a few places (inside a header, a third in, near
    /// the end), and seeded byte flips in the first 4 KiB (headers) and anywhere.
    static func mutants(of bytes: [UInt8], seed: UInt64) -> [[UInt8]] {
        var random = SeededRandom(seed: seed)
        var result: [[UInt8]] = []
        for cut in [40, bytes.count / 3, bytes.count - 9] where cut > 0 && cut < bytes.count {
            result.append(Array(bytes[0..<cut]))
        }
        for window in [min(bytes.count, 4096), bytes.count] where window > 0 {
            for _ in 0..<2 {
                var copy = bytes
                for _ in 0..<4 { copy[Int.random(in: 0..<window, using: &random)] ^= UInt8.random(in: 1...255, using: &random) }
                result.append(copy)
            }
        }
        return result
    }

    @Test func noInputMakesAnInternalError() async throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-command-fuzz")
        defer { FileSystem.removeDirectory(directory) }
        // Under AddressSanitizer a third of the samples, as the robustness sweeps run a third
        // of their mutants there (the plain suite runs them all).
        let names = Fixtures.sampleFiles.enumerated().filter { !Executables.underSanitizer || $0.offset % 3 == 0 }.map(\.element)
        var runs = 0, failures: [String] = []
        for (n, name) in names.enumerated() {
            let bytes = try #require(FileSystem.read(Fixtures.sample(name)))
            for (m, mutant) in Self.mutants(of: bytes, seed: UInt64(n) + 1).enumerated() {
                for invocation in Self.invocations {
                    let input = directory + "/in-\(n)-\(m).mp4", output = directory + "/out-\(n)-\(m).mp4"
                    _ = FileSystem.write(mutant, to: input)
                    let arguments = invocation.map { $0 == "IN" ? input : $0 == "OUT" ? output : $0 == "OUT.html" ? output + ".html" : $0 }
                    let result = await CommandTests.run(arguments)
                    runs += 1
                    if result.code == 70 || result.err.contains("internal error") {
                        failures.append("\(name) mutant \(m) (\(mutant.count) bytes): \(invocation.joined(separator: " ")): exit \(result.code): \(result.err.prefix(300))")
                    }
                    for path in [input, output, output + ".html"] { try? FileManager.default.removeItem(atPath: path) }
                }
            }
        }
        #expect(runs > (Executables.underSanitizer ? 500 : 1500), "\(runs) runs")
        #expect(failures.isEmpty, "\(failures.count) of \(runs) runs:\n\(failures.prefix(20).joined(separator: "\n"))")
    }
}
