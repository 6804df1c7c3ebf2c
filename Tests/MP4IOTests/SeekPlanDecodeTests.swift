import Foundation
import Testing
import MP4Core
import MP4IO
import MP4TestSupport

/// Seek plans checked as a player sees them: a sparse copy of the file that holds every box
/// but the media data, plus only the byte ranges a plan names, is decoded with ffmpeg
/// (`-ss T -i COPY -t 2 -f framemd5`) and must give exactly the frames the original gives.
///
/// Inputs: the valid SampleMedia files and a matrix generated at test time by
/// `Tests/DecodeMatrix/make-matrix.sh` (H.264 with and without B-frames, negative CTS, VFR,
/// HEVC open GOP, VP9, AV1, MPEG-4 Part 2; AAC, MP3, Opus, FLAC, ALAC, AC-3, E-AC-3, PCM;
/// two audio tracks, chapters, edit lists from cuts and offsets; empty-moov, sidx, short,
/// hybrid, DASH and CMAF fragments). Times: 0, the middle, two pseudo-random times and 0.35 s
/// before the end. Fragmented files are planned through `SeekPlanner.plan(_:from:...)`, so the
/// `sidx`/`mfra`-located path is what gets decoded.
///
/// Without ffmpeg the test is skipped with a message (`.ci/run` installs it); the committed
/// golden `Tests/Goldens/seek-decode-plans.tsv` (plans that passed this test) is checked by
/// ``plansEqualTheDecodeVerifiedGoldens()`` without ffmpeg.
@Suite(.serialized) struct SeekPlanDecodeTests {
    static let ffmpeg = Executables.find("ffmpeg")
    static let goldenPath = Fixtures.packageRoot + "/Tests/Goldens/seek-decode-plans.tsv"
    static let window = 2.0
    /// ffmpeg's command line seeks 3/23 s before `-ss` when a stream has B-frames (its "dts
    /// heuristic"), which can land a GOP earlier than the plan's keyframe. Asking ffmpeg for
    /// T + 3/23 makes its seek land where the plan starts, and planning 0.2 s more than the
    /// window keeps ffmpeg's window inside the plan's.
    static let ffmpegBackoff = 3.0 / 23.0

    /// The times tried in `planner`'s file, on the file's own presentation timeline.
    static func times(_ name: String, movieEnd: Double) -> [Double] {
        var random = SeededRandom(seed: UInt64(truncatingIfNeeded: name.utf8.reduce(5381) { ($0 &* 33) &+ Int($1) }))
        // Every time leaves room for ffmpeg's T + 3/23 s inside the movie.
        let last = max(0, movieEnd - 0.35)
        let r1 = Double(random.next() % 1_000_000) / 1_000_000 * last
        let r2 = Double(random.next() % 1_000_000) / 1_000_000 * last
        return [0, movieEnd / 2, r1, r2, last].map { ($0 * 1000).rounded(.down) / 1000 }
    }

    /// One planned window, as the golden file records it.
    struct Row: Hashable, CustomStringConvertible {
        var file: String
        var time: Double
        var ranges: [Range<UInt64>]
        var description: String {
            "\(file)\t\(String(format: "%.3f", time))\t" + ranges.map { "\($0.lowerBound)-\($0.upperBound)" }.joined(separator: ",")
        }
    }

    static func plan(_ path: String, at time: Double, duration: Double = window + 0.2) async throws -> (SeekPlan, MP4File) {
        let source = try FileSource(path: path)
        let file = try await MP4File.open(source)
        return (try await SeekPlanner.plan(file, from: source, at: time, duration: duration), file)
    }

    /// The whole-file index of `path` (every fragment read), for the facts the test needs
    /// beside the plans: the movie's end, the timeline shift, the keyframes.
    static func index(_ path: String) async throws -> (SeekPlanner, MP4File) {
        let source = try FileSource(path: path)
        let file = try await MP4File.open(source)
        return (try await SeekPlanner.index(file, from: source), file)
    }

    /// ffmpeg's start time of the main track minus ours: ffmpeg 5.1 ignores the edit lists of
    /// fragmented files, so its timeline can be shifted against the file's.
    static func timelineShift(_ path: String, planner: SeekPlanner, file: MP4File) async -> Double {
        guard file.isFragmented, let main = planner.mainTrack,
              let index = file.movie?.tracks.firstIndex(where: { $0.trackID == main.track.trackID }) else { return 0 }
        let probe = await Executables.runOffPool(Executables.find("ffprobe") ?? "ffprobe", ["-v", "error", "-select_streams", "\(index)", "-show_entries", "stream=start_time", "-of", "csv=p=0", path])
        guard let ffmpegStart = Double(probe.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",").first ?? "") else { return 0 }
        var ours = Double.infinity
        for i in 0..<min(main.samples.sampleCount, 40) {
            ours = min(ours, main.presentationTime(of: i))
        }
        guard ours.isFinite else { return 0 }
        let shift = ffmpegStart - ours
        return abs(shift) < 0.001 ? 0 : shift
    }

    /// A sparse copy of `path` with every top-level box but `mdat` whole, the `mdat` headers,
    /// and the plan's ranges; holes (zeros) elsewhere.
    static func sparseCopy(_ path: String, file: MP4File, ranges: [Range<UInt64>], to copy: String) throws {
        let bytes = try #require(FileSystem.read(path))
        let size = UInt64(bytes.count)
        var kept = ranges
        for box in file.layout.boxes {
            kept.append(box.type == .mdat ? box.offset..<(box.offset + UInt64(box.header.headerSize)) : box.offset..<box.availableEnd)
        }
        let pieces = SeekPlanner.merge(kept).compactMap { range -> (UInt64, [UInt8])? in
            let lower = min(range.lowerBound, size), upper = min(range.upperBound, size)
            return lower < upper ? (lower, Array(bytes[Int(lower)..<Int(upper)])) : nil
        }
        #expect(FileSystem.writeSparse(copy, size: size, pieces: pieces))
    }

    static func framemd5(_ path: String, at time: Double) async -> [String] {
        let output = await Executables.runOffPool(ffmpeg ?? "ffmpeg", ["-hide_banner", "-loglevel", "error", "-nostdin", "-ss", String(format: "%.6f", time), "-i", path, "-t", String(window), "-map", "0:v?", "-map", "0:a?", "-f", "framemd5", "-"])
        return output.split(separator: "\n").filter { !$0.hasPrefix("#") }.map(String.init)
    }

    /// The earliest presentation time ffmpeg demuxes on stream `stream` after `-ss time`, from
    /// its `-debug_ts` log.
    static func firstDemuxedTime(_ path: String, at time: Double, stream: Int) async -> Double? {
        let log = await Executables.runOffPool(ffmpeg ?? "ffmpeg", ["-hide_banner", "-nostdin", "-debug_ts", "-ss", String(format: "%.6f", time), "-i", path, "-t", "0.1", "-map", "0:v?", "-map", "0:a?", "-f", "null", "-"], stderrToStdout: true)
        var earliest: Double?
        for line in log.split(separator: "\n") where line.hasPrefix("demuxer -> ist_index:\(stream) ") {
            guard let field = line.split(separator: " ").first(where: { $0.hasPrefix("pkt_pts_time:") }),
                  let value = Double(field.dropFirst("pkt_pts_time:".count)) else { continue }
            earliest = min(earliest ?? value, value)
        }
        return earliest
    }

    /// Halfway between the plan's keyframe and the keyframe before it on the main track (or
    /// -infinity when it is the first): ffmpeg's keyframe counts as an earlier one only below
    /// this, so that the small differences between ffmpeg's timeline and the file's (ffmpeg
    /// shifts stream-copy cuts by part of a frame) cannot hide a plan that is short.
    static func halfwayToPreviousKeyframe(_ planner: SeekPlanner, before keyframeTime: Double) -> Double {
        guard let main = planner.mainTrack, let syncs = main.samples.syncSampleIndices else { return -.infinity }
        let previous = syncs.map { main.presentationTime(of: $0) }.filter { $0 < keyframeTime - 1e-6 }.max()
        return previous.map { ($0 + keyframeTime) / 2 } ?? -.infinity
    }

    static func inputs(matrix: String) -> [String] {
        let samples = Fixtures.sampleFiles.map(Fixtures.sample)
        let generated = FileSystem.list(matrix).filter { !$0.hasPrefix(".") && ($0.hasSuffix(".mp4") || $0.hasSuffix(".m4a") || $0.hasSuffix(".mov")) }.sorted().map { matrix + "/" + $0 }
        return samples + generated
    }

    /// What decoding one file's planned windows found.
    struct FileResult: Sendable {
        var failures: [String] = []
        var rows: [Row] = []
        var unverifiable: [String] = []
        var seeksEarlier: [String] = []
        var windows = 0
    }

    /// Decodes every planned window of `path` from the planned bytes alone and from the file.
    static func decodeWindows(of path: String, index: Int, scratch: String) async throws -> FileResult {
        var result = FileResult()
        let name = String(path.split(separator: "/").last ?? "")
        let (planner, indexedFile) = try await Self.index(path)
        let end = try #require(planner.movieEnd)
        let decodes = !Executables.underSanitizer
        let shift = decodes ? await Self.timelineShift(path, planner: planner, file: indexedFile) : 0
        for time in Self.times(name, movieEnd: end) {
            let (plan, file) = try await Self.plan(path, at: time)
            let copy = scratch + "/copy-\(index)." + (name.split(separator: ".").last.map(String.init) ?? "mp4")
            // ffmpeg reads the first samples of every track when it opens a file (to
            // guess the H.264 reorder depth, among others) and behaves differently at the
            // end of the stream when they are zeros: the copy holds what a plan at 0 names
            // (0.5 s), as a player that opened the file has. Windows at 0 test the same.
            let (opening, _) = try await Self.plan(path, at: 0, duration: 0.5)
            try Self.sparseCopy(path, file: file, ranges: plan.ranges + opening.ranges, to: copy)
            // Under AddressSanitizer our code is what is checked: the files are indexed and
            // planned, the copies made, and ffmpeg's decoding (78 s of CPU of the ASan suite's,
            // the same as in the plain suite) is the plain suite's.
            guard decodes else {
                if plan.ranges.isEmpty { result.failures.append("\(name) @\(time): an empty plan") }
                result.windows += 1
                continue
            }
            let expected = await Self.framemd5(path, at: time + shift + Self.ffmpegBackoff)
            let actual = await Self.framemd5(copy, at: time + shift + Self.ffmpegBackoff)
            // ffmpeg presents nothing at some times just before the end (the last frame's
            // time is past its own notion of the end): nothing to compare there.
            if expected.isEmpty && actual.isEmpty { result.unverifiable.append("\(name) @\(time)"); continue }
            result.windows += 1
            // Only ffmpeg's keyframe-track start decides this: its other tracks start where
            // it aligns them, which is exactly what the plan must cover.
            if expected != actual, let stream = file.movie?.tracks.firstIndex(where: { $0.trackID == plan.keyframeTrackID }),
               let first = await Self.firstDemuxedTime(path, at: time + shift + Self.ffmpegBackoff, stream: stream),
               first < Self.halfwayToPreviousKeyframe(planner, before: plan.keyframeTime) + shift {
                // ffmpeg's own seek went to an earlier point than the plan's keyframe
                // (fragments that do not start with a keyframe send it back to the file's
                // start): its decoders' state then comes from bytes before the window.
                result.seeksEarlier.append("\(name) @\(time) (ffmpeg's keyframe at \(first) s, the plan's at \(plan.keyframeTime + shift) s)")
                result.windows -= 1
                continue
            }
            if expected != actual {
                let differing = zip(expected, actual).filter { $0 != $1 }.count + abs(expected.count - actual.count)
                result.failures.append("\(name) @\(time): \(differing) of \(expected.count) frames differ (\(actual.count) decoded from the plan)")
            }
            if path.hasPrefix(Fixtures.sampleMedia) { result.rows.append(Row(file: name, time: time, ranges: plan.ranges)) }
        }
        return result
    }

    @Test(.enabled(if: ffmpeg != nil, "ffmpeg is not installed (apt-get install ffmpeg; .ci/run installs it): seek plans are not decoded, only compared with the committed goldens"))
    func everyPlannedWindowDecodesFrameIdentical() async throws {
        let matrix = FileSystem.temporaryDirectory("mp4probe-decode-matrix")
        defer { FileSystem.removeDirectory(matrix) }
        let made = await Executables.runOffPool("/bin/bash", [Fixtures.packageRoot + "/Tests/DecodeMatrix/make-matrix.sh", matrix], stderrToStdout: true)
        let scratch = FileSystem.temporaryDirectory("mp4probe-decode-copy")
        defer { FileSystem.removeDirectory(scratch) }
        // Files are decoded two at a time (this test is the suite's longest: its ffmpeg runs
        // are independent), their results kept in input order.
        let inputs = Self.inputs(matrix: matrix)
        var results = [FileResult?](repeating: nil, count: inputs.count)
        try await withThrowingTaskGroup(of: (Int, FileResult).self) { group in
            var next = 0
            func start() {
                guard next < inputs.count else { return }
                let index = next, path = inputs[index]
                next += 1
                group.addTask { (index, try await Self.decodeWindows(of: path, index: index, scratch: scratch)) }
            }
            for _ in 0..<2 { start() }
            while let (index, result) = try await group.next() {
                results[index] = result
                start()
            }
        }
        let done = results.compactMap { $0 }
        let failures = done.flatMap(\.failures), rows = done.flatMap(\.rows)
        let unverifiable = done.flatMap(\.unverifiable), seeksEarlier = done.flatMap(\.seeksEarlier)
        let windows = done.reduce(0) { $0 + $1.windows }, files = done.count
        if Executables.underSanitizer {
            print("SeekPlanDecodeTests under AddressSanitizer: \(windows) windows of \(files) files planned and copied; decoded in the plain suite")
            #expect(files >= 40, "the matrix made too few files: \(made)")
            #expect(windows == files * 5 && failures.isEmpty, "\(failures)")
            return
        }
        print("SeekPlanDecodeTests: \(windows - failures.count) of \(windows) windows in \(files) files decode frame-identical from the planned bytes alone; windows where ffmpeg presents no frame: \(unverifiable); not comparable because ffmpeg seeks before the plan's keyframe: \(seeksEarlier)")
        #expect(seeksEarlier.count * 20 < windows, "ffmpeg seeks earlier than the plan too often: \(seeksEarlier)")
        #expect(files >= 40, "the matrix made too few files: \(made)")
        #expect(unverifiable.count <= 2, "windows that gave no frame at all: \(unverifiable)")
        let listing = failures.joined(separator: "\n")
        #expect(failures.isEmpty, "\(failures.count) of \(windows) windows decode differently:\n\(listing)")
        if ProcessInfo.processInfo.environment["MP4PROBE_RECORD_GOLDENS"] != nil && failures.isEmpty {
            let text = "# file\ttime\tranges (decode-verified by SeekPlanDecodeTests; MP4PROBE_RECORD_GOLDENS=1 swift test --filter SeekPlanDecode re-records)\n" + rows.map(\.description).joined(separator: "\n") + "\n"
            #expect(FileSystem.write(Array(text.utf8), to: Self.goldenPath))
        }
    }

    /// Without ffmpeg: the plans for SampleMedia equal those that were decode-verified.
    @Test func plansEqualTheDecodeVerifiedGoldens() async throws {
        let text = String(decoding: try #require(FileSystem.read(Self.goldenPath)), as: UTF8.self)
        var checked = 0
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard fields.count == 3, let time = Double(fields[1]) else { Issue.record("bad golden line: \(line)"); continue }
            let (plan, _) = try await Self.plan(Fixtures.sample(String(fields[0])), at: time)
            let row = Row(file: String(fields[0]), time: time, ranges: plan.ranges)
            #expect(row.description == String(line), "plan changed; decode-verify it and re-record")
            checked += 1
        }
        #expect(checked >= 60)
    }
}
