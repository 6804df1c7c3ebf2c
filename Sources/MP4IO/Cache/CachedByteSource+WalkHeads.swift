import Foundation
import MP4Core

/// What the walk ahead of a fragmented film (``Prefetcher``) asks of the cache: where a head
/// is, a running fetch's bytes, the origin read on the walk's own task, and adoption.
extension CachedByteSource {
    /// Where `range` (a fragment head the walk ahead reads next) is: cached, being fetched, or
    /// neither (``CacheEntry/HeadState``). One call on the entry's actor.
    func headState(_ range: Range<UInt64>) async -> CacheEntry.HeadState {
        let upper = min(range.upperBound, totalLength)
        guard range.lowerBound < upper else { return .cached([]) }
        return await entry.headState(range.lowerBound..<upper)
    }

    /// The bytes of `range` a running fetch writes, read back as it writes them, without a
    /// reader of the planner (``headState(_:)`` found it); fewer than asked when the fetch
    /// ended before (it was stopped, or failed).
    func follow(_ progress: FetchProgress, _ range: Range<UInt64>) async throws -> [UInt8] {
        let upper = min(range.upperBound, totalLength)
        var bytes: [UInt8] = []
        var position = range.lowerBound
        while position < upper {
            let (written, finished) = await progress.wait(beyond: position)
            if written > position {
                let end = min(written, upper)
                bytes += try entry.readWritten(position..<end, by: progress)
                position = end
            } else if finished || Task.isCancelled {
                break
            }
        }
        return bytes
    }

    /// Reads `range` from the origin on the caller's task, not through the cache (its socket
    /// waits in place on the caller's queue), for a fragment head the walk ahead reads next:
    /// a fetch of the cache costs a task, a reader and several calls on the entry's actor
    /// (about 150 µs a head on this machine, against 45 µs), and the walk's steps follow each
    /// other. The bytes go to the cache with ``adopt(_:)``. Reported to the loader's origin
    /// activity as a fetch of the prefetch is.
    func readOrigin(_ range: Range<UInt64>) async throws -> [UInt8] {
        let upper = min(range.upperBound, totalLength)
        guard range.lowerBound < upper else { return [] }
        wiring.activity?.started()
        defer { wiring.activity?.ended() }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Int(clamping: min(upper - range.lowerBound, 1 << 20)))
        try await SocketConnection.$waitsInlineInTask.withValue(true) {
            try await fetchSource.read(range.lowerBound..<upper) { bytes += $0 }
        }
        return bytes
    }

    /// Takes `pieces` (bytes and where they start), read from the origin by
    /// ``readOrigin(_:)``, into the cache as fetches of the prefetch whose origin
    /// holds them (``HeldBytes``): claimed, written, committed and counted as any fetch,
    /// without a second request, in one call on the entry's actor. Parts already present or
    /// being fetched are left alone. The fetches run on the caller's shared queue when it has
    /// one (the walk's), when the caller next suspends or ends. Returns the parts taken.
    @discardableResult
    func adopt(_ pieces: [(offset: UInt64, bytes: [UInt8])]) async -> [Range<UInt64>] {
        let held = pieces.compactMap { piece -> (range: Range<UInt64>, starter: CacheEntry.Starter)? in
            let upper = min(piece.offset + UInt64(piece.bytes.count), totalLength)
            guard piece.offset < upper else { return nil }
            var held = starter
            held.origin = HeldBytes(base: fetchSource, bytes: Array(piece.bytes.prefix(Int(upper - piece.offset))), at: piece.offset)
            held.patientCommits = true
            return (piece.offset..<upper, held)
        }
        guard !held.isEmpty else { return [] }
        return await entry.adopt(held)
    }
}
