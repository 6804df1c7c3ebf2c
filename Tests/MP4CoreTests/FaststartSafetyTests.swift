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
        try FaststartSafety(checking: file).checkRelocation(newMovie: movie, placed: plan.boxes, limits: .default)
        // The same moov against an mdat placed 8 bytes further: every chunk is off.
        let wrong = plan.boxes.map { box in
            var moved = box
            if box.type == .mdat { moved.outputOffset += 8 }
            return moved
        }
        #expect(throws: MP4Error.self) {
            try FaststartSafety(checking: file).checkRelocation(newMovie: movie, placed: wrong, limits: .default)
        }
    }

    /// The fast chunk walk the checks use gives the spans the sample-by-sample walk gives, on
    /// every sample file's tracks.
    @Test func chunkExtentsAreTheSamplesSpans() async throws {
        var compared = 0
        for name in FileSystem.entries(Fixtures.sampleMedia).filter({ $0.hasSuffix(".mp4") || $0.hasSuffix(".m4a") || $0.hasSuffix(".mov") }) {
            guard let bytes = FileSystem.read(Fixtures.sample(name)), let file = try? await MP4File.open(MemorySource(bytes)) else { continue }
            for track in file.movie?.tracks ?? [] {
                guard let stbl = track.sampleTableBox else { continue }
                let table = SampleTable(stbl: stbl, path: track.sampleTablePath)
                var spans: [Range<UInt64>] = [], extents: [Range<UInt64>] = []
                table.forEachChunkSpan(in: 0..<table.sampleCount) { span, _ in spans.append(span) }
                table.forEachChunkExtent { extent, _ in extents.append(extent) }
                #expect(spans == extents, "\(name) \(track.path)")
                compared += extents.count
            }
        }
        #expect(compared > 100)
    }
}
