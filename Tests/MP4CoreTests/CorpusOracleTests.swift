import Testing
@testable import MP4Core
import MP4TestSupport

/// Checks every sample of the valid `../shared/corpus` files (progressive and fragmented)
/// against ffprobe's packets, recorded in Tests/Goldens/ffprobe-packets-corpus by
/// record-ffprobe-packets.sh. Skips when `../shared` is absent.
///
/// Rules, and why they are not exact equality everywhere:
/// - offsets, sizes and key flags must be equal sample for sample;
/// - timestamps must differ from ffprobe's by one constant per track (ffmpeg shifts whole
///   tracks: it applies the first edit, and moves decode times by the largest negative
///   composition offset so that pts ≥ dts), so every per-sample difference is caught;
/// - when ffprobe regroups samples into other packets (PCM and other constant-size audio),
///   the merged byte ranges must be equal;
/// - subtitle and text tracks: ffmpeg rewrites caption and WebVTT payloads, so sizes are not
///   compared; files where ffmpeg is not a usable oracle are listed with the reason.
@Suite struct CorpusOracleTests {
    struct Packet { var stream: Int; var pts: Int64?; var dts: Int64?; var size: UInt64; var pos: UInt64; var key: Bool }

    static let goldens = Fixtures.packageRoot + "/Tests/Goldens/ffprobe-packets-corpus"
    static let files: [String] = Fixtures.sharedCorpus == nil ? [] : FileSystem.list(goldens).filter { $0.hasSuffix(".csv") }.map { String($0.dropLast(4)) }.filter { notAnOracle[$0] == nil }.sorted()

    /// Files where ffprobe's packets are not an oracle for the container, with the reason.
    static let notAnOracle: [String: String] = [
        "mp4ff__mp4__testdata__cbcs.mp4": "ffmpeg stops after the first fragment ('Incorrect number of samples in encryption info')",
    ]
    /// Files whose key flags ffprobe reports differently from the container, with the reason.
    static let keyFlagExceptions: [String: String] = [
        "fq__format__isobmff__testdata__fragmented.mp4": "ffmpeg 5.1 reports each fragment's first sample as non-key although trun first_sample_flags 0x02000000 (depends on no other sample, non-sync bit clear) make it a sync sample",
        "androidx-media__libraries__test_data__src__test__assets__media__mp4__sample_fragmented_uuid.mp4": "same first_sample_flags 0x02000000 pattern as above",
        "mp4parser__isoparser__src__test__resources__Tiny_Sample_-_NEW_-_Untouched.mp4": "ffmpeg flags samples 304-306 as key; stss lists only 1, 70 and 301",
    ]

    static func packets(_ name: String) -> [Packet] {
        guard let bytes = FileSystem.read(goldens + "/\(name).csv") else { return [] }
        return String(decoding: bytes, as: UTF8.self).split(whereSeparator: \.isNewline).compactMap { line in
            let f = line.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            guard f.count >= 6, let s = Int(f[0]), let size = UInt64(f[3]), let pos = UInt64(f[4]) else { return nil }
            return Packet(stream: s, pts: Int64(f[1]), dts: Int64(f[2]), size: size, pos: pos, key: f[5].hasPrefix("K"))
        }
    }

    @Test(.enabled(if: Fixtures.hasCorpus, Fixtures.noCorpus)) func goldensCoverTheCorpusFragmentedAndProgressiveFiles() throws {
        #expect(Self.files.count >= 70, "\(Self.files.count) corpus goldens")
        #expect(Self.files.contains("bento4__Test__Data__video-h264-002.mp4"))
    }

    @Test(.enabled(if: Fixtures.hasCorpus, Fixtures.noCorpus), arguments: files)
    func samplesMatchFFprobe(name: String) async throws {
        let corpus = try #require(Fixtures.sharedCorpus)
        let source = MemorySource(try #require(FileSystem.read(corpus + "/valid/" + name)), name: name)
        let file = try await MP4File.open(source)
        let planner = try await SeekPlanner.index(file, from: source)
        let packets = Self.packets(name)
        let streams = (packets.map(\.stream).max() ?? -1) + 1
        let tracks = file.movie?.tracks ?? []
        // Streams past the tracks are attached pictures (cover art from metadata): one packet.
        for stream in tracks.count..<max(streams, tracks.count) {
            #expect(packets.filter { $0.stream == stream }.count == 1, "\(name) stream \(stream) has no track")
        }
        // ffprobe's streams are the tracks in moov order.
        for (stream, track) in tracks.enumerated() where stream < streams {
            let expected = packets.filter { $0.stream == stream }
            guard let indexed = planner.tracks.first(where: { $0.track.path == track.path }) else {
                #expect(expected.isEmpty, "\(name) stream \(stream): ffprobe has packets, we index no samples")
                continue
            }
            var ours: [SampleTable.Sample] = []
            indexed.samples.forEachSample { ours.append($0); return true }
            // ffmpeg turns text chapter tracks into chapters, not packets.
            if expected.isEmpty && indexed.track.kind == .text { continue }
            // In a truncated file ffmpeg stops at the first sample past the end.
            if expected.count < ours.count, let cut = ours.firstIndex(where: { $0.endOffset > file.layout.fileSize }), cut <= expected.count + 1 {
                ours = Array(ours.prefix(expected.count))
            }
            if ours.count != expected.count {
                // Regrouped packets: the bytes must still be the same.
                let a = SeekPlanner.merge(ours.map { $0.byteOffset..<$0.endOffset }), b = SeekPlanner.merge(expected.map { $0.pos..<($0.pos + $0.size) })
                #expect(a == b, "\(name) stream \(stream): \(ours.count) samples vs \(expected.count) packets, and the bytes differ")
                continue
            }
            let comparesSizes = indexed.track.kind != .subtitle && indexed.track.kind != .text
            let comparesKeys = Self.keyFlagExceptions[name] == nil
            var dtsShift: Int64?, ptsShift: Int64?
            var mismatches = 0
            for (s, p) in zip(ours, expected) {
                // ffmpeg returns what exists of a sample cut by the end of the file.
                if s.endOffset > file.layout.fileSize {
                    #expect(s.byteOffset == p.pos && p.pos + p.size == file.layout.fileSize, "\(name) stream \(stream) sample \(s.index) cut by the end of the file")
                    continue
                }
                var ok = s.byteOffset == p.pos && (!comparesSizes || UInt64(s.byteCount) == p.size) && (!comparesKeys || s.isSync == p.key)
                if let dts = p.dts {
                    dtsShift = dtsShift ?? dts - s.decodeTime
                    ok = ok && dts - s.decodeTime == dtsShift
                }
                if let pts = p.pts {
                    ptsShift = ptsShift ?? pts - s.compositionTime
                    ok = ok && pts - s.compositionTime == ptsShift
                }
                if !ok {
                    mismatches += 1
                    if mismatches <= 3 { Issue.record("\(name) stream \(stream) sample \(s.index): ours \(s) vs ffprobe \(p)") }
                }
            }
            #expect(mismatches == 0, "\(name) stream \(stream)")
        }
    }
}
