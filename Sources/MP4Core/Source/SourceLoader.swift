/// The one way the core reads from a ``ByteSource``. Opening (``MP4File/open(_:options:)``),
/// indexing fragments (``FragmentIndex``), locating them (``FragmentLocator``) and planning
/// seeks all read through a loader, which
/// - counts what was read (``statistics``: what `--stats` and `reads` in JSON report);
/// - charges boxes other than `moov` to the metadata budget (``ParseLimits/maxOtherBoxSize``
///   each, ``ParseLimits/maxMetadataBytes`` in all), so that no sequence of reads, however the
///   file is shaped, holds more than the limits allow;
/// - applies the one short-read policy: a read that returns fewer bytes than asked, inside the
///   source's length, is an `.io` error that names the source, the offset and the box.
///
/// Analysis itself is pure: it works on the bytes a loader brought (``BoxTreeParser``,
/// ``SeekPlanner``, ``FaststartPlan``), and multi-step reads say which range they need next
/// (``FragmentSeekSearch``), so that any driver — a local file, the cache, the proxy — can feed
/// them.
public struct SourceLoader: Sendable {
    /// Where bytes come from.
    public let source: any ByteSource
    /// The limits in force.
    public let limits: ParseLimits
    /// What was read so far.
    public private(set) var statistics = ReadStatistics()
    /// Bytes of boxes other than `moov` charged so far.
    public private(set) var chargedBytes: UInt64 = 0

    /// Creates a loader over `source`.
    public init(source: any ByteSource, limits: ParseLimits = .default) {
        self.source = source
        self.limits = limits
    }

    /// Exactly the bytes of `range`.
    /// - Throws: ``MP4Error/Kind/io`` when the source fails or returns fewer bytes.
    public mutating func read(_ range: Range<UInt64>, path: BoxPath? = nil) async throws -> [UInt8] {
        let data = try await source.read(range)
        statistics.readCount += 1
        statistics.byteCount += UInt64(data.count)
        guard data.count == Int(range.count) else {
            throw MP4Error(.io, "\(source.name): asked for \(range.count) bytes at \(range.lowerBound), got \(data.count)", offset: range.lowerBound, path: path)
        }
        return data
    }

    /// Charges `count` bytes of a box other than `moov` (described by `what`, e.g. "the movie
    /// fragments (moof)") to the metadata budget.
    /// - Throws: ``MP4Error/Kind/limitExceeded`` when the box or the total passes its limit.
    public mutating func charge(_ count: UInt64, what: String, offset: UInt64, path: BoxPath) throws {
        guard count <= limits.maxOtherBoxSize, chargedBytes + count <= limits.maxMetadataBytes else {
            let single = count > limits.maxOtherBoxSize
            throw MP4Error(.limitExceeded, "\(what) \(single ? "include a box of \(count) bytes, above the \(limits.maxOtherBoxSize)-byte limit for boxes other than moov" : "add up to more than the \(limits.maxMetadataBytes)-byte limit for boxes other than moov")", offset: offset, path: path, limit: single ? .maxOtherBoxSize : .maxMetadataBytes)
        }
        chargedBytes += count
    }

    /// Reads a box other than `moov` whole, charged to the budget, and parses it.
    public mutating func loadBox(_ range: Range<UInt64>, path: BoxPath, what: String, parser: inout BoxTreeParser) async throws -> BoxNode {
        try charge(UInt64(range.count), what: what, offset: range.lowerBound, path: path)
        return try parser.parse(try await read(range, path: path), at: range.lowerBound, path: path)
    }
}
