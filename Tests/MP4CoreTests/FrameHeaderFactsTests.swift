import Foundation
import Testing
@testable import MP4Core
import MP4TestSupport

/// Audio facts from the first frame header (issue 34): a DTS track's sample entry may not say
/// what its core frames are (a file said 48,000 Hz where ffprobe, reading the frame header,
/// said 24,000). ffmpeg writes 24 kHz mono DTS; the entry's rate is then patched to 48,000 and
/// its channel count is ffmpeg's placeholder 2: the facts are the frame header's, and say so.
@Suite struct FrameHeaderFactsTests {
    @Test(.requires("ffmpeg")) func dtsRateAndChannelsComeFromTheCoreFrameHeader() async throws {
        let ffmpeg = try #require(Executables.find("ffmpeg"))
        let directory = FileSystem.temporaryDirectory("mp4probe-dts")
        defer { FileSystem.removeDirectory(directory) }
        let path = directory + "/dts.mp4"
        _ = Executables.run(ffmpeg, ["-v", "error", "-nostdin", "-y", "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=24000", "-t", "1",
                                     "-c:a", "dca", "-strict", "-2", path])
        var bytes = try #require(FileSystem.read(path))
        // The mp4a entry's 16.16 sample rate, 32 bytes into the entry (after its size and type).
        let entry = try #require((4..<(bytes.count - 36)).first { bytes[$0..<($0 + 4)] == ArraySlice("mp4a".utf8) && bytes[$0 - 4] == 0 }) - 4
        #expect(Array(bytes[(entry + 32)..<(entry + 34)]) == [0x5D, 0xC0], "ffmpeg wrote 24,000 Hz in the entry")
        bytes.replaceSubrange((entry + 32)..<(entry + 34), with: [0xBB, 0x80])   // 48,000
        let file = try await MP4File.open(MemorySource(bytes))
        let audio = try #require(file.movie?.tracks.first?.sampleEntries.first)
        #expect(audio.isDTS)
        #expect(audio.sampleRate == 48000, "the entry says 48,000")
        #expect(audio.effectiveSampleRate == 24000)
        #expect(audio.effectiveChannelCount == 1)
        #expect(audio.frameHeaderSampleRate == 24000 && audio.frameHeaderChannelCount == 1)
        // Without the facts pass, the entry's word.
        let structure = try await MP4File.open(MemorySource(bytes), options: MP4File.Options(facts: .structure))
        #expect(structure.movie?.tracks.first?.sampleEntries.first?.effectiveSampleRate == 48000)
    }

    @Test func coreHeaders() {
        // 7FFE8001, then FTYPE..FSIZE (28 bits), AMODE 2 (stereo), SFREQ 13 (48 kHz), RATE, ..., LFF 1.
        var header = [UInt8](repeating: 0, count: 11)
        header[0...3] = [0x7F, 0xFE, 0x80, 0x01]
        func set(_ offset: Int, _ count: Int, _ value: Int) {
            for bit in 0..<count where value >> (count - 1 - bit) & 1 == 1 { header[(offset + bit) / 8] |= 0x80 >> UInt8((offset + bit) % 8) }
        }
        set(60, 6, 2); set(66, 4, 13); set(85, 2, 1)
        #expect(DTSCoreHeader(header[...]).map { [$0.sampleRate, $0.channelCount ?? 0] } == [48000, 3])
        // The same in little-endian words.
        var swapped = header + [0]
        for index in stride(from: 0, to: swapped.count, by: 2) { swapped.swapAt(index, index + 1) }
        #expect(DTSCoreHeader(swapped[...]).map { [$0.sampleRate, $0.channelCount ?? 0] } == [48000, 3])
        // No sync, an invalid rate, too few bytes, a user-defined arrangement.
        #expect(DTSCoreHeader([UInt8](repeating: 0, count: 11)[...]) == nil)
        var invalid = header
        invalid[8] &= 0xC3   // SFREQ 0
        #expect(DTSCoreHeader(invalid[...]) == nil)
        #expect(DTSCoreHeader(header.prefix(10)) == nil)
        set(60, 6, 40)
        #expect(DTSCoreHeader(header[...])?.channelCount == nil)
    }
}
