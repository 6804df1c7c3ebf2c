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
        var description: String { name }
    }

    static let cases: [Case] = [
        Case(name: "pasp 1:1", payload: [0, 0, 0, 1, 0, 0, 0, 1], model: AnyBoxModel(PixelAspectRatioBox(hSpacing: 1, vSpacing: 1)), fields: "hSpacing=1 vSpacing=1"),
        Case(name: "pasp 4:3", payload: [0, 0, 0, 4, 0, 0, 0, 3], model: AnyBoxModel(PixelAspectRatioBox(hSpacing: 4, vSpacing: 3)), fields: "hSpacing=4 vSpacing=3"),
        Case(name: "btrt", payload: [0, 0, 0, 0, 0, 4, 147, 224, 0, 3, 213, 144], model: AnyBoxModel(BitRateBox(bufferSizeDB: 0, maxBitrate: 300_000, avgBitrate: 251_280)), fields: "bufferSizeDB=0 maxBitrate=300000 avgBitrate=251280"),
        Case(name: "colr nclx BT.709 limited", payload: Array("nclx".utf8) + [0, 1, 0, 1, 0, 1, 0], model: AnyBoxModel(ColourInformationBox(colourType: "nclx", colour: .codePoints(primaries: 1, transfer: 1, matrix: 1, fullRange: false))), fields: "colourType=nclx colourPrimaries=1 transferCharacteristics=1 matrixCoefficients=1 fullRange=false"),
        Case(name: "colr nclx BT.2020 PQ full", payload: Array("nclx".utf8) + [0, 9, 0, 16, 0, 9, 0x80], model: AnyBoxModel(ColourInformationBox(colourType: "nclx", colour: .codePoints(primaries: 9, transfer: 16, matrix: 9, fullRange: true))), fields: "colourType=nclx colourPrimaries=9 transferCharacteristics=16 matrixCoefficients=9 fullRange=true"),
        Case(name: "colr nclc (QuickTime)", payload: Array("nclc".utf8) + [0, 1, 0, 1, 0, 1], model: AnyBoxModel(ColourInformationBox(colourType: "nclc", colour: .codePoints(primaries: 1, transfer: 1, matrix: 1, fullRange: nil))), fields: "colourType=nclc colourPrimaries=1 transferCharacteristics=1 matrixCoefficients=1"),
        Case(name: "colr prof", payload: Array("prof".utf8) + [1, 2, 3, 4, 5], model: AnyBoxModel(ColourInformationBox(colourType: "prof", colour: .iccProfile([1, 2, 3, 4, 5]))), fields: "colourType=prof iccProfileSize=5"),
    ]

    static func dump(_ fields: [(name: String, value: FieldValue)]) -> String {
        fields.map { field -> String in
            switch field.value {
            case .uint(let v): return "\(field.name)=\(v)"
            case .int(let v): return "\(field.name)=\(v)"
            case .bool(let v): return "\(field.name)=\(v)"
            case .string(let v): return "\(field.name)=\(v)"
            case .double(let v): return "\(field.name)=\(v)"
            case .list(let v): return "\(field.name)=\(v)"
            case .null: return "\(field.name)=null"
            }
        }.joined(separator: " ")
    }

    @Test(arguments: cases)
    func roundTrip(_ c: Case) throws {
        let type = Swift.type(of: c.model.base)
        var reader = ByteReader(c.payload)
        let parsed = try type.parse(&reader, version: 0, flags: 0)
        #expect(reader.remaining == 0, "\(c.name): \(reader.remaining) bytes not consumed")
        #expect(AnyBoxModel(parsed) == c.model)
        var writer = ByteWriter()
        let writable = try #require(parsed as? any WritableBoxModel)
        writable.write(to: &writer)
        #expect(writer.bytes == c.payload, "\(c.name): written bytes differ")
        #expect(Self.dump(parsed.fields) == c.fields)
    }

    @Test func truncatedPayloadsAreErrorsNotTraps() {
        for c in Self.cases {
            let type = Swift.type(of: c.model.base)
            // An ICC profile may be any length: only its colour type is required.
            for cut in 0..<min(c.payload.count, c.name.hasPrefix("colr prof") ? 4 : 7) {
                var reader = ByteReader(Array(c.payload.prefix(cut)))
                #expect(throws: MP4Error.self) { _ = try type.parse(&reader, version: 0, flags: 0) }
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
        func parse(acmod: UInt8, lfe: UInt8, dependent: UInt8) throws -> CodecConfiguration? {
            var reader = ByteReader([UInt8(word >> 8), UInt8(word & 0xFF), 16 << 1, acmod << 1 | lfe, dependent << 1, 0])
            return try CodecConfiguration.parse("dec3", &reader)
        }
        #expect(try parse(acmod: 7, lfe: 1, dependent: 0) == .eac3(dataRateKbps: 640, independentSubstreams: 1, channelCount: 6))
        #expect(try parse(acmod: 2, lfe: 0, dependent: 0) == .eac3(dataRateKbps: 640, independentSubstreams: 1, channelCount: 2))
        #expect(try parse(acmod: 7, lfe: 1, dependent: 1) == .eac3(dataRateKbps: 640, independentSubstreams: 1, channelCount: nil))
    }
}
