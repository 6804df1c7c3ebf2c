// The Swift examples of docs/ and README.md, compiled by `swift test`: every ```swift block of
// the documentation must appear here verbatim between `// docs:begin` and `// docs:end`
// (leading `import` lines excepted; DocsTests checks it), so an example that no longer
// compiles fails the build. Code outside the markers only supplies what an example assumes
// (a source, a URL, a time) and keeps the compiler from warning about unused results.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import MP4Core
import MP4IO
import MP4Report
import Testing

enum DocExamples {
    // docs/library.md: open a file and ask the usual questions
    static func openAndAsk() async throws {
        // docs:begin
        let file = try await MP4File.open(try FileSource(path: "upload.mp4"))

        switch file.layout.moviePlacement {
        case .beforeMediaData: print("faststart")
        case .afterMediaData:  print("moov at end: need \(file.layout.startupByteCount ?? 0) bytes before playback")
        case .noMediaData:     print("init segment or header only")
        case .noMovie:         print(file.kind == .mediaSegment ? "media segment" : "no moov")
        }

        for track in file.movie?.tracks ?? [] {
            let entry = track.sampleEntries.first
            print(track.trackID, track.kind, entry?.codecString ?? "?", track.sampleCount, track.durationSeconds ?? 0)
        }

        for finding in file.findings where finding.severity == .error {
            print(finding)          // "error box-overruns-parent [moov/trak[1]/...] @1135: ..."
        }
        // docs:end
    }

    // docs/library.md: samples and seeks
    static func samplesAndSeeks(_ file: MP4File, _ source: some ByteSource) async throws {
        // docs:begin
        let planner = try await SeekPlanner.index(file, from: source)   // fragmented files: reads each moof
        for track in planner.tracks {
            track.samples.forEachSample { sample in                      // decode order, O(1) per sample
                print(track.track.trackID, sample.decodeTime, sample.byteOffset, sample.byteCount, sample.isSync)
                return true                                               // false stops
            }
        }
        let plan = try planner.plan(at: 12.5, duration: 5)              // keyframe, per-track samples, byte ranges
        let quick = try await SeekPlanner.plan(file, from: source, at: 12.5)  // one seek; sidx/mfra-located for fragments
        // docs:end
        _ = (plan, quick)
    }

    // docs/library.md: HTTP, cache, streaming, faststart, check
    static func sourcesAndWriters() async throws {
        // docs:begin
        // HTTP(S): range requests, validators, retries (docs/http.md)
        let remote = try HTTPByteSource(url: URL(string: "https://cdn.example.com/v.mp4")!)
        // Through a crash-safe sparse cache (docs/cache.md)
        let source = try await CachedByteSource(upstream: remote, directory: "/var/cache/videos")
        let file = try await MP4File.open(source)
        // Streamed reads: pieces as they arrive, memory bounded by a piece (docs/http.md)
        var digest = 0
        try await remote.read(0..<(1 << 30), into: { piece in digest &+= piece.count })
        // Make a range present in the cache without reading it back (one streamed request)
        try await source.fill(0..<(try await source.length()))

        // Faststart (docs/faststart.md): a pure plan, executed atomically
        let plan = try await FaststartRewriter.plan(input: "in.mp4")
        let result = try await FaststartRewriter.rewrite(input: "in.mp4", output: "out.mp4", options: .init(verifies: true))

        // The CI gate's rules (docs/check.md)
        let check = await FileCheck.check(source, policy: CheckPolicy(maxKeyframeInterval: 4))
        print(check.status, check.findings.map(\.id), check.metrics.interleaveSeconds ?? 0)
        // docs:end
        _ = (file, plan, result)
    }

    // docs/library.md: the source factory
    static func factory() async throws {
        // docs:begin
        var options = SourceFactory.Options()
        options.http.timeout = 10
        options.cache = CacheConfiguration(directory: "/var/cache/videos")
        let opened = try await SourceFactory.open("https://cdn.example.com/v.mp4", options: options)
        let movie = try await MP4File.open(opened)
        if let costly = opened as? any ReportsReadCost {
            print(await costly.readCostSummary())   // ["cache: 2 upstream reads, ...", "2 HTTP requests, ..."]
        }
        // docs:end
        _ = movie
    }

    // docs/library.md: limits
    // docs/library.md: the facts pass
    static func facts(_ source: some ByteSource, _ http: HTTPByteSource) async throws {
        // docs:begin
        let quick = try await MP4File.open(source, options: .init(facts: .structure))
        let remote = try await MP4File.open(http, options: .init(facts: .all))   // walk the moofs anyway
        // docs:end
        _ = (quick, remote)
    }

    static func limits(_ source: some ByteSource) async throws {
        // docs:begin
        var limits = ParseLimits()
        limits.maxMovieBoxSize = 32 << 20     // refuse moov above 32 MiB
        limits.maxDepth = 16
        let file = try await MP4File.open(source, options: .init(limits: limits))
        // docs:end
        _ = file
    }

    // docs/library.md: the box tree
    static func boxTree(_ source: some ByteSource) async throws {
        // docs:begin
        let file = try await MP4File.open(source, options: .init(loadsAllBoxes: true))
        for node in file.topLevelNodes {
            node.walk(path: BoxPath()) { box, path in
                if let table = box.sampleTable, table.kind == .chunkOffset {
                    print(path, "has", table.entryCount, "chunk offsets")
                }
                return .descend                          // or .skipChildren, .stop
            }
        }
        let stsd = file.movieBox?.descendant("trak", "mdia", "minf", "stbl", "stsd")
        // docs:end
        _ = stsd
    }

    // docs/library.md: headers only
    static func headersOnly(_ source: some ByteSource) async throws {
        // docs:begin
        let layout = try await TopLevelScanner.scan(source)   // headers only, no moov
        print(layout.isFastStart, layout.boxes.map { "\($0.type)@\($0.offset)+\($0.size)" })
        // docs:end
    }

    // docs/seeking.md: the first example
    static func seeking() async throws {
        // docs:begin
        let source = try FileSource(path: "movie.mp4")                      // or any ByteSource
        let file = try await MP4File.open(source)                            // reads headers + moov only
        let planner = try await SeekPlanner.index(file, from: source)         // every track; reads each moof of a fragmented file
        let plan = try planner.plan(at: 754.2, duration: 10)                 // 12:34.2, a 10 s window
        print(plan.keyframeTime, plan.startOffset, plan.endOffset, plan.ranges)

        // One seek, reading as little as possible (fragmented files: only the moofs around T):
        let once = try await SeekPlanner.plan(file, from: source, at: 754.2, duration: 10)
        // docs:end
        _ = once
    }

    /// What the cache-filling example of docs/seeking.md assumes: a range set of your own.
    struct YourCache {
        func missingParts(of range: Range<UInt64>) -> [Range<UInt64>] { [range] }
    }

    static func fetch(_ ranges: [Range<UInt64>]) async throws {}

    // docs/seeking.md: filling a cache of your own
    static func ownCache(_ planner: SeekPlanner, _ cache: YourCache, _ t: Double) async throws {
        // docs:begin
        let plan = try planner.plan(at: t, duration: 30)
        let missing = plan.ranges.flatMap { cache.missingParts(of: $0) }   // your range set
        try await fetch(missing)                                             // only what is not local
        // `moov` is needed too: file.layout.movieBox gives its offset and size.
        // docs:end
    }

    // docs/http.md
    static func http() async throws {
        // docs:begin
        let source = try HTTPByteSource(url: URL(string: "https://cdn.example.com/video.mp4")!)
        let file = try await MP4File.open(source)                  // 2 requests for a moov-at-end file
        let plan = try await SeekPlanner.plan(file, from: source, at: 750, duration: 10)
        for range in plan.ranges { _ = try await source.read(range) }  // exactly the samples needed
        print(source.statistics)                                   // requests, bytes received, retries
        // docs:end
    }

    // docs/serving.md: the loader core
    static func loader(_ cachesDirectory: String) async throws {
        // docs:begin
        let loader = MediaLoader(options: .init(cacheDirectory: cachesDirectory + "/media"))
        let resource = try await loader.resource(for: "https://cdn.example.com/v.mp4")
        let info = try await resource.contentInformation()   // length, MIME type, ETag, ranges
        try await resource.load(offset: 0, length: 2) { bytes in /* hand them on */ }
        try await resource.load(offset: 1_000_000, length: nil) { bytes in /* to the end */ }
        // docs:end
        _ = info
    }

    // docs/library.md: feeds
    static func feed(_ cachesDirectory: String, _ upcoming: [String]) async throws {
        // docs:begin
        let loader = MediaLoader(options: .init(cacheDirectory: cachesDirectory + "/media"))
        for next in upcoming.prefix(5) {
            Task { try await loader.preload(next, seconds: 3) }   // moov + first 3 s; yields to players
        }
        let (cache, isPreloading, failure) = await loader.status(of: upcoming[0])
        print(cache?.movieIsCached ?? false, cache?.playable.prefixSeconds ?? 0, isPreloading, failure ?? "")
        await loader.cancelPreload(upcoming[4])                   // scrolled away: what arrived stays
        // docs:end
    }

    // docs/library.md: the inspector page
    static func inspectorPage(_ source: some ByteSource) async throws -> (page: String, verdict: String) {
        // docs:begin
        let file = try await MP4File.open(source, options: .init(loadsAllBoxes: true))
        let page = InspectorPage.html(await InspectorData.gather(file, from: source))
        print(file.faststartVerdict)   // "NO — moov at end (offset 79,297, 2.8 KiB); ..."
        print(file.bytesBeforePlayback as Any)  // 82215: a reader front to back has the first frame after these
        // docs:end
        return (page, file.faststartVerdict)
    }

    // docs/cache.md
    static func cache(_ url: URL, _ cacheDirectory: String, _ t: Double) async throws {
        // docs:begin
        let remote = try HTTPByteSource(url: url)
        let cached = try await CachedByteSource(upstream: remote, directory: cacheDirectory)
        let file = try await MP4File.open(cached)                          // headers + moov, now local
        let plan = try await SeekPlanner.plan(file, from: cached, at: t, duration: 30)
        for range in plan.ranges { _ = try await cached.read(range) }      // prefetch for the seek
        let missing = await cached.cachedRanges.missing(in: 0..<file.layout.fileSize)
        // docs:end
        _ = missing
    }
}

/// What the custom-source example of docs/library.md assumes: a blob store of your own.
protocol MyBlob: Sendable {
    var identifier: String { get }
    func size() async throws -> UInt64
    func bytes(in range: Range<UInt64>) async throws -> [UInt8]
}

// docs/library.md: a byte source of your own
// docs:begin
struct BlobSource: ByteSource {
    let blob: MyBlob
    var name: String { blob.identifier }
    var preferredReadSize: Int { 256 << 10 }   // remote: read generously to save round trips
    var isRemote: Bool { true }                 // MP4File.open then skips the walk of every moof
    func length() async throws -> UInt64 { try await blob.size() }
    func read(_ range: Range<UInt64>) async throws -> [UInt8] { try await blob.bytes(in: range) }
}
// docs:end

/// The examples compile (that is the point); the ones that need no network or other files run
/// here on a sample.
@Suite struct DocExamplesTests {
    @Test func localExamplesRunOnASample() async throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("SampleMedia/faststart.mp4").path
        let source = try FileSource(path: path)
        let file = try await MP4File.open(source)
        _ = file  // samplesAndSeeks seeks to 12.5 s: longer than any sample; compiled only
        try await DocExamples.limits(source)
        try await DocExamples.boxTree(source)
        try await DocExamples.headersOnly(source)
    }

    @Test func theInspectorExampleWritesAPageWithTheVerdict() async throws {
        let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("SampleMedia/moov-at-end.mp4").path
        let (page, verdict) = try await DocExamples.inspectorPage(try FileSource(path: path))
        #expect(verdict.hasPrefix("NO — moov at end (offset 79,297, 2.8 KiB)"), "the comment in docs/library.md quotes this verdict: \(verdict)")
        #expect(page.hasPrefix("<!DOCTYPE html>") && page.contains("moov-at-end.mp4"))
    }
}
