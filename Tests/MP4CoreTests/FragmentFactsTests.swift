import Foundation
import Testing
@testable import MP4Core
import MP4TestSupport

/// The facts of fragmented files, against their samples (issue 34): a hybrid file (samples in
/// `moov`, then more in fragments: its `mvhd` and `mdhd` count only the first) and a
/// fragmented file with two tracks, as ffmpeg writes them. Each track's sample count is the
/// packet count ffprobe reads (`-count_packets`: it demuxes every packet), and each duration
/// is the track's samples' own span: the last sample's end, summed from the sample table.
@Suite struct FragmentFactsTests {
    static func make(_ name: String, _ movflags: String) -> String? {
        guard let ffmpeg = Executables.find("ffmpeg") else { return nil }
        let path = FileSystem.temporaryDirectory("mp4probe-fragment-facts") + "/" + name
        _ = Executables.run(ffmpeg, ["-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "testsrc2=size=160x120:rate=25", "-f", "lavfi", "-i", "sine=frequency=440",
                                     "-t", "4", "-c:v", "libx264", "-g", "25", "-bf", "0", "-c:a", "aac", "-movflags", movflags, path])
        return FileManager.default.fileExists(atPath: path) ? path : nil
    }

    /// Packets per stream, as ffprobe counts them by demuxing.
    static func packetCounts(_ path: String) async throws -> [Int] {
        let ffprobe = try #require(Executables.find("ffprobe"))
        let output = await Executables.runOffPool(ffprobe, ["-v", "error", "-count_packets", "-show_entries", "stream=nb_read_packets", "-of", "csv=p=0", path])
        return output.split(whereSeparator: \.isNewline).compactMap { Int($0.trimmingCharacters(in: .whitespaces)) }
    }

    @Test(.requires("ffmpeg"), arguments: [("hybrid.mp4", "+frag_keyframe"), ("fragmented.mp4", "+frag_keyframe+empty_moov+default_base_moof")])
    func durationsAndCountsAreTheSamples(_ name: String, _ movflags: String) async throws {
        let path = try #require(Self.make(name, movflags))
        defer { FileSystem.removeDirectory((path as NSString).deletingLastPathComponent) }
        let source = MemorySource(try #require(FileSystem.read(path)), name: path)
        let file = try await MP4File.open(source)
        let movie = try #require(file.movie)
        if name == "hybrid.mp4" {
            // What makes it hybrid: samples in moov, and fragments after.
            let header = try #require(movie.header?.durationSeconds)
            #expect(header < 2, "mvhd says \(header) s: the file is not hybrid as expected")
        }
        #expect(movie.tracks.map { Int($0.sampleCount) } == (try await Self.packetCounts(path)))
        let planner = try await SeekPlanner.index(MP4File.open(source, options: MP4File.Options(facts: .structure)), from: source)
        var ends: [Double] = []
        for track in movie.tracks {
            let indexed = try #require(planner.tracks.first { $0.track.trackID == track.trackID })
            let samples = indexed.samples, scale = Double(try #require(track.timescale))
            var total: Int64 = 0
            samples.forEachSample { total += Int64($0.duration); return true }
            let end = Double(total) / scale
            ends.append(end)
            let said = track.durationSeconds ?? 0
            #expect(abs(said - end) < 0.05, "track \(track.trackID): \(said) s, its samples \(end) s")
        }
        let duration = try #require(movie.durationSeconds)
        #expect(abs(duration - (ends.max() ?? 0)) < 0.05, "\(name): \(duration) s, the samples end at \(ends)")
        #expect(duration > 3.9, "\(name): \(duration) s of a 4 s film")
    }
}
