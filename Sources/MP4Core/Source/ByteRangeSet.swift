/// A set of byte offsets stored as sorted, disjoint, non-adjacent `[start, end)` ranges:
/// inserting `0..<100` and `100..<200` leaves one range `0..<200`. What a cache holds of a
/// resource (its table), and what ``PlayableTime`` is asked about.
public struct ByteRangeSet: Sendable, Hashable, Codable {
    /// The ranges, ascending, never empty, never touching.
    public private(set) var ranges: [Range<UInt64>] = []

    public init() {}

    /// A set holding `ranges` (in any order, possibly overlapping).
    public init(_ ranges: [Range<UInt64>]) {
        for range in ranges { insert(range) }
    }

    /// Bytes in the set.
    public var byteCount: UInt64 { ranges.reduce(0) { $0 + ($1.upperBound - $1.lowerBound) } }

    /// Index of the first range whose end is ≥ `offset` (binary search).
    private func firstIndex(endingAtOrAfter offset: UInt64) -> Int {
        var low = 0, high = ranges.count
        while low < high {
            let mid = (low + high) / 2
            if ranges[mid].upperBound < offset { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// Adds `range`, merging it with the ranges it overlaps or touches.
    public mutating func insert(_ range: Range<UInt64>) {
        guard !range.isEmpty else { return }
        let first = firstIndex(endingAtOrAfter: range.lowerBound)
        var last = first
        var merged = range
        while last < ranges.count && ranges[last].lowerBound <= range.upperBound {
            merged = min(merged.lowerBound, ranges[last].lowerBound)..<max(merged.upperBound, ranges[last].upperBound)
            last += 1
        }
        ranges.replaceSubrange(first..<last, with: [merged])
    }

    /// Removes `range` (splitting the ranges it cuts).
    public mutating func remove(_ range: Range<UInt64>) {
        guard !range.isEmpty else { return }
        var kept: [Range<UInt64>] = []
        let first = firstIndex(endingAtOrAfter: range.lowerBound + 1)
        var last = first
        while last < ranges.count && ranges[last].lowerBound < range.upperBound {
            let current = ranges[last]
            if current.lowerBound < range.lowerBound { kept.append(current.lowerBound..<range.lowerBound) }
            if current.upperBound > range.upperBound { kept.append(range.upperBound..<current.upperBound) }
            last += 1
        }
        if first < last { ranges.replaceSubrange(first..<last, with: kept) }
    }

    /// Whether every byte of `range` is in the set.
    public func contains(_ range: Range<UInt64>) -> Bool {
        guard !range.isEmpty else { return true }
        let i = firstIndex(endingAtOrAfter: range.lowerBound + 1)
        return i < ranges.count && ranges[i].lowerBound <= range.lowerBound && range.upperBound <= ranges[i].upperBound
    }

    /// Whether some byte of `range` is in the set.
    public func overlaps(_ range: Range<UInt64>) -> Bool {
        guard !range.isEmpty else { return false }
        let i = firstIndex(endingAtOrAfter: range.lowerBound + 1)
        return i < ranges.count && ranges[i].lowerBound < range.upperBound
    }

    /// The parts of `range` not in the set, ascending.
    public func missing(in range: Range<UInt64>) -> [Range<UInt64>] {
        Array(missingParts(in: range))
    }

    /// The parts of `range` not in the set, in order, each found as it is asked for: a
    /// reader's next step wants the first gap and its close neighbours, not every gap to the
    /// end of a film whose fragment heads are cached (300 of them).
    public func missingParts(in range: Range<UInt64>) -> MissingParts {
        MissingParts(ranges: ranges, position: range.lowerBound, end: range.upperBound,
                     index: range.isEmpty ? ranges.count : firstIndex(endingAtOrAfter: range.lowerBound + 1))
    }

    /// The parts of a range missing from a set (``missingParts(in:)``).
    public struct MissingParts: Sequence, IteratorProtocol, Sendable {
        fileprivate let ranges: [Range<UInt64>]
        fileprivate var position: UInt64
        fileprivate let end: UInt64
        fileprivate var index: Int

        public mutating func next() -> Range<UInt64>? {
            while position < end {
                if index < ranges.count && ranges[index].lowerBound <= position {
                    position = Swift.max(position, ranges[index].upperBound)
                    index += 1
                    continue
                }
                let partEnd = index < ranges.count ? Swift.min(ranges[index].lowerBound, end) : end
                defer { position = partEnd }
                if position < partEnd { return position..<partEnd }
            }
            return nil
        }
    }

    /// Checks the invariants (sorted, disjoint, not touching, non-empty): for tables read back
    /// from disk.
    public var isWellFormed: Bool {
        for (i, range) in ranges.enumerated() {
            if range.isEmpty { return false }
            if i > 0 && ranges[i - 1].upperBound >= range.lowerBound { return false }
        }
        return true
    }
}
