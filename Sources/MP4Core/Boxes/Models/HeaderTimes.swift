/// The times that open `mvhd` and `mdhd`: creation and modification (seconds since
/// 1904-01-01 UTC), time scale and duration, 32 or 64 bits by the box's version. An all-ones
/// 32-bit duration ("unknown") is `UInt64.max`, and is written back as all ones.
struct HeaderTimes {
    var creationTime: UInt64
    var modificationTime: UInt64
    var timescale: UInt32
    var duration: UInt64

    static func read(_ reader: inout ByteReader, wide: Bool) throws -> HeaderTimes {
        let creation = try reader.readUInt(wide: wide)
        let modification = try reader.readUInt(wide: wide)
        let timescale = try reader.readUInt32()
        let duration = try reader.readUInt(wide: wide)
        return HeaderTimes(creationTime: creation, modificationTime: modification, timescale: timescale,
                           duration: !wide && duration == UInt64(UInt32.max) ? .max : duration)
    }

    func write(to writer: inout ByteWriter, wide: Bool) {
        writer.uint(creationTime, wide: wide)
        writer.uint(modificationTime, wide: wide)
        writer.u32(timescale)
        writer.uint(duration == .max && !wide ? UInt64(UInt32.max) : duration, wide: wide)
    }
}
