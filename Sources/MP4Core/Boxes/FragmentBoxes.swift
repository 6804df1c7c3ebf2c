/// `sidx`: segment index, ISO/IEC 14496-12 §8.16.3.
public struct SegmentIndexBox: Sendable, Hashable, Codable {
    /// One reference to a subsegment (or to another `sidx` when ``referencesIndex``).
    public struct Reference: Sendable, Hashable, Codable {
        public var referencesIndex: Bool
        public var referencedSize: UInt32
        public var subsegmentDuration: UInt32
        public var startsWithSAP: Bool
        public var sapType: UInt8
        public var sapDeltaTime: UInt32
    }

    public var referenceID: UInt32
    public var timescale: UInt32
    public var earliestPresentationTime: UInt64
    public var firstOffset: UInt64
    public var references: [Reference]

    /// The sum of the subsegment durations, in ``timescale`` units (wrapping, never trapping).
    public var totalDuration: UInt64 { references.reduce(0) { $0 &+ UInt64($1.subsegmentDuration) } }

    /// Parses the payload after version and flags; the reference count is paid for in bytes.
    public static func parse(_ reader: inout ByteReader, version: UInt8) throws -> SegmentIndexBox {
        let referenceID = try reader.readUInt32()
        let timescale = try reader.readUInt32()
        let earliest = version == 0 ? UInt64(try reader.readUInt32()) : try reader.readUInt64()
        let first = version == 0 ? UInt64(try reader.readUInt32()) : try reader.readUInt64()
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
        return SegmentIndexBox(referenceID: referenceID, timescale: timescale, earliestPresentationTime: earliest, firstOffset: first, references: references)
    }
}

/// `tfra`: track fragment random access, ISO/IEC 14496-12 §8.8.10.
public struct TrackFragmentRandomAccessBox: Sendable, Hashable, Codable {
    /// One random access point.
    public struct Entry: Sendable, Hashable, Codable {
        public var time: UInt64
        public var moofOffset: UInt64
        public var trafNumber: UInt32
        public var trunNumber: UInt32
        public var sampleNumber: UInt32
    }

    public var trackID: UInt32
    public var entries: [Entry]

    /// Parses the payload after version and flags; the entry count is paid for in bytes.
    public static func parse(_ reader: inout ByteReader, version: UInt8) throws -> TrackFragmentRandomAccessBox {
        let trackID = try reader.readUInt32()
        let sizes = try reader.readUInt32()
        let trafBytes = Int((sizes >> 4) & 3) + 1, trunBytes = Int((sizes >> 2) & 3) + 1, sampleBytes = Int(sizes & 3) + 1
        let entrySize = (version == 1 ? 16 : 8) + trafBytes + trunBytes + sampleBytes
        let count = try reader.requireEntries(UInt64(try reader.readUInt32()), of: entrySize, "tfra")
        func readN(_ n: Int, _ r: inout ByteReader) throws -> UInt32 { UInt32(try r.readUInt(width: n)) }   // n is 1 to 4
        var entries: [Entry] = []
        entries.reserveCapacity(count)
        for _ in 0..<count {
            let time = try reader.readUInt(wide: version == 1)
            let offset = try reader.readUInt(wide: version == 1)
            entries.append(Entry(time: time, moofOffset: offset, trafNumber: try readN(trafBytes, &reader), trunNumber: try readN(trunBytes, &reader), sampleNumber: try readN(sampleBytes, &reader)))
        }
        return TrackFragmentRandomAccessBox(trackID: trackID, entries: entries)
    }
}

extension SegmentIndexBox: BoxModel {
    public static let type: FourCC = .sidx
    public static let specName = "SegmentIndexBox"
    public static let isFullBox = true
    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> SegmentIndexBox { try parse(&reader, version: version) }
    public var fields: [(name: String, value: FieldValue)] {
        [("referenceID", .uint(UInt64(referenceID))), ("timescale", .uint(UInt64(timescale))), ("earliestPresentationTime", .uint(earliestPresentationTime)), ("firstOffset", .uint(firstOffset)), ("referenceCount", .uint(UInt64(references.count)))]
    }
}

extension TrackFragmentRandomAccessBox: BoxModel {
    public static let type: FourCC = .tfra
    public static let specName = "TrackFragmentRandomAccessBox"
    public static let isFullBox = true
    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> TrackFragmentRandomAccessBox { try parse(&reader, version: version) }
    public var fields: [(name: String, value: FieldValue)] { [("trackID", .uint(UInt64(trackID))), ("entryCount", .uint(UInt64(entries.count)))] }
}

/// `mehd` (8.8.2): the whole fragmented movie's duration, in the movie time scale.
public struct MovieExtendsHeaderBox: WritableBoxModel {
    public static let type: FourCC = .mehd
    public static let specName = "MovieExtendsHeaderBox"
    public static let isFullBox = true
    public var fragmentDuration: UInt64
    /// Whether it was written with 64 bits (version 1).
    public var isWide: Bool
    public init(fragmentDuration: UInt64, isWide: Bool) { self.fragmentDuration = fragmentDuration; self.isWide = isWide }
    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> MovieExtendsHeaderBox {
        MovieExtendsHeaderBox(fragmentDuration: try reader.readUInt(wide: version == 1), isWide: version == 1)
    }
    public var fields: [(name: String, value: FieldValue)] { [("fragmentDuration", .uint(fragmentDuration))] }
    public func write(to writer: inout ByteWriter) { writer.uint(fragmentDuration, wide: isWide) }
}

/// `mfhd` (8.8.5): a movie fragment's sequence number.
public struct MovieFragmentHeaderBox: WritableBoxModel {
    public static let type: FourCC = .mfhd
    public static let specName = "MovieFragmentHeaderBox"
    public static let isFullBox = true
    public var sequenceNumber: UInt32
    public init(sequenceNumber: UInt32) { self.sequenceNumber = sequenceNumber }
    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> MovieFragmentHeaderBox { MovieFragmentHeaderBox(sequenceNumber: try reader.readUInt32()) }
    public var fields: [(name: String, value: FieldValue)] { [("sequenceNumber", .uint(UInt64(sequenceNumber)))] }
    public func write(to writer: inout ByteWriter) { writer.u32(sequenceNumber) }
}

/// `tfdt` (8.8.12): the decode time of a track fragment's first sample.
public struct TrackFragmentDecodeTimeBox: WritableBoxModel {
    public static let type: FourCC = .tfdt
    public static let specName = "TrackFragmentBaseMediaDecodeTimeBox"
    public static let isFullBox = true
    public var baseMediaDecodeTime: UInt64
    /// Whether it was written with 64 bits (version 1).
    public var isWide: Bool
    public init(baseMediaDecodeTime: UInt64, isWide: Bool = true) { self.baseMediaDecodeTime = baseMediaDecodeTime; self.isWide = isWide }
    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> TrackFragmentDecodeTimeBox {
        TrackFragmentDecodeTimeBox(baseMediaDecodeTime: try reader.readUInt(wide: version == 1), isWide: version == 1)
    }
    public var fields: [(name: String, value: FieldValue)] { [("baseMediaDecodeTime", .uint(baseMediaDecodeTime))] }
    public func write(to writer: inout ByteWriter) { writer.uint(baseMediaDecodeTime, wide: isWide) }
}

/// `mfro` (8.8.11): the size of the enclosing `mfra`, so a reader can find it from the end.
public struct MovieFragmentRandomAccessOffsetBox: WritableBoxModel {
    public static let type: FourCC = .mfro
    public static let specName = "MovieFragmentRandomAccessOffsetBox"
    public static let isFullBox = true
    public var mfraSize: UInt32
    public init(mfraSize: UInt32) { self.mfraSize = mfraSize }
    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> MovieFragmentRandomAccessOffsetBox { MovieFragmentRandomAccessOffsetBox(mfraSize: try reader.readUInt32()) }
    public var fields: [(name: String, value: FieldValue)] { [("mfraSize", .uint(UInt64(mfraSize)))] }
    public func write(to writer: inout ByteWriter) { writer.u32(mfraSize) }
}

extension SegmentIndexBox: TabularBoxModel {
    public static let entryFieldNames = ["referencesIndex", "referencedSize", "subsegmentDuration", "startsWithSAP", "sapType"]
    public var entryCount: Int { references.count }
    public func entryFields(at index: Int) -> [FieldValue] {
        let r = references[index]
        return [.bool(r.referencesIndex), .uint(UInt64(r.referencedSize)), .uint(UInt64(r.subsegmentDuration)), .bool(r.startsWithSAP), .uint(UInt64(r.sapType))]
    }
}

extension TrackFragmentRandomAccessBox: TabularBoxModel {
    public static let entryFieldNames = ["time", "moofOffset", "trafNumber", "trunNumber", "sampleNumber"]
    public var entryCount: Int { entries.count }
    public func entryFields(at index: Int) -> [FieldValue] {
        let e = entries[index]
        return [.uint(e.time), .uint(e.moofOffset), .uint(UInt64(e.trafNumber)), .uint(UInt64(e.trunNumber)), .uint(UInt64(e.sampleNumber))]
    }
}
