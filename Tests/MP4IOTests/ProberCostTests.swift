import Foundation
import Testing
@testable import MP4Core
@testable import MP4IO
import MP4TestSupport

/// A reader that only looks costs what it looks at, not what socket buffers can hold (issue
/// 47 item 6). `ffprobe` through the faststart view of a moov-at-end film asks for `bytes=0-`,
/// reads the `moov` and a few packets, and hangs up; the proxy had kept writing into the
/// socket, whose buffer on loopback grows to megabytes, and fetched the origin to keep up:
/// the whole 3.8 MB film for a 376 KiB `moov`. The server's send buffer is bounded (256 KiB),
/// so the origin sends its head, the `moov` and one read-ahead window.
@Suite(.serialized, .hangGuard) struct ProberCostTests {
    @Test(.requires("nginx", "ffmpeg", "ffprobe"))
    func aProberCostsTheMoovAndOneWindow() async throws {
        let root = FileSystem.temporaryDirectory("mp4probe-prober")
        defer { FileSystem.removeDirectory(root) }
        let ffmpeg = try #require(Executables.find("ffmpeg")), ffprobe = try #require(Executables.find("ffprobe"))
        // Ten minutes at a low rate: a large moov (about 380 KiB) and 6 MB in all.
        _ = await Executables.runOffPool(ffmpeg, ["-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25",
                                                  "-f", "lavfi", "-i", "sine=frequency=440", "-t", "600", "-c:v", "libx264", "-preset", "ultrafast",
                                                  "-b:v", "60k", "-c:a", "aac", "-b:a", "16k", "-movflags", "-faststart", root + "/film.mp4"])
        let film = try #require(FileSystem.read(root + "/film.mp4"))
        let file = try await MP4File.open(MemorySource(film, name: "film.mp4"))
        let moov = try #require(file.layout.boxes.first { $0.type == .moov })
        #expect(moov.offset > 0 && film.count > Int(moov.size) + (4 << 20), "the film is \(film.count) bytes, moov \(moov.size)")
        let nginx = try #require(NginxServer.start(root: root))
        defer { nginx.stop() }
        let (proxy, directory) = try CachingProxyTests.proxy()
        defer { proxy.stop(); FileSystem.removeDirectory(directory) }
        let marker = "probe=\(UInt64.random(in: 0...UInt64.max))"
        let url = proxy.url(for: nginx.baseURL + "/film.mp4?" + marker, faststart: true)
        // The prober's receive buffer is fixed (128 KiB): what is measured is what the proxy
        // pushes, not how far the kernel grew the prober's buffer. Loopback autotuning grows
        // it up to `tcp_rmem`'s maximum (32 MiB here) as fast as the prober reads, and in a
        // loaded suite it took in more than half a window before ffprobe hung up: the read-ahead
        // fetched a second 2 MiB window (4,661,031 bytes sent, twice; alone 2,563,879).
        let streams = await Executables.runOffPool(ffprobe, ["-v", "error", "-recv_buffer_size", "131072", "-show_entries", "stream=codec_name", "-of", "csv=p=0", url])
        #expect(streams.contains("h264") && streams.contains("aac"), "ffprobe said: \(streams)")
        try await Task.sleep(for: .seconds(1))   // fetches that were running end or stop
        let requests = nginx.requests(containing: marker)
        let sent = requests.reduce(0) { $0 + $1.bodyBytes }
        let bound = Int(moov.size) + (64 << 10) + (2 << 20) + (256 << 10)
        print("ffprobe through the faststart view: the origin sent \(sent) bytes of \(film.count) (moov \(moov.size)); bound \(bound); requests \(requests.map { "\($0.range) \($0.bodyBytes)" })")
        #expect(sent <= bound, "the origin sent \(sent) bytes for a prober (moov \(moov.size), film \(film.count)): \(requests.map { "\($0.range) \($0.bodyBytes)" })")
    }
}
