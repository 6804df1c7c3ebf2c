/// A small read-ahead buffer between the top-level scan and a ``ByteSource``.
///
/// The scan asks for a few bytes at a time (box headers); the window turns each miss into one
/// read of ``ByteSource/preferredReadSize`` bytes, so that headers that sit close together,
/// and often a whole front `moov`, arrive in one read. Whole boxes are then taken from the
/// window when they are already in it, and only their missing tail is read otherwise.
struct ReadWindow {
    /// Reads go through the loader (counted, short reads refused).
    private(set) var loader: SourceLoader
    let length: UInt64
    private(set) var start: UInt64 = 0
    private(set) var bytes: [UInt8] = []
    var statistics: ReadStatistics { loader.statistics }
    var source: any ByteSource { loader.source }
    /// The first read at offset 0, kept so that boxes at the head (`ftyp`, a front `moov`)
    /// need no second read after the scan has moved on to the end of the file.
    private var head: [UInt8] = []

    init(loader: SourceLoader, length: UInt64) {
        self.loader = loader
        self.length = length
    }

    private var end: UInt64 { start + UInt64(bytes.count) }

    /// Charges a box other than `moov` to the loader's budget.
    mutating func charge(_ count: UInt64, what: String, offset: UInt64, path: BoxPath) throws {
        try loader.charge(count, what: what, offset: offset, path: path)
    }

    private mutating func fetch(_ range: Range<UInt64>) async throws -> [UInt8] {
        try await loader.read(range)
    }

    /// Up to `count` bytes at `offset` (fewer only at the end of the source).
    mutating func peek(_ offset: UInt64, count: Int) async throws -> ArraySlice<UInt8> {
        let upper = min(length, offset + UInt64(count))
        if offset >= start && upper <= end {
            return bytes[Int(offset - start)..<Int(upper - start)]
        }
        let readUpper = min(length, offset + UInt64(max(count, source.preferredReadSize)))
        bytes = try await fetch(offset..<readUpper)
        start = offset
        if offset == 0 { head = bytes }
        return bytes[0..<Int(upper - offset)]
    }

    /// All bytes of `range` (which must lie within the source), reusing what the window holds
    /// at its start.
    mutating func load(_ range: Range<UInt64>) async throws -> [UInt8] {
        if range.upperBound <= UInt64(head.count) {
            return Array(head[Int(range.lowerBound)..<Int(range.upperBound)])
        }
        if range.lowerBound >= start && range.upperBound <= end {
            return Array(bytes[Int(range.lowerBound - start)..<Int(range.upperBound - start)])
        }
        if range.lowerBound >= start && range.lowerBound < end {
            let overlap = end - range.lowerBound
            // Reuse the overlap only when it is a large part of the box: otherwise joining
            // would hold the box twice in memory, which costs more than re-reading a window.
            if overlap * 4 >= UInt64(range.count) {
                var joined = Array(bytes[Int(range.lowerBound - start)...])
                joined.reserveCapacity(Int(range.count))
                joined.append(contentsOf: try await fetch(end..<range.upperBound))
                return joined
            }
        }
        return try await fetch(range)
    }
}
