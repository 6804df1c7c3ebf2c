/// Where a box stores an absolute file offset: what a rewrite that moves bytes (faststart)
/// must change. Positions count from the start of the payload after version and flags.
public enum FileOffsetField: Sendable, Hashable {
    /// `count` offsets of `width` bytes (4 or 8), one after another from `position`
    /// (`stco`, `co64`, `saio`, `tfhd`'s base data offset).
    case run(position: Int, count: Int, width: Int)
    /// One field of `width` bytes (4 or 8) at `position` holding `value`, from which the
    /// absolute offsets `decides` follow (an `iloc` item's base offset and its extents, or
    /// one extent offset): it moves by what they move by, which must be one amount.
    case base(position: Int, width: Int, value: UInt64, decides: [UInt64])
}

/// A box that holds absolute file offsets. The one protocol relocation iterates: a rewrite
/// walks the tree, asks each such box where its offsets are, and patches them; a new box of
/// this kind is relocated once it conforms.
public protocol FileOffsetBox: BoxModel {
    /// The box's offset fields that point into this file.
    /// - Parameter version: the box's version; `flags`: its flags (full boxes).
    /// - Throws: ``MP4Error/Kind/unsupported`` when the box holds offsets that cannot be
    ///   relocated consistently.
    func fileOffsetFields(version: UInt8, flags: UInt32) throws -> [FileOffsetField]
}

extension FileOffsetBox {
    public var asFileOffsetBox: (any FileOffsetBox)? { self }
    public static var holdsFileOffsets: Bool { true }
}

extension ChunkOffsetBox: FileOffsetBox {
    public func fileOffsetFields(version: UInt8, flags: UInt32) throws -> [FileOffsetField] {
        [.run(position: 4, count: table.entryCount, width: 4)]
    }
}

extension ChunkLargeOffsetBox: FileOffsetBox {
    public func fileOffsetFields(version: UInt8, flags: UInt32) throws -> [FileOffsetField] {
        [.run(position: 4, count: table.entryCount, width: 8)]
    }
}

extension TrackFragmentHeaderBox: FileOffsetBox {
    /// The explicit base data offset, when the box has one (flag 0x1).
    public func fileOffsetFields(version: UInt8, flags: UInt32) throws -> [FileOffsetField] {
        baseDataOffset == nil ? [] : [.run(position: 4, count: 1, width: 8)]
    }
}
