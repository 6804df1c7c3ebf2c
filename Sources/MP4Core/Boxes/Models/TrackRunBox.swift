/// `trun` (ISO/IEC 14496-12 8.8.8): a run of samples of a track fragment, kept as its header
/// and its raw per-sample records (the count is checked against the box size). ``flags`` and
/// ``version`` are the box header's: they say which fields each record holds.
public struct TrackRunBox: WritableBoxModel {
    public static let type: FourCC = .trun
    public static let specName = "TrackRunBox"
    public static let isFullBox = true

    public var flags: UInt32
    public var version: UInt8
    public var sampleCount: Int
    public var dataOffset: Int32?
    public var firstSampleFlags: UInt32?
    /// Bytes per sample record (4 per present field among duration, size, flags, offset).
    public var recordSize: Int
    /// The raw per-sample records.
    public var records: ArraySlice<UInt8>

    public init(flags: UInt32, version: UInt8, sampleCount: Int, dataOffset: Int32?, firstSampleFlags: UInt32?, recordSize: Int, records: ArraySlice<UInt8>) {
        self.flags = flags
        self.version = version
        self.sampleCount = sampleCount
        self.dataOffset = dataOffset
        self.firstSampleFlags = firstSampleFlags
        self.recordSize = recordSize
        self.records = records
    }

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

    public var fields: [(name: String, value: FieldValue)] {
        var fields: [(name: String, value: FieldValue)] = [("sampleCount", .uint(UInt64(sampleCount)))]
        if let d = dataOffset { fields.append(("dataOffset", .int(Int64(d)))) }
        if let f = firstSampleFlags { fields.append(("firstSampleFlags", .hexFlags(f))) }
        return fields
    }

    public func write(to writer: inout ByteWriter) {
        writer.u32(UInt32(truncatingIfNeeded: sampleCount))
        if let dataOffset { writer.i32(dataOffset) }
        if let firstSampleFlags { writer.u32(firstSampleFlags) }
        writer.append(records)
    }
}
