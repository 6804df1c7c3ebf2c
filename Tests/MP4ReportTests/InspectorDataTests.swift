import Foundation
import Testing
@testable import MP4Report
import MP4Core
import MP4TestSupport

/// The inspector's data: what a hostile file puts in it cannot end its `<script>`, and every
/// list it draws is bounded.
@Suite struct InspectorDataTests {
    @Test func stringsCannotEndTheScriptElement() {
        var out = ""
        PageJSON.escape("</script><script>alert(1)</script>\u{2028}\u{1B}\"\\", into: &out)
        #expect(!out.contains("<") && !out.contains(">"))
        #expect(out == #""\u003c/script\u003e\u003cscript\u003ealert(1)\u003c/script\u003e\u2028\u001b\"\\""#)
        // Non-ASCII text stays as it is.
        var text = ""
        PageJSON.escape("été — 映画", into: &text)
        #expect(text == "\"été — 映画\"")
    }

    @Test func numbersJSONCannotHoldAreNull() {
        var json = PageJSON()
        json.array { $0.number(Double.nan); $0.number(Double.infinity); $0.number(2.5); $0.number(3.0); $0.number(UInt64.max); $0.number(1.7e308) }
        #expect(json.text == "[null,null,2.5,3,18446744073709551615,1.7e+308]")
        #expect((try? JSONSerialization.jsonObject(with: Data(json.text.utf8))) != nil)
    }

    @Test func seekRangesAreMergedAtTheSmallestGaps() {
        let ranges: [Range<UInt64>] = [0..<10, 12..<20, 100..<110, 111..<120, 500..<510]
        #expect(InspectorData.merged(ranges, to: 3) == [0..<20, 100..<120, 500..<510])
        #expect(InspectorData.merged(ranges, to: 1) == [0..<510])
        #expect(InspectorData.merged(ranges, to: 10) == ranges)
        // 100,000 ranges: bounded, in one pass (a quadratic merge took minutes).
        let many: [Range<UInt64>] = (0..<UInt64(100_000)).map { (index: UInt64) -> Range<UInt64> in (index * 10)..<(index * 10 + 5) }
        #expect(InspectorData.merged(many, to: InspectorData.maxRangesPerPlan).count == InspectorData.maxRangesPerPlan)
    }

    @Test func chartSpansAreBounded() {
        typealias Span = (range: Range<UInt64>, first: Double, last: Double, chunks: Int)
        let spans: [Span] = (0..<UInt64(10_000)).map { (index: UInt64) -> Span in ((index * 100)..<(index * 100 + 50), Double(index), Double(index), 1) }
        let coarse = InspectorData.coarsened(spans, to: InspectorData.maxSpansPerTrack)
        #expect(coarse.count <= InspectorData.maxSpansPerTrack)
        #expect(coarse.reduce(0) { $0 + $1.chunks } == 10_000)
        #expect(coarse.first?.range.lowerBound == 0 && coarse.last?.range.upperBound == 999_950)
    }

    /// A file of many boxes: the tree stops at its budget and says how many it left out.
    @Test func theTreeIsBounded() async throws {
        var children: [UInt8] = []
        for _ in 0..<30_000 { children += BoxBuilder.box("free", []) }
        let bytes = BoxBuilder.ftyp + BoxBuilder.box("moov", children: [BoxBuilder.box("udta", children)])
        let file = try await MP4File.open(MemorySource(bytes))
        let json = InspectorData(file: file, planner: nil).json()
        #expect(json.components(separatedBy: "\"t\":").count - 1 <= InspectorData.maxTreeNodes)
        #expect(json.contains("\"more\":"))
        // Nested: 200 containers of 200 boxes each. The budget counts children's children
        // (the first bound took each level's share before its children spent it: 20,199 boxes).
        let nested = [[UInt8]](repeating: BoxBuilder.box("udta", children: [[UInt8]](repeating: BoxBuilder.box("free", []), count: 200)), count: 200)
        let deep = try await MP4File.open(MemorySource(BoxBuilder.ftyp + BoxBuilder.box("moov", children: nested)))
        let deepJSON = InspectorData(file: deep, planner: nil).json()
        #expect(deepJSON.components(separatedBy: "\"t\":").count - 1 <= InspectorData.maxTreeNodes)
    }
}

/// Every file here, malformed ones included, gives a page whose data is valid JSON and
/// bounded: hostile input is normal input for the inspector too.
@Suite struct InspectorCorpusTests {
    static var files: [String] {
        var paths = Fixtures.sampleFiles.map(Fixtures.sample) + Fixtures.malformedSampleFiles.map { Fixtures.sample("malformed/" + $0) }
        if let corpus = Fixtures.sharedCorpus {
            for folder in ["valid", "malformed"] { paths += FileSystem.list(corpus + "/" + folder).sorted().map { corpus + "/" + folder + "/" + $0 } }
        }
        return paths
    }

    @Test(.hangGuard) func everyFileGivesABoundedPage() async throws {
        var pages = 0, largest = 0
        for path in Self.files {
            guard let bytes = FileSystem.read(path) else { continue }
            let source = MemorySource(bytes, name: path)
            guard let file = try? await MP4File.open(source, options: MP4File.Options(loadsAllBoxes: true)) else { continue }
            let data = await InspectorData.gather(file, from: source)
            let html = InspectorPage.html(data)
            let json = data.json()
            #expect((try? JSONSerialization.jsonObject(with: Data(json.utf8))) != nil, "\(path): the data is not JSON")
            #expect(!json.contains("</"), "\(path): the data could end its script element")
            #expect(html.utf8.count < 4 << 20, "\(path): \(html.utf8.count) bytes")
            pages += 1
            largest = max(largest, html.utf8.count)
        }
        #expect(pages >= (Fixtures.hasCorpus ? 150 : 20), "only \(pages) pages")
        print("inspector pages of \(pages) files: the largest \(largest) bytes")
    }
}

/// Durations, counts and sizes a hostile file states reach the page only through bounds.
@Suite struct InspectorHostileTests {
    /// A movie that claims 2^64 - 2 seconds (mvhd v1, time scale 1) and has no samples: the
    /// plans are spread over a bounded count (converting the duration to a count trapped).
    @Test func aHugeDurationDoesNotTrap() async throws {
        typealias B = BoxBuilder
        let matrix = [B.u32(0x10000), B.u32(0), B.u32(0), B.u32(0), B.u32(0x10000), B.u32(0), B.u32(0), B.u32(0), B.u32(0x4000_0000)].flatMap { $0 }
        let mvhd = B.fullBox("mvhd", version: 1, B.u64(0) + B.u64(0) + B.u32(1) + B.u64(UInt64.max - 1) + B.u32(0x10000) + B.u16(0x100) + [UInt8](repeating: 0, count: 10) + matrix + [UInt8](repeating: 0, count: 24) + B.u32(2))
        let file = try await MP4File.open(MemorySource(B.ftyp + B.box("moov", children: [mvhd])))
        #expect((file.movie?.durationSeconds ?? 0) > 1e18)
        let data = InspectorData(file: file, planner: SeekPlanner(file: file))
        let json = data.json()
        #expect((try? JSONSerialization.jsonObject(with: Data(json.utf8))) != nil)
    }

    /// A million top-level boxes (the scan's limit) give at most ``InspectorData/maxLayoutRows``
    /// rows, the last standing for the rest.
    @Test func theByteMapRowsAreBounded() async throws {
        let box = BoxBuilder.box("free", [])
        let bytes = BoxBuilder.ftyp + BoxBuilder.box("moov", children: [BoxBuilder.box("udta")]) + [UInt8](repeating: 0, count: 0) + Array([[UInt8]](repeating: box, count: 60_000).joined())
        let file = try await MP4File.open(MemorySource(bytes))
        #expect(file.layout.boxes.count > 60_000)
        let json = InspectorData(file: file, planner: nil).json()
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
        let rows = try #require(object["layout"] as? [[Any]])
        #expect(rows.count == InspectorData.maxLayoutRows)
        #expect(rows.last?.first as? String == "…")
        #expect((rows.last?[1] as? Int ?? 0) + (rows.last?[2] as? Int ?? 0) == bytes.count, "the last row runs to the end of the file")
    }
}
