import Testing
@testable import MP4Core
import MP4TestSupport

/// Every declared box model, go-mp4 style: bytes → model → bytes, and the dump, from one table
/// of cases; plus the parser's use of the catalogue (a model inside a real tree, extra bytes).
@Suite struct BoxModelTests {
    struct Case: Sendable, CustomStringConvertible {
        var name: String
        var payload: [UInt8]
        var model: AnyBoxModel
        var fields: String
        var version: UInt8 = 0
        var flags: UInt32 = 0
        var description: String { name }
    }

    /// The expected table, stated independently of the parser: its counts, and its entries as
    /// the payload's bytes after `header` bytes (the parser must find the same).
    static func table<T: SampleTableBoxModel>(_ type: T.Type, _ payload: [UInt8], header: Int, entries: Int, version: UInt8 = 0, constant: UInt32 = 0, samples: UInt32 = 0, fieldSize: Int = 0) -> AnyBoxModel {
        AnyBoxModel(T(table: SampleTableData(kind: T.kind, version: version, entryCount: entries, constantSampleSize: constant, sampleCount: samples, fieldSize: fieldSize, entryBytes: payload[header...])))
    }

    static let sttsPayload: [UInt8] = [0, 0, 0, 2, 0, 0, 0, 10, 0, 0, 2, 0, 0, 0, 0, 1, 0, 0, 1, 0]
    static let cttsPayload: [UInt8] = [0, 0, 0, 1, 0, 0, 0, 3, 0xFF, 0xFF, 0xFC, 0]
    static let stszPayload: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 1, 0, 0, 0, 0, 9]
    static let stz2Payload: [UInt8] = [0, 0, 0, 4, 0, 0, 0, 3, 0xAB, 0xC0]
    static let co64Payload: [UInt8] = [0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 8]
    static let mvhd0Payload: [UInt8] = [0, 0, 0, 100, 0, 0, 0, 200, 0, 0, 3, 232, 255, 255, 255, 255, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 64, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3]
    static let mvhd1Payload: [UInt8] = [0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0, 1, 95, 144, 0, 0, 0, 0, 0, 13, 187, 160, 0, 0, 128, 0, 0, 128, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 64, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]
    static let tkhd0Payload: [UInt8] = [0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 19, 136, 0, 0, 0, 0, 0, 0, 0, 0, 255, 255, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 255, 255, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 64, 0, 0, 0, 5, 0, 0, 0, 2, 208, 128, 0]
    static let mdhd0Payload: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 187, 128, 0, 1, 119, 0, 85, 196, 0, 0]
    static let mdhdNoQualityPayload: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 88, 255, 255, 255, 255, 0, 0]
    static let hdlrISOPayload: [UInt8] = [0, 0, 0, 0, 118, 105, 100, 101, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 86, 105, 100, 101, 111, 72, 97, 110, 100, 108, 101, 114, 0]
    static let hdlrQuickTimePayload: [UInt8] = [109, 104, 108, 114, 115, 111, 117, 110, 97, 112, 112, 108, 0, 0, 0, 0, 0, 0, 0, 0, 5, 83, 111, 117, 110, 100]
    static let elst0Payload: [UInt8] = [0, 0, 0, 2, 0, 0, 3, 232, 255, 255, 255, 255, 0, 1, 0, 0, 0, 0, 35, 40, 0, 0, 4, 0, 0, 1, 0, 0]
    static let elst1Payload: [UInt8] = [0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, 255, 255, 255, 255, 255, 255, 255, 255, 0, 0, 128, 0]
    static let avcCPayload: [UInt8] = [1, 0x64, 0, 0x1F, 0xFF, 0xE1, 0, 2, 0x67, 0x64, 1, 0, 2, 0x68, 0xEE]

    static let cases: [Case] = [
        Case(name: "pasp 1:1", payload: [0, 0, 0, 1, 0, 0, 0, 1], model: AnyBoxModel(PixelAspectRatioBox(hSpacing: 1, vSpacing: 1)), fields: "hSpacing=1 vSpacing=1"),
        Case(name: "pasp 4:3", payload: [0, 0, 0, 4, 0, 0, 0, 3], model: AnyBoxModel(PixelAspectRatioBox(hSpacing: 4, vSpacing: 3)), fields: "hSpacing=4 vSpacing=3"),
        Case(name: "btrt", payload: [0, 0, 0, 0, 0, 4, 147, 224, 0, 3, 213, 144], model: AnyBoxModel(BitRateBox(bufferSizeDB: 0, maxBitrate: 300_000, avgBitrate: 251_280)), fields: "bufferSizeDB=0 maxBitrate=300000 avgBitrate=251280"),
        Case(name: "colr nclx BT.709 limited", payload: Array("nclx".utf8) + [0, 1, 0, 1, 0, 1, 0], model: AnyBoxModel(ColourInformationBox(colourType: "nclx", colour: .codePoints(primaries: 1, transfer: 1, matrix: 1, fullRange: false))), fields: "colourType=nclx colourPrimaries=1 transferCharacteristics=1 matrixCoefficients=1 fullRange=false"),
        Case(name: "colr nclx BT.2020 PQ full", payload: Array("nclx".utf8) + [0, 9, 0, 16, 0, 9, 0x80], model: AnyBoxModel(ColourInformationBox(colourType: "nclx", colour: .codePoints(primaries: 9, transfer: 16, matrix: 9, fullRange: true))), fields: "colourType=nclx colourPrimaries=9 transferCharacteristics=16 matrixCoefficients=9 fullRange=true"),
        Case(name: "colr nclc (QuickTime)", payload: Array("nclc".utf8) + [0, 1, 0, 1, 0, 1], model: AnyBoxModel(ColourInformationBox(colourType: "nclc", colour: .codePoints(primaries: 1, transfer: 1, matrix: 1, fullRange: nil))), fields: "colourType=nclc colourPrimaries=1 transferCharacteristics=1 matrixCoefficients=1"),
        Case(name: "colr prof", payload: Array("prof".utf8) + [1, 2, 3, 4, 5], model: AnyBoxModel(ColourInformationBox(colourType: "prof", colour: .iccProfile([1, 2, 3, 4, 5]))), fields: "colourType=prof iccProfileSize=5"),
        Case(name: "ftyp", payload: Array("isom".utf8) + [0, 0, 2, 0] + Array("isomiso2mp41".utf8), model: AnyBoxModel(FileTypeBox(majorBrand: "isom", minorVersion: 512, compatibleBrands: ["isom", "iso2", "mp41"])), fields: "majorBrand=isom minorVersion=512 compatibleBrands=[isom,iso2,mp41]"),
        Case(name: "styp", payload: Array("msdh".utf8) + [0, 0, 0, 0] + Array("msdh".utf8), model: AnyBoxModel(SegmentTypeBox(majorBrand: "msdh", minorVersion: 0, compatibleBrands: ["msdh"])), fields: "majorBrand=msdh minorVersion=0 compatibleBrands=[msdh]"),
        Case(name: "stts", payload: sttsPayload, model: table(TimeToSampleBox.self, sttsPayload, header: 4, entries: 2), fields: "entryCount=2"),
        Case(name: "ctts v1 negative", payload: cttsPayload, model: table(CompositionOffsetBox.self, cttsPayload, header: 4, entries: 1, version: 1), fields: "entryCount=1", version: 1),
        Case(name: "stss", payload: [0, 0, 0, 1, 0, 0, 0, 1], model: table(SyncSampleBox.self, [0, 0, 0, 1, 0, 0, 0, 1], header: 4, entries: 1), fields: "entryCount=1"),
        Case(name: "stsc", payload: [0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0, 1], model: table(SampleToChunkBox.self, [0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0, 1], header: 4, entries: 1), fields: "entryCount=1"),
        Case(name: "stsz listed", payload: stszPayload, model: table(SampleSizeBox.self, stszPayload, header: 8, entries: 2, samples: 2), fields: "entryCount=2 sampleSize=0 sampleCount=2"),
        Case(name: "stsz constant", payload: [0, 0, 0, 4, 0, 0, 0, 7], model: table(SampleSizeBox.self, [0, 0, 0, 4, 0, 0, 0, 7], header: 8, entries: 0, constant: 4, samples: 7), fields: "entryCount=0 sampleSize=4 sampleCount=7"),
        Case(name: "stz2 4-bit", payload: stz2Payload, model: table(CompactSampleSizeBox.self, stz2Payload, header: 8, entries: 3, samples: 3, fieldSize: 4), fields: "entryCount=3 fieldSize=4 sampleCount=3"),
        Case(name: "stco", payload: [0, 0, 0, 1, 0, 0, 0, 48], model: table(ChunkOffsetBox.self, [0, 0, 0, 1, 0, 0, 0, 48], header: 4, entries: 1), fields: "entryCount=1"),
        Case(name: "co64", payload: co64Payload, model: table(ChunkLargeOffsetBox.self, co64Payload, header: 4, entries: 1), fields: "entryCount=1"),
        Case(name: "sdtp", payload: [0x20, 0x10, 0x10], model: table(SampleDependencyTypeBox.self, [0x20, 0x10, 0x10], header: 0, entries: 3), fields: "entryCount=3"),
        Case(name: "frma", payload: Array("avc1".utf8), model: AnyBoxModel(OriginalFormatBox(dataFormat: "avc1")), fields: "dataFormat=avc1"),
        Case(name: "schm", payload: Array("cenc".utf8) + [0, 1, 0, 0], model: AnyBoxModel(SchemeTypeBox(schemeType: "cenc", schemeVersion: 0x10000)), fields: "schemeType=cenc schemeVersion=65536"),
        Case(name: "schm with URI", payload: Array("cbcs".utf8) + [0, 1, 0, 0] + Array("urn:x".utf8) + [0], model: AnyBoxModel(SchemeTypeBox(schemeType: "cbcs", schemeVersion: 0x10000, schemeURI: "urn:x")), fields: "schemeType=cbcs schemeVersion=65536 schemeURI=urn:x", flags: 1),
        Case(name: "saio v0", payload: [0, 0, 0, 2, 0, 0, 0, 100, 0, 0, 1, 0], model: AnyBoxModel(SampleAuxiliaryInformationOffsetsBox(auxInfoType: nil, auxInfoTypeParameter: nil, isWide: false, entryCount: 2, entryBytes: [0, 0, 0, 100, 0, 0, 1, 0])), fields: "entryCount=2"),
        Case(name: "saio v1 typed", payload: Array("cenc".utf8) + [0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0], model: AnyBoxModel(SampleAuxiliaryInformationOffsetsBox(auxInfoType: "cenc", auxInfoTypeParameter: 0, isWide: true, entryCount: 1, entryBytes: [0, 0, 0, 1, 0, 0, 0, 0])), fields: "auxInfoType=cenc auxInfoTypeParameter=0 entryCount=1", version: 1, flags: 1),
        Case(name: "iloc v1 extents", payload: [0x44, 0x00, 0, 1, 0, 7, 0, 0, 0, 0, 0, 1, 0, 0, 3, 232, 0, 0, 0, 16], model: AnyBoxModel(ItemLocationBox(version: 1, offsetSize: 4, lengthSize: 4, baseOffsetSize: 0, indexSize: 0, items: [.init(itemID: 7, constructionMethod: 0, dataReferenceIndex: 0, baseOffset: 0, baseOffsetPosition: 10, extentCount: 1, extents: [.init(index: 0, offset: 1000, length: 16, offsetPosition: 12)])])), fields: "offsetSize=4 lengthSize=4 baseOffsetSize=0 itemCount=1", version: 1),
        Case(name: "iloc v2 base", payload: [0x04, 0x80, 0, 0, 0, 1, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10, 0, 0, 1, 0, 0, 0, 5], model: AnyBoxModel(ItemLocationBox(version: 2, offsetSize: 0, lengthSize: 4, baseOffsetSize: 8, indexSize: 0, items: [.init(itemID: 9, constructionMethod: 0, dataReferenceIndex: 0, baseOffset: 0x1000, baseOffsetPosition: 14, extentCount: 1, extents: [.init(index: 0, offset: 0, length: 5, offsetPosition: 24)])])), fields: "offsetSize=0 lengthSize=4 baseOffsetSize=8 itemCount=1", version: 2),
        Case(name: "dmlp 7.1 48 kHz", payload: [0, 23, 128, 79, 24, 106, 0, 0, 0, 0], model: AnyBoxModel(MLPSpecificBox(sampleRate: 48000, channelCount: 8, peakDataRate: 3125)), fields: "sampleRate=48000 channelCount=8 peakDataRate=3125"),
        Case(name: "iacb Opus", payload: [1, 31, 0xF8, 6] + Array("iamf".utf8) + [0, 0, 0, 0x15, 0xC8, 1] + Array("Opus".utf8) + [0xC0, 7, 0xFF, 0xFC, 1, 2, 1, 0x38, 0, 0, 0xBB, 0x80, 0, 0, 0], model: AnyBoxModel(IAConfigurationBox(primaryProfile: 0, additionalProfile: 0, codecID: "Opus", sampleRate: 48000)), fields: "primaryProfile=0 additionalProfile=0 codecID=Opus sampleRate=48000"),
        Case(name: "data UTF-8", payload: [0, 0, 0, 1, 0, 0, 0, 0] + Array("Lavf".utf8), model: AnyBoxModel(MetadataValueBox(typeIndicator: 1, locale: 0, value: ArraySlice("Lavf".utf8))), fields: "dataType=1 value=Lavf"),
        Case(name: "keys", payload: [0, 0, 0, 1, 0, 0, 0, 12] + Array("mdtamake".utf8), model: AnyBoxModel(MetadataKeysBox(keys: [.init(namespace: "mdta", name: "make")])), fields: "keys=[make]"),
        Case(name: "chpl v1", payload: [0, 0, 0, 0, 1] + [0, 0, 0, 0, 0, 0, 0, 0] + [2] + Array("Go".utf8), model: AnyBoxModel(NeroChapterListBox(reserved: 0, chapters: [.init(start: 0, title: "Go")])), fields: "chapterCount=1", version: 1),
        Case(name: "fiel tt", payload: [2, 1], model: AnyBoxModel(FieldHandlingBox(fieldCount: 2, fieldOrdering: 1)), fields: "fieldCount=2 fieldOrdering=1 fieldOrder=tt"),
        Case(name: "clli", payload: [3, 232, 1, 144], model: AnyBoxModel(ContentLightLevelBox(maxContentLightLevel: 1000, maxPictureAverageLightLevel: 400)), fields: "maxContentLightLevel=1000 maxPictureAverageLightLevel=400"),
        Case(name: "avcC (summary, no writer)", payload: avcCPayload, model: AnyBoxModel(AVCConfigurationBox(profile: 0x64, compatibility: 0, level: 0x1F)), fields: "profile=100 compatibility=0 level=31"),
        Case(name: "dOps", payload: [0, 2, 0x01, 0x38, 0, 0, 0xBB, 0x80, 0, 0, 0], model: AnyBoxModel(OpusSpecificBox(outputChannelCount: 2, preSkip: 312, inputSampleRate: 48000)), fields: "outputChannelCount=2 preSkip=312 inputSampleRate=48000"),
        Case(name: "trex", payload: [0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 2, 0, 0, 0, 0, 0, 0, 1, 0, 0], model: AnyBoxModel(TrackExtendsBox(trackID: 1, defaultSampleDescriptionIndex: 1, defaultSampleDuration: 512, defaultSampleSize: 0, defaultSampleFlags: 0x10000)),
             fields: "trackID=1 defaultSampleDescriptionIndex=1 defaultSampleDuration=512 defaultSampleSize=0 defaultSampleFlags=0x010000", flags: 0),
        Case(name: "tfhd base-is-moof", payload: [0, 0, 0, 2, 0, 0, 4, 0, 0x01, 0x01, 0, 0], model: AnyBoxModel(TrackFragmentHeaderBox(trackID: 2, defaultSampleDuration: 1024, defaultSampleFlags: 0x1010000, defaultBaseIsMoof: true)),
             fields: "trackID=2 defaultSampleDuration=1024 defaultSampleFlags=0x1010000 defaultBaseIsMoof=true", flags: 0x20028),
        Case(name: "tfhd every field", payload: [0, 0, 0, 3] + [0, 0, 0, 0, 0, 0, 0x10, 0] + [0, 0, 0, 1, 0, 0, 0, 9, 0, 0, 0, 7, 0, 0, 0, 0],
             model: AnyBoxModel(TrackFragmentHeaderBox(trackID: 3, baseDataOffset: 4096, sampleDescriptionIndex: 1, defaultSampleDuration: 9, defaultSampleSize: 7, defaultSampleFlags: 0, durationIsEmpty: true)),
             fields: "trackID=3 baseDataOffset=4096 sampleDescriptionIndex=1 defaultSampleDuration=9 defaultSampleSize=7 defaultSampleFlags=0x000000 durationIsEmpty=true", flags: 0x1003B),
        Case(name: "trun v1", payload: [0, 0, 0, 2, 0, 0, 0, 0x70, 0x02, 0, 0, 0] + [0, 0, 1, 0, 0xFF, 0xFF, 0xFC, 0x00, 0, 0, 2, 0, 0, 0, 0, 0],
             model: AnyBoxModel(TrackRunBox(flags: 0xA05, version: 1, sampleCount: 2, dataOffset: 112, firstSampleFlags: 0x2000000, recordSize: 8, records: [0, 0, 1, 0, 0xFF, 0xFF, 0xFC, 0x00, 0, 0, 2, 0, 0, 0, 0, 0][...])),
             fields: "sampleCount=2 dataOffset=112 firstSampleFlags=0x2000000", version: 1, flags: 0xA05),
        Case(name: "sidx v0", payload: [0, 0, 0, 1, 0, 0, 0x03, 0xE8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2] + [0x00, 0x00, 0x10, 0x00, 0, 0, 0x07, 0xD0, 0x90, 0, 0, 0] + [0x80, 0x00, 0x00, 0x40, 0, 0, 0x07, 0xD0, 0x10, 0, 0, 5],
             model: AnyBoxModel(SegmentIndexBox(referenceID: 1, timescale: 1000, earliestPresentationTime: 0, firstOffset: 0, references: [
                .init(referencesIndex: false, referencedSize: 4096, subsegmentDuration: 2000, startsWithSAP: true, sapType: 1, sapDeltaTime: 0),
                .init(referencesIndex: true, referencedSize: 64, subsegmentDuration: 2000, startsWithSAP: false, sapType: 1, sapDeltaTime: 5)])),
             fields: "referenceID=1 timescale=1000 earliestPresentationTime=0 firstOffset=0 referenceCount=2"),
        Case(name: "sidx v1", payload: [0, 0, 0, 2, 0, 0, 0x3A, 0x98] + [0, 0, 0, 1, 0, 0, 0, 0] + [0, 0, 0, 0, 0, 0, 0, 0x20] + [0, 0, 0, 0],
             model: AnyBoxModel(SegmentIndexBox(referenceID: 2, timescale: 15000, earliestPresentationTime: 1 << 32, firstOffset: 32, references: [], isWide: true)),
             fields: "referenceID=2 timescale=15000 earliestPresentationTime=4294967296 firstOffset=32 referenceCount=0", version: 1),
        Case(name: "tfra v1 2-1-4", payload: [0, 0, 0, 1, 0, 0, 0, 0x13, 0, 0, 0, 1] + [0, 0, 0, 0, 0, 0, 0x30, 0x39, 0, 0, 0, 1, 0, 0, 0, 0] + [0, 1, 1, 0, 0, 0, 2],
             model: AnyBoxModel(TrackFragmentRandomAccessBox(trackID: 1, entries: [.init(time: 12345, moofOffset: 1 << 32, trafNumber: 1, trunNumber: 1, sampleNumber: 2)], isWide: true, numberSizes: (2, 1, 4))),
             fields: "trackID=1 entryCount=1", version: 1),
        Case(name: "mvhd v0", payload: mvhd0Payload, model: AnyBoxModel(MovieHeaderBox(creationTime: 100, modificationTime: 200, timescale: 1000, duration: .max, nextTrackID: 3)), fields: "timescale=1000 duration=null durationSeconds=null rate=1.0 volume=1.0 nextTrackID=3"),
        Case(name: "mvhd v1", payload: mvhd1Payload, model: AnyBoxModel(MovieHeaderBox(creationTime: 1 << 33, modificationTime: 5, timescale: 90000, duration: 900_000, rate: 0.5, volume: 0.5, nextTrackID: 2, isWide: true)), fields: "timescale=90000 duration=900000 durationSeconds=10.0 rate=0.5 volume=0.5 nextTrackID=2", version: 1),
        Case(name: "tkhd rotated", payload: tkhd0Payload, model: AnyBoxModel(TrackHeaderBox(flags: 7, creationTime: 1, modificationTime: 2, trackID: 7, duration: 5000, layer: -1, alternateGroup: 1, matrix: [0, 1, 0, -1, 0, 0, 0, 0, 1], width: 1280, height: 720.5)), fields: "trackID=7 enabled=true duration=5000 layer=-1 alternateGroup=1 volume=0.0 width=1280.0 height=720.5 rotation=90", flags: 7),
        Case(name: "mdhd", payload: mdhd0Payload, model: AnyBoxModel(MediaHeaderBox(timescale: 48000, duration: 96000)), fields: "timescale=48000 duration=96000 durationSeconds=2.0 language=und"),
        Case(name: "mdhd without quality", payload: mdhdNoQualityPayload, model: AnyBoxModel(MediaHeaderBox(timescale: 600, duration: .max, languageCode: 0, quality: nil)), fields: "timescale=600 duration=null durationSeconds=null language=eng"),
        Case(name: "hdlr ISO", payload: hdlrISOPayload, model: AnyBoxModel(HandlerBox(handlerType: "vide", name: "VideoHandler")), fields: "handlerType=vide name=VideoHandler"),
        Case(name: "hdlr QuickTime", payload: hdlrQuickTimePayload, model: AnyBoxModel(HandlerBox(componentType: "mhlr", handlerType: "soun", reserved: Array("appl".utf8) + [UInt8](repeating: 0, count: 8), name: "Sound", nameForm: .pascal)), fields: "handlerType=soun name=Sound"),
        Case(name: "elst v0", payload: elst0Payload, model: AnyBoxModel(EditListBox(entries: [.init(segmentDuration: 1000, mediaTime: -1), .init(segmentDuration: 9000, mediaTime: 1024)])), fields: "entryCount=2"),
        Case(name: "elst v1", payload: elst1Payload, model: AnyBoxModel(EditListBox(entries: [.init(segmentDuration: 1 << 32, mediaTime: -1, mediaRate: 0.5)], isWide: true)), fields: "entryCount=1", version: 1),
        Case(name: "dac3 5.1", payload: [0x10, 0x3D, 0xC0], model: AnyBoxModel(AC3SpecificBox(channelCount: 6, hasLFE: true, bitRateKbps: 384)), fields: "channelCount=6 lfe=true bitRateKbps=384"),
    ]

    static func dump(_ fields: [(name: String, value: FieldValue)]) -> String {
        fields.map { field -> String in
            switch field.value {
            case .uint(let v): return "\(field.name)=\(v)"
            case .int(let v): return "\(field.name)=\(v)"
            case .bool(let v): return "\(field.name)=\(v)"
            case .string(let v): return "\(field.name)=\(v)"
            case .double(let v): return "\(field.name)=\(v)"
            case .list(let v): return "\(field.name)=[" + v.map { item in if case .string(let text) = item { return text } else { return "\(item)" } }.joined(separator: ",") + "]"
            case .null: return "\(field.name)=null"
            }
        }.joined(separator: " ")
    }

    @Test(arguments: cases)
    func roundTrip(_ c: Case) throws {
        let type = Swift.type(of: c.model.base)
        var reader = ByteReader(c.payload)
        let parsed = try type.parse(&reader, version: c.version, flags: c.flags)
        #expect(reader.remaining == 0, "\(c.name): \(reader.remaining) bytes not consumed")
        #expect(AnyBoxModel(parsed) == c.model)
        // Summaries (codec configurations) skip what they do not report and have no writer.
        if let writable = parsed as? any WritableBoxModel {
            var writer = ByteWriter()
            writable.write(to: &writer)
            #expect(writer.bytes == c.payload, "\(c.name): written bytes differ")
        } else {
            #expect(parsed is any CodecConfigurationBoxModel, "\(c.name): only summaries lack a writer")
        }
        #expect(Self.dump(parsed.fields) == c.fields)
        // A writer of a full box takes its flags from the model where they describe fields.
        if let header = parsed as? TrackFragmentHeaderBox { #expect(header.flags == c.flags, "\(c.name): flags") }
    }

    /// Fixed-point fields written from any Double (a caller's model, not only a parsed one)
    /// never trap: NaN is 0, out-of-range values are clamped to the field (before, `Int64(NaN)`
    /// trapped in the writer).
    @Test func fixedPointWritersClampInsteadOfTrapping() throws {
        var writer = ByteWriter()
        MovieHeaderBox(timescale: 1, duration: 1, rate: .nan, volume: .infinity, matrix: [.nan, 1e300, -1e300, 0, 1, 0, 0, 0, 1], nextTrackID: 2).write(to: &writer)
        TrackHeaderBox(trackID: 1, duration: 1, volume: -.infinity, width: -5, height: 1e300).write(to: &writer)
        EditListBox(entries: [.init(segmentDuration: 1, mediaTime: 0, mediaRate: -.infinity)]).write(to: &writer)
        var reader = ByteReader(writer.bytes)
        let movie = try MovieHeaderBox.parse(&reader, version: 0, flags: 0)
        #expect(movie.rate == 0 && movie.volume == Double(Int16.max) / 256 && movie.matrix[0] == 0 && movie.matrix[1] == Double(Int32.max) / 65536)
        let track = try TrackHeaderBox.parse(&reader, version: 0, flags: 3)
        #expect(track.width == 0 && track.height == Double(UInt32.max) / 65536 && track.volume == Double(Int16.min) / 256)
        let edits = try EditListBox.parse(&reader, version: 0, flags: 0)
        #expect(edits.entries.first?.mediaRate == Double(Int32.min) / 65536 && reader.remaining == 0)
    }

    @Test func truncatedPayloadsAreErrorsNotTraps() {
        for c in Self.cases {
            let type = Swift.type(of: c.model.base)
            // An ICC profile may be any length: only its colour type is required.
            for cut in 0..<min(c.payload.count, c.name.hasPrefix("colr prof") ? 4 : c.name == "sdtp" ? 0 : c.name.hasPrefix("frma") ? 4 : c.name.hasPrefix("dac3") ? 3 : c.name.hasPrefix("avcC") ? 4 : c.name.hasPrefix("dmlp") ? 6 : c.name.hasPrefix("data") || c.name.hasPrefix("keys") ? 8 : c.name.hasPrefix("fiel") ? 2 : c.name.hasPrefix("clli") ? 4 : c.name.hasPrefix("chpl") ? 5 : 7) {
                var reader = ByteReader(Array(c.payload.prefix(cut)))
                #expect(throws: MP4Error.self, "\(c.name) cut at \(cut)") { _ = try type.parse(&reader, version: c.version, flags: c.flags) }
            }
        }
    }

    /// Inside a tree the catalogue row is all the parser needs; bytes after the fields are a
    /// finding, not an error.
    @Test func theParserUsesTheCatalogue() throws {
        typealias B = BoxBuilder
        let moov = B.box("moov", children: [B.box("pasp", [0, 0, 0, 4, 0, 0, 0, 3]), B.box("btrt", [0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 9, 9])])
        var parser = BoxTreeParser(limits: .default)
        let node = try parser.parse(moov, at: 0, path: .top(.moov))
        #expect(node.children.first?.content == .model(AnyBoxModel(PixelAspectRatioBox(hSpacing: 4, vSpacing: 3))))
        #expect(node.children.last.flatMap { if case .model(let m) = $0.content { return m.as(BitRateBox.self) } else { return nil } } == BitRateBox(bufferSizeDB: 0, maxBitrate: 1, avgBitrate: 1))
        #expect(parser.findings.map(\.id) == ["box-extra-bytes"])
        #expect(BoxCatalog.descriptor(for: "colr")?.name == "ColourInformationBox")
        // One row per type: a second declaration of a type would be shadowed silently.
        #expect(Set(BoxCatalog.models.map { $0.type }).count == BoxCatalog.models.count)
    }

    /// The roles a model answers without a dynamic cast (`asSampleTableBox`, ...) are what
    /// the casts say, for every case above and every model in SampleMedia's trees (fragments
    /// included); and every role is met at least once, so a default that shadowed a refining
    /// protocol's answer would fail here.
    @Test func rolesAreWhatTheCastsSay() async throws {
        var models = Self.cases.map(\.model.base)
        for name in Fixtures.sampleFiles {
            let bytes = try #require(FileSystem.read(Fixtures.sample(name)))
            let file = try await MP4File.open(MemorySource(bytes, name: name), options: MP4File.Options(loadsAllBoxes: true))
            for top in file.topLevelNodes {
                top.walk(path: .top(top.type)) { node, _ in
                    if case .model(let model) = node.content { models.append(model.base) }
                    return .descend
                }
            }
        }
        var met = [0, 0, 0, 0]
        for model in models {
            let name = "\(type(of: model))"
            #expect((model.asSampleTableBox != nil) == (model is any SampleTableBoxModel), "\(name)")
            #expect((model.asCodecConfigurationBox != nil) == (model is any CodecConfigurationBoxModel), "\(name)")
            #expect((model.asTabularBox != nil) == (model is any TabularBoxModel), "\(name)")
            #expect((model.asFileOffsetBox != nil) == (model is any FileOffsetBox), "\(name)")
            for (index, role) in [model.asSampleTableBox as Any?, model.asCodecConfigurationBox, model.asTabularBox, model.asFileOffsetBox].enumerated() where role != nil {
                met[index] += 1
            }
        }
        #expect(met.allSatisfy { $0 > 0 }, "roles met: \(met)")
        for type in BoxCatalog.models {
            #expect(type.holdsFileOffsets == (type is any FileOffsetBox.Type), "\(type)")
        }
        #expect(BoxCatalog.models.filter { $0.holdsFileOffsets }.count >= 4)
    }

    /// mdhd languages: ISO packed codes, QuickTime Macintosh codes (0 is English, as ffmpeg
    /// reads it; it used to print "und"), 0x7FFF unspecified.
    @Test func mediaHeaderLanguages() {
        #expect(MediaHeaderBox.language(0x55C4) == "und")
        #expect(MediaHeaderBox.language(0x15C7) == "eng")
        #expect(MediaHeaderBox.language(0) == "eng")
        #expect(MediaHeaderBox.language(2) == "mac:2")
        #expect(MediaHeaderBox.language(0x7FFF) == "und")
    }

    /// dec3 (E-AC-3): the channel count comes from the first independent substream (5.1 is 6;
    /// the sample entry's placeholder says 2), unknown with dependent substreams.
    @Test func eac3ChannelsFromDec3() throws {
        let word: UInt16 = 640 << 3  // 640 kb/s, one independent substream
        func parse(acmod: UInt8, lfe: UInt8, dependent: UInt8, location: UInt16 = 0) throws -> EC3SpecificBox {
            var reader = ByteReader([UInt8(word >> 8), UInt8(word & 0xFF), 16 << 1, acmod << 1 | lfe, dependent << 1 | UInt8(location >> 8), UInt8(location & 0xFF)])
            return try EC3SpecificBox.parse(&reader, version: 0, flags: 0)
        }
        #expect(try parse(acmod: 7, lfe: 1, dependent: 0) == EC3SpecificBox(dataRateKbps: 640, independentSubstreams: 1, channelCount: 6))
        #expect(try parse(acmod: 2, lfe: 0, dependent: 0) == EC3SpecificBox(dataRateKbps: 640, independentSubstreams: 1, channelCount: 2))
        // A dependent substream adding the rear pair (chan_loc Lrs/Rrs): 7.1.
        #expect(try parse(acmod: 7, lfe: 1, dependent: 1, location: 0b0_1000_0000) == EC3SpecificBox(dataRateKbps: 640, independentSubstreams: 1, channelCount: 8))
        // Lc/Rc and LFE2 (the first and last chan_loc bits).
        #expect(try parse(acmod: 7, lfe: 1, dependent: 1, location: 0b1_0000_0001) == EC3SpecificBox(dataRateKbps: 640, independentSubstreams: 1, channelCount: 9))
    }
}
