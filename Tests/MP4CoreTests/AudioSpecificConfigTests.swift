import Testing
@testable import MP4Core

/// Parametric stereo in the AudioSpecificConfig (issue 34: an AAC track said 1 channel where
/// ffprobe said 2): signalled explicitly it makes the decoder's 2 channels of a mono core;
/// an explicit "no SBR" (the corpus's sample_fragmented_uuid.mp4) stays 1.
@Suite struct AudioSpecificConfigTests {
    /// An esds payload after its version and flags (what the parser reads) carrying `asc`.
    static func esds(_ asc: [UInt8]) -> [UInt8] {
        let decoderSpecific: [UInt8] = [0x05, UInt8(asc.count)] + asc
        let decoderConfig: [UInt8] = [0x04, UInt8(13 + decoderSpecific.count), 0x40, 0x15, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0] + decoderSpecific
        let es: [UInt8] = [0x03, UInt8(3 + decoderConfig.count), 0, 1, 0] + decoderConfig
        return es
    }

    static func entry(_ asc: [UInt8]) throws -> SampleEntry {
        var reader = ByteReader(esds(asc))
        var entry = SampleEntry(format: "mp4a", kind: .audio, dataReferenceIndex: 1)
        entry.channelCount = 2
        entry.configuration = CodecConfiguration(try ESDBox.parse(&reader, version: 0, flags: 0))
        return entry
    }

    @Test func parametricStereoSignalledMakesTwoChannels() throws {
        // AOT 29 (HE-AAC v2, hierarchical): 11101, 0110 (24 kHz core), 0001 (mono), 0011
        // (48 kHz out), 00010 (AAC LC).
        let hev2 = try Self.entry([0xEB, 0x09, 0x88, 0x00])
        #expect(hev2.effectiveChannelCount == 2 && hev2.codecString == "mp4a.40.29")
        // Backward compatible: AAC LC mono (0x1208) + 000, then 0x2B7, AOT 5, SBR present,
        // extension frequency index 3 (48 kHz), 0x548, PS present.
        var bits: [Bool] = []
        func put(_ value: Int, _ count: Int) { for bit in (0..<count).reversed() { bits.append(value >> bit & 1 == 1) } }
        put(2, 5); put(4, 4); put(1, 4); put(0, 3); put(0x2B7, 11); put(5, 5); put(1, 1); put(3, 4); put(0x548, 11); put(1, 1)
        while bits.count % 8 != 0 { bits.append(false) }
        let bytes = stride(from: 0, to: bits.count, by: 8).map { start in bits[start..<(start + 8)].reduce(UInt8(0)) { $0 << 1 | ($1 ? 1 : 0) } }
        #expect(try Self.entry(bytes).effectiveChannelCount == 2)
        // The same with psPresentFlag 0, and a plain mono LC config: 1.
        var noPS = bytes
        noPS[noPS.count - 1] = 0
        #expect(try Self.entry(noPS).effectiveChannelCount == 1)
        #expect(try Self.entry([0x12, 0x08]).effectiveChannelCount == 1)
        // sample_fragmented_uuid.mp4's: 0x2B7, AOT 5, sbrPresentFlag 0.
        #expect(try Self.entry([0x12, 0x08, 0x56, 0xE5, 0x00]).effectiveChannelCount == 1)
        // Stereo stays stereo.
        #expect(try Self.entry([0x12, 0x10]).effectiveChannelCount == 2)
    }
}
