/// A compact sample-table box kept as its raw entry bytes: `stts`, `ctts`, `stss`, `stsc`,
/// `stsz`, `stz2`, `stco`, `co64`, `sdtp` (ISO/IEC 14496-12 §8.6.1.2–§8.7.5, §8.6.4).
///
/// The entry count is validated against the bytes of the box when parsed, so iterating
/// ``entryCount`` entries never reads past the box. Entries are decoded on demand
/// (``entry(at:)``); a table is never expanded into one object per sample.
public struct SampleTableData: Sendable, Hashable {
    /// Which table this is.
    public enum Kind: String, Sendable, Hashable, Codable {
        case timeToSample = "stts", compositionOffset = "ctts", syncSample = "stss"
        case sampleToChunk = "stsc", sampleSize = "stsz", compactSampleSize = "stz2"
        case chunkOffset = "stco", chunkLargeOffset = "co64", sampleDependency = "sdtp"

        /// Names of an entry's fields, in order.
        public var fieldNames: [String] {
            switch self {
            case .timeToSample: return ["sampleCount", "sampleDelta"]
            case .compositionOffset: return ["sampleCount", "sampleOffset"]
            case .syncSample: return ["sampleNumber"]
            case .sampleToChunk: return ["firstChunk", "samplesPerChunk", "sampleDescriptionIndex"]
            case .sampleSize, .compactSampleSize: return ["entrySize"]
            case .chunkOffset, .chunkLargeOffset: return ["chunkOffset"]
            case .sampleDependency: return ["flags"]
            }
        }
    }

    /// Which table this is.
    public var kind: Kind
    /// The full box version.
    public var version: UInt8
    /// Number of entries stored in ``entryBytes`` (validated against the box size).
    public var entryCount: Int
    /// For `stsz`: the size shared by all samples, or 0 when sizes are listed.
    public var constantSampleSize: UInt32
    /// For `stsz`/`stz2`: the sample count the box declares.
    public var sampleCount: UInt32
    /// For `stz2`: bits per entry (4, 8 or 16).
    public var fieldSize: Int
    /// The raw entries (shared with the buffer of the enclosing box).
    public var entryBytes: ArraySlice<UInt8>

    /// Bytes per entry (for `stz2`, rounded; entries of 4 bits are packed two per byte).
    public var entryByteSize: Int {
        switch kind {
        case .timeToSample, .compositionOffset: return 8
        case .syncSample, .chunkOffset: return 4
        case .sampleToChunk: return 12
        case .sampleSize: return 4
        case .compactSampleSize: return max(1, fieldSize / 8)
        case .chunkLargeOffset: return 8
        case .sampleDependency: return 1
        }
    }

    /// Parses the payload after version and flags.
    /// - Throws: ``MP4Error/Kind/malformed`` when the declared count does not fit in the box.
    public static func parse(_ kind: Kind, _ reader: inout ByteReader, version: UInt8) throws -> SampleTableData {
        var table = SampleTableData(kind: kind, version: version, entryCount: 0, constantSampleSize: 0, sampleCount: 0, fieldSize: 0, entryBytes: [])
        switch kind {
        case .sampleSize:
            table.constantSampleSize = try reader.readUInt32()
            table.sampleCount = try reader.readUInt32()
            if table.constantSampleSize == 0 {
                table.entryCount = try reader.requireEntries(UInt64(table.sampleCount), of: 4, "stsz")
            }
        case .compactSampleSize:
            try reader.skip(3)
            table.fieldSize = Int(try reader.readUInt8())
            guard [4, 8, 16].contains(table.fieldSize) else {
                throw MP4Error(.malformed, "stz2 field size \(table.fieldSize) is not 4, 8 or 16", offset: reader.fileOffset)
            }
            table.sampleCount = try reader.readUInt32()
            let bytes = (UInt64(table.sampleCount) * UInt64(table.fieldSize) + 7) / 8
            guard bytes <= UInt64(reader.remaining) else {
                throw MP4Error(.malformed, "stz2 declares \(table.sampleCount) samples of \(table.fieldSize) bits but holds only \(reader.remaining) bytes", offset: reader.fileOffset)
            }
            table.entryCount = Int(table.sampleCount)
            table.entryBytes = try reader.readBytes(Int(bytes))
            return table
        case .sampleDependency:
            table.entryCount = reader.remaining
        default:
            let declared = UInt64(try reader.readUInt32())
            table.entryCount = try reader.requireEntries(declared, of: table.entryByteSize, kind.rawValue)
        }
        table.entryBytes = try reader.readBytes(table.entryCount * table.entryByteSize)
        return table
    }

    /// The fields of entry `index` (0-based) in the order of ``Kind/fieldNames``; signed
    /// fields (`ctts` v1 offsets) are sign-extended.
    /// - Precondition: `index < entryCount`.
    public func entry(at index: Int) -> [Int64] {
        (0..<kind.fieldNames.count).map { field(index, $0) }
    }

    /// Field `column` of entry `index`, without allocating (the hot path of sample lookups).
    /// - Precondition: `index < entryCount` and `column` < the number of fields.
    @inline(__always)
    public func field(_ index: Int, _ column: Int) -> Int64 {
        precondition(index >= 0 && index < entryCount)
        let base = entryBytes.startIndex
        @inline(__always) func u32(_ at: Int) -> UInt32 {
            let p = base + at
            return UInt32(entryBytes[p]) << 24 | UInt32(entryBytes[p + 1]) << 16 | UInt32(entryBytes[p + 2]) << 8 | UInt32(entryBytes[p + 3])
        }
        switch kind {
        case .timeToSample: return Int64(u32(index * 8 + column * 4))
        case .compositionOffset:
            let raw = u32(index * 8 + column * 4)
            return column == 1 && version != 0 ? Int64(Int32(bitPattern: raw)) : Int64(raw)
        case .syncSample, .sampleSize, .chunkOffset: return Int64(u32(index * 4))
        case .sampleToChunk: return Int64(u32(index * 12 + column * 4))
        case .chunkLargeOffset: return Int64(bitPattern: UInt64(u32(index * 8)) << 32 | UInt64(u32(index * 8 + 4)))
        case .sampleDependency: return Int64(entryBytes[base + index])
        case .compactSampleSize:
            switch fieldSize {
            case 4:
                let byte = entryBytes[base + index / 2]
                return Int64(index % 2 == 0 ? byte >> 4 : byte & 0x0F)
            case 8: return Int64(entryBytes[base + index])
            default:
                let p = base + index * 2
                return Int64(UInt16(entryBytes[p]) << 8 | UInt16(entryBytes[p + 1]))
            }
        }
    }

    /// The sum of every entry's first field (for `stsz`/`stz2`: the bytes of all samples),
    /// wrapping on overflow. One pass over the bytes, for summaries of tables with hundreds of
    /// thousands of entries (the same as adding ``field(_:_:)`` over every entry).
    public var sumOfFirstFields: UInt64 {
        if kind == .sampleSize || kind == .chunkOffset || kind == .syncSample {
            return entryBytes.withUnsafeBytes { raw -> UInt64 in
                var total: UInt64 = 0
                let count = min(entryCount, raw.count / 4)
                for i in 0..<count {
                    total &+= UInt64(UInt32(bigEndian: raw.loadUnaligned(fromByteOffset: i * 4, as: UInt32.self)))
                }
                return total
            }
        }
        var total: UInt64 = 0
        for i in 0..<entryCount { total &+= UInt64(bitPattern: field(i, 0)) }
        return total
    }

    /// Number of samples this table describes, where the table says: `stsz`/`stz2` sample
    /// count, or the sum of `stts` run lengths (saturating).
    public var describedSampleCount: UInt64? {
        switch kind {
        case .sampleSize, .compactSampleSize: return UInt64(sampleCount)
        case .timeToSample:
            var total: UInt64 = 0
            for i in 0..<entryCount { total = CheckedMath.add(total, UInt64(entry(at: i)[0])) ?? UInt64.max }
            return total
        default: return nil
        }
    }
}

extension SampleTableData {
    /// The fields a dump shows: the entry count, and for `stsz`/`stz2` the constant size or
    /// field size and the sample count.
    public var fields: [(name: String, value: FieldValue)] {
        var fields: [(name: String, value: FieldValue)] = [("entryCount", .uint(UInt64(entryCount)))]
        switch kind {
        case .sampleSize: fields += [("sampleSize", .uint(UInt64(constantSampleSize))), ("sampleCount", .uint(UInt64(sampleCount)))]
        case .compactSampleSize: fields += [("fieldSize", .uint(UInt64(fieldSize))), ("sampleCount", .uint(UInt64(sampleCount)))]
        default: break
        }
        return fields
    }

    /// Writes the payload after version and flags: ``parse(_:_:version:)`` of it gives this table.
    public func write(to writer: inout ByteWriter) {
        switch kind {
        case .sampleSize:
            writer.u32(constantSampleSize)
            writer.u32(sampleCount)
        case .compactSampleSize:
            writer.u24(0)
            writer.u8(UInt8(truncatingIfNeeded: fieldSize))
            writer.u32(sampleCount)
        case .sampleDependency:
            break
        default:
            writer.u32(UInt32(truncatingIfNeeded: entryCount))
        }
        writer.append(entryBytes)
    }
}

/// The nine sample-table boxes as ``BoxModel``s: one declaration each below, the shared parser,
/// dump, `--full` entries and writer here. ``BoxNode/sampleTable`` gives a node's table.
public protocol SampleTableBoxModel: WritableBoxModel, TabularBoxModel {
    /// Which table the box is.
    static var kind: SampleTableData.Kind { get }
    /// The entries, kept as the box's bytes.
    var table: SampleTableData { get }
    init(table: SampleTableData)
}

extension SampleTableBoxModel {
    public var asSampleTableBox: (any SampleTableBoxModel)? { self }
    public static var type: FourCC { FourCC(stringLiteral: kind.rawValue) }
    public static var isFullBox: Bool { true }
    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> Self {
        Self(table: try SampleTableData.parse(kind, &reader, version: version))
    }
    public var fields: [(name: String, value: FieldValue)] { table.fields }
    public func write(to writer: inout ByteWriter) { table.write(to: &writer) }
    public static var entryFieldNames: [String] { kind.fieldNames }
    public var entryCount: Int { table.entryCount }
    public func entryFields(at index: Int) -> [FieldValue] { table.entry(at: index).map { .int($0) } }
}

/// `stts` (§8.6.1.2): runs of samples with one decode duration.
public struct TimeToSampleBox: SampleTableBoxModel {
    public static let kind = SampleTableData.Kind.timeToSample
    public static let specName = "TimeToSampleBox"
    public var table: SampleTableData
    public init(table: SampleTableData) { self.table = table }
}

/// `ctts` (§8.6.1.3): runs of samples with one composition offset.
public struct CompositionOffsetBox: SampleTableBoxModel {
    public static let kind = SampleTableData.Kind.compositionOffset
    public static let specName = "CompositionOffsetBox"
    public var table: SampleTableData
    public init(table: SampleTableData) { self.table = table }
}

/// `stss` (§8.6.2): the sync samples; absent when every sample is one.
public struct SyncSampleBox: SampleTableBoxModel {
    public static let kind = SampleTableData.Kind.syncSample
    public static let specName = "SyncSampleBox"
    public var table: SampleTableData
    public init(table: SampleTableData) { self.table = table }
}

/// `stsc` (§8.7.4): runs of chunks with one sample count and sample description.
public struct SampleToChunkBox: SampleTableBoxModel {
    public static let kind = SampleTableData.Kind.sampleToChunk
    public static let specName = "SampleToChunkBox"
    public var table: SampleTableData
    public init(table: SampleTableData) { self.table = table }
}

/// `stsz` (§8.7.3.2): one size per sample, or one size for all.
public struct SampleSizeBox: SampleTableBoxModel {
    public static let kind = SampleTableData.Kind.sampleSize
    public static let specName = "SampleSizeBox"
    public var table: SampleTableData
    public init(table: SampleTableData) { self.table = table }
}

/// `stz2` (§8.7.3.3): sample sizes in 4, 8 or 16 bits.
public struct CompactSampleSizeBox: SampleTableBoxModel {
    public static let kind = SampleTableData.Kind.compactSampleSize
    public static let specName = "CompactSampleSizeBox"
    public var table: SampleTableData
    public init(table: SampleTableData) { self.table = table }
}

/// `stco` (§8.7.5): 32-bit absolute file offsets of chunks.
public struct ChunkOffsetBox: SampleTableBoxModel {
    public static let kind = SampleTableData.Kind.chunkOffset
    public static let specName = "ChunkOffsetBox"
    public var table: SampleTableData
    public init(table: SampleTableData) { self.table = table }
}

/// `co64` (§8.7.5): 64-bit absolute file offsets of chunks.
public struct ChunkLargeOffsetBox: SampleTableBoxModel {
    public static let kind = SampleTableData.Kind.chunkLargeOffset
    public static let specName = "ChunkLargeOffsetBox"
    public var table: SampleTableData
    public init(table: SampleTableData) { self.table = table }
}

/// `sdtp` (§8.6.4): one dependency byte per sample.
public struct SampleDependencyTypeBox: SampleTableBoxModel {
    public static let kind = SampleTableData.Kind.sampleDependency
    public static let specName = "SampleDependencyTypeBox"
    public var table: SampleTableData
    public init(table: SampleTableData) { self.table = table }
}
