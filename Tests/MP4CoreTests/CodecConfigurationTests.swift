import Testing
@testable import MP4Core
import MP4TestSupport

/// Each codec configuration box parses itself and answers its codec string and what it says
/// of the decoded audio (issue 34: one dispatch, in the box's own type). Payloads are after the
/// box header, and after version and flags for the full boxes (`vpcC`, `esds`, `alac`, `dfLa`).
@Suite struct CodecConfigurationTests {
    struct Case: Sendable, CustomStringConvertible {
        var format: FourCC
        var payload: [UInt8]
        var model: AnyBoxModel
        var codec: String
        var channels: UInt32? = nil
        var rate: UInt32? = nil
        var description: String { "\(format) \(codec)" }
    }

    static let cases: [Case] = [
        Case(format: "avc1", payload: [1, 0x64, 0x00, 0x1F, 0xFF, 0xE0], model: AnyBoxModel(AVCConfigurationBox(profile: 0x64, compatibility: 0, level: 0x1F)), codec: "avc1.64001F"),
        // Main profile, compatible with 1 and 2, constraint byte 0x90, level 93.
        Case(format: "hvc1", payload: [1, 0x01, 0x60, 0, 0, 0, 0x90, 0, 0, 0, 0, 0, 93, 0xF0, 0, 0xFC, 0xFD, 0xF8, 0xF8, 0, 0, 0x0F, 0],
             model: AnyBoxModel(HEVCConfigurationBox(profileSpace: 0, tierFlag: false, profile: 1, compatibilityFlags: 0x6000_0000, constraintFlags: [0x90, 0, 0, 0, 0, 0], level: 93,
                                                    chromaFormatIDC: 1, bitDepthLuma: 8)), codec: "hvc1.1.6.L93.90"),
        Case(format: "av01", payload: [0x81, 0x08, 0x4C, 0], model: AnyBoxModel(AV1CodecConfigurationBox(profile: 0, level: 8, tier: 0, bitDepth: 10, monochrome: false)), codec: "av01.0.08M.10"),
        Case(format: "vp09", payload: [0, 31, 0x82, 1, 1, 1, 0, 0], model: AnyBoxModel(VPCodecConfigurationBox(profile: 0, level: 31, bitDepth: 8)), codec: "vp09.00.31.08"),
        // AAC LC, 44.1 kHz, stereo.
        Case(format: "mp4a", payload: AudioSpecificConfigTests.esds([0x12, 0x10]),
             model: AnyBoxModel(ESDBox(objectTypeIndication: 0x40, audioObjectType: 2, channelConfiguration: 2, samplingFrequency: 44100, averageBitRate: 0, maxBitRate: 0)), codec: "mp4a.40.2", channels: 2),
        // 7.1 is channel configuration 7.
        Case(format: "mp4a", payload: AudioSpecificConfigTests.esds([0x11, 0xB8]),
             model: AnyBoxModel(ESDBox(objectTypeIndication: 0x40, audioObjectType: 2, channelConfiguration: 7, samplingFrequency: 48000, averageBitRate: 0, maxBitRate: 0)), codec: "mp4a.40.2", channels: 8),
        Case(format: "Opus", payload: [0, 6, 0x01, 0x38, 0, 0, 0xBB, 0x80, 0, 0, 1, 4, 2, 0, 4, 1, 2, 3, 5], model: AnyBoxModel(OpusSpecificBox(outputChannelCount: 6, preSkip: 312, inputSampleRate: 48000)), codec: "opus", channels: 6),
        Case(format: "ac-3", payload: [0x10, 0x3D, 0xC0], model: AnyBoxModel(AC3SpecificBox(channelCount: 6, hasLFE: true, bitRateKbps: 384)), codec: "ac-3", channels: 6),
        Case(format: "ec-3", payload: [0x50, 0x00, 0x20, 0x0F, 0x00], model: AnyBoxModel(EC3SpecificBox(dataRateKbps: 2560, independentSubstreams: 1, channelCount: 6)), codec: "ec-3", channels: 6),
        Case(format: "alac", payload: [0, 0, 0x10, 0, 0, 16, 40, 10, 14, 2, 0, 255, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xAC, 0x44],
             model: AnyBoxModel(ALACSpecificBox(bitDepth: 16, channelCount: 2, sampleRate: 44100)), codec: "alac", channels: 2),
        Case(format: "fLaC", payload: [0x80, 0, 0, 0x22, 0x10, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0x0A, 0xC4, 0x42, 0xF0] + [UInt8](repeating: 0, count: 20),
             model: AnyBoxModel(FLACSpecificBox(sampleRate: 44100, channelCount: 2, bitsPerSample: 16)), codec: "flac", channels: 2),
        Case(format: "mlpa", payload: [0, 23, 128, 79, 24, 106, 0, 0, 0, 0], model: AnyBoxModel(MLPSpecificBox(sampleRate: 48000, channelCount: 8, peakDataRate: 3125)), codec: "mlpa", channels: 8, rate: 48000),
        Case(format: "iamf", payload: [1, 31, 0xF8, 6] + Array("iamf".utf8) + [0, 0, 0, 0x15, 0xC8, 1] + Array("Opus".utf8) + [0xC0, 7, 0xFF, 0xFC, 1, 2, 1, 0x38, 0, 0, 0xBB, 0x80, 0, 0, 0],
             model: AnyBoxModel(IAConfigurationBox(primaryProfile: 0, additionalProfile: 0, codecID: "Opus", sampleRate: 48000)), codec: "iamf.000.000.Opus", rate: 48000),
    ]

    @Test(arguments: cases)
    func parsesItselfAndAnswersItsCodecString(_ c: Case) throws {
        guard let type = Swift.type(of: c.model.base) as? any CodecConfigurationBoxModel.Type else {
            Issue.record("\(c): not a codec configuration"); return
        }
        var reader = ByteReader(c.payload)
        let box = try type.parse(&reader, version: 0, flags: 0)
        #expect(reader.remaining == 0)
        #expect(AnyBoxModel(box) == c.model)
        #expect(box.codecString(format: c.format) == c.codec)
        #expect(box.decoderChannelCount == c.channels)
        #expect(box.decoderSampleRate == c.rate)
        // The sample entry answers through its configuration: placeholders give way.
        var entry = SampleEntry(format: c.format, kind: .audio, dataReferenceIndex: 1)
        entry.channelCount = 2
        entry.sampleRate = 0
        entry.configuration = CodecConfiguration(box)
        #expect(entry.codecString == c.codec)
        #expect(entry.effectiveChannelCount == (c.channels ?? 2))
        if let rate = c.rate { #expect(entry.effectiveSampleRate == Double(rate)) }
        // A sample entry finds it among its children by the catalogue, as in a real tree.
        #expect(BoxCatalog.model(for: type.type) != nil)
    }

    /// The object types the sample entry asks an `esds` about.
    @Test func esdsObjectTypesNameTheirCodings() {
        #expect(ESDBox(objectTypeIndication: 0x6B, averageBitRate: 0, maxBitRate: 0).isMPEGAudio)
        #expect(ESDBox(objectTypeIndication: 0xA9, averageBitRate: 0, maxBitRate: 0).isDTS)
        #expect(!ESDBox(objectTypeIndication: 0x40, averageBitRate: 0, maxBitRate: 0).isDTS)
        #expect(ESDBox(objectTypeIndication: 0x20, averageBitRate: 0, maxBitRate: 0).codecString(format: .mp4v) == "mp4v.20")
        #expect(ESDBox(objectTypeIndication: 0x6B, averageBitRate: 0, maxBitRate: 0).codecString(format: .mp4a) == "mp4a.6B")
    }
}

/// The picture size of H.264 and H.265 parameter sets (issue 34: an entry said 12x10 where
/// ffprobe, decoding, said 10x12).
@Suite struct ParameterSetSizeTests {
    /// Every H.264/H.265 stream ffprobe measured (Tests/Goldens/ffprobe-facts.tsv: SampleMedia,
    /// and the corpus when it is beside the package): the first SPS gives ffprobe's size.
    @Test func parameterSetsGiveFFprobesSize() async throws {
        let table = try String(contentsOfFile: Fixtures.packageRoot + "/Tests/Goldens/ffprobe-facts.tsv", encoding: .utf8)
        var checked = 0, unparsed: [String] = []
        for line in table.split(separator: "\n").dropFirst() {
            let row = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            guard row.count > 6, ["avc1", "avc3", "hvc1", "hev1"].contains(row[3]), let id = UInt32(row[2]), let width = UInt32(row[5]), let height = UInt32(row[6]) else { continue }
            let path = row[0].hasPrefix("SampleMedia/") ? Fixtures.packageRoot + "/" + row[0] : Fixtures.packageRoot + "/../shared/" + row[0]
            guard let bytes = FileSystem.read(path), let file = try? await MP4File.open(MemorySource(bytes), options: .init(facts: .structure)),
                  let entry = file.movie?.tracks.first(where: { $0.trackID == id })?.sampleEntries.first else { continue }
            guard let size = entry.parameterSetSize else { unparsed.append(row[0]); continue }
            #expect(size == PictureSize(width: width, height: height), "\(row[0]) track \(id)")
            checked += 1
        }
        #expect(checked >= (Fixtures.hasCorpus ? 40 : 8), "checked \(checked); no size from \(unparsed)")
        #expect(unparsed.count <= 2, "\(unparsed)")
    }

    /// An entry that says 12x10 for 10x12 pictures: the track is 10x12, and says why.
    @Test func theParameterSetWinsOverTheEntry() async throws {
        let bytes = try #require(FileSystem.read(Fixtures.sample("faststart.mp4")))
        var patched = bytes
        let file = try await MP4File.open(MemorySource(bytes))
        let entry = try #require(file.movie?.tracks.first { $0.kind == .video }?.sampleEntries.first)
        #expect(entry.parameterSetSize == PictureSize(width: 320, height: 240) && !entry.sizeFromParameterSet)
        // The visual sample entry's width and height follow its 8-byte header, 8 bytes of
        // reserved and data reference index, and 16 of pre-defined and reserved.
        let avc1 = try #require(Self.find(Array("avc1".utf8), in: bytes, after: 40))
        let at = avc1 + 4 + 24
        #expect(bytes[at..<(at + 4)] == [1, 0x40, 0, 0xF0])
        patched[at..<(at + 4)] = [0, 0xF0, 1, 0x40]
        let swapped = try await MP4File.open(MemorySource(patched))
        let track = try #require(swapped.movie?.tracks.first { $0.kind == .video })
        #expect(track.width == 320 && track.height == 240)
        #expect(track.sampleEntries.first?.sizeFromParameterSet == true)
    }

    static func find(_ needle: [UInt8], in haystack: [UInt8], after start: Int) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        return (start...(haystack.count - needle.count)).first { haystack[$0..<($0 + needle.count)].elementsEqual(needle) }
    }

    /// Emulation prevention bytes are removed; a set cut short gives no size.
    @Test func hostileParameterSetsGiveNoSize() {
        #expect(SequenceParameterSet.rbsp([0, 0, 3, 1, 0, 0, 3]) == [0, 0, 1, 0, 0])
        #expect(SequenceParameterSet.avcPictureSize([0x67, 0x64, 0, 0x1F]) == nil)
        #expect(SequenceParameterSet.avcPictureSize([0x67, 0x64, 0, 0x1F] + [UInt8](repeating: 0, count: 64)) == nil)
        #expect(SequenceParameterSet.hevcPictureSize([0x42, 0x01] + [UInt8](repeating: 0xFF, count: 40)) == nil)
    }

    /// A bit depth coded as the largest Exp-Golomb code (31 zeros, a one, 31 ones: 2^32 - 2)
    /// is refused, not added to (it trapped: `+ 8` past UInt32).
    @Test func theLargestBitDepthCodeIsRefused() {
        func pack(_ bits: String) -> [UInt8] {
            let padded = bits + String(repeating: "0", count: (8 - bits.count % 8) % 8 + 64)
            return stride(from: 0, to: padded.count, by: 8).map { start in
                let slice = padded.dropFirst(start).prefix(8)
                return UInt8(slice, radix: 2) ?? 0
            }
        }
        let largest = String(repeating: "0", count: 31) + "1" + String(repeating: "1", count: 31)
        // H.264 High profile: sps id 0, chroma 4:2:0, then the bit depth.
        #expect(SequenceParameterSet.avcSequence([0x67, 100, 0, 0x1F] + pack("1" + "010" + largest)) == nil)
        // H.265: vps id, one layer, nesting, the general profile (96 bits), sps id 0, 4:2:0,
        // 1x1, no conformance window, then the bit depth.
        #expect(SequenceParameterSet.hevcSequence([0x42, 0x01] + pack("0000" + "000" + "1" + String(repeating: "0", count: 96) + "1" + "010" + "010" + "010" + "0" + largest)) == nil)
    }
}
