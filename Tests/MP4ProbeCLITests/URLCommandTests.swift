import Testing
@testable import MP4ProbeCLI
import MP4TestSupport

/// Every read-only command takes http(s) URLs (against nginx on 127.0.0.1 when installed).
@Suite struct URLCommandTests {
    @Test(.requires("nginx")) func commandsTakeURLs() async throws {
        let base = try #require(NginxServer.sampleMedia).baseURL
        let info = await CommandTests.run(["info", "--stats", base + "/moov-at-end.mp4"])
        #expect(info.code == 0 && info.out.contains("Faststart:  NO"), "\(info)")
        #expect(info.err.contains("2 HTTP requests"), "\(info.err)")
        #expect(await CommandTests.run(["boxes", base + "/faststart.mp4"]).out.contains("moov @32"))
        #expect(await CommandTests.run(["samples", "--limit", "2", base + "/faststart.mp4"]).out.contains("0\t0\t1024\t512\t2966\t3801\tK"))
        #expect(await CommandTests.run(["seek", base + "/fragmented-short.mp4", "1.5"]).out.contains("at 00:00:01.080"))
        let check = await CommandTests.run(["check", base + "/faststart.mp4", base + "/moov-at-end.mp4", "--header", "X-Test: 1"])
        #expect(check.code == 1 && check.out.contains("PASS  \(base)/faststart.mp4") && check.out.contains("not-faststart"))
        let missing = await CommandTests.run(["info", base + "/missing.mp4"])
        #expect(missing.code == 4 && missing.err.contains("404"))
        #expect(await CommandTests.run(["info", base + "/faststart.mp4", "--header", "no-colon"]).code == 2)
    }

    /// Header injection and invalid names are usage errors (exit 2) before any request.
    @Test func headersThatWouldInjectAreUsageErrors() async {
        for header in ["X-A: a\r\nX-Injected: 1", "X-A: a\nb", "Bad Name: v"] {
            for option in ["--header", "--secret-header"] {
                let result = await CommandTests.run(["info", "http://127.0.0.1:9/x.mp4", option, header])
                #expect(result.code == 2, "\(option) \(header.debugDescription): \(result)")
            }
        }
    }

    /// `faststart URL OUT` downloads through the faststart view (moov first) and writes exactly
    /// what the local rewrite writes; `--verify` re-reads both; `--in-place URL` is a usage error.
    @Test(.requires("nginx")) func faststartFromAURLEqualsTheLocalRewrite() async throws {
        let base = try #require(NginxServer.sampleMedia).baseURL
        let directory = FileSystem.temporaryDirectory()
        defer { FileSystem.removeDirectory(directory) }
        for name in ["moov-at-end.mp4", "faststart.mp4", "fragmented.mp4"] {
            let remote = await CommandTests.run(["faststart", "--verify", "--stats", base + "/" + name, directory + "/remote-" + name])
            #expect(remote.code == 0, "\(remote)")
            let local = await CommandTests.run(["faststart", Fixtures.sample(name), directory + "/local-" + name])
            #expect(local.code == 0, "\(local)")
            #expect(FileSystem.read(directory + "/remote-" + name) == FileSystem.read(directory + "/local-" + name), "\(name)")
            if name == "moov-at-end.mp4" {
                // The head, the moov at the end, the media in one streamed request; the
                // verification reads the media once more, in one request (it used to read
                // each chunk: 20 more; "23 HTTP requests" also contains "3 HTTP requests").
                let requests = remote.err.split(separator: " ").firstIndex(of: "HTTP").flatMap { index in index > 0 ? Int(remote.err.split(separator: " ")[index - 1]) : nil }
                #expect(requests == 4, "\(remote.err)")
                #expect(remote.out.contains("verified:"), "\(remote.out)")
            }
        }
        #expect(await CommandTests.run(["faststart", "--in-place", base + "/moov-at-end.mp4"]).code == 2)
        #expect(await CommandTests.run(["faststart", Fixtures.sample("moov-at-end.mp4"), base + "/x.mp4"]).code == 2)
    }
}
