import Testing
@testable import MP4Core
import MP4TestSupport

/// The faststart gate cannot be turned off by appending a box to a moov-at-end film: whatever
/// follows it (an index box, a segment type, padding, a second `moov`, a `moof` that no
/// `mvex` declares), the film stays progressive and not faststart, `check` fails it, and a
/// faststart rewrite moves its `moov` (or refuses a film with two). (One 44-byte `sidx` made it "fragmented": `check`
/// passed it and `faststart` copied it unchanged.)
@Suite struct FaststartGateTests {
    typealias B = BoxBuilder

    /// What is appended, by name.
    static let appended: [String: [UInt8]] = [
        // One reference: 32 bytes of header, 12 per reference.
        "sidx": B.fullBox("sidx", B.u32(1) + B.u32(1000) + B.u32(0) + B.u32(0) + B.u16(0) + B.u16(1) + B.u32(4000) + B.u32(2000) + B.u32(0x9000_0000)),
        "mfra": B.box("mfra", children: [B.fullBox("mfro", B.u32(24))]),
        "styp": B.box("styp", Array("msdh".utf8) + B.u32(0) + Array("msdhmsix".utf8)),
        "free": B.box("free", [UInt8](repeating: 0, count: 100)),
        "moof": B.box("moof", children: [B.fullBox("mfhd", B.u32(1))]),
        "sidx+mfra+styp": [],
    ]

    static func film(appending name: String) throws -> [UInt8] {
        let original = try #require(FileSystem.read(Fixtures.sample("moov-at-end.mp4")))
        switch name {
        case "sidx+mfra+styp": return original + (appended["sidx"] ?? []) + (appended["mfra"] ?? []) + (appended["styp"] ?? [])
        case "moov": return original + original[79_297...]  // moov-at-end.mp4's moov again
        default: return original + (try #require(appended[name]))
        }
    }

    @Test(arguments: ["sidx", "mfra", "styp", "free", "moof", "moov", "sidx+mfra+styp"])
    func anAppendedBoxDoesNotPassTheGate(_ name: String) async throws {
        let bytes = try Self.film(appending: name)
        let source = MemorySource(bytes, name: "moov-at-end+\(name)")
        let file = try await MP4File.open(source)
        #expect(file.kind == .progressive && !file.isFragmented, "\(name): \(file.kind)")
        #expect(file.layout.moviePlacement == .afterMediaData)
        let check = await FileCheck.check(source)
        #expect(check.status == .fail && check.findings.contains { $0.id == "not-faststart" }, "\(name): \(check.status) \(check.findings.map(\.id))")
        #expect(check.metrics.faststart == false)
        if name == "moov" {
            // Which moov players use is ambiguous: refused, never copied as it is.
            await #expect(throws: MP4Error.self) { _ = try await FaststartPlan.make(file, source: source) }
        } else {
            let plan = try await FaststartPlan.make(file, source: source)
            #expect(plan.verdict == .rewrite, "\(name): \(plan.verdict)")
        }
    }

    /// What stays fragmented: a film whose `moov` has `mvex` and whose fragments follow, an
    /// initialization segment, a media segment.
    @Test func movieFragmentsStillMakeAFragmentedFile() async throws {
        let bytes = try #require(FileSystem.read(Fixtures.sample("fragmented.mp4")))
        let whole = try await MP4File.open(MemorySource(bytes))
        #expect(whole.kind == .fragmented && whole.isFragmented)
        let movie = try #require(whole.layout.movieBox)
        let initSegment = try await MP4File.open(MemorySource(Array(bytes[..<Int(movie.availableEnd)])))
        #expect(initSegment.kind == .initSegment && initSegment.isFragmented)
        let mediaSegment = try await MP4File.open(MemorySource(Array(bytes[Int(movie.availableEnd)...])))
        #expect(mediaSegment.kind == .mediaSegment && mediaSegment.isFragmented)
    }
}
