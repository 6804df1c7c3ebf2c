import Testing
@testable import MP4Core
import MP4TestSupport

@Suite struct BoxTreeParserTests {
    typealias B = BoxBuilder

    func parse(_ bytes: [UInt8], limits: ParseLimits = .default) throws -> (BoxNode, [Finding]) {
        var parser = BoxTreeParser(limits: limits)
        let node = try parser.parse(bytes, at: 0, path: .top(FourCC(rawValue: 0)))
        return (node, parser.findings)
    }

    @Test func childLargerThanParentIsClampedAndReported() throws {
        let child = B.u32(100) + Array("free".utf8) + [1, 2, 3, 4]
        let (node, findings) = try parse(B.box("udta", child))
        #expect(node.children.count == 1 && node.children[0].isTruncated)
        #expect(node.children[0].payload.count == 4)
        #expect(findings.contains { $0.id == "box-overruns-parent" && $0.offset == 8 })
    }

    @Test func depthLimitIsATypedError() {
        var bytes: [UInt8] = []
        for _ in 0..<40 { bytes = B.box("trak", bytes) }
        do {
            _ = try parse(bytes)
            Issue.record("expected the depth limit")
        } catch let e as MP4Error {
            #expect(e.kind == .limitExceeded && e.path?.depth == 33)
        } catch { Issue.record("wrong error \(error)") }
        #expect((try? parse(bytes, limits: ParseLimits(maxDepth: 64))) != nil)
    }

    @Test func boxCountLimit() {
        let many = B.box("udta", children: Array(repeating: B.box("free"), count: 1000))
        #expect(throws: MP4Error.self) { try parse(many, limits: ParseLimits(maxBoxCount: 500)) }
    }

    @Test func quickTimeZeroTerminatorIsAccepted() throws {
        let (node, findings) = try parse(B.box("udta", B.box("free") + [0, 0, 0, 0]))
        #expect(node.children.count == 1 && findings.isEmpty)
    }

    @Test func nonZeroTrailingBytesAreReported() throws {
        let (_, findings) = try parse(B.box("udta", B.box("free") + [1, 2, 3]))
        #expect(findings.map(\.id) == ["trailing-bytes"])
    }

    @Test func unknownBoxesStayRaw() throws {
        let (node, findings) = try parse(B.box("moov", B.box("zzzz", [1, 2, 3])))
        #expect(node.children[0].content == .raw && node.children[0].payload.elementsEqual([1, 2, 3]))
        #expect(findings.isEmpty)
    }

    @Test func isoMetaIsAFullBoxAndQuickTimeMetaIsNot() throws {
        let hdlr = B.fullBox("hdlr", Array(repeating: 0, count: 4) + Array("mdir".utf8) + Array(repeating: 0, count: 13))
        let iso = try parse(B.box("meta", [0, 0, 0, 0] + hdlr)).0
        #expect(iso.version == 0 && iso.children.map(\.type) == [.hdlr])
        let qt = try parse(B.box("meta", hdlr)).0
        #expect(qt.version == nil && qt.children.map(\.type) == [.hdlr])
    }

    @Test func invalidPayloadKeepsTheBoxRawWithAFinding() throws {
        let stco = B.fullBox("stco", B.u32(1000) + B.u32(8))
        let (node, findings) = try parse(B.box("stbl", stco))
        guard case .invalid(let error) = node.children[0].content else { Issue.record("not invalid"); return }
        #expect(error.kind == .malformed && error.path?.description.hasSuffix("stco") == true)
        #expect(findings.first?.id == "invalid-box")
    }

    @Test func tablesAreDecodedOnDemand() throws {
        let stts = B.fullBox("stts", B.u32(2) + B.u32(10) + B.u32(512) + B.u32(1) + B.u32(256))
        let ctts = B.fullBox("ctts", version: 1, B.u32(1) + B.u32(3) + B.u32(UInt32(bitPattern: -1024)))
        let stz2 = B.fullBox("stz2", [0, 0, 0, 4] + B.u32(3) + [0xAB, 0xC0])
        let (node, _) = try parse(B.box("stbl", stts + ctts + stz2))
        guard let t = node.children[0].sampleTable, let c = node.children[1].sampleTable, let z = node.children[2].sampleTable else {
            Issue.record("tables not parsed"); return
        }
        #expect(t.entryCount == 2 && t.entry(at: 1) == [1, 256] && t.describedSampleCount == 11)
        #expect(c.entry(at: 0) == [3, -1024])
        #expect(z.sampleCount == 3 && (0..<3).map { z.entry(at: $0)[0] } == [0xA, 0xB, 0xC])
    }

    @Test func stz2RejectsOddFieldSizes() throws {
        let (node, _) = try parse(B.box("stbl", B.fullBox("stz2", [0, 0, 0, 5] + B.u32(1) + [0])))
        guard case .invalid = node.children[0].content else { Issue.record("accepted field size 5"); return }
    }

    /// The one walk: depth-first with paths (siblings of one type numbered), and the visitor
    /// can skip a box's children or stop the walk.
    @Test func walkDescendsSkipsAndStops() throws {
        typealias B = BoxBuilder
        let moov = B.box("moov", children: [B.box("trak", children: [B.box("mdia")]), B.box("trak", children: [B.box("edts")]), B.box("udta")])
        var parser = BoxTreeParser(limits: .default)
        let node = try parser.parse(moov, at: 0, path: .top(.moov))
        var all: [String] = []
        node.walk(path: .top(.moov)) { _, path in all.append(path.description); return .descend }
        #expect(all == ["moov", "moov/trak[1]", "moov/trak[1]/mdia", "moov/trak[2]", "moov/trak[2]/edts", "moov/udta"])
        var skipped: [String] = []
        node.walk(path: .top(.moov)) { box, path in skipped.append(path.description); return box.type == .trak ? .skipChildren : .descend }
        #expect(skipped == ["moov", "moov/trak[1]", "moov/trak[2]", "moov/udta"])
        var stopped: [String] = []
        let finished = node.walk(path: .top(.moov)) { box, path in stopped.append(path.description); return box.type == .edts ? .stop : .descend }
        #expect(!finished && stopped.last == "moov/trak[2]/edts" && !stopped.contains("moov/udta"))
        // Siblings are numbered once, by the parser: the walk reads the numbers from the nodes.
        #expect(node.children.map(\.ordinalNumber) == [1, 2, nil])
    }
}
