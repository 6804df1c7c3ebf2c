import Testing
@testable import MP4Core
import MP4TestSupport

/// Compares the parser's view of each SampleMedia stream with what ffprobe said
/// (Tests/Goldens/ffprobe-streams.tsv, recorded by Tests/Goldens/record-ffprobe-streams.sh).
@Suite struct SampleMediaOracleTests {
    struct Row {
        var file: String, index: Int, codecTag: String, frames: UInt64?, width: UInt16?, height: UInt16?, sampleRate: Double?, channels: UInt32?
    }

    static let rows: [Row] = {
        guard let bytes = FileSystem.read(Fixtures.packageRoot + "/Tests/Goldens/ffprobe-streams.tsv") else { return [] }
        return String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline).dropFirst().map { line in
            let f = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            return Row(file: f[0], index: Int(f[1]) ?? -1, codecTag: f[2], frames: UInt64(f[3]), width: UInt16(f[4]), height: UInt16(f[5]), sampleRate: Double(f[6]), channels: UInt32(f[7]))
        }
    }()

    @Test func goldenCoversEverySample() {
        #expect(Set(Self.rows.map(\.file)) == Set(Fixtures.sampleFiles))
    }

    @Test(arguments: Fixtures.sampleFiles)
    func tracksAgreeWithFFprobe(name: String) async throws {
        let bytes = try #require(FileSystem.read(Fixtures.sample(name)))
        let file = try await MP4File.open(MemorySource(bytes, name: name))
        let tracks = try #require(file.movie?.tracks)
        let expected = Self.rows.filter { $0.file == name }.sorted { $0.index < $1.index }
        #expect(tracks.count == expected.count)
        for (track, row) in zip(tracks, expected) {
            let entry = try #require(track.sampleEntries.first)
            #expect(entry.format.description == row.codecTag, "\(name) #\(row.index)")
            if let frames = row.frames { #expect(track.sampleCount == frames, "\(name) #\(row.index) samples") }
            if let w = row.width, let h = row.height { #expect(entry.width == w && entry.height == h) }
            if let rate = row.sampleRate { #expect(entry.sampleRate == rate) }
            if let channels = row.channels { #expect(entry.effectiveChannelCount == channels, "\(name) #\(row.index) channels") }
        }
    }

    @Test func codecStrings() async throws {
        let expected: [String: [String]] = [
            "faststart.mp4": ["avc1.64000D", "mp4a.40.2"],
            "hevc.mp4": ["hvc1.1.6.L60.90", "mp4a.40.2"],
            "vp9-opus.mp4": ["vp09.00.20.08", "opus"],
            "av1-opus.mp4": ["av01.0.00M.08", "opus"],
            "alac.m4a": ["alac"],
            "ac3.mp4": ["ac-3"],
            "quicktime.mov": ["avc1.64000D", "sowt"],
        ]
        for (name, strings) in expected {
            let bytes = try #require(FileSystem.read(Fixtures.sample(name)))
            let file = try await MP4File.open(MemorySource(bytes))
            #expect(file.movie?.tracks.map { $0.sampleEntries.first?.codecString ?? "" } == strings, "\(name)")
        }
    }

    @Test func editListOfTheAudioFileSkipsThePriming() async throws {
        let bytes = try #require(FileSystem.read(Fixtures.sample("audio-edit-list.m4a")))
        let file = try await MP4File.open(MemorySource(bytes))
        let edits = try #require(file.movie?.tracks.first?.editList?.entries)
        #expect(edits.count == 1 && edits[0].mediaTime == 1024 && edits[0].mediaRate == 1)
    }
}
