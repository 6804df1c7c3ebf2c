/// A bounded big-endian cursor over bytes already in memory.
///
/// A reader covers a window `[position, end)` of a shared byte array and can never read past
/// `end`: every read checks the bytes that remain and throws ``MP4Error/Kind/truncated``
/// otherwise. Payload parsers get a reader sliced to their own box (``slice(count:)``), so a
/// wrong size in one box cannot make a parser read its neighbour. Offsets in errors are
/// absolute file offsets (``fileOffset``).
public struct ByteReader: Sendable {
    /// The bytes; shared, never copied by slicing.
    public let storage: [UInt8]
    /// Index of the next byte to read.
    public private(set) var position: Int
    /// Index one past the last readable byte.
    public let end: Int
    /// File offset of `storage[0]`.
    public let baseOffset: UInt64

    /// A reader over all of `bytes`, which start at file offset `baseOffset`.
    public init(_ bytes: [UInt8], baseOffset: UInt64 = 0) {
        self.storage = bytes
        self.position = 0
        self.end = bytes.count
        self.baseOffset = baseOffset
    }

    /// A reader over `storage[range]`; `range` must lie within `storage`.
    public init(storage: [UInt8], range: Range<Int>, baseOffset: UInt64) {
        precondition(range.lowerBound >= 0 && range.upperBound <= storage.count)
        self.storage = storage
        self.position = range.lowerBound
        self.end = range.upperBound
        self.baseOffset = baseOffset
    }

    /// Bytes left to read.
    public var remaining: Int { end - position }
    /// Whether everything has been read.
    public var isAtEnd: Bool { position >= end }
    /// Absolute file offset of the next byte.
    public var fileOffset: UInt64 { baseOffset + UInt64(position) }
    /// The unread bytes, without copying.
    public var remainingBytes: ArraySlice<UInt8> { storage[position..<end] }

    @inline(__always)
    private func need(_ count: Int, _ what: StaticString) throws {
        if count < 0 || count > end - position {
            throw MP4Error(.truncated, "\(what) needs \(count) bytes but only \(end - position) remain", offset: fileOffset)
        }
    }

    /// Reads one byte.
    public mutating func readUInt8() throws -> UInt8 {
        try need(1, "u8")
        defer { position += 1 }
        return storage[position]
    }

    /// Reads a big-endian 16-bit unsigned integer.
    public mutating func readUInt16() throws -> UInt16 {
        try need(2, "u16")
        defer { position += 2 }
        return UInt16(storage[position]) << 8 | UInt16(storage[position + 1])
    }

    /// Reads a big-endian 24-bit unsigned integer.
    public mutating func readUInt24() throws -> UInt32 {
        try need(3, "u24")
        defer { position += 3 }
        return UInt32(storage[position]) << 16 | UInt32(storage[position + 1]) << 8 | UInt32(storage[position + 2])
    }

    /// Reads a big-endian 32-bit unsigned integer.
    public mutating func readUInt32() throws -> UInt32 {
        try need(4, "u32")
        defer { position += 4 }
        return UInt32(storage[position]) << 24 | UInt32(storage[position + 1]) << 16
            | UInt32(storage[position + 2]) << 8 | UInt32(storage[position + 3])
    }

    /// Reads a big-endian unsigned integer of `width` bytes, 0 to 8 (0 reads nothing and is 0:
    /// the variable-width fields of `iloc` and `tfra`).
    public mutating func readUInt(width: Int) throws -> UInt64 {
        guard (0...8).contains(width) else { throw MP4Error(.malformed, "a field of \(width) bytes (at most 8)", offset: fileOffset) }
        try need(width, "uN")
        let value = UInt64(bigEndian: storage[position..<(position + width)])
        position += width
        return value
    }

    /// Reads a big-endian 64-bit unsigned integer.
    /// A 64-bit value when `wide` (a version-1 full box), else a 32-bit one.
    public mutating func readUInt(wide: Bool) throws -> UInt64 {
        wide ? try readUInt64() : UInt64(try readUInt32())
    }

    public mutating func readUInt64() throws -> UInt64 {
        try need(8, "u64")
        let high = try readUInt32()
        let low = try readUInt32()
        return UInt64(high) << 32 | UInt64(low)
    }

    /// Reads a big-endian 16-bit signed integer.
    public mutating func readInt16() throws -> Int16 { Int16(bitPattern: try readUInt16()) }
    /// Reads a big-endian 32-bit signed integer.
    public mutating func readInt32() throws -> Int32 { Int32(bitPattern: try readUInt32()) }
    /// Reads a big-endian 64-bit signed integer.
    public mutating func readInt64() throws -> Int64 { Int64(bitPattern: try readUInt64()) }

    /// Reads a four-character code.
    public mutating func readFourCC() throws -> FourCC { FourCC(rawValue: try readUInt32()) }

    /// Reads `count` bytes without copying them.
    public mutating func readBytes(_ count: Int) throws -> ArraySlice<UInt8> {
        try need(count, "byte string")
        defer { position += count }
        return storage[position..<(position + count)]
    }

    /// Skips `count` bytes.
    public mutating func skip(_ count: Int) throws {
        try need(count, "skip")
        position += count
    }

    /// Returns a reader over the next `count` bytes and advances past them.
    public mutating func slice(count: Int) throws -> ByteReader {
        try need(count, "sub-range")
        let sub = ByteReader(storage: storage, range: position..<(position + count), baseOffset: baseOffset)
        position += count
        return sub
    }

    /// Reads a null-terminated UTF-8 string within the remaining bytes (or up to the end when
    /// there is no terminator).
    public mutating func readCString() -> String {
        let bytes = remainingBytes
        let stop = bytes.firstIndex(of: 0) ?? bytes.endIndex
        let text = String(decoding: bytes[bytes.startIndex..<stop], as: UTF8.self)
        position = stop < end ? stop + 1 : end
        return text
    }

    /// Throws ``MP4Error/Kind/malformed`` unless `count` entries of `entrySize` bytes fit in the
    /// remaining bytes: the guard every table uses before it trusts an entry count.
    public func requireEntries(_ count: UInt64, of entrySize: Int, _ table: String) throws -> Int {
        let (bytes, overflow) = count.multipliedReportingOverflow(by: UInt64(entrySize))
        if overflow || bytes > UInt64(remaining) {
            throw MP4Error(
                .malformed,
                "\(table) declares \(count) entries of \(entrySize) bytes but the box holds only \(remaining) bytes",
                offset: fileOffset)
        }
        return Int(count)
    }
}

extension UInt64 {
    /// The big-endian unsigned integer in `bytes` (at most the last 8 count: callers pass
    /// 1 to 8). The one variable-width read: `iloc`, `tfra`, `saio`, `data` numbers, offset
    /// relocations.
    public init(bigEndian bytes: some Collection<UInt8>) {
        var value: UInt64 = 0
        for byte in bytes { value = value << 8 | UInt64(byte) }
        self = value
    }
}

