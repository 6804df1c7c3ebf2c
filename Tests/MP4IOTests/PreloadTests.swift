import Foundation
import Testing
@testable import MP4Core
@testable import MP4IO
import MP4TestSupport

/// Preloading by seconds, as a feed uses it (issue 33): `fetch --seconds 3` of four films in
/// four layouts (and the same through a running `serve`'s `_/preload`), then the origin
/// stopped, and ffmpeg plays their first 3 s through `serve` frame for frame as from the
/// local files; `_/status` says 3 s are playable. A byte preload
/// of a moov-at-end film, the way other caches preload, caches bytes that hold no index and
/// nothing plays (KTVHTTPCache #137).
@Suite(.serialized, .hangGuard) struct PreloadTests {
    /// Four 10 s films (320x240, 25 fps, with sound) in a directory of their own: H.264 with
    /// B-frames faststart and moov-at-end, a fragmented one, and an MPEG-4 Part 2 QuickTime
    /// movie with its moov at the end.
    static let films: (root: String, names: [String])? = {
        guard let ffmpeg = Executables.find("ffmpeg") else { return nil }
        let root = FileSystem.temporaryDirectory("mp4probe-feed")
        let source = ["-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25:duration=10",
                      "-f", "lavfi", "-i", "sine=frequency=440:duration=10", "-c:a", "aac", "-b:a", "64k"]
        let h264 = ["-c:v", "libx264", "-preset", "veryfast", "-g", "50", "-bf", "2", "-pix_fmt", "yuv420p"]
        let made = [
            ("faststart.mp4", h264 + ["-movflags", "+faststart"]),
            ("moov-at-end.mp4", h264),
            ("fragmented.mp4", h264 + ["-movflags", "+frag_keyframe+empty_moov+default_base_moof"]),
            ("mpeg4.mov", ["-c:v", "mpeg4", "-q:v", "5", "-g", "25"]),
        ]
        for (name, arguments) in made {
            _ = Executables.run(ffmpeg, source + arguments + [root + "/" + name])
            guard FileManager.default.fileExists(atPath: root + "/" + name) else { return nil }
        }
        return (root, made.map(\.0))
    }()

    static func firstSeconds(_ input: String, _ seconds: Int) async -> String {
        guard let ffmpeg = Executables.find("ffmpeg") else { return "" }
        return await Executables.runOffPool(ffmpeg, ["-v", "error", "-nostdin", "-i", input, "-t", String(seconds), "-map", "0:v", "-map", "0:a", "-f", "framemd5", "-"])
    }

    /// Runs the mp4probe executable; its exit status and output.
    static func mp4probe(_ arguments: [String]) async -> (status: Int32, output: String) {
        guard let executable = Executables.mp4probe else { return (-1, "") }
        return await Executables.offPool { () -> (Int32, String) in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = pipe
            guard (try? process.run()) != nil else { return (-1, "") }
            let data = pipe.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            return (process.terminationStatus, String(decoding: data, as: UTF8.self))
        }
    }

    static func status(_ base: String, _ origin: String) async throws -> [String: Any] {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        let url = try #require(URL(string: base + "_/status?url=" + (origin.addingPercentEncoding(withAllowedCharacters: allowed) ?? origin)))
        let port = try #require(url.port)
        let answer = try await HTTPServerTests.exchange(port, "GET \(url.path)?\(url.query ?? "") HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n")
        #expect(answer.status == 200)
        return try #require(try JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any])
    }

    /// Stops `nginx`, waits until its port is closed, and starts `serve` on `cache`.
    static func serveWithTheOriginGone(_ nginx: NginxServer, cache: String) async throws -> (Process, String) {
        nginx.stop()
        await waitUntilClosed(Int(URL(string: nginx.baseURL)?.port ?? 0))
        // A request past the preload fails after 1 s of waiting for the origin, not 30.
        return try await ProxyProcessTests.serve(try #require(Executables.mp4probe), cache: cache, arguments: ["--prefetch", "0", "--origin-wait", "1"])
    }

    /// Waits (off the pool) until nothing listens on `port`.
    static func waitUntilClosed(_ port: Int) async {
        await Executables.offPool {
            for _ in 0..<200 {
                guard let fd = connectLoopback(port) else { return }
                close(fd)
                usleep(50_000)
            }
        }
    }

    /// How the films are preloaded: `mp4probe fetch --seconds 3`, or a running `serve` asked
    /// with `POST _/preload` and followed with `_/status` (the same process then serves them
    /// with the origin gone).
    enum PreloadWay: String, CaseIterable, Sendable { case fetch, proxy }

    /// Asks a running serve at `base` to preload `origins` for `seconds` and waits (at most
    /// 60 s) until `_/status` says each is done and playable for that long.
    static func preloadThroughTheProxy(_ base: String, _ origins: [String], seconds: Int) async throws {
        let url = try #require(URL(string: base)), port = try #require(url.port)
        let body = #"{"urls": [\#(origins.map { "\"\($0)\"" }.joined(separator: ", "))], "seconds": \#(seconds)}"#
        let accepted = try await send(port, "POST \(url.path)/_/preload HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\nContent-Type: application/json\r\n", body: body)
        #expect(accepted.status == 202, "\(String(decoding: accepted.body, as: UTF8.self))")
        for origin in origins {
            var status: [String: Any] = [:]
            for _ in 0..<600 {
                status = try await Self.status(base, origin)
                if status["preloading"] as? Bool == false, (status["playableSeconds"] as? Double ?? 0) >= Double(seconds) { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect(status["preloading"] as? Bool == false && status["preloadError"] is NSNull, "\(origin): \(status)")
        }
    }

    /// Over plain HTTP and over HTTPS (nginx with TLS, issue 43), by both ways.
    @Test(.requires("nginx", "ffmpeg"), .enabled(if: Executables.mp4probe != nil, "the mp4probe executable is not built beside the tests"), arguments: PreloadWay.allCases, [false, true])
    func threeSecondsPreloadedPlayWithTheOriginGone(_ way: PreloadWay, tls: Bool) async throws {
        if tls && NginxServer.tlsDirectory == nil { print(NginxServer.tlsMissing); return }
        let (root, names) = try #require(Self.films)
        let cache = FileSystem.temporaryDirectory("mp4probe-feed-cache")
        defer { FileSystem.removeDirectory(cache) }
        let nginx = try #require(NginxServer.start(root: root, tls: tls))
        let marker = "feed=\(way)-\(tls ? "https" : "http")-\(UInt64.random(in: 0...UInt64.max))"
        let origins = names.map { nginx.baseURL + "/" + $0 + "?" + marker }
        var running: (Process, String)?
        var fetchedNow: [String: Int] = [:]
        switch way {
        case .fetch:
            let fetched = await Self.mp4probe(["fetch"] + origins + ["--cache", cache, "--seconds", "3"])
            #expect(fetched.status == 0, "\(fetched.output)")
            // One line per URL, its parentheses matched (a ")" closed nothing at the end).
            let lines = fetched.output.split(separator: "\n").filter { $0.contains("s playable from the cache") }
            #expect(lines.count == origins.count && lines.allSatisfy { $0.hasSuffix("fetched now") && $0.filter { $0 == "(" }.count == $0.filter { $0 == ")" }.count }, "\(fetched.output)")
            for (name, line) in zip(names, lines) {
                fetchedNow[name] = line.split(separator: " ").dropLast(2).last.flatMap { Int($0.replacingOccurrences(of: ",", with: "")) }
            }
        case .proxy:
            let started = try await ProxyProcessTests.serve(try #require(Executables.mp4probe), cache: cache, arguments: ["--prefetch", "0", "--origin-wait", "1"])
            running = started
            try await Self.preloadThroughTheProxy(started.1, origins, seconds: 3)
        }
        defer { running?.0.terminate() }
        // What the origin sent for each film: at most its moov, the bytes of its first 4 s
        // (the seek plan of [0, 4 s) of the local file) and a head of 16 KiB, the issue's
        // bound (a fragmented film's scan of every moof broke it: 242,655 B, bound 197,090).
        for name in names {
            let sent = nginx.requests(containing: "/" + name + "?" + marker).reduce(0) { $0 + $1.bodyBytes }
            let local = try FileSource(path: root + "/" + name)
            let file = try await MP4File.open(local)
            let moov = file.layout.boxes.first { $0.type == .moov }?.size ?? 0
            let firstSeconds = try await SeekPlanner.plan(file, from: local, at: 0, duration: 4).byteCount
            let bound = moov + firstSeconds + (16 << 10)
            print("preload 3 s of \(name) (\(way), \(tls ? "https" : "http")): \(sent) of \(file.layout.fileSize) B from the origin (bound \(bound): moov \(moov), 4 s \(firstSeconds))")
            #expect(sent > 0 && UInt64(sent) <= bound, "\(name) (\(way)): \(sent) B for 3 of 10 s, bound \(bound)")
            // "fetched now" counts every byte the origin sent (the open's head and moov too).
            if way == .fetch { #expect(fetchedNow[name] == sent, "\(name): said \(fetchedNow[name] ?? -1) fetched now, the origin sent \(sent)") }
        }
        let serve: Process, base: String
        if let running {
            nginx.stop()
            await Self.waitUntilClosed(Int(URL(string: nginx.baseURL)?.port ?? 0))
            (serve, base) = running
        } else {
            (serve, base) = try await Self.serveWithTheOriginGone(nginx, cache: cache)
        }
        defer { serve.terminate() }
        for (name, origin) in zip(names, origins) {
            let local = await Self.firstSeconds(root + "/" + name, 3)
            #expect(local.split(separator: "\n").count > 100, "\(name): \(local.prefix(200))")
            let played = await Self.firstSeconds(ProxyProcessTests.proxied(base, origin), 3)
            #expect(played == local, "\(name) (\(way)): \(played.split(separator: "\n").count) frame lines through serve, \(local.split(separator: "\n").count) from the file")
            if name == "moov-at-end.mp4" {
                let view = await Self.firstSeconds(ProxyProcessTests.proxied(base, origin) + "&faststart=1", 3)
                #expect(view == local, "the faststart view of \(name)")
            }
            let status = try await Self.status(base, origin)
            #expect((status["playableSeconds"] as? Double ?? 0) >= 3, "\(name): \(status)")
            #expect(status["movieCached"] as? Bool == true, "\(name): \(status)")
            #expect(status["preloading"] as? Bool == false)
        }
    }

    /// The way byte preloaders do it: as many of a moov-at-end film's first bytes as its 3 s
    /// preload by time caches. With the origin gone nothing plays, and the status says so (0 s,
    /// no moov).
    @Test(.requires("nginx", "ffmpeg"), .enabled(if: Executables.mp4probe != nil, "the mp4probe executable is not built beside the tests"))
    func aBytePreloadOfAMoovAtEndFilmDoesNotPlay() async throws {
        let (root, _) = try #require(Self.films)
        let cache = FileSystem.temporaryDirectory("mp4probe-feed-bytes")
        defer { FileSystem.removeDirectory(cache) }
        let nginx = try #require(NginxServer.start(root: root))
        let origin = nginx.baseURL + "/moov-at-end.mp4?bytes=\(UInt64.random(in: 0...UInt64.max))"
        // What a preload by time of 3 s caches, in another directory: the byte preload's size.
        let byTime = FileSystem.temporaryDirectory("mp4probe-feed-time")
        defer { FileSystem.removeDirectory(byTime) }
        let timed = try await CachedByteSource(upstream: try HTTPByteSource(url: try #require(URL(string: origin + "&time"))), directory: byTime)
        let size = try await Preload.run(timed, seconds: 3).cachedBytes
        print("a 3 s preload of moov-at-end.mp4 caches \(size) B; the byte preload takes as many from byte 0")
        let cached = try await CachedByteSource(upstream: try HTTPByteSource(url: try #require(URL(string: origin))), directory: cache)
        try await cached.fill(0..<size)
        let (serve, base) = try await Self.serveWithTheOriginGone(nginx, cache: cache)
        defer { serve.terminate() }
        let played = await Self.firstSeconds(ProxyProcessTests.proxied(base, origin), 3)
        #expect(played.split(separator: "\n").filter { !$0.hasPrefix("#") }.isEmpty, "\(played.prefix(300))")
        let status = try await Self.status(base, origin)
        #expect(status["playableSeconds"] as? Double == 0, "\(status)")
        #expect(status["movieCached"] as? Bool == false, "\(status)")
        #expect((status["cachedBytes"] as? Int ?? 0) >= Int(size), "\(status)")
    }

    static func send(_ port: Int, _ head: String, body: String = "") async throws -> HTTPServerTests.Exchange {
        try await HTTPServerTests.exchange(port, head.replacingOccurrences(of: "PORT", with: String(port)) + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body)
    }

    /// `POST {BASE}_/preload` answers 202 at once and preloads in the background; `_/status`
    /// follows it in seconds; the control paths need the secret and their methods.
    @Test(.requires("nginx", "ffmpeg"))
    func theProxyPreloadsInTheBackgroundAndSaysWhatPlays() async throws {
        let (root, names) = try #require(Self.films)
        let nginx = try #require(NginxServer.start(root: root))
        defer { nginx.stop() }
        let (proxy, directory) = try CachingProxyTests.proxy()
        defer { proxy.stop(); FileSystem.removeDirectory(directory) }
        let base = try #require(URL(string: proxy.baseURL)), port = try #require(base.port), path = base.path + "/"
        let marker = "api=\(UInt64.random(in: 0...UInt64.max))"
        let origins = names.prefix(2).map { nginx.baseURL + "/" + $0 + "?" + marker }
        let body = #"{"urls": [\#(origins.map { "\"\($0)\"" }.joined(separator: ", "))], "seconds": 2}"#
        let accepted = try await Self.send(port, "POST \(path)_/preload HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\nContent-Type: application/json\r\n", body: body)
        #expect(accepted.status == 202, "\(String(decoding: accepted.body, as: UTF8.self))")
        #expect(String(decoding: accepted.body, as: UTF8.self).contains("accepted"))
        for origin in origins {
            var status: [String: Any] = [:]
            for _ in 0..<300 {
                status = try await Self.status(proxy.baseURL, origin)
                if status["preloading"] as? Bool == false, (status["playableSeconds"] as? Double ?? 0) >= 2 { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            #expect((status["playableSeconds"] as? Double ?? 0) >= 2, "\(origin): \(status)")
            #expect(status["preloading"] as? Bool == false, "\(origin): \(status)")
            #expect((status["cachedBytes"] as? Int ?? 0) < (status["length"] as? Int ?? 0), "2 s of 10 cached the whole film: \(status)")
        }
        let unknown = try await Self.status(proxy.baseURL, nginx.baseURL + "/never-asked.mp4")
        #expect(unknown["playableSeconds"] as? Double == 0 && unknown["cached"] as? Bool == false, "\(unknown)")
        #expect(unknown["preloadError"] is NSNull, "\(unknown)")
        // A preload that fails says why in the status (it was dropped silently).
        let missing = nginx.baseURL + "/no-such-film.mp4?" + marker
        let asked = try await Self.send(port, "POST \(path)_/preload HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\n", body: #"{"urls": ["\#(missing)"], "seconds": 2}"#)
        #expect(asked.status == 202)
        var failed: [String: Any] = [:]
        for _ in 0..<300 {
            failed = try await Self.status(proxy.baseURL, missing)
            if failed["preloading"] as? Bool == false, failed["preloadError"] is String { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        #expect((failed["preloadError"] as? String)?.contains("404") == true, "\(failed)")
        // The secret, the method, and the media paths' own methods.
        #expect(try await Self.send(port, "POST /nosecret/_/preload HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\n", body: body).status == 404)
        #expect(try await Self.send(port, "GET \(path)_/preload HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\n").status == 405)
        #expect(try await Self.send(port, "POST \(path)v.mp4?url=x HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\n", body: "{}").status == 405)
        #expect(try await Self.send(port, "POST \(path)_/preload HTTP/1.1\r\nHost: 127.0.0.1:PORT\r\n", body: #"{"urls": ["file:///etc/passwd"], "seconds": 2}"#).status == 400)
    }

    /// A preload's own reads stand aside as its fills do: with the origin busy from the start
    /// (a player fetching), a preload of each film takes nothing past the head window that
    /// opened its entry (not a moov at the end, nor a fragment's head) until the player ends;
    /// then it completes.
    @Test(.requires("nginx", "ffmpeg"))
    func aPreloadsReadsWaitForThePlayerToo() async throws {
        let (root, names) = try #require(Self.films)
        let nginx = try #require(NginxServer.start(root: root))
        defer { nginx.stop() }
        let directory = FileSystem.temporaryDirectory("mp4probe-feed-reads")
        defer { FileSystem.removeDirectory(directory) }
        let marker = "reads=\(UInt64.random(in: 0...UInt64.max))"
        for name in names {
            let origin = nginx.baseURL + "/" + name + "?" + marker
            let cached = try await CachedByteSource(upstream: try HTTPByteSource(url: try #require(URL(string: origin))), directory: directory)
            let busy = Locked(true)
            let preload = ServingTask.startThrowing { try await Preload.run(cached, seconds: 3, yieldingWhile: { busy.withLock { $0 } }) }
            try await Task.sleep(for: .milliseconds(500))
            let during = nginx.requests(containing: "/" + name + "?" + marker).reduce(0) { $0 + $1.bodyBytes }
            #expect(during == 64 << 10, "\(name): \(during) B fetched while a player fetched (the head window is 65,536)")
            busy.withLock { $0 = false }
            let outcome = try await preload.value
            #expect(outcome.windowEnd >= 3, "\(name): \(outcome)")
            let status = try #require(await CacheStatus.of(origin, in: directory))
            #expect(status.playable.prefixSeconds >= 3, "\(name): \(status)")
        }
    }

    /// Preloads yield to a player: while a player's read of another film streams from the
    /// origin (paced by nginx at 1 MB/s), four preloads fetch nothing (not even their films'
    /// heads and indexes); once it ends they complete.
    @Test(.requires("nginx", "ffmpeg"))
    func preloadsWaitWhileAPlayerReads() async throws {
        let (root, names) = try #require(Self.films)
        let player = FileSystem.temporaryDirectory("mp4probe-feed-player")
        defer { FileSystem.removeDirectory(player) }
        var random = SeededRandom(seed: 33)
        let size = 6 << 20
        // One `mdat` box over the whole file: the loader's movie load reads its header (in the
        // 64 KiB head) and nothing else. Random bytes from the first byte had it read a box
        // header at whatever offset they said, a request of its own beside the player's (the
        // test counted it as the player's: 81,920 B in two ASan runs).
        FileSystem.write(BoxBuilder.u32(UInt32(size)) + Array("mdat".utf8) + random.bytes(size - 8), to: player + "/playing.mp4")
        for name in names { _ = Executables.run("/bin/ln", ["-s", root + "/" + name, player + "/" + name]) }
        let nginx = try #require(NginxServer.start(root: player, limitRate: "1m"))
        defer { nginx.stop() }
        let directory = FileSystem.temporaryDirectory("mp4probe-feed-priority")
        defer { FileSystem.removeDirectory(directory) }
        // The player's read is one origin fetch (a window larger than the film): it runs from
        // the first byte to the last whatever the reader's pace, so the origin is the player's
        // all along. (With 2 MiB windows, each started when the reader is half-way through
        // the one before, a reader slowed by the full suite's load left the origin idle
        // between two, and the preloads rightly used it: 4 issues in a CI run.)
        var cache = CacheConfiguration(directory: directory)
        cache.entries.readAhead.window = 8 << 20
        let loader = MediaLoader(options: .init(cache: cache))
        let marker = "prio=\(UInt64.random(in: 0...UInt64.max))"
        let playing = try await loader.resource(for: nginx.baseURL + "/playing.mp4?" + marker)
        let started = Locked(false)
        let sent: @Sendable (String) -> Int = { name in nginx.requests(containing: "/" + name + "?" + marker).reduce(0) { $0 + $1.bodyBytes } }
        let taken: @Sendable () -> [Int] = { names.map(sent) }
        // What the preloads took while the player's fetch ran: looked at a quarter of the
        // read, with what the origin had sent the player by then (nginx logs a request when it
        // ends). The gate is on the player's origin fetches, not its reads: a reader that lags
        // behind a finished fetch no longer holds preloads back, by design.
        let seen = Locked<(preloads: [Int], player: Int)?>(nil)
        let reading = Task {
            var count = 0
            try await playing.read(0..<UInt64(size)) { piece in
                count += piece.count
                started.withLock { $0 = true }
                // A quarter in (1.5 s at the origin's pace): the preloads, started at the first
                // piece, would have fetched their heads by then if they did not wait, and a reader
                // slowed by a loaded suite still looks while the fetch runs (at half, an ASan run
                // loaded by builds beside it looked after the fetch had ended).
                if count >= size / 4, seen.withLock({ $0 == nil }) { seen.withLock { $0 = (taken(), sent("playing.mp4")) } }
            }
            return count
        }
        while !started.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(10)) }
        let preloads = names.map { name in Task { try await loader.preload(nginx.baseURL + "/" + name + "?" + marker, seconds: 3) } }
        let read = try await reading.value
        #expect(read == size)
        let (during, playerSent) = try #require(seen.withLock { $0 })
        #expect(during.count == names.count)
        for preload in preloads { _ = try await preload.value }
        let after = taken()
        print("preloads while a player read: \(during) B (the player's origin had sent \(playerSent) of \(size) B); when done: \(after) B; the player's requests: \(nginx.requests(containing: "/playing.mp4?" + marker).map { "\($0.range) \($0.bodyBytes)" })")
        // The player's window (6 MB) was still being fetched then: a reader 3 s behind its
        // fetch would make this a look at nothing. What had ended is the source's first request
        // (its 64 KiB head) and, in CI's runs (not reproduced here), a 16 KiB read right after
        // it (bytes=65536-81919) before the window.
        #expect(playerSent <= 256 << 10, "the player's fetch had ended when the test looked (\(playerSent) B logged)")
        for (index, name) in names.enumerated() {
            // Nothing at all while the player fetched: not the head window that opens the
            // entry, nor the moov, nor a fragment's head (before they stood aside too, each
            // took its head and index: up to 131,334 B).
            #expect(during[index] == 0, "\(name): \(during[index]) B fetched while the player read")
            #expect(after[index] > during[index], "\(name): nothing fetched after the player ended")
        }
        for name in names {
            let status = await loader.status(of: nginx.baseURL + "/" + name + "?" + marker)
            #expect((status.cache?.playable.prefixSeconds ?? 0) >= 3, "\(name): \(String(describing: status.cache))")
        }
    }

    /// A player reading from the cache is not at the origin: the next videos' preloads go on
    /// meanwhile (the first gate counted every player read, so a preloaded video playing from
    /// the cache held back the preloads of the ones after it).
    @Test(.requires("nginx", "ffmpeg"))
    func aPlayerReadingFromTheCacheDoesNotHoldPreloads() async throws {
        let (root, names) = try #require(Self.films)
        let directory = FileSystem.temporaryDirectory("mp4probe-feed-cached-player")
        defer { FileSystem.removeDirectory(directory) }
        let origins = FileSystem.temporaryDirectory("mp4probe-feed-cached-origins")
        defer { FileSystem.removeDirectory(origins) }
        var random = SeededRandom(seed: 34)
        FileSystem.write(random.bytes(1 << 20), to: origins + "/playing.mp4")
        for name in names { _ = Executables.run("/bin/ln", ["-s", root + "/" + name, origins + "/" + name]) }
        let nginx = try #require(NginxServer.start(root: origins))
        defer { nginx.stop() }
        let marker = "cached=\(UInt64.random(in: 0...UInt64.max))"
        let playingURL = nginx.baseURL + "/playing.mp4?" + marker
        let filled = try await CachedByteSource(upstream: try HTTPByteSource(url: try #require(URL(string: playingURL))), directory: directory)
        try await filled.fill(0..<(1 << 20))
        let loader = MediaLoader(options: .init(cacheDirectory: directory))
        let playing = try await loader.resource(for: playingURL)
        let preloads = Locked<[Task<Preload.Outcome, any Error>]>([])
        let ended = Locked(0)
        // The player's read stays in flight, served from the cache, until every preload has
        // ended (or 20 s have passed).
        var finishedWhileReading = false
        try await playing.read(0..<(1 << 20)) { _ in
            guard preloads.withLock({ $0.isEmpty }) else { return }
            let started = names.map { name in
                Task {
                    defer { ended.withLock { $0 += 1 } }
                    return try await loader.preload(nginx.baseURL + "/" + name + "?" + marker, seconds: 3)
                }
            }
            preloads.withLock { $0 = started }
            let deadline = ContinuousClock.now + .seconds(20)
            while ContinuousClock.now < deadline, ended.withLock({ $0 }) < names.count { try await Task.sleep(for: .milliseconds(20)) }
            finishedWhileReading = ended.withLock { $0 } == names.count
        }
        #expect(finishedWhileReading, "the preloads waited for a player that read from the cache")
        for preload in preloads.withLock({ $0 }) { _ = try await preload.value }
        let fromOrigin = nginx.requests(containing: "/playing.mp4?" + marker)
        #expect(fromOrigin.count <= 2, "the player's film was read from the cache: \(fromOrigin.count) requests")
    }
}

/// A preload stands aside while a player reads: its fill stops within a look when a player
/// starts (keeping what arrived) and goes on from there in a new request once the player is
/// quiet; without a player it is one request.
@Suite(.hangGuard) struct PreloadFillTests {
    @Test func aFillStopsForAPlayerAndGoesOnAfter() async throws {
        let (cached, upstream, directory) = try await CacheStreamingTests.source(2 << 20)
        defer { FileSystem.removeDirectory(directory) }
        let busy = Locked(false)
        // The fetch waits at 256 KiB until released, so the test's own steps may run late (a
        // loaded machine) without the fill getting ahead of them; the fill runs off the pool,
        // as a loader's preloads do.
        upstream.hold(requestsFrom: 0, at: 256 << 10)
        let filling = ServingTask.startThrowing { try await Preload.fill(0..<UInt64(2 << 20), of: cached, yieldingWhile: { busy.withLock { $0 } }) }
        for _ in 0..<3000 where upstream.sent < 256 << 10 { try await Task.sleep(for: .milliseconds(10)) }
        busy.withLock { $0 = true }   // a player starts reading
        try await Task.sleep(for: .milliseconds(300))
        upstream.release()            // a fill still running would go on now
        try await Task.sleep(for: .milliseconds(300))
        let stopped = upstream.sent
        print("a preload's fill stopped for a player at \(stopped) of \(2 << 20) B")
        try await Task.sleep(for: .milliseconds(300))
        #expect(upstream.sent == stopped, "the preload went on while a player read")
        #expect(stopped < 2 << 20)
        busy.withLock { $0 = false }
        try await filling.value
        #expect(await cached.cachedRanges.contains(0..<UInt64(2 << 20)))
        #expect(upstream.requests.count == 2, "one request before the player, one after: \(upstream.requests)")
        #expect(upstream.sent < (2 << 20) + (64 << 10), "bytes fetched twice: \(upstream.sent)")
    }

    /// A preload's parser reading a large missing range (a long film's moov) is a fill: it
    /// stops for a player and goes on after, as ``aFillStopsForAPlayerAndGoesOnAfter()``.
    @Test func aLargeReadOfAPreloadStopsForAPlayer() async throws {
        let (cached, upstream, directory) = try await CacheStreamingTests.source(2 << 20)
        defer { FileSystem.removeDirectory(directory) }
        let busy = Locked(false)
        upstream.hold(requestsFrom: 0, at: 256 << 10)
        let reads = Preload.YieldingReads(source: cached, busy: { busy.withLock { $0 } })
        let reading = ServingTask.startThrowing { try await reads.read(0..<UInt64(2 << 20)).count }
        for _ in 0..<3000 where upstream.sent < 256 << 10 { try await Task.sleep(for: .milliseconds(10)) }
        busy.withLock { $0 = true }
        try await Task.sleep(for: .milliseconds(300))
        upstream.release()
        try await Task.sleep(for: .milliseconds(300))
        let stopped = upstream.sent
        try await Task.sleep(for: .milliseconds(300))
        #expect(upstream.sent == stopped, "the preload's read went on while a player read")
        #expect(stopped < 2 << 20)
        busy.withLock { $0 = false }
        #expect(try await reading.value == 2 << 20)
        #expect(upstream.requests.count == 2, "one request before the player, one after: \(upstream.requests)")
    }

    @Test func withoutAPlayerAFillIsOneRequest() async throws {
        let (cached, upstream, directory) = try await CacheStreamingTests.source(1 << 20)
        defer { FileSystem.removeDirectory(directory) }
        try await Preload.fill(0..<UInt64(1 << 20), of: cached, yieldingWhile: { false })
        #expect(upstream.requests.count == 1, "\(upstream.requests)")
    }
}
