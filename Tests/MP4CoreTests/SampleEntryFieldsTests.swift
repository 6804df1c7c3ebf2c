import Testing
@testable import MP4Core
import MP4TestSupport

/// Issue 45 item 4: every sample entry the specs define reads its own fixed fields before its
/// child boxes, and a descriptive box a few bytes short (where players cope) is a warning.
@Suite struct SampleEntryFieldsTests {
    typealias B = BoxBuilder

    /// A film of one track of ten 1-second samples with `handler` and the sample entry
    /// `entry`, chunk offsets into its `mdat`: conformant but for what a test puts in.
    static func film(handler: String, entry: [UInt8], mediaHeader: [UInt8]? = nil) -> [UInt8] {
        let ftyp = B.box("ftyp", Array("isom".utf8) + B.u32(0) + Array("isom".utf8))
        let header = mediaHeader ?? (handler == "vide" ? B.fullBox("vmhd", flags: 1, [UInt8](repeating: 0, count: 8)) : B.fullBox("nmhd"))
        func moov(_ chunkAt: UInt32) -> [UInt8] {
            B.box("moov", children: [
                B.fullBox("mvhd", B.u32(0) + B.u32(0) + B.u32(1000) + B.u32(10_000) + [UInt8](repeating: 0, count: 76) + B.u32(2)),
                B.box("trak", children: [
                    B.fullBox("tkhd", flags: 3, B.u32(0) + B.u32(0) + B.u32(1) + B.u32(0) + B.u32(10_000) + [UInt8](repeating: 0, count: 60)),
                    B.box("mdia", children: [
                        B.fullBox("mdhd", B.u32(0) + B.u32(0) + B.u32(1000) + B.u32(10_000) + B.u16(0x55C4) + B.u16(0)),
                        B.fullBox("hdlr", B.u32(0) + Array(handler.utf8) + [UInt8](repeating: 0, count: 12) + Array("mp4probe\0".utf8)),
                        B.box("minf", children: [
                            header,
                            B.box("dinf", children: [B.fullBox("dref", B.u32(1) + B.fullBox("url ", flags: 1))]),
                            B.box("stbl", children: [
                                B.fullBox("stsd", B.u32(1) + entry),
                                B.fullBox("stts", B.u32(1) + B.u32(10) + B.u32(1000)),
                                B.fullBox("stsc", B.u32(1) + B.u32(1) + B.u32(10) + B.u32(1)),
                                B.fullBox("stsz", B.u32(10) + B.u32(10)),
                                B.fullBox("stco", B.u32(1) + B.u32(chunkAt)),
                            ]),
                        ]),
                    ]),
                ]),
            ])
        }
        let chunkAt = UInt32(ftyp.count + moov(0).count + 8)
        return ftyp + moov(chunkAt) + B.box("mdat", [UInt8](repeating: 7, count: 100))
    }

    /// The eight bytes every sample entry starts with: six reserved, data reference 1.
    static let entryStart: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 1]

    static func entry(of bytes: [UInt8]) async throws -> SampleEntry {
        let file = try await MP4File.open(MemorySource(bytes, name: "film"))
        return try #require(file.movie?.tracks.first?.sampleEntries.first)
    }

    /// A `mett` entry's strings (content encoding, MIME format) are fields, not child boxes:
    /// read as boxes, "application/..." claimed 1,634,758,764 bytes and failed the gate.
    @Test(arguments: [
        ("mett", ["", "application/json"], "application/json", nil as String?),
        ("mett", ["gzip", "text/plain"], "text/plain", "gzip"),
        ("metx", ["", "urn:example:metadata", ""], nil, nil),
        ("sbtt", ["", "text/html"], "text/html", nil),
        ("stxt", ["", "text/plain"], "text/plain", nil),
    ])
    func stringFieldsAreNotReadAsBoxes(format: String, strings: [String], mime: String?, encoding: String?) async throws {
        let payload = Self.entryStart + strings.flatMap { Array($0.utf8) + [0] } + B.box("btrt", B.u32(0) + B.u32(8000) + B.u32(8000))
        let bytes = Self.film(handler: "meta", entry: B.box(format, payload))
        let check = await FileCheck.check(MemorySource(bytes, name: format))
        #expect(check.status == .pass, "\(check.findings)")
        #expect(check.findings.allSatisfy { $0.severity == .info }, "\(check.findings)")
        let entry = try await Self.entry(of: bytes)
        #expect(entry.mimeFormat == mime && entry.contentEncoding == encoding)
        #expect(entry.declaredBitRate?.avgBitrate == 8000, "the btrt after the strings is read")
        if format == "metx" { #expect(entry.textNamespace == "urn:example:metadata") }
    }

    /// A writer that left the strings out and put the child boxes straight after the data
    /// reference index: read as boxes still.
    @Test func anEntryWithoutItsStringsIsReadAsBoxes() async throws {
        let bytes = Self.film(handler: "meta", entry: B.box("mett", Self.entryStart + B.box("btrt", B.u32(0) + B.u32(8000) + B.u32(8000))))
        let check = await FileCheck.check(MemorySource(bytes, name: "mett"))
        #expect(check.status == .pass, "\(check.findings)")
        #expect(try await Self.entry(of: bytes).declaredBitRate?.avgBitrate == 8000)
    }

    /// Timecode, hint and subtitle entries skip their fixed fields to reach their children.
    @Test func fixedFieldsBeforeChildren() async throws {
        let name = B.box("name", B.u16(4) + B.u16(0) + Array("tc01".utf8))
        let tmcd = B.box("tmcd", Self.entryStart + [UInt8](repeating: 0, count: 8) + B.u32(25) + B.u32(1) + [25, 0] + name)
        let check = await FileCheck.check(MemorySource(Self.film(handler: "tmcd", entry: tmcd), name: "tmcd"))
        #expect(check.findings.allSatisfy { $0.severity == .info }, "\(check.findings)")
        let stpp = B.box("stpp", Self.entryStart + Array("http://www.w3.org/ns/ttml\0\0\0".utf8) + B.box("btrt", B.u32(0) + B.u32(1) + B.u32(1)))
        let bytes = Self.film(handler: "subt", entry: stpp)
        #expect(try await Self.entry(of: bytes).textNamespace == "http://www.w3.org/ns/ttml")
        #expect(try await Self.entry(of: bytes).declaredBitRate != nil)
    }

    /// A `colr` three bytes short of its `nclx` fields: every player ignores it, so the gate
    /// passes with a warning (it failed with `invalid-box`); a short `stsz` still fails.
    @Test func aShortDescriptiveBoxIsAWarning() async throws {
        let avc1 = { (colr: [UInt8]) in
            B.box("avc1", Self.entryStart + [UInt8](repeating: 0, count: 16) + B.u16(64) + B.u16(48) + B.u32(0x0048_0000) + B.u32(0x0048_0000)
                  + B.u32(0) + B.u16(1) + [UInt8](repeating: 0, count: 32) + B.u16(24) + B.u16(0xFFFF) + colr)
        }
        let film = Self.film(handler: "vide", entry: avc1(B.box("colr", Array("nclx".utf8) + B.u16(1) + B.u16(1))))
        let short = await FileCheck.check(MemorySource(film, name: "short"))
        #expect(short.status == .pass, "\(short.findings)")
        let findings = try await MP4File.open(MemorySource(film, name: "short")).findings
        #expect(findings.map(\.id) == ["box-short"] && findings.first?.severity == .warning, "\(findings)")
        var broken = Self.film(handler: "vide", entry: avc1([]))
        let stsz = try #require((0..<broken.count - 4).first { broken[$0..<($0 + 4)] == ArraySlice("stsz".utf8) })
        broken.replaceSubrange((stsz + 8)..<(stsz + 12), with: B.u32(1000))   // a sample size of 1000 into a 100-byte mdat
        #expect(await FileCheck.check(MemorySource(broken, name: "broken")).status == .fail)
    }
}
