/// The two checks that keep a faststart rewrite from changing a sample, run on every plan (the
/// copy and the insertion alike), without reading any media:
///
/// - **Before planning** (``init(checking:)``): every chunk of every track lies inside one
///   `mdat` payload. A rewrite moves each `mdat` as a whole; a chunk that begins in a `free`
///   box and runs into `mdat`, or one past the end of a truncated upload, would be relocated
///   onto other bytes (its first sample read `moov`'s bytes, exit 0). Such inputs are refused
///   as malformed, with the reason.
/// - **After planning** (``checkRelocation(newMovie:placed:limits:)``): the new `moov` is
///   parsed again and each track's chunks are where the input's went: the same number, each
///   moved by exactly what its `mdat` moved. (Sample sizes and the chunk map are copied, not
///   rewritten.) A relocation bug is an `internalError` before a byte is written.
///
/// Cost: one walk of the chunks and their sample sizes, and a parse of the new `moov`: 31 ms
/// (16 + 15) for a two-hour film's 553,501 samples in a release build (docs/faststart.md).
struct FaststartSafety {
    /// Each track's chunks in the input (its `trak` path and the byte extent of every chunk).
    let tracks: [(path: BoxPath, chunks: [Range<UInt64>])]

    /// Reads the chunks of every track of `file` and refuses (``MP4Error`` `.malformed`: the
    /// input is what is wrong, exit 3) one that lies outside every `mdat` payload.
    init(checking file: MP4File) throws {
        let layout = file.layout
        let payloads = SampleLayoutAnalysis.payloads(layout)
        var tracks: [(path: BoxPath, chunks: [Range<UInt64>])] = []
        for track in file.movie?.tracks ?? [] {
            guard let stbl = track.sampleTableBox else { continue }
            let table = SampleTable(stbl: stbl, path: track.sampleTablePath)
            var chunks: [Range<UInt64>] = []
            chunks.reserveCapacity(min(table.sampleCount, 1 << 20))
            var outside: Finding?
            var first = 0
            var current = payloads.first   // the payload the last chunk lay in (chunks ascend)
            table.forEachChunkExtent { extent, count in
                chunks.append(extent)
                if let payload = current, !extent.isEmpty, payload.lowerBound <= extent.lowerBound, extent.upperBound <= payload.upperBound {
                    // Inside the same payload as the one before: nothing more to ask.
                } else if outside == nil {
                    outside = SampleLayoutAnalysis.outsideMediaData(extent, first: first, count: count, trackID: track.trackID, layout: layout, payloads: payloads, path: track.path)
                    current = Self.payload(holding: extent, in: payloads) ?? current
                }
                first += count
            }
            if let outside {
                throw MP4Error(.malformed, "\(outside.message), so a rewrite cannot keep their bytes (the input fails `check` with chunk-outside-mdat); repair or re-upload the file", offset: outside.offset, path: track.path)
            }
            tracks.append((track.path, chunks))
        }
        self.tracks = tracks
    }

    /// The payload of the sorted `payloads` that holds `extent` (binary search), or `nil`.
    static func payload(holding extent: Range<UInt64>, in payloads: [Range<UInt64>]) -> Range<UInt64>? {
        var low = 0, high = payloads.count
        while low < high {
            let mid = (low + high) / 2
            if payloads[mid].lowerBound <= extent.lowerBound { low = mid + 1 } else { high = mid }
        }
        guard low > 0, extent.upperBound <= payloads[low - 1].upperBound else { return nil }
        return payloads[low - 1]
    }

    /// Checks the rebuilt `moov` (`newMovie`): every track's chunks are the input's, moved
    /// with the `mdat` that holds them (`placed`: where each input box went).
    func checkRelocation(newMovie: [UInt8], placed: [FaststartPlan.PlacedBox], limits: ParseLimits) throws {
        func failure(_ message: String) -> MP4Error {
            MP4Error(.internalError, "the rebuilt moov does not describe the input's samples (a bug in the faststart planner; nothing was written): " + message, path: .top(.moov))
        }
        // The box tree only (no movie facts): its tracks' sample tables, in order.
        let movie: BoxNode
        do {
            var parser = BoxTreeParser(limits: limits)
            movie = try parser.parse(newMovie, at: 0, path: .top(.moov))
        } catch let error as MP4Error {
            throw failure(error.message)
        }
        var after: [(BoxPath, SampleTable)] = []
        for trak in movie.children where trak.type == .trak {
            let path = BoxPath.top(.moov).appending(.trak)
            guard let stbl = trak.first(.mdia)?.first(.minf)?.first(.stbl) else { continue }
            after.append((path, SampleTable(stbl: stbl, path: path.appending(.mdia).appending(.minf).appending(.stbl))))
        }
        guard tracks.count == after.count else { throw failure("\(tracks.count) tracks before, \(after.count) after") }
        // Where each input mdat went.
        let moved = placed.filter { $0.type == .mdat }.sorted { $0.inputOffset < $1.inputOffset }
        func shifted(_ extent: Range<UInt64>) -> UInt64? {
            // The last mdat starting at or before the chunk (binary search: a file may have
            // many).
            var low = 0, high = moved.count
            while low < high {
                let mid = (low + high) / 2
                if moved[mid].inputOffset <= extent.lowerBound { low = mid + 1 } else { high = mid }
            }
            guard low > 0 else { return nil }
            let box = moved[low - 1]
            guard extent.upperBound <= box.inputOffset + box.size else { return nil }
            return extent.lowerBound - box.inputOffset + box.outputOffset
        }
        for ((path, chunks), (_, table)) in zip(tracks, after) {
            var index = 0
            var wrong: (before: UInt64, after: UInt64)?
            table.forEachChunk { offset, _ in
                if wrong == nil {
                    if index >= chunks.count || shifted(chunks[index]) != offset {
                        wrong = (index < chunks.count ? chunks[index].lowerBound : 0, offset)
                    }
                }
                index += 1
            }
            if let wrong {
                throw failure("\(path): the chunk at \(wrong.before) in the input is at \(wrong.after) in the output, not where its mdat went")
            }
            guard index == chunks.count else { throw failure("\(path) has \(chunks.count) chunks before, \(index) after") }
        }
    }
}
