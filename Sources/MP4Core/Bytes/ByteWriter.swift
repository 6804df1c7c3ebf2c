/// Big-endian encoding, the mirror of ``ByteReader``: integers, four-character codes and boxes
/// whose size is written when the box ends (back-patched), so no caller computes a box size
/// by hand.
///
/// ```swift
/// var writer = ByteWriter()
/// let box = writer.beginFullBox("co64", version: 0, flags: 0)
/// writer.u32(UInt32(offsets.count))
/// for offset in offsets { writer.u64(offset) }
/// try writer.end(box)
/// ```
public struct ByteWriter: Sendable {
    /// Everything written so far.
    public private(set) var bytes: [UInt8] = []

    /// An open box: where its size field is.
    public struct Box: Sendable {
        fileprivate let start: Int
        fileprivate let type: FourCC
    }

    /// An empty writer with room for `capacity` bytes.
    public init(capacity: Int = 0) { bytes.reserveCapacity(capacity) }

    /// Bytes written so far.
    public var count: Int { bytes.count }

    /// Makes room for `capacity` bytes in all.
    public mutating func reserveCapacity(_ capacity: Int) { bytes.reserveCapacity(capacity) }

    public mutating func u8(_ value: UInt8) { bytes.append(value) }
    public mutating func u16(_ value: UInt16) { append(value, width: 2) }
    public mutating func u24(_ value: UInt32) { append(UInt64(value & 0xFF_FFFF), width: 3) }
    public mutating func u32(_ value: UInt32) { append(value, width: 4) }
    public mutating func u64(_ value: UInt64) { append(value, width: 8) }
    /// 64 bits when `wide` (a version-1 full box), else the low 32: the inverse of
    /// ``ByteReader/readUInt(wide:)``.
    public mutating func uint(_ value: UInt64, wide: Bool) { append(value, width: wide ? 8 : 4) }
    /// The low `width` bytes of `value` (0 to 8), most significant first: the inverse of
    /// ``ByteReader/readUInt(width:)``.
    public mutating func uint(_ value: UInt64, width: Int) { append(value, width: min(max(width, 0), 8)) }
    public mutating func i32(_ value: Int32) { u32(UInt32(bitPattern: value)) }
    public mutating func fourCC(_ code: FourCC) { u32(code.rawValue) }
    public mutating func append(_ more: some Sequence<UInt8>) { bytes.append(contentsOf: more) }

    /// The low `width` bytes of `value`, most significant first.
    private mutating func append(_ value: some FixedWidthInteger, width: Int) {
        let wide = UInt64(truncatingIfNeeded: value)
        for index in stride(from: width - 1, through: 0, by: -1) { bytes.append(UInt8(truncatingIfNeeded: wide >> UInt64(8 * index))) }
    }

    /// Starts a box: a size placeholder and the type. Close it with ``end(_:)``.
    public mutating func beginBox(_ type: FourCC) -> Box {
        let box = Box(start: bytes.count, type: type)
        u32(0)
        fourCC(type)
        return box
    }

    /// Starts a full box: size placeholder, type, version and 24-bit flags.
    public mutating func beginFullBox(_ type: FourCC, version: UInt8, flags: UInt32) -> Box {
        let box = beginBox(type)
        u8(version)
        u24(flags)
        return box
    }

    /// Ends `box`, writing its size.
    /// - Throws: ``MP4Error`` `.unsupported` when the box is larger than a 32-bit size holds.
    public mutating func end(_ box: Box) throws {
        let size = bytes.count - box.start
        guard let small = UInt32(exactly: size) else {
            throw MP4Error(.unsupported, "'\(box.type)' would be \(size) bytes, more than a 32-bit box size holds")
        }
        overwriteU32(small, at: box.start)
    }

    /// Overwrites four bytes at `offset` (which must be within what was written).
    public mutating func overwriteU32(_ value: UInt32, at offset: Int) {
        for index in 0..<4 { bytes[offset + index] = UInt8(truncatingIfNeeded: value >> UInt32(8 * (3 - index))) }
    }

    /// The big-endian bytes of `value` in `width` bytes (for a patch of a few bytes).
    public static func bigEndian(_ value: UInt64, width: Int) -> [UInt8] {
        var writer = ByteWriter(capacity: width)
        writer.append(value, width: width)
        return writer.bytes
    }
}
