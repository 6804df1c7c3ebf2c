import Foundation
import Testing
@testable import MP4Core
@testable import MP4IO
import MP4TestSupport

/// What a player that leaves costs the origin (issue 32 item 7): ffmpeg plays 3 s of a
/// 2 Mbit/s film at its own pace (`-re`, as a phone would read) through `serve`, from an
/// origin paced at 512 KB/s, and exits. The campaign measured 2,048 KiB more from the origin in
/// the 6 s after the player had gone. When the last reader of a fetch leaves, the fetch stops
/// within 256 KiB.
@Suite(.serialized, .hangGuard) struct PlayerLeavesTests {
    /// A 30 s film at about 2 Mbit/s, `moov` first or last.
    static func film(faststart: Bool) async throws -> [UInt8] {
        let directory = FileSystem.temporaryDirectory("mp4probe-leaves")
        defer { FileSystem.removeDirectory(directory) }
        let ffmpeg = try #require(Executables.find("ffmpeg"))
        _ = await Executables.runOffPool(ffmpeg, ["-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25",
                                                  "-f", "lavfi", "-i", "sine=frequency=440", "-t", "30", "-c:v", "mpeg4", "-b:v", "2M", "-g", "50",
                                                  "-c:a", "aac", "-b:a", "96k"] + (faststart ? ["-movflags", "+faststart"] : []) + [directory + "/film.mp4"])
        return try #require(FileSystem.read(directory + "/film.mp4"))
    }

    /// Origin bytes when ffmpeg exits and 6 s later, for a player of `url` on `origin`.
    static func play(_ url: String, origin: LoopbackHTTPServer) async -> (atExit: Int, after: Int) {
        let ffmpeg = Executables.find("ffmpeg") ?? "ffmpeg"
        _ = await Executables.runOffPool(ffmpeg, ["-v", "error", "-nostdin", "-re", "-i", url, "-t", "3", "-f", "null", "-"])
        let atExit = origin.bodyBytesSent
        try? await Task.sleep(for: .seconds(6))
        return (atExit, origin.bodyBytesSent)
    }

    @Test(.requires("ffmpeg"), .enabled(if: Executables.mp4probe != nil, "the mp4probe executable is not built beside the tests"),
          arguments: [true, false])
    func aPlayerThatLeavesCostsAtMost256KiBMore(faststart: Bool) async throws {
        let executable = try #require(Executables.mp4probe)
        let film = try await Self.film(faststart: faststart)
        let pace = LoopbackHTTPServer.Behavior.trickles(bytes: 16_000, interval: 1.0 / 32)   // 512 KB/s
        let direct = try #require(LoopbackHTTPServer(body: film, behavior: pace))
        let proxied = try #require(LoopbackHTTPServer(body: film, behavior: pace))
        defer { direct.stop(); proxied.stop() }
        let straight = await Self.play(direct.url.absoluteString, origin: direct)

        let cache = FileSystem.temporaryDirectory("mp4probe-leaves-cache")
        defer { FileSystem.removeDirectory(cache) }
        // Without the seek-aware prefetch: it is asked for, and finishes its 10 s when the player
        // leaves (serving.md); the bound is on what is fetched only for the player.
        let (proxy, base) = try await ProxyProcessTests.serve(executable, cache: cache, arguments: ["--prefetch", "0"])
        defer { proxy.terminate() }
        let through = await Self.play(ProxyProcessTests.proxied(base, proxied.url.absoluteString), origin: proxied)
        let after = through.after - through.atExit
        print("player leaves (\(faststart ? "moov first" : "moov at the end"), \(film.count) B): straight from the origin \(straight.atExit) B at exit, +\(straight.after - straight.atExit) B after; through serve \(through.atExit) B at exit, +\(after) B in the 6 s after")
        #expect(after <= 256 << 10, "the origin sent \(after) bytes after the player left")
    }
}
