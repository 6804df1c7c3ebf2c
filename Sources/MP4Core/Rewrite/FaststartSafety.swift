/// The two checks that keep a faststart rewrite from changing a sample, run on every plan (the
/// copy and the insertion alike), without reading any media:
///
/// - **Before planning**: every chunk of every track lies inside one `mdat` payload. A rewrite
///   moves each `mdat` as a whole; a chunk that begins in a `free` box and runs into `mdat`, or
///   one past the end of a truncated upload, would be relocated onto other bytes (its first
///   sample read `moov`'s bytes, exit 0). Such inputs are refused as malformed, with the
///   reason.
/// - **After planning**: the new `moov` is parsed again and each track's chunks are where the
///   input's went: same sample count, same spans, each moved by exactly what its `mdat` moved.
///   A relocation bug is an `internalError` before a byte is written.
enum FaststartSafety {
    /// Refuses a file with a chunk outside every `mdat` payload: ``MP4Error`` `.malformed` (the
    /// input is what is wrong: exit 3, not a refusal of a valid layout).
    static func checkChunksInMediaData(_ file: MP4File, limits: ParseLimits) throws {
        let planner = SeekPlanner(file: file, limits: limits)
        let payloads = SampleLayoutAnalysis.payloads(file.layout)
        for indexed in planner.tracks {
            if let outside = SampleLayoutAnalysis.firstOutsideMediaData(indexed.samples, trackID: indexed.track.trackID, layout: file.layout, payloads: payloads, path: indexed.track.path) {
                throw MP4Error(.malformed, "\(outside.message), so a rewrite cannot keep their bytes (the input fails `check` with chunk-outside-mdat); repair or re-upload the file", offset: outside.offset, path: indexed.track.path)
            }
        }
    }

    /// Checks the rebuilt `moov` (`newMovie`) against `file`: every track's chunk spans are the
    /// input's, moved with the `mdat` that holds them (`placed`: where each input box went).
    static func checkRelocation(_ file: MP4File, newMovie: [UInt8], placed: [FaststartPlan.PlacedBox], limits: ParseLimits) async throws {
        func failure(_ message: String) -> MP4Error {
            MP4Error(.internalError, "the rebuilt moov does not describe the input's samples (a bug in the faststart planner; nothing was written): " + message, path: .top(.moov))
        }
        let rebuilt: MP4File
        do {
            rebuilt = try await MP4File.open(MemorySource(newMovie, name: "the rebuilt moov"), options: MP4File.Options(limits: limits, facts: .structure))
        } catch let error as MP4Error {
            throw failure(error.message)
        }
        let before = SeekPlanner(file: file, limits: limits).tracks
        let after = SeekPlanner(file: rebuilt, limits: limits).tracks
        guard before.count == after.count else { throw failure("\(before.count) tracks before, \(after.count) after") }
        // Where each input mdat went: input payload start -> output offset shift.
        let moved = placed.filter { $0.type == .mdat }.sorted { $0.inputOffset < $1.inputOffset }
        func shifted(_ span: Range<UInt64>) -> Range<UInt64>? {
            guard let box = moved.last(where: { $0.inputOffset <= span.lowerBound }), span.upperBound <= box.inputOffset + box.size else { return nil }
            let lower = span.lowerBound - box.inputOffset + box.outputOffset
            return lower..<(lower + UInt64(span.count))
        }
        for (a, b) in zip(before, after) {
            guard a.samples.sampleCount == b.samples.sampleCount else {
                throw failure("track \(a.track.trackID) has \(a.samples.sampleCount) samples before, \(b.samples.sampleCount) after")
            }
            var spansA: [Range<UInt64>] = [], spansB: [Range<UInt64>] = []
            a.samples.forEachChunkSpan(in: 0..<a.samples.sampleCount) { span, _ in spansA.append(span) }
            b.samples.forEachChunkSpan(in: 0..<b.samples.sampleCount) { span, _ in spansB.append(span) }
            guard spansA.count == spansB.count else { throw failure("track \(a.track.trackID) has \(spansA.count) chunk runs before, \(spansB.count) after") }
            for (spanA, spanB) in zip(spansA, spansB) where shifted(spanA) != spanB {
                throw failure("track \(a.track.trackID): the samples at \(spanA.lowerBound) in the input are at \(spanB.lowerBound) in the output, not where their mdat went")
            }
        }
    }
}
