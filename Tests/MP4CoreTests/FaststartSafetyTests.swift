import Testing
@testable import MP4Core
import MP4TestSupport

/// The rewrite's own check (run on every plan): a rebuilt moov whose chunks are not where their
/// mdat went is an internal error before anything is written.
@Suite struct FaststartSafetyTests {
    @Test func aRelocationThatMissesItsMediaIsCaught() async throws {
        let bytes = try #require(FileSystem.read(Fixtures.sample("moov-at-end.mp4")))
        let source = MemorySource(bytes)
        let file = try await MP4File.open(source)
        let plan = try await FaststartPlan.make(file, source: source)
        guard case .bytes(let movie)? = plan.pieces.first(where: { if case .bytes = $0 { return true } else { return false } }) else {
            Issue.record("the plan has no new moov"); return
        }
        // The plan as made passes its own check.
        try await FaststartSafety.checkRelocation(file, newMovie: movie, placed: plan.boxes, limits: .default)
        // The same moov against an mdat placed 8 bytes further: every chunk is off.
        let wrong = plan.boxes.map { box in
            var moved = box
            if box.type == .mdat { moved.outputOffset += 8 }
            return moved
        }
        await #expect(throws: MP4Error.self) {
            try await FaststartSafety.checkRelocation(file, newMovie: movie, placed: wrong, limits: .default)
        }
    }
}
