/// Where the fragments of a fragmented file are in time and bytes, from its segment index
/// (`sidx`, ISO/IEC 14496-12 §8.16.3, also nested) or its movie fragment random access box
/// (`mfra`/`tfra`, §8.8.10): what lets a seek read only the fragments around its time instead
/// of every `moof`.
public struct FragmentLocator: Sendable, Hashable {
    /// Where the entries come from.
    public enum Origin: String, Sendable, Hashable, Codable {
        case segmentIndex = "sidx"
        case randomAccess = "mfra"
    }

    /// One entry point: a subsegment (`sidx`) or a random access point (`tfra`).
    public struct Entry: Sendable, Hashable {
        /// Start time in ``FragmentLocator/timescale`` units: the earliest presentation time of
        /// a subsegment, or the time of a random access sample (media timeline, before edits).
        public var time: Int64
        /// Bytes from where the entry starts up to the next entry (or the end of the indexed
        /// data).
        public var byteRange: Range<UInt64>
        /// Whether the entry starts with a sync sample (always for `tfra`).
        public var startsWithSync: Bool
    }

    /// Where the entries come from.
    public var origin: Origin
    /// The track the times refer to.
    public var trackID: UInt32
    /// The time scale of ``Entry/time``.
    public var timescale: UInt32
    /// Entries in time (and byte) order.
    public var entries: [Entry]

    /// Reads the locator of `file` for `trackID` (or the first one when no index names that
    /// track): a top-level `sidx` (nested ones followed up to a depth of 8), else `mfra`.
    /// Returns `nil` when the file has neither or they are unusable.
    public static func load(_ file: MP4File, from source: some ByteSource, trackID: UInt32, limits: ParseLimits = .default) async throws -> FragmentLocator? {
        var loader = SourceLoader(source: source, limits: limits)
        return try await load(file, with: &loader, trackID: trackID)
    }

    /// As ``load(_:from:trackID:limits:)``, reading through `loader` (index boxes are charged
    /// to its budget).
    static func load(_ file: MP4File, with loader: inout SourceLoader, trackID: UInt32) async throws -> FragmentLocator? {
        var reader = IndexReader(loader: loader)
        defer { loader = reader.loader }
        var fromIndex: [FragmentLocator] = []
        var layout = file.layout
        for box in file.layout.boxes where box.type == .sidx {
            guard let sidx = try await layout.segmentIndex(box, loader: &reader.loader) else { continue }
            var entries: [Entry] = []
            try await expand(sidx, end: box.availableEnd, rootTimescale: sidx.timescale, length: file.layout.fileSize, reader: &reader, depth: 0, into: &entries)
            if !entries.isEmpty { fromIndex.append(FragmentLocator(origin: .segmentIndex, trackID: sidx.referenceID, timescale: sidx.timescale, entries: entries)) }
            if sidx.referenceID == trackID { break }
        }
        if let match = fromIndex.first(where: { $0.trackID == trackID }) ?? fromIndex.first { return match }
        return try await loadRandomAccess(file, trackID: trackID, reader: &reader)
    }

    /// The loader and parser of the index boxes, and the count of entries they reference.
    struct IndexReader {
        var loader: SourceLoader
        var parser: BoxTreeParser
        var entries = 0

        init(loader: SourceLoader) {
            self.loader = loader
            self.parser = BoxTreeParser(limits: loader.limits)
        }

        mutating func load(_ range: Range<UInt64>, path: BoxPath) async throws -> BoxNode {
            try await loader.loadBox(range, path: path, what: "the index boxes (sidx, mfra)", parser: &parser)
        }
    }

    /// Appends the subsegments of `sidx` (which ends at `end`), reading referenced `sidx`
    /// boxes for hierarchical indexes.
    private static func expand(_ sidx: SegmentIndexBox, end: UInt64, rootTimescale: UInt32, length: UInt64, reader: inout IndexReader, depth: Int, into entries: inout [Entry]) async throws {
        guard depth < 8 else { throw MP4Error(.limitExceeded, "sidx references nest deeper than 8 levels", offset: end) }
        let (first, overflow) = end.addingReportingOverflow(sidx.firstOffset)
        guard !overflow, first <= length else { return }
        var offset = first
        var time = Int64(clamping: sidx.earliestPresentationTime)
        for reference in sidx.references {
            let next = offset + UInt64(reference.referencedSize)  // offset ≤ length < 2^63: no overflow
            guard next <= length else { return }
            reader.entries += 1
            guard reader.entries <= reader.loader.limits.maxFragmentSamples else { throw MP4Error(.limitExceeded, "the sidx boxes reference more than \(reader.loader.limits.maxFragmentSamples) segments", limit: .maxFragmentSamples) }
            if reference.referencesIndex {
                // A referenced index starts with its own sidx: read its header and table.
                let headerEnd = min(next, offset + 16)
                let header = try BoxHeader.parse(try await reader.loader.read(offset..<headerEnd, path: .top(.sidx))[...], at: offset, containerEnd: next)
                guard header.type == .sidx, offset + header.size <= next,
                      let child = try await reader.load(offset..<(offset + header.size), path: .top(.sidx)).model(SegmentIndexBox.self), child.timescale > 0
                else { return }
                try await expand(child, end: offset + header.size, rootTimescale: rootTimescale, length: length, reader: &reader, depth: depth + 1, into: &entries)
            } else {
                // Times of a nested index in another time scale are converted to the root's.
                let rootTime = sidx.timescale == rootTimescale ? time : Timeline.clampedInt64(Double(time) * Double(rootTimescale) / Double(sidx.timescale))
                entries.append(Entry(time: rootTime, byteRange: offset..<next, startsWithSync: reference.startsWithSAP))
            }
            offset = next
            time &+= Int64(reference.subsegmentDuration)
        }
    }

    /// Entries from `mfra/tfra` for `trackID`, located through `mfro` at the end of the file.
    private static func loadRandomAccess(_ file: MP4File, trackID: UInt32, reader: inout IndexReader) async throws -> FragmentLocator? {
        guard let mfra = file.layout.boxes.last(where: { $0.type == .mfra }) else { return nil }
        let node = try await reader.load(mfra.offset..<mfra.availableEnd, path: .top(.mfra))
        guard let timescale = file.movie?.tracks.first(where: { $0.trackID == trackID })?.timescale, timescale > 0
        else { return nil }
        var table: TrackFragmentRandomAccessBox?
        for child in node.all(.tfra) {
            if let tfra = child.model(TrackFragmentRandomAccessBox.self), tfra.trackID == trackID { table = tfra }
        }
        guard let table, !table.entries.isEmpty else { return nil }
        // One entry per moof that the scan found (a Set: tfra may list many entries and the
        // file many moofs), in byte order; each runs to the next one's moof, the last to mfra.
        let moofs = Set(file.layout.boxes.filter { $0.type == .moof }.map(\.offset))
        var firsts: [TrackFragmentRandomAccessBox.Entry] = []
        for entry in table.entries.sorted(by: { $0.moofOffset < $1.moofOffset }) where moofs.contains(entry.moofOffset) {
            if firsts.last?.moofOffset != entry.moofOffset { firsts.append(entry) }
        }
        var entries: [Entry] = []
        for (i, entry) in firsts.enumerated() {
            let next = i + 1 < firsts.count ? firsts[i + 1].moofOffset : max(mfra.offset, entry.moofOffset)
            entries.append(Entry(time: Int64(clamping: entry.time), byteRange: entry.moofOffset..<next, startsWithSync: true))
        }
        return entries.isEmpty ? nil : FragmentLocator(origin: .randomAccess, trackID: trackID, timescale: timescale, entries: entries)
    }

    /// The entries to load for media times `[start, end]` (in ``timescale`` units): from the
    /// last sync entry starting at or before `start` to the last entry starting at or before
    /// `end`, widened by `extraBefore`/`extraAfter` entries.
    public func entryRange(from start: Int64, to end: Int64, extraBefore: Int = 0, extraAfter: Int = 0) -> ClosedRange<Int> {
        var first = entries.lastIndex { $0.time <= start } ?? 0
        while first > 0 && !entries[first].startsWithSync { first -= 1 }
        var last = entries.lastIndex { $0.time <= end } ?? 0
        first = max(0, first - extraBefore)
        last = min(entries.count - 1, max(last, first) + extraAfter)
        return first...last
    }
}
