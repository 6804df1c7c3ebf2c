import Foundation
import Testing
@testable import MP4Core
@testable import MP4IO
import MP4TestSupport

/// A fragmented film without an index (`-movflags frag_keyframe+empty_moov`: what live
/// recorders and MediaRecorder write) starts through `serve` as it starts direct (issue 43
/// item 4). ffmpeg opens such a film by reading every fragment's header, one request each;
/// through `serve` each of those followed one sequential fetch of the whole film (a reader
/// within 256 KiB of a fetch waited for it), so the first frame came after the film had
/// been fetched: 106 s for a 65 MB film from a 512 KB/s origin, 0.9 s direct.
@Suite(.serialized, .hangGuard) struct FragmentedStartTests {
    /// A 40 s film at about 2 Mbit/s in 2 s fragments (20 `moof`s about 500 KB apart: ffmpeg
    /// reads on rather than seeks over less than its socket's receive window), no `sidx`, no
    /// `mfra`.
    static func film(seconds: Int = 40, bitrate: String = "2M", keyframes: Int = 50) async throws -> [UInt8] {
        let directory = FileSystem.temporaryDirectory("mp4probe-fragmented-start")
        defer { FileSystem.removeDirectory(directory) }
        let ffmpeg = try #require(Executables.find("ffmpeg"))
        _ = await Executables.runOffPool(ffmpeg, ["-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25",
                                                  "-f", "lavfi", "-i", "sine=frequency=440", "-t", String(seconds), "-c:v", "mpeg4", "-b:v", bitrate, "-g", String(keyframes),
                                                  "-c:a", "aac", "-b:a", "64k", "-movflags", "frag_keyframe+empty_moov", directory + "/film.mp4"])
        return try #require(FileSystem.read(directory + "/film.mp4"))
    }

    /// ffmpeg decodes the first 2 s of `url`: seconds taken, origin bytes sent by then, and
    /// the frames' md5 lines.
    static func start(_ url: String, origin: LoopbackHTTPServer) async -> (seconds: Double, bytes: Int, frames: String) {
        let ffmpeg = Executables.find("ffmpeg") ?? "ffmpeg"
        let before = origin.bodyBytesSent
        let clock = ContinuousClock(), started = clock.now
        let frames = await Executables.runOffPool(ffmpeg, ["-v", "error", "-nostdin", "-i", url, "-t", "2", "-f", "framemd5", "-"])
        let elapsed = clock.now - started
        return (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18, origin.bodyBytesSent - before, frames)
    }

    /// The offset and size of every top-level `moof` of `film`.
    static func movieFragments(_ film: [UInt8]) -> [(offset: Int, size: Int)] {
        var found: [(Int, Int)] = [], offset = 0
        while offset + 8 <= film.count {
            let size = film[offset..<(offset + 4)].reduce(0) { $0 << 8 | Int($1) }
            guard size >= 8 else { break }
            if Array(film[(offset + 4)..<(offset + 8)]) == Array("moof".utf8) { found.append((offset, size)) }
            offset += size
        }
        return found
    }

    /// What ffmpeg, Chromium and mpv do when they open such a film, as a script: for each
    /// fragment, a request for `bytes=OFFSET-`, read until its `moof` and the next box's
    /// header are in, then close and go to the next. Returns the seconds it took.
    static func scanFragments(_ url: URL, _ fragments: [(offset: Int, size: Int)]) async -> Double {
        await withCheckedContinuation { continuation in
            Thread {
                let clock = ContinuousClock(), started = clock.now
                for fragment in fragments {
                    guard let port = url.port, let fd = connectLoopback(port) else { continue }
                    var timeout = timeval(tv_sec: 30, tv_usec: 0)
                    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
                    let target = url.path + (url.query.map { "?" + $0 } ?? "")
                    let request = Array("GET \(target) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nRange: bytes=\(fragment.offset)-\r\n\r\n".utf8)
                    _ = request.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    var received: [UInt8] = [], buffer = [UInt8](repeating: 0, count: 65536), bodyStart: Int?
                    while bodyStart.map({ received.count - $0 < fragment.size + 8 }) ?? true {
                        let n = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
                        if n <= 0 { break }
                        received += buffer[0..<n]
                        if bodyStart == nil, let split = received.indices.first(where: { received[$0...].starts(with: [13, 10, 13, 10]) }) { bodyStart = split + 4 }
                    }
                    close(fd)
                }
                let elapsed = clock.now - started
                continuation.resume(returning: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
            }.start()
        }
    }

    /// The fragment scan, scripted, where fragments are closer than 256 KiB (1 s at 1 Mbit/s):
    /// each header arrives at once through `serve`, as direct, and the origin sends little
    /// more than each header. Before, every request after the first followed the sequential
    /// fetch of the first (the whole film at the origin's pace).
    @Test(.requires("ffmpeg")) func readingEveryFragmentHeaderCostsWhatItDoesDirect() async throws {
        let executable = try #require(Executables.mp4probe, "the mp4probe executable is not built beside the tests")
        let film = try await Self.film(seconds: 30, bitrate: "1M", keyframes: 25)
        let fragments = Self.movieFragments(film)
        #expect(fragments.count >= 25, "\(fragments.count) fragments")
        let pace = LoopbackHTTPServer.Behavior.trickles(bytes: 16_000, interval: 1.0 / 32)   // 512 KB/s
        let direct = try #require(LoopbackHTTPServer(body: film, behavior: pace))
        let proxied = try #require(LoopbackHTTPServer(body: film, behavior: pace))
        defer { direct.stop(); proxied.stop() }
        let straight = await Self.scanFragments(direct.url, fragments)
        let straightBytes = direct.bodyBytesSent

        let cache = FileSystem.temporaryDirectory("mp4probe-fragmented-scan-cache")
        defer { FileSystem.removeDirectory(cache) }
        let (proxy, base) = try await ProxyProcessTests.serve(executable, cache: cache, arguments: [])
        defer { proxy.terminate() }
        let url = try #require(URL(string: ProxyProcessTests.proxied(base, proxied.url.absoluteString)))
        let through = await Self.scanFragments(url, fragments)
        try await Task.sleep(for: .milliseconds(500))   // what was in flight when the scan ended
        print("fragment scan (\(film.count) B, \(fragments.count) fragments, origin at 512 KB/s): direct \(String(format: "%.2f", straight)) s and \(straightBytes) B from the origin; through serve \(String(format: "%.2f", through)) s and \(proxied.bodyBytesSent) B")
        #expect(through <= 2 * straight + 3, "\(through) s through serve, \(straight) s direct")
        #expect(proxied.bodyBytesSent <= 2 * straightBytes + (256 << 10), "the origin sent \(proxied.bodyBytesSent) bytes through serve, \(straightBytes) direct")
    }

    /// The walk ahead (`FragmentWalkAhead`): through `serve`, each fragment's head is fetched
    /// once, in a small request (twice its `moof`, in 4 KiB units), ahead of the player that reads the headers one request
    /// each, and no player request fetches a window of its own. Without the walk every header
    /// request fetched a window (the origin sent each one its first burst); a request that
    /// lingers past a cached head fetches 64 KiB at most.
    @Test(.requires("ffmpeg")) func eachFragmentHeadIsFetchedOnceInASmallRequest() async throws {
        let executable = try #require(Executables.mp4probe, "the mp4probe executable is not built beside the tests")
        let film = try await Self.film(seconds: 30, bitrate: "1M", keyframes: 25)
        let fragments = Self.movieFragments(film)
        #expect(fragments.count >= 25, "\(fragments.count) fragments")
        let origin = try #require(LoopbackHTTPServer(body: film, behavior: .trickles(bytes: 16_000, interval: 1.0 / 32)))   // 512 KB/s
        defer { origin.stop() }
        let cache = FileSystem.temporaryDirectory("mp4probe-fragment-walk-cache")
        defer { FileSystem.removeDirectory(cache) }
        let (proxy, base) = try await ProxyProcessTests.serve(executable, cache: cache, arguments: [])
        defer { proxy.terminate() }
        let url = try #require(URL(string: ProxyProcessTests.proxied(base, origin.url.absoluteString)))
        _ = await Self.scanFragments(url, [(0, fragments[0].offset + fragments[0].size)] + fragments)
        try await Task.sleep(for: .milliseconds(500))   // what was in flight when the scan ended
        let asked: [(start: UInt64, count: UInt64)] = origin.ranges.compactMap { range in
            let parts = range.dropFirst("bytes=".count).split(separator: "-").compactMap { UInt64(String($0)) }
            return parts.count == 2 && parts[1] >= parts[0] ? (parts[0], parts[1] - parts[0] + 1) : nil
        }
        let heads = fragments.dropFirst().filter { fragment in asked.contains { $0.start == UInt64(fragment.offset) && $0.count <= 16 << 10 } }
        print("fragment walk (\(fragments.count) fragments): \(origin.ranges.count) origin requests, \(origin.bodyBytesSent) B; heads fetched in 16 KiB: \(heads.count); \(origin.ranges.prefix(40).joined(separator: " "))")
        // The first request (the player's read of moov and the first moof) fetches the start
        // of the film, which may hold the second fragment's head; the scan starts the next
        // as soon as that read ends, racing the walk's first steps (a head it reaches first is
        // a first piece of its own: 64 KiB, or the head's size at a start the walk knows).
        #expect(heads.count >= fragments.count - 3, "every fragment's head in a request of its own: \(origin.ranges.joined(separator: " "))")
        // Once: the walk reads each head from the origin and holds it for the player, whose
        // request at a head the walk is reading waits for that read (WalkHeads).
        let twice = fragments.dropFirst().filter { fragment in asked.filter { $0.start == UInt64(fragment.offset) }.count > 1 }
        #expect(twice.count <= 2, "\(twice.count) heads asked for twice: \(origin.ranges.joined(separator: " "))")
        // Heads sized from the fragments learned (FragmentWalkAhead.nextHeadSize): 4 KiB for
        // these `moof`s of under 1 KiB (16 KiB heads: 540-575 KB in all).
        #expect(origin.bodyBytesSent <= fragments.count * (6 << 10) + (256 << 10), "the origin sent \(origin.bodyBytesSent) B: \(origin.ranges.joined(separator: " "))")
    }

    /// ffmpeg itself, on fragments 500 KB apart (it seeks over each fragment's media): the
    /// first 2 s decode identically and start as soon as direct. (With fragments closer than
    /// its socket's receive window ffmpeg reads on instead of seeking, and both paths read the
    /// film sequentially; the scripted scan above is what fails without the fix.)
    /// Over plain HTTP and HTTPS (ffmpeg direct over TLS trusts the test CA in the system store).
    @Test(.requires("ffmpeg"), .enabled(if: Executables.mp4probe != nil, "the mp4probe executable is not built beside the tests"), arguments: OriginScheme.available)
    func aFragmentedFilmStartsThroughServeAsItStartsDirect(scheme: OriginScheme) async throws {
        let executable = try #require(Executables.mp4probe)
        let film = try await Self.film()
        let pace = LoopbackHTTPServer.Behavior.trickles(bytes: 16_000, interval: 1.0 / 32)   // 512 KB/s
        let direct = try #require(LoopbackHTTPServer(body: film, behavior: pace, certificates: scheme.certificates))
        let proxied = try #require(LoopbackHTTPServer(body: film, behavior: pace, certificates: scheme.certificates))
        defer { direct.stop(); proxied.stop() }
        let straight = await Self.start(direct.url.absoluteString, origin: direct)

        let cache = FileSystem.temporaryDirectory("mp4probe-fragmented-start-cache")
        defer { FileSystem.removeDirectory(cache) }
        let (proxy, base) = try await ProxyProcessTests.serve(executable, cache: cache, arguments: [])
        defer { proxy.terminate() }
        let through = await Self.start(ProxyProcessTests.proxied(base, proxied.url.absoluteString), origin: proxied)
        print("fragmented start (\(film.count) B, 20 fragments, \(scheme) origin at 512 KB/s): direct \(String(format: "%.2f", straight.seconds)) s and \(straight.bytes) B from the origin; through serve \(String(format: "%.2f", through.seconds)) s and \(through.bytes) B")
        #expect(through.frames.split(separator: "\n").count > 50 && through.frames == straight.frames, "the first 2 s decode identically")
        // Before: the film came first, sequentially (about 10 MB, 20 s at this pace).
        #expect(through.bytes <= 2 * straight.bytes + (512 << 10), "the origin sent \(through.bytes) bytes through serve, \(straight.bytes) direct")
        #expect(through.seconds <= 2 * straight.seconds + 2, "\(through.seconds) s through serve, \(straight.seconds) s direct")
    }
}
