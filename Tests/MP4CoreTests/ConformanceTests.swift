import Testing
@testable import MP4Core
import MP4TestSupport

/// Issue 45 item 1: each ISO/IEC 14496-12 "shall" that `check --conformance` enforces, by a
/// single-rule mutation of a conformant film (`SampleEntryFieldsTests.film`): the film has no
/// conformance finding, each mutation exactly the one it breaks. QuickTime files are judged
/// by QuickTime's rules, media segments as segments, and the default check ignores all of it.
@Suite struct ConformanceTests {
    typealias B = BoxBuilder

    /// The conformant film: one video track.
    static var film: [UInt8] {
        let avc1 = B.box("avc1", SampleEntryFieldsTests.entryStart + [UInt8](repeating: 0, count: 16) + B.u16(64) + B.u16(48)
                         + B.u32(0x0048_0000) + B.u32(0x0048_0000) + B.u32(0) + B.u16(1) + [UInt8](repeating: 0, count: 32) + B.u16(24) + B.u16(0xFFFF))
        return SampleEntryFieldsTests.film(handler: "vide", entry: avc1)
    }

    static func ids(_ bytes: [UInt8]) async throws -> [String] {
        Conformance.findings(try await MP4File.open(MemorySource(bytes, name: "film"))).map(\.id)
    }

    /// The offset of the first `type` box's header (its size field).
    static func box(_ type: String, in bytes: [UInt8], occurrence: Int = 1) throws -> Int {
        var found = 0
        for index in 4..<(bytes.count - 4) where bytes[index..<(index + 4)].elementsEqual(type.utf8) {
            found += 1
            if found == occurrence { return index - 4 }
        }
        throw Failure("no \(type)")
    }

    struct Failure: Error { let text: String; init(_ text: String) { self.text = text } }

    static func patched(_ bytes: [UInt8], _ type: String, at offset: Int, _ value: [UInt8]) throws -> [UInt8] {
        var copy = bytes
        let start = try box(type, in: bytes) + offset
        copy.replaceSubrange(start..<(start + value.count), with: value)
        return copy
    }

    @Test func theConformantFilmHasNoFinding() async throws {
        #expect(try await Self.ids(Self.film) == [])
        // And a film ffmpeg wrote (its iTunes 'meta' handler carries 'appl' by convention).
        let bytes = try #require(FileSystem.read(Fixtures.sample("faststart.mp4")))
        #expect(try await Self.ids(bytes) == [])
    }

    @Test func eachRuleByOneMutation() async throws {
        let film = Self.film
        let ftyp = try Self.box("ftyp", in: film), moov = try Self.box("moov", in: film), mdat = try Self.box("mdat", in: film)
        // ftyp after moov (the two swapped: mdat, and so every chunk offset, stays where it was).
        let swapped = Array(film[moov..<mdat]) + Array(film[ftyp..<moov]) + Array(film[mdat...])
        #expect(try await Self.ids(swapped) == ["iso-file-type"])
        // A second moov at the end.
        #expect(try await Self.ids(film + Array(film[moov..<mdat])) == ["iso-movie-count"])
        // No dinf in minf (renamed 'free').
        #expect(try await Self.ids(try Self.patched(film, "dinf", at: 4, Array("free".utf8))) == ["iso-box-count"])
        // A second stts in stbl ('stsc' renamed: the stsc is missing too, one finding each).
        #expect(try await Self.ids(try Self.patched(film, "stsc", at: 4, Array("stts".utf8))) == ["iso-box-count", "iso-box-count"])
        // track_ID 0.
        #expect(try await Self.ids(try Self.patched(film, "tkhd", at: 20, B.u32(0))) == ["iso-track-id"])
        // next_track_ID not above the track's 1.
        let mvhd = try Self.box("mvhd", in: film)
        let size = Int(film[mvhd + 3]) | Int(film[mvhd + 2]) << 8
        #expect(try await Self.ids(try Self.patched(film, "mvhd", at: size - 4, B.u32(1))) == ["iso-next-track-id"])
        // hdlr: pre_defined, a reserved word, the name's terminator.
        #expect(try await Self.ids(try Self.patched(film, "hdlr", at: 12, Array("mhlr".utf8))) == ["iso-handler-fields"])
        #expect(try await Self.ids(try Self.patched(film, "hdlr", at: 24, [1])) == ["iso-handler-fields"])
        let hdlr = try Self.box("hdlr", in: film)
        let hdlrSize = Int(film[hdlr + 3])
        #expect(try await Self.ids(try Self.patched(film, "hdlr", at: hdlrSize - 1, Array("x".utf8))) == ["iso-handler-fields"])
        // A name terminated early with a byte after it (an Apple-made .m4a's iTunes handler:
        // an empty name, then one byte) is terminated: no finding (it was one).
        let early = try Self.patched(try Self.patched(film, "hdlr", at: 8 + Conformance.handlerNameOffset, [0]), "hdlr", at: hdlrSize - 1, Array("x".utf8))
        #expect(try await Self.ids(early) == [])
        // A nested box of size 0 (stco, the last box of stbl: it still ends where it did).
        #expect(try await Self.ids(try Self.patched(film, "stco", at: 0, B.u32(0))) == ["iso-size-zero"])
        // A sample entry pointing at data reference 2 of 1.
        #expect(try await Self.ids(try Self.patched(film, "avc1", at: 14, B.u16(2))) == ["iso-data-reference"])
        // An empty dref (its entry renamed away and the count 0).
        #expect(try await Self.ids(try Self.patched(film, "dref", at: 12, B.u32(0))).contains("iso-data-reference"))
    }

    /// QuickTime: no ftyp needed, the component description in hdlr, gmhd as media header.
    @Test func quickTimeIsJudgedByQuickTimesRules() async throws {
        var film = try Self.patched(Self.film, "ftyp", at: 8, Array("qt  ".utf8))
        film = try Self.patched(film, "hdlr", at: 12, Array("mhlr".utf8))
        film = try Self.patched(film, "vmhd", at: 4, Array("gmhd".utf8))
        #expect(try await Self.ids(film) == [])
        // The same in an ISO file: two findings.
        var iso = try Self.patched(Self.film, "hdlr", at: 12, Array("mhlr".utf8))
        iso = try Self.patched(iso, "vmhd", at: 4, Array("gmhd".utf8))
        #expect(try await Self.ids(iso).sorted() == ["iso-box-count", "iso-handler-fields"])
    }

    /// `check` fails on them only with `conformance`; the catalogue names a section for each.
    @Test func onlyTheConformancePolicyFails() async throws {
        let broken = try Self.patched(Self.film, "tkhd", at: 20, B.u32(0))
        #expect(await FileCheck.check(MemorySource(broken, name: "x")).status == .pass)
        let strict = await FileCheck.check(MemorySource(broken, name: "x"), policy: CheckPolicy(conformance: true))
        #expect(strict.status == .fail && strict.findings.map(\.id) == ["iso-track-id"], "\(strict.findings)")
        #expect(strict.findings.first?.message.contains("§8.3.2.3") == true)
        #expect(try CheckPolicy.parse(document: Array(#"{"conformance": true}"#.utf8)).conformance)
        for kind in Finding.Kind.allCases where kind.category == .conformance {
            #expect(Conformance.rule(kind)?.section.hasPrefix("§") == true, "\(kind.id)")
        }
    }
}
