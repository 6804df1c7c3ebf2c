/// `btrt` (ISO/IEC 14496-12 8.5.2.2): the decoding buffer size and the maximum and average
/// bit rates of a sample entry's stream, in bytes and bits per second.
public struct BitRateBox: WritableBoxModel {
    public static let type: FourCC = "btrt"
    public static let specName = "BitRateBox"
    public static let isFullBox = false

    public var bufferSizeDB: UInt32
    public var maxBitrate: UInt32
    public var avgBitrate: UInt32

    public init(bufferSizeDB: UInt32, maxBitrate: UInt32, avgBitrate: UInt32) {
        self.bufferSizeDB = bufferSizeDB
        self.maxBitrate = maxBitrate
        self.avgBitrate = avgBitrate
    }

    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> BitRateBox {
        BitRateBox(bufferSizeDB: try reader.readUInt32(), maxBitrate: try reader.readUInt32(), avgBitrate: try reader.readUInt32())
    }

    public var fields: [(name: String, value: FieldValue)] {
        [("bufferSizeDB", .uint(UInt64(bufferSizeDB))), ("maxBitrate", .uint(UInt64(maxBitrate))), ("avgBitrate", .uint(UInt64(avgBitrate)))]
    }

    public func write(to writer: inout ByteWriter) {
        writer.u32(bufferSizeDB)
        writer.u32(maxBitrate)
        writer.u32(avgBitrate)
    }
}
