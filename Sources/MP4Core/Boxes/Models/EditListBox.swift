/// `elst` (ISO/IEC 14496-12 8.6.6): a track's edit list. Version 1 widens each edit to 64 bits.
public struct EditListBox: WritableBoxModel, TabularBoxModel, Codable {
    public static let type: FourCC = .elst
    public static let specName = "EditListBox"
    public static let isFullBox = true

    /// One edit.
    public struct Entry: Sendable, Hashable, Codable {
        /// Duration of the edit in the *movie* time scale.
        public var segmentDuration: UInt64
        /// Start within the media in the *media* time scale; -1 for an empty edit (a delay).
        public var mediaTime: Int64
        /// Playback rate (16.16 fixed point), normally 1.
        public var mediaRate: Double

        /// Whether this is an empty edit (no media, only time).
        public var isEmpty: Bool { mediaTime == -1 }

        public init(segmentDuration: UInt64, mediaTime: Int64, mediaRate: Double = 1) {
            self.segmentDuration = segmentDuration
            self.mediaTime = mediaTime
            self.mediaRate = mediaRate
        }
    }

    /// The edits, in order.
    public var entries: [Entry]

    /// What the list does, as ingest rules ask (YouTube: no edit lists; Mux: simple ones only).
    public enum Shape: String, Sendable, Hashable, Codable {
        /// No entry.
        case none
        /// One segment at normal rate, possibly after one empty edit: the media shifted (an
        /// encoder's priming skipped, a start delayed).
        case offset
        /// Anything else: several segments, a rate other than 1, dwells.
        case complex
    }

    /// The list's ``Shape``.
    public var shape: Shape {
        let media = entries.filter { !$0.isEmpty }
        guard !entries.isEmpty else { return .none }
        let leadingEmpty = entries.prefix { $0.isEmpty }.count
        if media.count == 1, leadingEmpty <= 1, entries.count == leadingEmpty + 1, media[0].mediaRate == 1 { return .offset }
        if media.isEmpty && entries.count == 1 { return .offset }
        return .complex
    }
    /// Whether each edit is 64-bit (version 1).
    public var isWide: Bool

    public init(entries: [Entry], isWide: Bool = false) {
        self.entries = entries
        self.isWide = isWide
    }

    /// The entry count is paid for in bytes before anything is allocated.
    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> EditListBox {
        let declared = UInt64(try reader.readUInt32())
        let entrySize = version == 1 ? 20 : 12
        let count = try reader.requireEntries(declared, of: entrySize, "elst")
        var entries: [Entry] = []
        entries.reserveCapacity(count)
        for _ in 0..<count {
            let duration: UInt64
            let mediaTime: Int64
            if version == 1 {
                duration = try reader.readUInt64()
                mediaTime = try reader.readInt64()
            } else {
                duration = UInt64(try reader.readUInt32())
                mediaTime = Int64(try reader.readInt32())
            }
            let rate = Double(try reader.readInt32()) / 65536
            entries.append(Entry(segmentDuration: duration, mediaTime: mediaTime, mediaRate: rate))
        }
        return EditListBox(entries: entries, isWide: version == 1)
    }

    public var fields: [(name: String, value: FieldValue)] { [("entryCount", .uint(UInt64(entries.count)))] }

    public static let entryFieldNames = ["segmentDuration", "mediaTime", "mediaRate"]
    public var entryCount: Int { entries.count }
    public func entryFields(at index: Int) -> [FieldValue] {
        let entry = entries[index]
        return [.uint(entry.segmentDuration), .int(entry.mediaTime), .double(entry.mediaRate)]
    }

    public func write(to writer: inout ByteWriter) {
        writer.u32(UInt32(truncatingIfNeeded: entries.count))
        for entry in entries {
            if isWide {
                writer.u64(entry.segmentDuration)
                writer.u64(UInt64(bitPattern: entry.mediaTime))
            } else {
                writer.u32(UInt32(truncatingIfNeeded: entry.segmentDuration))
                writer.i32(Int32(truncatingIfNeeded: entry.mediaTime))
            }
            writer.i32(Int32(clamping: CheckedMath.fixedPoint(entry.mediaRate, fractionBits: 16)))
        }
    }
}
