import Testing
@testable import MP4Core
import MP4TestSupport

/// Tags and chapters as ffprobe shows them (issue 15): iTunes items, QuickTime keys, user-data
/// text with its language twin, 3GPP location, Nero chapters, a QuickTime chapter track, and
/// the bounds that keep a hostile list small. ffprobe's own answers for the corpus are compared
/// in FFprobeFactsTests.
@Suite struct MovieMetadataTests {
    typealias B = BoxBuilder

    static func data(_ type: UInt32, _ value: [UInt8]) -> [UInt8] { B.box("data", B.u32(type) + B.u32(0) + value) }
    static func text(_ value: String) -> [UInt8] { data(1, Array(value.utf8)) }

    static func open(_ moovChildren: [[UInt8]], extra: [UInt8] = []) async throws -> MP4File {
        let ftyp = B.box("ftyp", Array("isom".utf8) + B.u32(512) + Array("isom".utf8))
        let mvhd = B.fullBox("mvhd", B.u32(3_786_912_000) + B.u32(0) + B.u32(1000) + B.u32(5000) + [UInt8](repeating: 0, count: 80))
        return try await MP4File.open(MemorySource(ftyp + B.box("moov", children: [mvhd] + moovChildren) + extra))
    }

    @Test func tagsFromEveryPlaceInFileOrderTheLastValueWinning() async throws {
        let ilst = B.box("ilst", children: [
            B.box("©nam", Self.text("A title")), B.box("©too", Self.text("Lavf61")),
            B.box("trkn", Self.data(0, [0, 0, 0, 3, 0, 12, 0, 0])), B.box("covr", Self.data(13, [0xFF, 0xD8, 0xFF])),
            B.box("tmpo", Self.data(21, [0xFF, 0xFE])), B.box("----", B.fullBox("mean", Array("com.apple.iTunes".utf8)) + B.fullBox("name", Array("iTunSMPB".utf8)) + Self.text(" 00000000")),
        ])
        let meta = B.fullBox("meta", B.fullBox("hdlr", B.u32(0) + Array("mdirappl".utf8) + [UInt8](repeating: 0, count: 9)) + ilst)
        // A user-data text atom after the iTunes list: same key, later, so it wins; with a
        // language (packed "eng") it also gives "title-eng".
        let english: UInt16 = (5 << 10) | (14 << 5) | 7
        let udta = B.box("udta", children: [meta, B.box("©nam", B.u16(7) + B.u16(english) + Array("Another".utf8)),
                                             B.fullBox("loci", B.u16(english) + Array("Paris".utf8) + [0, 0] + B.u32(UInt32(bitPattern: Int32(2.35 * 65536))) + B.u32(UInt32(bitPattern: Int32(48.8566 * 65536))) + B.u32(0) + [0, 0])])
        let keys = B.fullBox("keys", B.u32(2) + B.u32(8 + 24) + Array("mdta".utf8) + Array("com.apple.quicktime.make".utf8) + B.u32(8 + 23) + Array("mdta".utf8) + Array("com.android.capture.fps".utf8))
        let keyed = B.box("meta", children: [B.fullBox("hdlr", B.u32(0) + Array("mdta".utf8) + [UInt8](repeating: 0, count: 13)), keys,
                                             B.box("ilst", children: [B.box("\u{0}\u{0}\u{0}\u{1}", Self.text("Apple")), B.box("\u{0}\u{0}\u{0}\u{2}", Self.data(23, B.u32(Float(240).bitPattern)))])])
        let file = try await Self.open([udta, keyed])
        let metadata = try #require(file.movie?.metadata)
        let tags = Dictionary(metadata.dictionary.map { ($0.key, $0.value) }, uniquingKeysWith: { $1 })
        #expect(tags["title"] == "Another" && tags["title-eng"] == "Another")
        #expect(metadata.tags.filter { $0.key == "title" }.map(\.value) == ["A title", "Another"])
        #expect(tags["encoder"] == "Lavf61" && tags["track"] == "3/12" && tags["cover"] == "image/jpeg, 3 bytes" && tags["tmpo"] == "-2")
        #expect(tags["iTunSMPB"] == " 00000000")
        #expect(tags["location"] == "+48.8566+002.3500/Paris" && tags["location-eng"] == "+48.8566+002.3500/Paris")
        #expect(tags["com.apple.quicktime.make"] == "Apple" && tags["com.android.capture.fps"] == "240.000000")
        // 3,786,912,000 s after 1904 is 2024-01-01; ffprobe's form.
        #expect(tags["creation_time"] == "2024-01-01T00:00:00.000000Z")
    }

    @Test func creationTimesBefore1970AreReadAsUnixTimeAsFFmpegDoes() {
        #expect(MovieMetadata.isoDate(secondsSince1904: 2_082_844_800) == "1970-01-01T00:00:00.000000Z")
        #expect(MovieMetadata.isoDate(secondsSince1904: 1_000_000_000) == "2001-09-09T01:46:40.000000Z")
        #expect(MovieMetadata.isoDate(secondsSince1904: UInt64.max) == nil)
    }

    @Test func neroChaptersAndTheirBound() async throws {
        var entries: [UInt8] = []
        for i in 0..<3 { entries += B.u64(UInt64(i) * 20_000_000) + [UInt8(9)] + Array("Chapter \(i + 1)".utf8) }
        let file = try await Self.open([B.box("udta", B.fullBox("chpl", version: 1, B.u32(0) + [3] + entries))])
        let metadata = try #require(file.movie?.metadata)
        #expect(metadata.chapterSource == .neroChapterList)
        #expect(metadata.chapters.map(\.title) == ["Chapter 1", "Chapter 2", "Chapter 3"] && metadata.chapters.map(\.startSeconds) == [0, 2, 4])
        // A count the bytes cannot hold is a finding, not 255 allocations.
        let hostile = try await Self.open([B.box("udta", B.fullBox("chpl", [255] + [UInt8](repeating: 0, count: 9)))])
        #expect(hostile.movie?.metadata.chapters.isEmpty == true && hostile.findings.contains { $0.id == "invalid-box" })
    }

    /// A QuickTime chapter track: tref/chap names a text track whose samples are the titles.
    @Test func chapterTrackTitlesAreReadInOneRead() async throws {
        let titles = ["Intro", "Middle", "Ending"]
        let samples = titles.map { B.u16(UInt16($0.utf8.count)) + Array($0.utf8) }
        let mdatPayload = samples.flatMap { $0 }
        let ftyp = B.box("ftyp", Array("qt  ".utf8) + B.u32(0) + Array("qt  ".utf8))
        let mdatOffset = UInt32(ftyp.count + 8)
        func track(_ id: UInt32, handler: String, tref: [UInt8], stbl: [UInt8]) -> [UInt8] {
            B.box("trak", children: [
                B.fullBox("tkhd", flags: 3, B.u32(0) + B.u32(0) + B.u32(id) + [UInt8](repeating: 0, count: 68)), tref,
                B.box("mdia", children: [B.fullBox("mdhd", B.u32(0) + B.u32(0) + B.u32(1000) + B.u32(6000) + B.u16(0x55C4) + B.u16(0)),
                                         B.fullBox("hdlr", B.u32(0) + Array(handler.utf8) + [UInt8](repeating: 0, count: 13)),
                                         B.box("minf", children: [B.box("stbl", stbl)])]),
            ])
        }
        let textStbl = B.fullBox("stsd", B.u32(1) + B.box("text", [UInt8](repeating: 0, count: 8))) + B.fullBox("stts", B.u32(1) + B.u32(3) + B.u32(2000))
            + B.fullBox("stsc", B.u32(1) + B.u32(1) + B.u32(3) + B.u32(1)) + B.fullBox("stsz", B.u32(0) + B.u32(3) + samples.flatMap { B.u32(UInt32($0.count)) })
            + B.fullBox("stco", B.u32(1) + B.u32(mdatOffset))
        let moov = B.box("moov", children: [
            B.fullBox("mvhd", B.u32(0) + B.u32(0) + B.u32(1000) + B.u32(6000) + [UInt8](repeating: 0, count: 80)),
            track(1, handler: "vide", tref: B.box("tref", B.box("chap", B.u32(2))), stbl: []),
            track(2, handler: "text", tref: [], stbl: textStbl),
        ])
        let bytes = ftyp + B.box("mdat", mdatPayload) + moov
        let source = CountingSource(MemorySource(bytes))
        let opened = try await MP4File.open(source, options: MP4File.Options(facts: .structure))
        #expect(opened.movie?.metadata.chapters.isEmpty == true)
        let before = await source.log.ranges.count
        let file = try await MP4File.open(source)   // the facts pass reads the titles: one read more
        #expect(await source.log.ranges.count == 2 * before + 1)
        #expect(file.statistics.readCount == opened.statistics.readCount + 1)
        #expect(file.movie?.metadata.chapterSource == .chapterTrack)
        #expect(file.movie?.metadata.chapters.map(\.title) == titles && file.movie?.metadata.chapters.map(\.startSeconds) == [0, 2, 4])

        // Hostile: the chunk offset points at the last byte of the file, so a title has one
        // byte where its 16-bit length should be. No trap; those titles are left out.
        var hostile = bytes
        let stco = try #require((0..<(hostile.count - 4)).first { hostile[$0..<($0 + 4)] == ArraySlice("stco".utf8) })
        hostile.replaceSubrange((stco + 12)..<(stco + 16), with: B.u32(UInt32(hostile.count - 1)))
        let cut = try await MP4File.open(MemorySource(hostile))
        #expect(cut.movie?.metadata.chapters.count ?? 0 <= 1)
    }
}
