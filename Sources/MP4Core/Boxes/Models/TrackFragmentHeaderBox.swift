/// `tfhd` (ISO/IEC 14496-12 8.8.7): a track fragment's header. Its flags say which optional
/// fields follow the track ID; ``flags`` gives them back for a writer.
public struct TrackFragmentHeaderBox: WritableBoxModel, Codable {
    public static let type: FourCC = .tfhd
    public static let specName = "TrackFragmentHeaderBox"
    public static let isFullBox = true

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

    public init(trackID: UInt32, baseDataOffset: UInt64? = nil, sampleDescriptionIndex: UInt32? = nil, defaultSampleDuration: UInt32? = nil,
                defaultSampleSize: UInt32? = nil, defaultSampleFlags: UInt32? = nil, durationIsEmpty: Bool = false, defaultBaseIsMoof: Bool = false) {
        self.trackID = trackID
        self.baseDataOffset = baseDataOffset
        self.sampleDescriptionIndex = sampleDescriptionIndex
        self.defaultSampleDuration = defaultSampleDuration
        self.defaultSampleSize = defaultSampleSize
        self.defaultSampleFlags = defaultSampleFlags
        self.durationIsEmpty = durationIsEmpty
        self.defaultBaseIsMoof = defaultBaseIsMoof
    }

    /// The flags of the box header that describe these fields.
    public var flags: UInt32 {
        (baseDataOffset != nil ? 0x1 : 0) | (sampleDescriptionIndex != nil ? 0x2 : 0) | (defaultSampleDuration != nil ? 0x8 : 0)
            | (defaultSampleSize != nil ? 0x10 : 0) | (defaultSampleFlags != nil ? 0x20 : 0) | (durationIsEmpty ? 0x10000 : 0) | (defaultBaseIsMoof ? 0x20000 : 0)
    }

    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> TrackFragmentHeaderBox {
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

    public func write(to writer: inout ByteWriter) {
        writer.u32(trackID)
        if let baseDataOffset { writer.u64(baseDataOffset) }
        for value in [sampleDescriptionIndex, defaultSampleDuration, defaultSampleSize, defaultSampleFlags] { if let value { writer.u32(value) } }
    }
}
