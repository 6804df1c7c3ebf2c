/// `ftyp` (ISO/IEC 14496-12 §4.3) and `styp` (§8.16.2) share one layout: a major brand, its
/// minor version and the compatible brands. Both declarations below take it from here.
public protocol BrandListBoxModel: WritableBoxModel, TabularBoxModel {
    /// The best-use brand (`isom`, `mp42`, `qt  `, `dash`, ...).
    var majorBrand: FourCC { get }
    /// The minor version of the major brand.
    var minorVersion: UInt32 { get }
    /// Brands the file is compatible with.
    var compatibleBrands: [FourCC] { get }
    init(majorBrand: FourCC, minorVersion: UInt32, compatibleBrands: [FourCC])
}

extension BrandListBoxModel {
    public static var isFullBox: Bool { false }

    /// Parses the payload; brands are read while four bytes remain (1–3 left over are
    /// reported as extra bytes).
    /// - Throws: ``MP4Error/Kind/truncated`` when fewer than 8 bytes remain.
    public static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> Self {
        let major = try reader.readFourCC()
        let minor = try reader.readUInt32()
        var brands: [FourCC] = []
        brands.reserveCapacity(reader.remaining / 4)
        while reader.remaining >= 4 { brands.append(try reader.readFourCC()) }
        return Self(majorBrand: major, minorVersion: minor, compatibleBrands: brands)
    }

    public var fields: [(name: String, value: FieldValue)] {
        [("majorBrand", .string(majorBrand.description)), ("minorVersion", .uint(UInt64(minorVersion))), ("compatibleBrands", .list(compatibleBrands.map { .string($0.description) }))]
    }

    public func write(to writer: inout ByteWriter) {
        writer.fourCC(majorBrand)
        writer.u32(minorVersion)
        for brand in compatibleBrands { writer.fourCC(brand) }
    }

    public static var entryFieldNames: [String] { ["brand"] }
    public var entryCount: Int { compatibleBrands.count }
    public func entryFields(at index: Int) -> [FieldValue] { [.string(compatibleBrands[index].description)] }
}

/// `ftyp`: the file type box.
public struct FileTypeBox: BrandListBoxModel, Codable {
    public static let type: FourCC = "ftyp"
    public static let specName = "FileTypeBox"
    public var majorBrand: FourCC
    public var minorVersion: UInt32
    public var compatibleBrands: [FourCC]

    /// Creates the model.
    public init(majorBrand: FourCC, minorVersion: UInt32, compatibleBrands: [FourCC]) {
        self.majorBrand = majorBrand
        self.minorVersion = minorVersion
        self.compatibleBrands = compatibleBrands
    }

    /// Parses the payload.
    public static func parse(_ reader: inout ByteReader) throws -> FileTypeBox { try parse(&reader, version: 0, flags: 0) }

    /// Whether the file declares itself a QuickTime movie.
    public var isQuickTime: Bool { majorBrand == .qt }
}

/// `styp`: the segment type box of a media segment.
public struct SegmentTypeBox: BrandListBoxModel {
    public static let type: FourCC = "styp"
    public static let specName = "SegmentTypeBox"
    public var majorBrand: FourCC
    public var minorVersion: UInt32
    public var compatibleBrands: [FourCC]

    public init(majorBrand: FourCC, minorVersion: UInt32, compatibleBrands: [FourCC]) {
        self.majorBrand = majorBrand
        self.minorVersion = minorVersion
        self.compatibleBrands = compatibleBrands
    }
}
