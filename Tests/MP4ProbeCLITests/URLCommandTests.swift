import Foundation
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
    /// A fragmented file with a segment index, over HTTP (issue 15): `info` takes the fragments
    /// from the sidx instead of walking every moof header (15 fragments cost 15 requests
    /// before): at most 3 requests and moov + 128 KiB of body. samples, seek and check scan the
    /// fragments they need and answer exactly as on the local file.
    @Test(.requires("nginx", "ffmpeg"), .hangGuard) func fragmentedFilesWithAnIndexCostFewRequests() async throws {
        let directory = FileSystem.temporaryDirectory()
        defer { FileSystem.removeDirectory(directory) }
        let local = directory + "/indexed.mp4"
        let ffmpeg = try #require(Executables.find("ffmpeg"))
        _ = await Executables.runOffPool(ffmpeg, ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=s=320x240:r=25:d=30", "-f", "lavfi", "-i", "sine=d=30",
                                        "-c:v", "libx264", "-preset", "ultrafast", "-b:v", "500k", "-g", "50", "-c:a", "aac",
                                        "-movflags", "+frag_keyframe+empty_moov+default_base_moof+global_sidx", local])
        let size = try #require(FileSystem.read(local)).count
        #expect(size > 1_000_000, "the film should span many 64 KiB windows")
        let nginx = try #require(NginxServer.start(root: directory))
        defer { nginx.stop() }
        let url = nginx.baseURL + "/indexed.mp4"
        func requests(_ err: String) -> Int? {
            let words = err.split(separator: " ")
            return words.firstIndex(of: "HTTP").flatMap { $0 > 0 ? Int(words[$0 - 1]) : nil }
        }
        func bodyBytes(_ err: String) -> Int? {
            let words = err.split(separator: " ")
            return words.firstIndex(of: "body").flatMap { $0 > 0 ? Int(words[$0 - 1]) : nil }
        }
        let remote = await CommandTests.run(["info", "--json", "--stats", url])
        #expect(remote.code == 0, "\(remote)")
        let doc = try CommandTests.json(remote.out)
        let moovSize = try #require(((doc["layout"] as? [String: Any])?["movieBox"] as? [String: Any])?["size"] as? Int)
        let count = try #require(requests(remote.err)), body = try #require(bodyBytes(remote.err))
        #expect(count <= 3, "\(remote.err)")
        #expect(body <= moovSize + 128 * 1024, "\(remote.err)")
        #expect(doc["kind"] as? String == "fragmented")
        let localDoc = try CommandTests.json(await CommandTests.run(["info", "--json", local]).out)
        let remoteSeconds = try #require(doc["durationSeconds"] as? Double), localSeconds = try #require(localDoc["durationSeconds"] as? Double)
        #expect(abs(remoteSeconds - localSeconds) < 0.05, "sidx says \(remoteSeconds) s, the fragments hold \(localSeconds) s")
        // What needs the fragments reads them, and agrees with the local file.
        func withoutName(_ text: String) -> String { text.replacingOccurrences(of: url, with: "F").replacingOccurrences(of: local, with: "F") }
        for arguments in [["samples", "--json"], ["seek", "--json", "F", "20"], ["check"]] {
            let remoteRun = await CommandTests.run(arguments.contains("F") ? arguments.map { $0 == "F" ? url : $0 } : arguments + [url])
            let localRun = await CommandTests.run(arguments.contains("F") ? arguments.map { $0 == "F" ? local : $0 } : arguments + [local])
            #expect(remoteRun.code == localRun.code && localRun.code == 0, "\(arguments): \(remoteRun)")
            #expect(withoutName(remoteRun.out) == withoutName(localRun.out), "\(arguments)")
        }
    }

    /// A fragmented film without an index (`frag_keyframe+empty_moov`: what live recorders and
    /// MediaRecorder write), over HTTP: `info` reads the head and the end, not every `moof`
    /// (issue 43: 301 requests and 19.7 MB for a 300-fragment film, and no duration). The
    /// duration is the last fragment's `tfdt` plus its samples: the local file's, which walks
    /// them all.
    @Test(.requires("nginx", "ffmpeg"), .hangGuard) func aFragmentedFilmWithoutAnIndexIsProbedInFewRequests() async throws {
        let directory = FileSystem.temporaryDirectory()
        defer { FileSystem.removeDirectory(directory) }
        let local = directory + "/recorded.mp4"
        let ffmpeg = try #require(Executables.find("ffmpeg"))
        _ = await Executables.runOffPool(ffmpeg, ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=s=320x240:r=25:d=40", "-f", "lavfi", "-i", "sine=d=40",
                                        "-c:v", "libx264", "-preset", "ultrafast", "-b:v", "800k", "-g", "25", "-c:a", "aac",
                                        "-movflags", "+frag_keyframe+empty_moov", local])
        let nginx = try #require(NginxServer.start(root: directory))
        defer { nginx.stop() }
        let url = nginx.baseURL + "/recorded.mp4"
        let before = nginx.requests(containing: "recorded.mp4").count
        let remote = await CommandTests.run(["info", "--json", url])
        #expect(remote.code == 0, "\(remote)")
        let requests = nginx.requests(containing: "recorded.mp4").count - before
        #expect(requests <= 4, "\(requests) requests")
        let doc = try CommandTests.json(remote.out)
        let localDoc = try CommandTests.json(await CommandTests.run(["info", "--json", local]).out)
        #expect((localDoc["layout"] as? [String: Any])?["isFragmented"] as? Bool == true)
        let remoteSeconds = try #require(doc["durationSeconds"] as? Double), localSeconds = try #require(localDoc["durationSeconds"] as? Double)
        #expect(abs(remoteSeconds - localSeconds) < 0.001, "the last fragment says \(remoteSeconds) s, all of them \(localSeconds) s")
        #expect((doc["layout"] as? [String: Any])?["isFastStart"] as? Bool == true)
        let text = await CommandTests.run(["info", url])
        #expect(text.out.contains("from the last movie fragment") && text.out.contains("not walked over the network"), "\(text.out)")
    }

    /// `cache ls` (issue 46 item 3): a header, then an entry a line, most recently used first,
    /// with the seconds that play from the start, the last use and whether it was preloaded and
    /// not played; `--json` carries the same.
    @Test(.requires("nginx"), .hangGuard) func theCacheListingSaysWhatPlays() async throws {
        let root = FileSystem.temporaryDirectory(), cache = FileSystem.temporaryDirectory()
        defer { FileSystem.removeDirectory(root); FileSystem.removeDirectory(cache) }
        for name in ["moov-at-end.mp4", "faststart.mp4"] { FileSystem.write(try #require(FileSystem.read(Fixtures.sample(name))), to: root + "/" + name) }
        let nginx = try #require(NginxServer.start(root: root))
        defer { nginx.stop() }
        #expect(await CommandTests.run(["fetch", nginx.baseURL + "/moov-at-end.mp4", "--cache", cache, "--seconds", "3"]).code == 0)
        try await Task.sleep(for: .milliseconds(20))
        #expect(await CommandTests.run(["fetch", nginx.baseURL + "/faststart.mp4", "--cache", cache, "--all"]).code == 0)
        let listed = await CommandTests.run(["cache", "ls", cache])
        let lines = listed.out.split(separator: "\n").map(String.init)
        #expect(lines.count == 3, "\(listed.out)")
        #expect(lines.first?.hasPrefix("STATE") == true && lines.first?.contains("PLAYABLE") == true, "\(listed.out)")
        // Most recently used first: the whole film, then the preloaded one.
        #expect(lines.dropFirst().first?.hasPrefix("complete") == true && lines.dropFirst().first?.hasSuffix("faststart.mp4") == true, "\(listed.out)")
        let preloaded = try #require(lines.last)
        #expect(preloaded.contains(" yes ") && preloaded.hasSuffix("moov-at-end.mp4"), "\(preloaded)")
        let seconds = preloaded.split(separator: " ").first { $0.contains(".") && Double($0) != nil }.flatMap { Double($0) } ?? 0
        let json = await CommandTests.run(["cache", "ls", "--json", cache])
        let entries = try #require(try JSONSerialization.jsonObject(with: Data(json.out.utf8)) as? [[String: Any]])
        #expect(entries.count == 2)
        // The sample is a few seconds long: what plays of it is what `cache stat` says.
        let playable = try #require(entries.last?["playableSeconds"] as? Double)
        #expect(entries.last?["preloaded"] as? Bool == true && playable > 0, "\(entries)")
        #expect(abs(seconds - playable) < 0.06, "\(preloaded) against \(playable)")
        let stat = await CommandTests.run(["cache", "stat", cache, nginx.baseURL + "/moov-at-end.mp4"])
        #expect(stat.out.contains("playable: \(String(format: "%.2f", playable)) s"), "\(stat.out)")
        #expect(entries.first?["preloaded"] as? Bool == false)
    }

    /// docs/cache.md's promise (issue 16): after `fetch --all`, the cache answers with the
    /// origin stopped: no request, exit 0 (it used to give up after 3 retries, exit 4).
    @Test(.requires("nginx"), .hangGuard) func aFilledCacheWorksWithTheOriginDown() async throws {
        let root = FileSystem.temporaryDirectory(), cache = FileSystem.temporaryDirectory()
        defer { FileSystem.removeDirectory(root); FileSystem.removeDirectory(cache) }
        FileSystem.write(try #require(FileSystem.read(Fixtures.sample("moov-at-end.mp4"))), to: root + "/film.mp4")
        let nginx = try #require(NginxServer.start(root: root))
        let url = nginx.baseURL + "/film.mp4"
        #expect(await CommandTests.run(["fetch", url, "--cache", cache, "--all"]).code == 0)
        let online = await CommandTests.run(["info", url, "--cache", cache])
        nginx.stop()
        try await Task.sleep(for: .milliseconds(300))
        let offline = await CommandTests.run(["info", url, "--cache", cache, "--stats"])
        #expect(offline.code == 0, "\(offline)")
        #expect(offline.err.contains("0 HTTP requests"), "\(offline.err)")
        #expect(offline.out == online.out)
        #expect(await CommandTests.run(["seek", url, "1", "--cache", cache]).code == 0)
        // Asking the origin every time (max age 0), with it down: the entry is used as it is.
        #expect(await CommandTests.run(["info", url, "--cache", cache, "--cache-max-age", "0", "--timeout", "2"]).code == 0)
    }

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
