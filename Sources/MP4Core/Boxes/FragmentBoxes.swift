/// `trex`: track extends defaults for fragments, ISO/IEC 14496-12 §8.8.3.
public struct TrackExtendsBox: Sendable, Hashable, Codable {
    public var trackID: UInt32
    public var defaultSampleDescriptionIndex: UInt32
    public var defaultSampleDuration: UInt32
    public var defaultSampleSize: UInt32
    public var defaultSampleFlags: UInt32

    /// Parses the payload after version and flags.
    public static func parse(_ reader: inout ByteReader) throws -> TrackExtendsBox {
        TrackExtendsBox(trackID: try reader.readUInt32(), defaultSampleDescriptionIndex: try reader.readUInt32(), defaultSampleDuration: try reader.readUInt32(), defaultSampleSize: try reader.readUInt32(), defaultSampleFlags: try reader.readUInt32())
    }
}

/// `tfhd`: track fragment header, ISO/IEC 14496-12 §8.8.7. Optional fields follow the flags.
public struct TrackFragmentHeaderBox: Sendable, Hashable, Codable {
    public var trackID: UInt32
    public var baseDataOffset: UInt64?
    public var sampleDescriptionIndex: UInt32?
    public var defaultSampleDuration: UInt32?
    public var defaultSampleSize: UInt32?
    public var defaultSampleFlags: UInt32?
    /// Flag 0x10000: the fragment has no samples, only duration.
    public var durationIsEmpty: Bool
    /// Flag 0x20000: offsets are relative to the start of the `moof`.
    public var defaultBaseIsMoof: Bool

    /// Parses the payload after version and flags.
    public static func parse(_ reader: inout ByteReader, flags: UInt32) throws -> TrackFragmentHeaderBox {
        let trackID = try reader.readUInt32()
        return TrackFragmentHeaderBox(
            trackID: trackID,
            baseDataOffset: flags & 0x1 != 0 ? try reader.readUInt64() : nil,
            sampleDescriptionIndex: flags & 0x2 != 0 ? try reader.readUInt32() : nil,
            defaultSampleDuration: flags & 0x8 != 0 ? try reader.readUInt32() : nil,
            defaultSampleSize: flags & 0x10 != 0 ? try reader.readUInt32() : nil,
            defaultSampleFlags: flags & 0x20 != 0 ? try reader.readUInt32() : nil,
            durationIsEmpty: flags & 0x10000 != 0,
            defaultBaseIsMoof: flags & 0x20000 != 0)
    }
}

/// `trun`: track fragment run, ISO/IEC 14496-12 §8.8.8, kept as its header plus raw
/// per-sample records (the count is validated against the box size).
public struct TrackRunBox: Sendable, Hashable {
    public var flags: UInt32
    public var version: UInt8
    public var sampleCount: Int
    public var dataOffset: Int32?
    public var firstSampleFlags: UInt32?
    /// Bytes per sample record (4 per present field among duration, size, flags, offset).
    public var recordSize: Int
    /// The raw per-sample records.
    public var records: ArraySlice<UInt8>

    /// Parses the payload after version and flags.
    /// - Throws: ``MP4Error/Kind/malformed`` when the records do not fit in the box.
    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> TrackRunBox {
        let declared = UInt64(try reader.readUInt32())
        let dataOffset: Int32? = flags & 0x1 != 0 ? try reader.readInt32() : nil
        let firstFlags: UInt32? = flags & 0x4 != 0 ? try reader.readUInt32() : nil
        let recordSize = [0x100, 0x200, 0x400, 0x800].filter { flags & $0 != 0 }.count * 4
        let count: Int
        if recordSize > 0 {
            count = try reader.requireEntries(declared, of: recordSize, "trun")
        } else {
            // No per-sample fields: the count costs no bytes, so it is only bounded by
            // the limits of whoever expands it.
            guard let exact = Int(exactly: declared) else { throw MP4Error(.malformed, "trun sample count \(declared) is out of range", offset: reader.fileOffset) }
            count = exact
        }
        let records = try reader.readBytes(count * recordSize)
        return TrackRunBox(flags: flags, version: version, sampleCount: count, dataOffset: dataOffset, firstSampleFlags: firstFlags, recordSize: recordSize, records: records)
    }
}

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

extension TrackExtendsBox: BoxModel {
    public static let type: FourCC = .trex
    public static let specName = "TrackExtendsBox"
    public static let isFullBox = true
    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> TrackExtendsBox { try parse(&reader) }
    public var fields: [(name: String, value: FieldValue)] {
        [("trackID", .uint(UInt64(trackID))), ("defaultSampleDescriptionIndex", .uint(UInt64(defaultSampleDescriptionIndex))), ("defaultSampleDuration", .uint(UInt64(defaultSampleDuration))), ("defaultSampleSize", .uint(UInt64(defaultSampleSize))), ("defaultSampleFlags", .hexFlags(defaultSampleFlags))]
    }
}

extension TrackFragmentHeaderBox: BoxModel {
    public static let type: FourCC = .tfhd
    public static let specName = "TrackFragmentHeaderBox"
    public static let isFullBox = true
    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> TrackFragmentHeaderBox { try parse(&reader, flags: flags) }
    public var fields: [(name: String, value: FieldValue)] {
        var fields: [(name: String, value: FieldValue)] = [("trackID", .uint(UInt64(trackID)))]
        if let v = baseDataOffset { fields.append(("baseDataOffset", .uint(v))) }
        if let v = sampleDescriptionIndex { fields.append(("sampleDescriptionIndex", .uint(UInt64(v)))) }
        if let v = defaultSampleDuration { fields.append(("defaultSampleDuration", .uint(UInt64(v)))) }
        if let v = defaultSampleSize { fields.append(("defaultSampleSize", .uint(UInt64(v)))) }
        if let v = defaultSampleFlags { fields.append(("defaultSampleFlags", .hexFlags(v))) }
        if durationIsEmpty { fields.append(("durationIsEmpty", .bool(true))) }
        if defaultBaseIsMoof { fields.append(("defaultBaseIsMoof", .bool(true))) }
        return fields
    }
}

extension TrackRunBox: BoxModel {
    public static let type: FourCC = .trun
    public static let specName = "TrackRunBox"
    public static let isFullBox = true
    public var fields: [(name: String, value: FieldValue)] {
        var fields: [(name: String, value: FieldValue)] = [("sampleCount", .uint(UInt64(sampleCount)))]
        if let d = dataOffset { fields.append(("dataOffset", .int(Int64(d)))) }
        if let f = firstSampleFlags { fields.append(("firstSampleFlags", .hexFlags(f))) }
        return fields
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
