/// `tfra` (ISO/IEC 14496-12 8.8.10): a track's random access points in its fragments (in
/// `mfra`): time, `moof` offset, and the traf, trun and sample numbers in 1 to 4 bytes each.
public struct TrackFragmentRandomAccessBox: WritableBoxModel, TabularBoxModel, Codable {
    public static let type: FourCC = .tfra
    public static let specName = "TrackFragmentRandomAccessBox"
    public static let isFullBox = true

    /// One random access point.
    public struct Entry: Sendable, Hashable, Codable {
        public var time: UInt64
        public var moofOffset: UInt64
        public var trafNumber: UInt32
        public var trunNumber: UInt32
        public var sampleNumber: UInt32

        public init(time: UInt64, moofOffset: UInt64, trafNumber: UInt32, trunNumber: UInt32, sampleNumber: UInt32) {
            self.time = time
            self.moofOffset = moofOffset
            self.trafNumber = trafNumber
            self.trunNumber = trunNumber
            self.sampleNumber = sampleNumber
        }
    }

    public var trackID: UInt32
    public var entries: [Entry]
    /// Whether time and offset are 64-bit (version 1).
    public var isWide: Bool
    /// Bytes of the traf, trun and sample numbers, 1 to 4 each.
    public var numberSizes: (traf: Int, trun: Int, sample: Int) {
        get { (trafNumberSize, trunNumberSize, sampleNumberSize) }
        set { (trafNumberSize, trunNumberSize, sampleNumberSize) = (min(max(newValue.traf, 1), 4), min(max(newValue.trun, 1), 4), min(max(newValue.sample, 1), 4)) }
    }
    private var trafNumberSize = 1, trunNumberSize = 1, sampleNumberSize = 1

    public init(trackID: UInt32, entries: [Entry], isWide: Bool = false, numberSizes: (traf: Int, trun: Int, sample: Int) = (1, 1, 1)) {
        self.trackID = trackID
        self.entries = entries
        self.isWide = isWide
        self.numberSizes = numberSizes
    }

    /// The entry count is paid for in bytes before anything is allocated.
    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> TrackFragmentRandomAccessBox {
        let trackID = try reader.readUInt32()
        let sizes = try reader.readUInt32()
        let traf = Int((sizes >> 4) & 3) + 1, trun = Int((sizes >> 2) & 3) + 1, sample = Int(sizes & 3) + 1
        let entrySize = (version == 1 ? 16 : 8) + traf + trun + sample
        let count = try reader.requireEntries(UInt64(try reader.readUInt32()), of: entrySize, "tfra")
        var entries: [Entry] = []
        entries.reserveCapacity(count)
        for _ in 0..<count {
            let time = try reader.readUInt(wide: version == 1)
            let offset = try reader.readUInt(wide: version == 1)
            entries.append(Entry(time: time, moofOffset: offset, trafNumber: UInt32(try reader.readUInt(width: traf)),
                                 trunNumber: UInt32(try reader.readUInt(width: trun)), sampleNumber: UInt32(try reader.readUInt(width: sample))))
        }
        return TrackFragmentRandomAccessBox(trackID: trackID, entries: entries, isWide: version == 1, numberSizes: (traf, trun, sample))
    }

    public var fields: [(name: String, value: FieldValue)] { [("trackID", .uint(UInt64(trackID))), ("entryCount", .uint(UInt64(entries.count)))] }

    public static let entryFieldNames = ["time", "moofOffset", "trafNumber", "trunNumber", "sampleNumber"]
    public var entryCount: Int { entries.count }
    public func entryFields(at index: Int) -> [FieldValue] {
        let e = entries[index]
        return [.uint(e.time), .uint(e.moofOffset), .uint(UInt64(e.trafNumber)), .uint(UInt64(e.trunNumber)), .uint(UInt64(e.sampleNumber))]
    }

    public func write(to writer: inout ByteWriter) {
        writer.u32(trackID)
        writer.u32(UInt32(trafNumberSize - 1) << 4 | UInt32(trunNumberSize - 1) << 2 | UInt32(sampleNumberSize - 1))
        writer.u32(UInt32(truncatingIfNeeded: entries.count))
        for e in entries {
            writer.uint(e.time, wide: isWide)
            writer.uint(e.moofOffset, wide: isWide)
            writer.uint(UInt64(e.trafNumber), width: trafNumberSize)
            writer.uint(UInt64(e.trunNumber), width: trunNumberSize)
            writer.uint(UInt64(e.sampleNumber), width: sampleNumberSize)
        }
    }
}
