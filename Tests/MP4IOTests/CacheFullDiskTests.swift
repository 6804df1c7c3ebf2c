import Foundation
import Testing
@testable import MP4Core
@testable import MP4IO
import MP4TestSupport

/// The full-disk tests share one small filesystem: one at a time (one of them fills it to its
/// last block). Each needs MP4PROBE_SMALL_DISK_DIR, a filesystem of a few MiB (`.ci/run` mounts
/// a 2 MiB tmpfs); without it they are skipped with that message.
@Suite(.serialized, .hangGuard) struct CacheFullDiskTests {
    static let smallDisk = ProcessInfo.processInfo.environment["MP4PROBE_SMALL_DISK_DIR"]

    /// Removes what an earlier run left on the small disk (a run killed midway, a process that
    /// outlived its test): the disk is this serialized suite's alone, and each test counts on
    /// its whole size. Says what it removed.
    static func clearSmallDisk(_ root: String) {
        let left = FileSystem.entries(root)
        guard !left.isEmpty else { return }
        print("CacheFullDiskTests: removing \(left.count) entries an earlier run left on the small disk (\(occupied(root)) bytes): \(left.sorted().prefix(5))")
        for name in left { try? FileManager.default.removeItem(atPath: root + "/" + name) }
    }

    /// A cache on a disk too small for the resource: the read still gets every byte (what
    /// cannot be cached is passed through from the origin), and a fill says the disk is full.
    /// Needs a small filesystem (MP4PROBE_SMALL_DISK_DIR: `.ci/run` mounts a 2 MiB tmpfs).
    @Test(.enabled(if: ProcessInfo.processInfo.environment["MP4PROBE_SMALL_DISK_DIR"] != nil,
                   "MP4PROBE_SMALL_DISK_DIR is not set (a filesystem of a few MiB; .ci/run mounts one): the full-disk test is skipped"))
    func aFullDiskPassesBytesThrough() async throws {
        let root = try #require(ProcessInfo.processInfo.environment["MP4PROBE_SMALL_DISK_DIR"])
        Self.clearSmallDisk(root)
        let directory = root + "/stream-\(UInt64.random(in: 0...UInt64.max))"
        defer { FileSystem.removeDirectory(directory) }
        var random = SeededRandom(seed: 7)
        let upstream = PacedUpstream(random.bytes(6 << 20))
        let cached = try await CachedByteSource(upstream: upstream, directory: directory)
        var received: [UInt8] = []
        try await cached.read(0..<(6 << 20)) { received += $0 }
        #expect(received == upstream.bytes, "\(received.count) bytes")
        #expect(await cached.cachedRanges.byteCount < 6 << 20)
        await #expect(throws: MP4Error.self) { try await cached.fill(0..<(6 << 20)) }
    }

    /// A disk so full that not even a new entry fits: new origins are still read, from the
    /// origin (they were a 502 "No space left on device"), "the disk is full" is said once for
    /// both, and no empty entry is left behind ("damaged 0/0" in `cache ls`). Needs
    /// MP4PROBE_SMALL_DISK_DIR, as above.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["MP4PROBE_SMALL_DISK_DIR"] != nil,
                   "MP4PROBE_SMALL_DISK_DIR is not set (a filesystem of a few MiB; .ci/run mounts one): the full-disk test is skipped"))
    func aFullDiskIsSaidOnceAndNewOriginsStillPlay() async throws {
        let root = try #require(ProcessInfo.processInfo.environment["MP4PROBE_SMALL_DISK_DIR"])
        Self.clearSmallDisk(root)
        let tag = String(UInt64.random(in: 0...UInt64.max), radix: 36)
        let directory = root + "/full-" + tag, filler = root + "/filler-" + tag
        defer { FileSystem.removeDirectory(directory); _ = unlink(filler) }
        // Fill the filesystem to its last block.
        let fd = open(filler, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        #expect(fd >= 0)
        let block = [UInt8](repeating: 7, count: 4096)
        while block.withUnsafeBytes({ write(fd, $0.baseAddress, $0.count) }) > 0 {}
        close(fd)
        var random = SeededRandom(seed: 32)
        let origins = try [random.bytes(1 << 20), random.bytes(1 << 20)].map { try #require(LoopbackHTTPServer(body: $0, behavior: .normal)) }
        defer { origins.forEach { $0.stop() } }
        let warnings = Locked<[String]>([])
        var options = SourceFactory.Options()
        var cache = CacheConfiguration(directory: directory)
        cache.entries.warn = { message in warnings.withLock { $0.append(message) } }
        options.cache = cache
        for origin in origins {
            let source = try await SourceFactory.open(origin.url.absoluteString, options: options)
            #expect(try await source.read(0..<UInt64(origin.body.count)) == origin.body)
        }
        #expect(warnings.withLock { $0.count } == 1, "\(warnings.withLock { $0 })")
        #expect(warnings.withLock { $0.first?.contains("disk is full") } == true)
        #expect(CacheDirectory.entries(directory).allSatisfy { !$0.isDamaged }, "\(CacheDirectory.entries(directory))")
    }

    /// A film about three times the small disk (6.0 MB), moov at the end, in an nginx root of its own.
    static func film() async throws -> (NginxServer, String, String) {
        let root = FileSystem.temporaryDirectory("mp4probe-small-disk-origin")
        let ffmpeg = try #require(Executables.find("ffmpeg"))
        _ = await Executables.runOffPool(ffmpeg, ["-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "testsrc2=size=640x360:rate=25",
                                                  "-f", "lavfi", "-i", "sine=frequency=440", "-t", "14", "-c:v", "mpeg4", "-q:v", "2", "-g", "25",
                                                  "-c:a", "aac", root + "/film.mp4"])
        #expect(FileSystem.allocatedBytes(root + "/film.mp4") > 5 << 20)
        let nginx = try #require(NginxServer.start(root: root))
        return (nginx, root, nginx.baseURL + "/film.mp4")
    }

    static func framemd5(_ input: String) async -> String {
        guard let ffmpeg = Executables.find("ffmpeg") else { return "" }
        return await Executables.runOffPool(ffmpeg, ["-v", "error", "-nostdin", "-i", input, "-map", "0:v", "-map", "0:a", "-f", "framemd5", "-"])
    }

    /// Bytes the files of `directory` occupy on disk (what `du` says).
    static func occupied(_ directory: String) -> UInt64 {
        FileSystem.entries(directory).reduce(0) { $0 + FileSystem.allocatedBytes(directory + "/" + $1) }
    }

    /// The largest ``occupied(_:)`` seen every 10 ms while `body` runs.
    static func peakOccupied(_ directory: String, while body: () async throws -> Void) async rethrows -> UInt64 {
        let state = Locked<(running: Bool, peak: UInt64)>((true, 0))
        let watcher = Thread {
            while state.withLock({ $0.running }) {
                let now = occupied(directory)
                state.withLock { $0.peak = max($0.peak, now) }
                usleep(10_000)
            }
        }
        watcher.start()
        defer { state.withLock { $0.running = false } }
        try await body()
        return state.withLock { $0.peak }
    }

    /// Issue 32 item 1, as a player sees it: `serve` with its cache on a 2 MiB tmpfs, a film
    /// three times that, decoded whole by ffmpeg through the proxy, as it is and as the
    /// faststart view: every frame identical to the local file's. With `--max-size 1M` the
    /// directory never holds more than that while serving (the writes evict, then pass bytes
    /// through); with the default 10G the disk fills and bytes pass through, said once.
    @Test(.requires("nginx", "ffmpeg"), .enabled(if: smallDisk != nil && Executables.mp4probe != nil, "needs MP4PROBE_SMALL_DISK_DIR and the mp4probe executable"),
          arguments: [(maxSize: "1M", limit: UInt64(1 << 20)), (maxSize: "10G", limit: UInt64?.none)])
    func aFilmLargerThanTheDiskPlaysWholeThroughServe(maxSize: String, limit: UInt64?) async throws {
        let root = try #require(Self.smallDisk), executable = try #require(Executables.mp4probe)
        Self.clearSmallDisk(root)
        let (nginx, originRoot, origin) = try await Self.film()
        defer { nginx.stop(); FileSystem.removeDirectory(originRoot) }
        let local = await Self.framemd5(originRoot + "/film.mp4")
        #expect(local.split(separator: "\n").count > 500, "the film decodes locally")
        let cache = root + "/serve-" + String(UInt64.random(in: 0...UInt64.max), radix: 36)
        defer { FileSystem.removeDirectory(cache) }
        let logDirectory = FileSystem.temporaryDirectory("mp4probe-small-disk-log"), log = logDirectory + "/stderr"
        defer { FileSystem.removeDirectory(logDirectory) }
        let (proxy, base) = try await ProxyProcessTests.serve(executable, cache: cache, arguments: ["--max-size", maxSize], stderr: log)
        // The proxy is gone before its directory is removed: a process still writing there
        // leaves files on the small disk for the next run (CI runs the suite twice).
        var running = true
        defer { if running { proxy.terminate(); proxy.waitUntilExit() } }
        for faststart in [false, true] {
            let url = ProxyProcessTests.proxied(base, origin) + (faststart ? "&faststart=1" : "")
            var decoded = ""
            let peak = await Self.peakOccupied(cache) { decoded = await Self.framemd5(url) }
            #expect(decoded == local, "\(faststart ? "faststart view" : "as it is"), --max-size \(maxSize): \(decoded.split(separator: "\n").count) frame lines")
            if let limit {
                // Tables and lock files beside the data: a few blocks.
                #expect(peak <= limit + (32 << 10), "the cache held \(peak) bytes under --max-size \(maxSize)")
            }
        }
        proxy.terminate()
        await ProxyProcessTests.wait(proxy)
        running = false
        let stderr = String(decoding: FileSystem.read(log) ?? [], as: UTF8.self)
        let said = stderr.split(separator: "\n").filter { $0.contains("cannot take more") }
        #expect(said.count == 1, "serve said: \(stderr); the small disk held: \(Self.occupied(root)) bytes")
        #expect(said.first?.contains(limit == nil ? "disk is full" : "size limit") == true, "\(said)")
        #expect(CacheDirectory.entries(cache).allSatisfy { !$0.isDamaged }, "\(CacheDirectory.entries(cache))")
    }
}
