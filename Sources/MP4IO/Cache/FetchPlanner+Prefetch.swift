import MP4Core

/// The prefetch's and the walk's adoptions' decisions: which parts of what they want start.
extension FetchPlanner {
    /// The parts of `wanted` to fetch for the prefetch (neither present nor being fetched,
    /// bridged, at most `maxRequests`); first the previous prefetch's fetches that no reader
    /// follows and `wanted` no longer wants stop. The driver claims each part and reports with
    /// ``claimedAhead(_:for:lockToken:)`` for ``prefetchReader``.
    mutating func prefetch(_ wanted: [Range<UInt64>], present: ByteRangeSet, maxRequests: Int) -> [Range<UInt64>] {
        var wantedSet = ByteRangeSet()
        for range in wanted where !range.isEmpty { wantedSet.insert(range) }
        // (The walk ahead asks again for its last 16 heads at each step, with a few dozen
        // fetches running: only the fetches and ranges that meet are compared.)
        let unwanted = fetches.filter { _, running in
            guard running.owners.contains(Self.prefetchReader), !running.isStopping else { return false }
            let rest = running.written..<max(running.written, running.end)
            return !wantedSet.ranges.contains { $0.overlaps(rest) }
        }
        for id in unwanted.keys.sorted() { disown(id, by: Self.prefetchReader, doneThrough: nil) }
        return missingParts(of: wantedSet, present: present, bridged: true, maxRequests: maxRequests)
    }

    /// The parts of `range` neither present nor being fetched, not bridged, and without
    /// stopping any fetch: bytes already read elsewhere that the cache takes as a fetch of
    /// the ``prefetchReader`` (``CacheEntry/adopt(_:)``).
    mutating func adoptable(_ range: Range<UInt64>, present: ByteRangeSet) -> [Range<UInt64>] {
        guard !range.isEmpty else { return [] }
        return missingParts(of: ByteRangeSet([range]), present: present, bridged: false, maxRequests: .max)
    }

    private func missingParts(of wantedSet: ByteRangeSet, present: ByteRangeSet, bridged: Bool, maxRequests: Int) -> [Range<UInt64>] {
        guard !diskIsFull else { return [] }
        var parts: [Range<UInt64>] = []
        for range in wantedSet.ranges {
            let absent = present.missing(in: range)
            guard !absent.isEmpty else { continue }
            var missing = ByteRangeSet()
            for part in absent { missing.insert(part) }
            for running in fetches.values where !running.isStopping && running.held.overlaps(range) { missing.remove(running.held) }
            for part in missing.ranges {
                if bridged, let last = parts.last, part.lowerBound - last.upperBound < policy.bridgeGap,
                   runningFetch(overlapping: last.upperBound..<part.lowerBound) == nil {
                    parts[parts.count - 1] = last.lowerBound..<part.upperBound
                } else {
                    parts.append(part)
                }
            }
        }
        return Array(parts.prefix(max(maxRequests, 0)))
    }
}
