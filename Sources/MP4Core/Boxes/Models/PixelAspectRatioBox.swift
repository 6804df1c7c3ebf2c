/// `pasp` (ISO/IEC 14496-12 12.1.4): the pixel aspect ratio of a visual sample entry,
/// `hSpacing:vSpacing` (1:1 for square pixels; 4:3 for anamorphic DV widescreen...).
public struct PixelAspectRatioBox: WritableBoxModel {
    public static let type: FourCC = "pasp"
    public static let specName = "PixelAspectRatioBox"
    public static let isFullBox = false

    public var hSpacing: UInt32
    public var vSpacing: UInt32

    public init(hSpacing: UInt32, vSpacing: UInt32) {
        self.hSpacing = hSpacing
        self.vSpacing = vSpacing
    }

    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> PixelAspectRatioBox {
        PixelAspectRatioBox(hSpacing: try reader.readUInt32(), vSpacing: try reader.readUInt32())
    }

    public var fields: [(name: String, value: FieldValue)] {
        [("hSpacing", .uint(UInt64(hSpacing))), ("vSpacing", .uint(UInt64(vSpacing)))]
    }

    public func write(to writer: inout ByteWriter) {
        writer.u32(hSpacing)
        writer.u32(vSpacing)
    }
}
