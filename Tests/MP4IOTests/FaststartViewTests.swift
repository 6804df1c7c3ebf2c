import Foundation
import Testing
@testable import MP4Core
@testable import MP4IO
import MP4TestSupport

/// The faststart view (a plan executed lazily over a source) gives exactly the bytes the
/// rewriter writes, for every input the rewriter tests use, read whole and in random ranges.
@Suite struct FaststartViewTests {
    @Test(arguments: FaststartRewriterTests.inputs)
    func viewEqualsTheRewrittenFile(input: String) async throws {
        let directory = FileSystem.temporaryDirectory()
        defer { FileSystem.removeDirectory(directory) }
        let output = directory + "/out.mp4"
        let result: FaststartRewriter.Result
        do {
            result = try await FaststartRewriter.rewrite(input: input, output: output)
        } catch let error as MP4Error where error.kind == .unsupported {
            // Refused by the rewriter: refused by the view too.
            await #expect(throws: MP4Error.self) { _ = try await FaststartView.make(try FileSource(path: input)) }
            return
        }
        let written = try #require(FileSystem.read(output))
        let view = try await FaststartView.make(try FileSource(path: input))
        #expect(view.plan.verdict == result.plan.verdict)
        try await expectRandomRanges(of: view, equal: written, count: 50, maxLength: 70_000, seed: UInt64(written.count))
        if let validator = try await FileSource(path: input).validator() {
            #expect(try await view.validator() == validator + ";faststart-v1")
        }
    }
}
