import Testing
@testable import MP4Core
import MP4TestSupport

/// `DecoderNeeds.signalledPreroll`: the `sgpd` `roll`/`prol` groups a track signals, read with
/// every count bounded by the bytes present.
@Suite struct DecoderNeedsTests {
    typealias B = BoxBuilder

    static func stbl(_ sgpds: [[UInt8]]) throws -> BoxNode {
        var parser = BoxTreeParser()
        return try parser.parse(B.box("stbl", children: sgpds), at: 0, path: BoxPath.top("stbl"))
    }

    /// `sgpd` version 1 with a default length of 2 and the given roll distances.
    static func sgpd(_ grouping: String, _ distances: [Int16], count: UInt32? = nil) -> [UInt8] {
        B.fullBox("sgpd", version: 1, Array(grouping.utf8) + B.u32(2) + B.u32(count ?? UInt32(distances.count)) + distances.flatMap { B.u16(UInt16(bitPattern: $0)) })
    }

    @Test func rollAndPrerollGroups() throws {
        // AAC-style audio pre-roll: roll_distance -1; the largest of several entries wins.
        #expect(DecoderNeeds.signalledPreroll(try Self.stbl([Self.sgpd("roll", [-1, -3, 2])]))?.samples == 3)
        #expect(DecoderNeeds.signalledPreroll(try Self.stbl([Self.sgpd("prol", [4])]))?.source == "sgpd prol")
        // A positive roll (a video recovery point) is not an audio pre-roll; other groupings are ignored.
        #expect(DecoderNeeds.signalledPreroll(try Self.stbl([Self.sgpd("roll", [2]), Self.sgpd("rap ", [-9])])) == nil)
        // Version 0 (no default length): each entry is the 2-byte distance.
        let v0 = B.fullBox("sgpd", version: 0, Array("roll".utf8) + B.u32(1) + B.u16(UInt16(bitPattern: -2)))
        #expect(DecoderNeeds.signalledPreroll(try Self.stbl([v0]))?.samples == 2)
    }

    @Test func hostileCountsAreBoundedByTheBytes() throws {
        // 4 billion entries claimed in a 22-byte payload: only the entry present is read.
        let claimed = Self.sgpd("roll", [-5], count: UInt32.max)
        #expect(DecoderNeeds.signalledPreroll(try Self.stbl([claimed]))?.samples == 5)
        // Version 1 with default length 0 and an entry length of 2^32 - 1, past the box: the
        // entry is rejected and the walk stops, without a trap.
        let huge = B.fullBox("sgpd", version: 1, Array("roll".utf8) + B.u32(0) + B.u32(3) + B.u32(UInt32.max) + B.u16(UInt16(bitPattern: -1)))
        #expect(DecoderNeeds.signalledPreroll(try Self.stbl([huge])) == nil)
        // Truncated payloads.
        #expect(DecoderNeeds.signalledPreroll(try Self.stbl([B.fullBox("sgpd", version: 1, Array("ro".utf8))])) == nil)
        // The most negative distance fits: 32,768 samples at most.
        #expect(DecoderNeeds.signalledPreroll(try Self.stbl([Self.sgpd("roll", [Int16.min])]))?.samples == 32_768)
    }
}
