import Foundation
import Testing
@testable import MP4Core
import MP4TestSupport

/// Issue 45 item 2: the picture and frame facts ingest rules need, on films ffmpeg makes to
/// break each rule (10-bit 4:2:2, interlaced, variable frame rate, B-frames, open GOPs, 120
/// fps, PQ, a bit rate spike): each fact as made, and the B-frame runs and GOPs as ffprobe's
/// decoded frame types show them.
@Suite(.requires("ffmpeg", "ffprobe"), .hangGuard)
struct CodecFactsTests {
    static let source = ["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=25", "-t", "4"]

    /// Makes `name` in `directory` with ffmpeg `arguments` (after the test source).
    static func film(_ directory: String, _ name: String, _ arguments: [String], source: [String] = source) async throws -> (Track, String) {
        let path = directory + "/" + name
        let ffmpeg = try #require(Executables.find("ffmpeg"))
        let errors = await Executables.runOffPool(ffmpeg, ["-v", "error", "-y"] + source + arguments + [path], stderrToStdout: true)
        let file = try await MP4File.open(MemorySource(try #require(FileSystem.read(path), "ffmpeg made no \(name): \(errors)"), name: name))
        return (try #require(file.movie?.tracks.first { $0.kind == .video }, "\(name) has no video track"), path)
    }

    /// The longest run of B-frames in presentation order, as ffprobe decodes them.
    static func decodedRuns(_ path: String) async -> Int {
        let types = await Executables.runOffPool(Executables.find("ffprobe") ?? "ffprobe", ["-v", "error", "-select_streams", "v", "-show_entries", "frame=pict_type", "-of", "csv=p=0", path])
        var run = 0, longest = 0
        for type in types.split(whereSeparator: \.isNewline) {
            run = type.hasPrefix("B") ? run + 1 : 0
            longest = max(longest, run)
        }
        return longest
    }

    @Test(.enabled(if: !Executables.underSanitizer, "encodes films with ffmpeg: the plain run only (in one AddressSanitizer CI run with these encodes beside them, URLSession deadline tests overran)"))
    func pictureFormatScanAndHDR() async throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-codec-facts")
        defer { FileSystem.removeDirectory(directory) }
        let plain = try await Self.film(directory, "plain.mp4", ["-c:v", "libx264", "-g", "25"]).0
        #expect(plain.pictureFormat == PictureFormat(bitDepth: 8, chroma: .yuv420, interlaced: false))
        #expect(plain.sampleEntries.first?.hdr == nil)
        let deep = try await Self.film(directory, "422-10bit.mp4", ["-c:v", "libx264", "-pix_fmt", "yuv422p10le", "-g", "25"]).0
        #expect(deep.pictureFormat == PictureFormat(bitDepth: 10, chroma: .yuv422, interlaced: false))
        let interlaced = try await Self.film(directory, "interlaced.mp4", ["-c:v", "libx264", "-flags", "+ildct+ilme", "-top", "1", "-g", "25"]).0
        #expect(interlaced.pictureFormat?.interlaced == true)
        let pq = try await Self.film(directory, "pq.mp4", ["-c:v", "libx265", "-pix_fmt", "yuv420p10le", "-x265-params", "log-level=error",
                                                          "-color_trc", "smpte2084", "-color_primaries", "bt2020", "-colorspace", "bt2020nc"]).0
        #expect(pq.pictureFormat == PictureFormat(bitDepth: 10, chroma: .yuv420, interlaced: false))
        #expect(pq.sampleEntries.first?.transfer == "smpte2084" && pq.sampleEntries.first?.hdr == "PQ")
        let hlg = try await Self.film(directory, "hlg.mp4", ["-c:v", "libx265", "-pix_fmt", "yuv420p10le", "-x265-params", "log-level=error",
                                                            "-color_trc", "arib-std-b67", "-color_primaries", "bt2020", "-colorspace", "bt2020nc"]).0
        #expect(hlg.sampleEntries.first?.hdr == "HLG")
    }

    @Test(.enabled(if: !Executables.underSanitizer, "encodes films with ffmpeg: the plain run only (in one AddressSanitizer CI run with these encodes beside them, URLSession deadline tests overran)"))
    func framesBFramesAndGOPs() async throws {
        let directory = FileSystem.temporaryDirectory("mp4probe-codec-frames")
        defer { FileSystem.removeDirectory(directory) }
        for bframes in [0, 2, 3] {
            let (track, path) = try await Self.film(directory, "bf\(bframes).mp4", ["-c:v", "libx264", "-bf", "\(bframes)", "-g", "25"])
            let frames = try #require(track.frameStructure())
            #expect(frames.maxConsecutiveBFrames == bframes, "\(bframes) asked")
            #expect(frames.maxConsecutiveBFrames == (await Self.decodedRuns(path)), "ffprobe's decoded frame types")
            #expect(!frames.openGOP && frames.constantFrameRate && abs((frames.framesPerSecond ?? 0) - 25) < 1e-9)
            #expect(abs((frames.longestGOPSeconds ?? 0) - 1) < 1e-9)
        }
        let open = try #require(try await Self.film(directory, "open.mp4", ["-c:v", "libx264", "-bf", "3", "-g", "25", "-x264-params", "open-gop=1"]).0.frameStructure())
        #expect(open.openGOP)
        let hevc = try #require(try await Self.film(directory, "hevc.mp4", ["-c:v", "libx265", "-x265-params", "log-level=error:keyint=25:min-keyint=25"]).0.frameStructure())
        #expect(hevc.openGOP, "x265 makes CRA pictures with leading frames by default")
        let fast = try #require(try await Self.film(directory, "120.mp4", ["-c:v", "libx264"], source: ["-f", "lavfi", "-i", "testsrc2=size=320x240:rate=120", "-t", "2"]).0.frameStructure())
        #expect(abs((fast.framesPerSecond ?? 0) - 120) < 1e-6 && fast.constantFrameRate)
        let variable = try #require(try await Self.film(directory, "vfr.mp4", ["-vf", "setpts='if(lt(N,50),N,N*1.5)/25/TB'", "-fps_mode", "vfr", "-c:v", "libx264"]).0.frameStructure())
        #expect(!variable.constantFrameRate)
        // A spike: a quiet picture, then noise for one second (a GOP of its own).
        let spike = try await Self.film(directory, "spike.mp4", ["-filter_complex", "[0:v][1:v]concat=n=2:v=1[v]", "-map", "[v]", "-c:v", "libx264", "-g", "25"],
                                        source: ["-f", "lavfi", "-i", "color=gray:size=320x240:rate=25:duration=3", "-f", "lavfi", "-i", "nullsrc=size=320x240:rate=25,geq=random(1)*255:128:128,trim=duration=1"]).0
        let spikeFrames = try #require(spike.frameStructure())
        let average = try #require(spike.bitRate)
        #expect(Double(try #require(spikeFrames.peakGOPBitRate)) > 3 * Double(average), "peak \(spikeFrames.peakGOPBitRate ?? 0) against \(average) on average")
    }

    /// The edit list's shape: none, an offset (ffmpeg's priming skip), complex (two segments).
    @Test func editListShapes() {
        typealias Entry = EditListBox.Entry
        #expect(EditListBox(entries: []).shape == .none)
        #expect(EditListBox(entries: [Entry(segmentDuration: 2000, mediaTime: 1024)]).shape == .offset)
        #expect(EditListBox(entries: [Entry(segmentDuration: 40, mediaTime: -1), Entry(segmentDuration: 2000, mediaTime: 0)]).shape == .offset)
        #expect(EditListBox(entries: [Entry(segmentDuration: 1000, mediaTime: 0), Entry(segmentDuration: 1000, mediaTime: 5000)]).shape == .complex)
        #expect(EditListBox(entries: [Entry(segmentDuration: 2000, mediaTime: 0, mediaRate: 2)]).shape == .complex)
        #expect(EditListBox(entries: [Entry(segmentDuration: 40, mediaTime: -1), Entry(segmentDuration: 40, mediaTime: -1), Entry(segmentDuration: 2000, mediaTime: 0)]).shape == .complex)
    }
}
