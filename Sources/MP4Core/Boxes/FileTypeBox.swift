/// `ftyp` / `styp`: the file (or segment) type box, ISO/IEC 14496-12 §4.3.
public struct FileTypeBox: Sendable, Hashable, Codable {
    /// The best-use brand (`isom`, `mp42`, `qt  `, `dash`, ...).
    public var majorBrand: FourCC
    /// The minor version of the major brand.
    public var minorVersion: UInt32
    /// Brands the file is compatible with.
    public var compatibleBrands: [FourCC]

    /// Creates the model.
    public init(majorBrand: FourCC, minorVersion: UInt32, compatibleBrands: [FourCC]) {
        self.majorBrand = majorBrand
        self.minorVersion = minorVersion
        self.compatibleBrands = compatibleBrands
    }

    /// Parses the payload.
    /// - Throws: ``MP4Error/Kind/truncated`` when fewer than 8 bytes remain.
    public static func parse(_ reader: inout ByteReader) throws -> FileTypeBox {
        let major = try reader.readFourCC()
        let minor = try reader.readUInt32()
        var brands: [FourCC] = []
        brands.reserveCapacity(reader.remaining / 4)
        while reader.remaining >= 4 { brands.append(try reader.readFourCC()) }
        return FileTypeBox(majorBrand: major, minorVersion: minor, compatibleBrands: brands)
    }

    /// Whether the file declares itself a QuickTime movie.
    public var isQuickTime: Bool { majorBrand == .qt }
}
