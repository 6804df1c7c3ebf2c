/// `sidx` (ISO/IEC 14496-12 8.16.3): a segment index, the subsegments that follow it (or
/// further indexes) with their sizes, durations and stream access points.
public struct SegmentIndexBox: WritableBoxModel, TabularBoxModel, Codable {
    public static let type: FourCC = .sidx
    public static let specName = "SegmentIndexBox"
    public static let isFullBox = true

    /// One reference to a subsegment (or to another `sidx` when ``referencesIndex``).
    public struct Reference: Sendable, Hashable, Codable {
        public var referencesIndex: Bool
        /// 31 bits.
        public var referencedSize: UInt32
        public var subsegmentDuration: UInt32
        public var startsWithSAP: Bool
        /// 3 bits.
        public var sapType: UInt8
        /// 28 bits.
        public var sapDeltaTime: UInt32

        public init(referencesIndex: Bool, referencedSize: UInt32, subsegmentDuration: UInt32, startsWithSAP: Bool, sapType: UInt8, sapDeltaTime: UInt32) {
            self.referencesIndex = referencesIndex
            self.referencedSize = referencedSize
            self.subsegmentDuration = subsegmentDuration
            self.startsWithSAP = startsWithSAP
            self.sapType = sapType
            self.sapDeltaTime = sapDeltaTime
        }
    }

    public var referenceID: UInt32
    public var timescale: UInt32
    public var earliestPresentationTime: UInt64
    public var firstOffset: UInt64
    /// At most 65,535 (a 16-bit count).
    public var references: [Reference]
    /// Whether the times and offset are 64-bit (version 1).
    public var isWide: Bool

    public init(referenceID: UInt32, timescale: UInt32, earliestPresentationTime: UInt64, firstOffset: UInt64, references: [Reference], isWide: Bool = false) {
        self.referenceID = referenceID
        self.timescale = timescale
        self.earliestPresentationTime = earliestPresentationTime
        self.firstOffset = firstOffset
        self.references = references
        self.isWide = isWide
    }

    /// The sum of the subsegment durations, in ``timescale`` units (wrapping, never trapping).
    public var totalDuration: UInt64 { references.reduce(0) { $0 &+ UInt64($1.subsegmentDuration) } }

    /// The reference count is paid for in bytes before anything is allocated.
    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> SegmentIndexBox {
        let referenceID = try reader.readUInt32()
        let timescale = try reader.readUInt32()
        let earliest = try reader.readUInt(wide: version == 1)
        let first = try reader.readUInt(wide: version == 1)
        try reader.skip(2)
        let count = try reader.requireEntries(UInt64(try reader.readUInt16()), of: 12, "sidx")
        var references: [Reference] = []
        references.reserveCapacity(count)
        for _ in 0..<count {
            let a = try reader.readUInt32()
            let duration = try reader.readUInt32()
            let c = try reader.readUInt32()
            references.append(Reference(referencesIndex: a >> 31 == 1, referencedSize: a & 0x7FFF_FFFF, subsegmentDuration: duration, startsWithSAP: c >> 31 == 1, sapType: UInt8((c >> 28) & 0x7), sapDeltaTime: c & 0x0FFF_FFFF))
        }
        return SegmentIndexBox(referenceID: referenceID, timescale: timescale, earliestPresentationTime: earliest, firstOffset: first, references: references, isWide: version == 1)
    }

    public var fields: [(name: String, value: FieldValue)] {
        [("referenceID", .uint(UInt64(referenceID))), ("timescale", .uint(UInt64(timescale))), ("earliestPresentationTime", .uint(earliestPresentationTime)), ("firstOffset", .uint(firstOffset)), ("referenceCount", .uint(UInt64(references.count)))]
    }

    public static let entryFieldNames = ["referencesIndex", "referencedSize", "subsegmentDuration", "startsWithSAP", "sapType"]
    public var entryCount: Int { references.count }
    public func entryFields(at index: Int) -> [FieldValue] {
        let r = references[index]
        return [.bool(r.referencesIndex), .uint(UInt64(r.referencedSize)), .uint(UInt64(r.subsegmentDuration)), .bool(r.startsWithSAP), .uint(UInt64(r.sapType))]
    }

    public func write(to writer: inout ByteWriter) {
        writer.u32(referenceID)
        writer.u32(timescale)
        writer.uint(earliestPresentationTime, wide: isWide)
        writer.uint(firstOffset, wide: isWide)
        writer.u16(0)
        writer.u16(UInt16(truncatingIfNeeded: references.count))
        for r in references.prefix(Int(UInt16.max)) {
            writer.u32((r.referencesIndex ? 1 << 31 : 0) | r.referencedSize & 0x7FFF_FFFF)
            writer.u32(r.subsegmentDuration)
            writer.u32((r.startsWithSAP ? 1 << 31 : 0) | UInt32(r.sapType & 0x7) << 28 | r.sapDeltaTime & 0x0FFF_FFFF)
        }
    }
}
