import Foundation
import Testing
@testable import MP4ProbeCLI
import MP4Core
import MP4IO
import MP4Report
import MP4TestSupport

/// `mp4probe inspect` (issue 35): the page it writes, rendered by headless Chromium, shows
/// every top-level box with its offset, every track's codec string and the verdict, draws its
/// maps as SVG, meets no error, and loads nothing; a screenshot of each kind is left in
/// ``HeadlessChromium/screenshotDirectory`` for a person to look at.
@Suite(.serialized) struct InspectCommandTests {
    /// A two-hour film (216,000 video and 338,400 audio samples, moov at the end, 42 MB): ten
    /// seconds encoded once, copied 720 times (about 3 s).
    static func longFilm() async -> String? { await Executables.offPool { madeLongFilm } }
    private static let madeLongFilm: String? = {
        guard let ffmpeg = Executables.find("ffmpeg") else { return nil }
        let root = FileSystem.temporaryDirectory("mp4probe-inspect-long")
        _ = Executables.run(ffmpeg, ["-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "testsrc2=s=64x64:r=30:d=10", "-f", "lavfi", "-i", "sine=f=440:r=48000:d=10",
                                     "-c:v", "libx264", "-pix_fmt", "yuv420p", "-preset", "ultrafast", "-g", "60", "-b:v", "20k", "-c:a", "aac", "-b:a", "16k", "-ac", "1",
                                     "-f", "mpegts", root + "/part.ts"])
        FileSystem.write(Array(String(repeating: "file 'part.ts'\n", count: 720).utf8), to: root + "/list.txt")
        _ = Executables.run(ffmpeg, ["-v", "error", "-nostdin", "-y", "-f", "concat", "-safe", "0", "-i", root + "/list.txt", "-c", "copy", "-bsf:a", "aac_adtstoasc", root + "/long.mp4"])
        return FileSystem.exists(root + "/long.mp4") ? root + "/long.mp4" : nil
    }()

    static let kinds = ["moov-at-end", "faststart", "fragmented", "long"]

    /// The seek explorer answers the time asked (issue 46 item 4): at times between its plans'
    /// points, and at keyframes, the page (opened at `#t=TIME`) shows the keyframe and the
    /// first byte `SeekPlanner` (what `mp4probe seek` prints) gives for that time. It showed
    /// the plan of the last 3-second point before it, labelled with the time asked. The
    /// two-hour film: a keyframe every 2 s, 3,600 of them.
    @Test(.requires("chromium", "ffmpeg"), .enabled(if: !Executables.underSanitizer, "the browser's time, not our code's: the plain run renders"),
          .hangGuard)
    func theSeekExplorerAnswersTheTimeAsked() async throws {
        let long = try #require(await Self.longFilm())
        let directory = FileSystem.temporaryDirectory("mp4probe-inspect-seek")
        defer { FileSystem.removeDirectory(directory) }
        // Three films: the two-hour moov-at-end film, a faststart one and a fragmented one.
        let films: [(String, [Double])] = [(long, [5.0, 200.0, 201.3, 1234.9, 7199.0]),
                                           (Fixtures.sample("faststart.mp4"), [0.3, 1.0, 1.55, 1.99]),
                                           (Fixtures.sample("fragmented.mp4"), [0.3, 1.0, 1.55, 1.99])]
        for (index, (path, times)) in films.enumerated() {
            try await Self.explorerAgreesWithSeek(path, times: times, page: directory + "/\(index).html", profile: directory + "/profile")
        }
    }

    static func explorerAgreesWithSeek(_ path: String, times: [Double], page: String, profile: String) async throws {
        #expect(await CommandTests.run(["inspect", path, "-o", page]).code == 0)
        let source = try FileSource(path: path)
        let file = try await MP4File.open(source)
        let planner = try await SeekPlanner.index(file, from: source)
        for time in times {
            let plan = try planner.plan(at: time, duration: 1)
            let dom = await HeadlessChromium.dumpDOM("file://\(page)#t=\(time)", profile: profile)
            let keyframe = dom.range(of: #"id="plan-keyframe">[^<]*"#, options: .regularExpression).map { String(dom[$0].dropFirst(#"id="plan-keyframe">"#.count)) }
            let ranges = dom.range(of: #"id="plan-ranges">[^<]*"#, options: .regularExpression).map { String(dom[$0].dropFirst(#"id="plan-ranges">"#.count)) }
            #expect(keyframe == Format.clock(plan.keyframeTime), "\(path) at \(time): the page says keyframe \(keyframe ?? "none"), the plan \(Format.clock(plan.keyframeTime))")
            let firstByte = try #require(plan.ranges.first).lowerBound
            #expect(ranges?.hasPrefix(Format.grouped(firstByte) + "–") == true, "at \(time): the page reads \(ranges ?? "nothing"); the plan starts at \(Format.grouped(firstByte))")
        }
    }

    @Test(.requires("chromium", "ffmpeg"), .enabled(if: !Executables.underSanitizer, "the browser's time, not our code's: the plain run renders"),
          .hangGuard, arguments: kinds)
    func thePageShowsTheFile(kind: String) async throws {
        let path = kind == "long" ? try #require(await Self.longFilm()) : Fixtures.sample(kind + ".mp4")
        let directory = FileSystem.temporaryDirectory("mp4probe-inspect")
        defer { FileSystem.removeDirectory(directory) }
        let page = directory + "/\(kind).html"
        let started = Date()
        let result = await CommandTests.run(["inspect", path, "-o", page])
        let writing = Date().timeIntervalSince(started)
        #expect(result.code == 0, "\(result.err)")
        #expect(result.out == page + "\n")
        let html = try #require(FileSystem.read(page))
        // Facts as the library has them: what the page must show.
        let file = try await MP4File.open(try FileSource(path: path))
        let dom = await HeadlessChromium.dumpDOM("file://" + page, profile: directory + "/profile")
        #expect(HeadlessChromium.bodyData("rendered", in: dom) == "1", "the script did not finish: \(dom.prefix(2000))")
        #expect(HeadlessChromium.bodyData("errors", in: dom) == nil, "errors: \(dom.prefix(3000))")
        #expect(HeadlessChromium.bodyData("resources", in: dom) == "0", "the page loaded something")
        let text = HeadlessChromium.visibleText(dom)
        #expect(text.contains(file.faststartVerdict), "no verdict")
        for box in file.layout.boxes {
            #expect(text.contains("\(box.type) @\(Format.grouped(box.offset)) size \(Format.grouped(box.header.size))"), "\(kind): no \(box.type) at \(box.offset)")
        }
        for track in file.movie?.tracks ?? [] {
            #expect(text.contains(try #require(track.sampleEntries.first?.codecString)), "\(kind): no codec string of track \(track.trackID)")
        }
        #expect(dom.contains("<svg"), "no SVG")
        #expect(dom.contains("seek plan: bytes"), "\(kind): no seek plan drawn")
        // The legend's bytes before the first frame are the verdict's (a fragmented film's
        // first fragment, not its moov alone).
        #expect(text.contains("bytes before the first frame: " + Format.bytes(try #require(file.bytesBeforePlayback))), "\(kind)")
        // The moov is drawn at a scale of its own (its row, or the start's) wherever the whole
        // file's map makes it small, its children inside it.
        if let moov = file.layout.movieBox, moov.size * 20 < file.layout.fileSize {
            #expect(dom.contains("aria-label=\"moov (\(Format.bytes(moov.size)))\"") || dom.contains("aria-label=\"start ("), "\(kind): no zoomed moov")
            #expect(dom.contains("<title>moov/trak @"), "\(kind): the moov's children are not drawn")
        }
        // Interleaving has its number, as check measures it.
        let source = try FileSource(path: path)
        let opened = try await MP4File.open(source)
        if let seconds = SampleLayoutAnalysis(planner: SeekPlanner(file: opened), layout: opened.layout).interleaveSeconds, (file.movie?.tracks.count ?? 0) > 1 {
            #expect(text.contains("interleaved: " + String(format: "%.2f", seconds) + " s"), "\(kind): no interleaving number (\(seconds))")
        }
        let shot = HeadlessChromium.screenshotDirectory + "/inspect-\(kind).png"
        #expect(await HeadlessChromium.screenshot("file://" + page, to: shot, profile: directory + "/profile"))
        let render = HeadlessChromium.bodyData("render-ms", in: dom) ?? "?"
        print("inspect \(kind): page \(html.count) bytes, written in \(Int(writing * 1000)) ms (debug build), drawn in \(render) ms; screenshot \(shot)")
        if kind == "long" {
            #expect(file.movie?.tracks.reduce(0) { $0 + $1.sampleCount } ?? 0 > 550_000)
            #expect(html.count < 4 << 20, "a two-hour film's page is \(html.count) bytes")
            #expect(Int(render) ?? .max < 1000, "drawn in \(render) ms")
        }
    }

    /// The page names no resource to load: its policy allows none, and no `src`, `href` or
    /// CSS `url()` holds an address (the SVG namespace name is not loaded).
    @Test func thePageNamesNothingToLoad() async throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-inspect")
        defer { FileSystem.removeDirectory(directory) }
        let result = await CommandTests.run(["inspect", Fixtures.sample("fragmented.mp4"), "-o", directory + "/page.html"])
        #expect(result.code == 0)
        let html = String(decoding: try #require(FileSystem.read(directory + "/page.html")), as: UTF8.self)
        #expect(html.contains("content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:; media-src 'none'; connect-src 'none'\""))
        for pattern in ["(src|href|action)\\s*=\\s*[\"']?[a-z]+:", "url\\(\\s*[\"']?[a-z]+:", "@import", "fetch\\(\"http", "XMLHttpRequest"] {
            #expect(html.range(of: pattern, options: [.regularExpression, .caseInsensitive]) == nil, "the page names a resource: \(pattern)")
        }
        #expect(html.components(separatedBy: "://").count - 1 == 1, "only the SVG namespace name holds an address")
    }

    /// Without -o the page goes to a temporary file whose path is printed.
    @Test func withoutOutputThePageGoesToATemporaryFile() async throws {
        let result = await CommandTests.run(["inspect", Fixtures.sample("faststart.mp4")])
        #expect(result.code == 0)
        let path = result.out.trimmingCharacters(in: .whitespacesAndNewlines)
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(path.hasPrefix(NSTemporaryDirectory()) && path.hasSuffix(".html"), "\(path)")
        #expect(String(decoding: try #require(FileSystem.read(path)), as: UTF8.self).contains("<script type=\"application/json\" id=\"facts\">"))
    }
}

extension InspectCommandTests {
    /// A long list of boxes folds (issue 46 item 4): a film of 240 fragments shows its first
    /// boxes, then groups whose summaries name every box's bytes; the findings come before the
    /// box tree; the start of the file gets a zoomed row.
    @Test(.requires("chromium", "ffmpeg"), .enabled(if: !Executables.underSanitizer, "the browser's time, not our code's: the plain run renders"),
          .hangGuard)
    func longBoxListsFold() async throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-inspect-fold")
        defer { FileSystem.removeDirectory(directory) }
        let film = directory + "/frag.mp4"
        let ffmpeg = try #require(Executables.find("ffmpeg"))
        _ = await Executables.runOffPool(ffmpeg, ["-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "testsrc2=s=64x64:r=10:d=120", "-c:v", "libx264", "-preset", "ultrafast",
                                                  "-g", "5", "-movflags", "frag_keyframe+empty_moov", film])
        let file = try await MP4File.open(try FileSource(path: film))
        let boxes = file.layout.boxes
        #expect(boxes.count > 400, "\(boxes.count) top-level boxes")
        #expect(await CommandTests.run(["inspect", film, "-o", directory + "/page.html"]).code == 0)
        let dom = await HeadlessChromium.dumpDOM("file://" + directory + "/page.html", profile: directory + "/profile")
        #expect(HeadlessChromium.bodyData("errors", in: dom) == nil, "errors: \(dom.prefix(3000))")
        let text = HeadlessChromium.visibleText(dom)
        // Every top-level box is either on a line of its own or inside a fold that says its bytes.
        var folds: [ClosedRange<UInt64>] = []
        let pattern = try NSRegularExpression(pattern: "boxes [0-9,]+–[0-9,]+ of [0-9,]+: [^·]+ · bytes ([0-9,]+)–([0-9,]+)")
        for match in pattern.matches(in: text, range: NSRange(text.startIndex..., in: text)) {
            let number = { (i: Int) in Range(match.range(at: i), in: text).flatMap { UInt64(text[$0].replacingOccurrences(of: ",", with: "")) } ?? 0 }
            folds.append(number(1)...number(2))
        }
        #expect(folds.count == (boxes.count - 20 + 99) / 100, "\(folds.count) folds")
        var lines = 0
        for box in boxes {
            if text.contains("\(box.type) @\(Format.grouped(box.offset)) size \(Format.grouped(box.header.size))") { lines += 1; continue }
            #expect(folds.contains { $0.contains(box.offset) && $0.contains(box.offset + box.size - 1) }, "box at \(box.offset) is neither shown nor in a fold")
        }
        #expect(lines < 60, "\(lines) boxes drawn unfolded")
        #expect(dom.contains("aria-label=\"start ("), "no zoomed start")
        if let findings = text.range(of: "Findings"), let tree = text.range(of: "Boxes ftyp") { #expect(findings.lowerBound < tree.lowerBound) }
        let shot = HeadlessChromium.screenshotDirectory + "/inspect-folded.png"
        #expect(await HeadlessChromium.screenshot("file://" + directory + "/page.html", to: shot, profile: directory + "/profile"))
    }

    /// A URL: the page of a remote moov-at-end file costs what `info` costs (its head and its
    /// moov), and a remote fragmented file's fragments are not walked (no chunk rows).
    @Test(.requires("nginx")) func aURLIsInspectedWithoutWalkingItsFragments() async throws {
        let nginx = try #require(NginxServer.sampleMedia)
        let directory = FileSystem.temporaryDirectory("mp4probe-inspect-url")
        defer { FileSystem.removeDirectory(directory) }
        let marker = "url=\(UInt64.random(in: 0...UInt64.max))"
        let moovAtEnd = await CommandTests.run(["inspect", nginx.baseURL + "/moov-at-end.mp4?" + marker, "-o", directory + "/a.html"])
        #expect(moovAtEnd.code == 0, "\(moovAtEnd.err)")
        let page = String(decoding: try #require(FileSystem.read(directory + "/a.html")), as: UTF8.self)
        #expect(page.contains("NO — moov at end (offset 79,297, 2.8 KiB)"))
        #expect((1...2).contains(nginx.requests(containing: marker).count), "\(nginx.requests(containing: marker))")
        let fragmented = await CommandTests.run(["inspect", nginx.baseURL + "/fragmented.mp4?" + marker + "f", "-o", directory + "/f.html"])
        #expect(fragmented.code == 0, "\(fragmented.err)")
        let fragmentedPage = String(decoding: try #require(FileSystem.read(directory + "/f.html")), as: UTF8.self)
        #expect(fragmentedPage.contains("\"chunks\":[]") && fragmentedPage.contains("\"plans\":[]"))
        #expect((1...3).contains(nginx.requests(containing: marker + "f").count), "\(nginx.requests(containing: marker + "f"))")
    }
}
