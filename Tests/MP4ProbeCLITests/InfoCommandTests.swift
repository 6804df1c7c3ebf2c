import Foundation
import Testing
import MP4Core
import MP4IO
@testable import MP4ProbeCLI
import MP4TestSupport

/// `info` is a rendering of the library's facts (issue 34): for every file of SampleMedia and
/// the shared corpus, what `MP4File.open` gives a Swift caller, rendered as `info --json`
/// renders it, is byte for byte what `info --json` prints, read statistics included (so
/// `info` makes no read of its own). A file the library cannot open is one `info` refuses.
@Suite struct InfoCommandTests {
    static var files: [String] {
        let directories = [Fixtures.sampleMedia, Fixtures.sampleMedia + "/malformed"]
            + (Fixtures.sharedCorpus.map { [$0 + "/valid", $0 + "/malformed"] } ?? [])
        return directories.flatMap { directory in FileSystem.list(directory).sorted().map { directory + "/" + $0 } }
            .filter { !FileSystem.isDirectory($0) }
    }

    @Test func infoPrintsTheLibrarysFacts() async throws {
        var compared = 0, refused = 0
        for path in Self.files {
            let out = CapturedOutput(), err = CapturedOutput()
            let code = await MP4Probe.run(["info", "--json", path], output: out, errors: err)
            let opened: MP4File
            do {
                opened = try await MP4File.open(try FileSource(path: path))
            } catch {
                #expect(code != 0, "\(path): the library failed (\(error)), info printed \(out.text.prefix(200))")
                refused += 1
                continue
            }
            #expect(code == 0, "\(path): info failed (\(err.text)) where the library opened it")
            #expect(out.text == InfoReport.json(opened).rendered(pretty: true) + "\n", "\(path): info --json differs from the library's facts")
            compared += 1
        }
        print("info --json equals the library's facts for \(compared) files (\(refused) refused by both)")
        #expect(compared >= 20)
    }
}
