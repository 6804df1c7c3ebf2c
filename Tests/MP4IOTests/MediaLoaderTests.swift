import Foundation
import Testing
@testable import MP4Core
@testable import MP4IO
import MP4TestSupport

/// The loader core with nginx as the origin: moov first, and a player's seek answered by
/// fetching the next seconds of every track ahead of it.
@Suite(.serialized, .hangGuard) struct MediaLoaderTests {
    /// A 60 s film with its `moov` at the end (ffmpeg's default), about 2.6 MB, made once.
    static func film() async -> String? { await Executables.offPool { madeFilm } }
    private static let madeFilm: String? = {
        guard let ffmpeg = Executables.find("ffmpeg") else { return nil }
        let root = FileSystem.temporaryDirectory("mp4probe-loader-film")
        let path = root + "/film.mp4"
        _ = Executables.run(ffmpeg, ["-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "testsrc=size=320x240:rate=25",
                                     "-f", "lavfi", "-i", "sine=frequency=440", "-t", "60", "-c:v", "libx264", "-preset", "veryfast",
                                     "-b:v", "300k", "-g", "50", "-pix_fmt", "yuv420p", "-c:a", "aac", "-b:a", "48k", path])
        return FileSystem.exists(path) ? path : nil
    }()

    static func loader() -> (MediaLoader, String) {
        let directory = FileSystem.temporaryDirectory("mp4probe-loader")
        return (MediaLoader(options: .init(cacheDirectory: directory)), directory)
    }

    /// What the cache holds for `origin` (a second source on the same entry).
    static func cached(_ origin: String, directory: String) async throws -> ByteRangeSet {
        let source = try await CachedByteSource(upstream: try HTTPByteSource(url: try #require(URL(string: origin))), directory: directory)
        return await source.cachedRanges
    }

    /// A player reading a moov-at-end film from the start gets the head at once; nothing past
    /// it is delivered before the `moov` at the end is in the cache.
    @Test(.requires("nginx", "ffmpeg"))
    func aMoovAtEndFileGetsItsMoovFirst() async throws {
        let film = try #require(await Self.film())
        let file = try await MP4File.open(try FileSource(path: film))
        let moov = try #require(file.layout.movieBox)
        #expect(!file.layout.isFastStart, "ffmpeg wrote a faststart file: the test would prove nothing")
        let root = (film as NSString).deletingLastPathComponent
        let nginx = try #require(NginxServer.start(root: root, limitRate: "400k"))
        defer { nginx.stop() }
        let (loader, directory) = Self.loader()
        defer { FileSystem.removeDirectory(directory) }
        // Table writes made slow (a loaded disk): the `moov` is claimed well after its bytes
        // are written, and media past the head must wait for that, not for the bytes alone.
        Platform.beforeSync.withLock { hooks in
            hooks[directory] = { path, _ in if path.hasPrefix(directory), path.contains(".ranges.") { Thread.sleep(forTimeInterval: 0.2) } }
        }
        defer { Platform.beforeSync.withLock { $0[directory] = nil } }
        let origin = nginx.baseURL + "/film.mp4"
        let resource = try await loader.resource(for: origin)
        let info = try await resource.contentInformation()
        #expect(info.length == file.layout.fileSize && info.contentType == "video/mp4" && info.entityTag != nil)
        struct Enough: Error {}
        var delivered: UInt64 = 0
        var moovWasIn: Bool?
        let original = try #require(FileSystem.read(film))
        do {
            try await resource.load(offset: 0, length: nil) { piece in
                #expect(Array(piece) == Array(original[Int(delivered)..<(Int(delivered) + piece.count)]))
                delivered += UInt64(piece.count)
                if delivered > Prefetcher.headBytes && moovWasIn == nil {
                    moovWasIn = try await Self.cached(origin, directory: directory).contains(moov.offset..<(moov.offset + moov.size))
                }
                if delivered > 400_000 { throw Enough() }
            }
        } catch is Enough {}
        #expect(moovWasIn == true, "media past the head went out before the moov was fetched")
    }

    /// A player seeks (a 1,000-byte range where the keyframe before 30 s begins): the loader
    /// maps the offset back to 30 s and fetches the next 10 s of every track, which the
    /// player's own short request does not cover, and not the rest of the film.
    @Test(.requires("nginx", "ffmpeg"))
    func aSeekPrefetchesTheNextSecondsOfEveryTrack() async throws {
        let film = try #require(await Self.film())
        let file = try await MP4File.open(try FileSource(path: film))
        let planner = SeekPlanner(file: file)
        let window = try planner.plan(at: 30, duration: 10)
        #expect(Set(window.tracks.map(\.trackID)).count == 2, "the window should hold video and audio")
        let later = try planner.plan(at: 50, duration: 5)
        let root = (film as NSString).deletingLastPathComponent
        let nginx = try #require(NginxServer.start(root: root))
        defer { nginx.stop() }
        let (loader, directory) = Self.loader()
        defer { FileSystem.removeDirectory(directory) }
        let origin = nginx.baseURL + "/film.mp4?seek=\(UInt64.random(in: 0...UInt64.max))"
        let resource = try await loader.resource(for: origin)
        // AVPlayer's first probe, then its seek.
        _ = try await resource.read(0..<2)
        let original = try #require(FileSystem.read(film))
        let seek = window.startOffset..<(window.startOffset + 1000)
        #expect(try await resource.read(seek) == Array(original[Int(seek.lowerBound)..<Int(seek.upperBound)]))
        var present = ByteRangeSet()
        // Up to 30 s: under the load of the other suites the background prefetch may start late.
        for _ in 0..<600 {
            present = try await Self.cached(origin, directory: directory)
            if window.ranges.allSatisfy(present.contains) { break }
            try await Task.sleep(nanoseconds: 50_000_000)
        }
        let missing = window.ranges.filter { !present.contains($0) }
        let prefetched = await resource.prefetchedRanges
        #expect(missing.isEmpty, "not prefetched: \(missing); prefetches: \(prefetched)")
        #expect(!later.ranges.contains { present.contains($0) }, "the prefetch went on past its window")
        #expect(present.byteCount < UInt64(original.count) / 2, "\(present.byteCount) of \(original.count) bytes fetched")
        // The bytes a decoder needs for the window now come from the cache: no origin request
        // after this point asks for any of them (the reads may start the prefetch of the
        // seconds after the window, which is what a player that plays on wants).
        let requests = nginx.requests(containing: "seek=").count
        for range in window.ranges { _ = try await resource.read(range) }
        let after = nginx.requests(containing: "seek=").dropFirst(requests).compactMap { request -> Range<UInt64>? in
            let bounds = request.range.replacingOccurrences(of: "bytes=", with: "").split(separator: "-", omittingEmptySubsequences: false)
            guard bounds.count == 2, let first = UInt64(bounds[0]) else { return 0..<UInt64.max }
            return first..<(UInt64(bounds[1]).map { $0 + 1 } ?? UInt64.max)
        }
        let refetched = after.filter { asked in window.ranges.contains { $0.overlaps(asked) } }
        #expect(refetched.isEmpty, "the window's bytes were asked of the origin again: \(refetched)")
    }
}

/// A player's request at a fragment head the walk holds reads on through the cache as a
/// header read does: a first piece past the head, not a window (a player that read the
/// header and lingers past the proxy's pause would otherwise cost the origin a whole window).
@Suite struct HeldHeadReadTests {
    @Test(.requires("ffmpeg")) func aRequestThatReadsOnPastAHeldHeadFetchesAFirstPiece() async throws {
        let film = try await FragmentedStartTests.film(seconds: 30, bitrate: "1M", keyframes: 25)
        let fragments = FragmentedStartTests.movieFragments(film)
        #expect(fragments.count >= 10)
        let origin = try #require(LoopbackHTTPServer(body: film, behavior: .normal))
        defer { origin.stop() }
        let (loader, directory) = MediaLoaderTests.loader()
        defer { FileSystem.removeDirectory(directory) }
        let resource = try await loader.resource(for: origin.url.absoluteString)
        struct Enough: Error {}
        // A player's first read (the file's start) starts the walk; the next heads are held
        // before the player asks for them.
        do { try await resource.load(offset: 0, length: nil) { _ in throw Enough() } } catch is Enough {}
        let target = fragments[3]
        let deadline = ContinuousClock.now + .seconds(30)
        while !origin.ranges.contains(where: { $0.hasPrefix("bytes=\(target.offset)-") }) && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
        }
        let asked = origin.ranges.count
        var received = 0
        do {
            try await resource.load(offset: UInt64(target.offset), length: nil) { piece in
                received += piece.count
                if received > target.size + 40_000 { throw Enough() }
            }
        } catch is Enough {}
        let after = origin.ranges.dropFirst(asked).compactMap { range -> (start: Int, count: Int)? in
            let parts = range.dropFirst("bytes=".count).split(separator: "-").compactMap { Int(String($0)) }
            return parts.count == 2 ? (parts[0], parts[1] - parts[0] + 1) : nil
        }.filter { $0.start > target.offset && $0.start < target.offset + 300_000 }
        #expect(!after.isEmpty, "the read past the head asked nothing of the origin: \(origin.ranges.dropFirst(asked))")
        #expect(after.allSatisfy { $0.count <= 64 << 10 }, "past the held head: \(after)")
    }
}
