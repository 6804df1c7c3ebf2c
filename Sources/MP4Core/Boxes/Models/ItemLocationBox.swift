/// `iloc` (ISO/IEC 14496-12 §8.11.3): where each item of a `meta` box lies, as extents in
/// this file (construction method 0), in an `idat` box, or in another item.
public struct ItemLocationBox: WritableBoxModel, FileOffsetBox {
    public static let type: FourCC = "iloc"
    public static let specName = "ItemLocationBox"
    public static let isFullBox = true

    /// One extent of an item.
    public struct Extent: Sendable, Hashable {
        public var index: UInt64
        public var offset: UInt64
        public var length: UInt64
        /// Where ``offset`` is stored, from the start of the payload after version and flags.
        public var offsetPosition: Int
    }

    /// One item.
    public struct Item: Sendable, Hashable {
        public var itemID: UInt32
        /// 0: in this file; 1: in `idat`; 2: in another item (versions 1 and 2).
        public var constructionMethod: UInt8
        /// 0: this file; otherwise an entry of `dref`.
        public var dataReferenceIndex: UInt16
        public var baseOffset: UInt64
        /// Where ``baseOffset`` is stored, from the start of the payload after version and flags.
        public var baseOffsetPosition: Int
        /// The declared count (the extents are listed only when they have fields: with every
        /// size 0 an extent has no bytes).
        public var extentCount: UInt16
        public var extents: [Extent]
    }

    public var version: UInt8
    public var offsetSize: Int
    public var lengthSize: Int
    public var baseOffsetSize: Int
    public var indexSize: Int
    public var items: [Item]

    public init(version: UInt8, offsetSize: Int, lengthSize: Int, baseOffsetSize: Int, indexSize: Int, items: [Item]) {
        self.version = version
        self.offsetSize = offsetSize
        self.lengthSize = lengthSize
        self.baseOffsetSize = baseOffsetSize
        self.indexSize = indexSize
        self.items = items
    }

    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> Self {
        let start = reader.position
        let sizes = try reader.readUInt16()
        let offsetSize = Int(sizes >> 12 & 0xF), lengthSize = Int(sizes >> 8 & 0xF), baseSize = Int(sizes >> 4 & 0xF)
        let indexSize = version >= 1 ? Int(sizes & 0xF) : 0
        for size in [offsetSize, lengthSize, baseSize, indexSize] where ![0, 4, 8].contains(size) {
            throw MP4Error(.malformed, "iloc field size \(size) is not 0, 4 or 8", offset: reader.fileOffset)
        }
        guard version <= 2 else { throw MP4Error(.unsupported, "iloc version \(version)", offset: reader.fileOffset) }
        let itemCount = version < 2 ? UInt64(try reader.readUInt16()) : UInt64(try reader.readUInt32())
        // Every item takes at least its ID, data reference and extent count: a count the
        // bytes cannot hold is refused before anything is allocated.
        let idSize = version < 2 ? 2 : 4
        _ = try reader.requireEntries(itemCount, of: idSize + (version >= 1 ? 2 : 0) + 2 + baseSize + 2, "iloc")
        func read(_ width: Int) throws -> UInt64 { try reader.readUInt(width: width) }   // 0, 2, 4 or 8 (checked above)
        var items: [Item] = []
        items.reserveCapacity(Int(itemCount))
        for _ in 0..<itemCount {
            let id = UInt32(try read(idSize))
            let method = version >= 1 ? UInt8(try reader.readUInt16() & 0xF) : 0
            let reference = try reader.readUInt16()
            let basePosition = reader.position - start
            let base = try read(baseSize)
            let extentCount = try reader.readUInt16()
            var extents: [Extent] = []
            if indexSize + offsetSize + lengthSize > 0 {
                _ = try reader.requireEntries(UInt64(extentCount), of: indexSize + offsetSize + lengthSize, "iloc extents")
                extents.reserveCapacity(Int(extentCount))
                for _ in 0..<extentCount {
                    let index = try read(indexSize)
                    let position = reader.position - start
                    let offset = try read(offsetSize)
                    extents.append(Extent(index: index, offset: offset, length: try read(lengthSize), offsetPosition: position))
                }
            }
            items.append(Item(itemID: id, constructionMethod: method, dataReferenceIndex: reference, baseOffset: base, baseOffsetPosition: basePosition, extentCount: extentCount, extents: extents))
        }
        return Self(version: version, offsetSize: offsetSize, lengthSize: lengthSize, baseOffsetSize: baseSize, indexSize: indexSize, items: items)
    }

    public var fields: [(name: String, value: FieldValue)] {
        [("offsetSize", .uint(UInt64(offsetSize))), ("lengthSize", .uint(UInt64(lengthSize))), ("baseOffsetSize", .uint(UInt64(baseOffsetSize))), ("itemCount", .uint(UInt64(items.count)))]
    }

    /// Writes the payload in the layout of ``version`` (the box's version must match).
    public func write(to writer: inout ByteWriter) {
        func put(_ value: UInt64, _ width: Int) { if width > 0 { writer.uint(value, wide: width == 8) } }
        writer.u16(UInt16(offsetSize << 12 | lengthSize << 8 | baseOffsetSize << 4 | (version >= 1 ? indexSize : 0)))
        if version < 2 { writer.u16(UInt16(truncatingIfNeeded: items.count)) } else { writer.u32(UInt32(truncatingIfNeeded: items.count)) }
        for item in items {
            if version < 2 { writer.u16(UInt16(truncatingIfNeeded: item.itemID)) } else { writer.u32(item.itemID) }
            if version >= 1 { writer.u16(UInt16(item.constructionMethod)) }
            writer.u16(item.dataReferenceIndex)
            put(item.baseOffset, baseOffsetSize)
            writer.u16(item.extentCount)
            for extent in item.extents {
                put(extent.index, indexSize)
                put(extent.offset, offsetSize)
                put(extent.length, lengthSize)
            }
        }
    }

    /// The offsets of items stored in this file (construction method 0, data reference 0): an
    /// item's base offset when it has one (its extents move with it), else each extent offset.
    public func fileOffsetFields(version: UInt8, flags: UInt32) throws -> [FileOffsetField] {
        var fields: [FileOffsetField] = []
        for item in items where item.constructionMethod == 0 && item.dataReferenceIndex == 0 {
            if baseOffsetSize > 0 {
                let decides = item.extents.isEmpty ? [item.baseOffset] : item.extents.map { item.baseOffset &+ $0.offset }
                fields.append(.base(position: item.baseOffsetPosition, width: baseOffsetSize, value: item.baseOffset, decides: decides))
            } else if offsetSize > 0 {
                for extent in item.extents {
                    fields.append(.base(position: extent.offsetPosition, width: offsetSize, value: extent.offset, decides: [extent.offset]))
                }
            } else if item.extentCount > 0 {
                throw MP4Error(.unsupported, "an iloc item has neither base nor extent offsets to relocate")
            }
        }
        return fields
    }
}
