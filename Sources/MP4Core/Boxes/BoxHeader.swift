/// The header of a box (ISO/IEC 14496-12 §4.2): size, type, optional 64-bit size and
/// optional `uuid` user type.
///
/// `size == 1` means a 64-bit `largesize` follows the type; `size == 0` means the box runs to
/// the end of its container (the end of the file at top level). For `uuid` boxes the 16-byte
/// user type follows the (large)size, as the spec orders it.
public struct BoxHeader: Sendable, Hashable {
    /// The box type.
    public var type: FourCC
    /// Absolute file offset of the first byte of the box.
    public var offset: UInt64
    /// Bytes of header: 8, 16 with `largesize`, plus 16 for a `uuid` user type.
    public var headerSize: Int
    /// The total size the header declares (resolved to the end of the container for
    /// `size == 0`).
    public var size: UInt64
    /// Whether the header used `size == 1` and a 64-bit `largesize`.
    public var usesLargeSize: Bool
    /// Whether the header used `size == 0` (extends to the end of its container).
    public var extendsToEnd: Bool
    /// The 16-byte extended type of a `uuid` box.
    public var userType: [UInt8]?

    /// Creates a header.
    public init(type: FourCC, offset: UInt64, headerSize: Int, size: UInt64, usesLargeSize: Bool = false, extendsToEnd: Bool = false, userType: [UInt8]? = nil) {
        self.type = type
        self.offset = offset
        self.headerSize = headerSize
        self.size = size
        self.usesLargeSize = usesLargeSize
        self.extendsToEnd = extendsToEnd
        self.userType = userType
    }

    /// Absolute offset one past the last byte the header claims (saturating).
    public var endOffset: UInt64 { CheckedMath.add(offset, size) ?? UInt64.max }
    /// Absolute offset of the payload (after the header).
    public var payloadOffset: UInt64 { offset + UInt64(headerSize) }
    /// Bytes of payload the header claims.
    public var payloadSize: UInt64 { size - UInt64(headerSize) }

    /// The user type as a UUID string (`8-4-4-4-12` lowercase hex), for `uuid` boxes.
    public var userTypeString: String? {
        guard let userType, userType.count == 16 else { return nil }
        return [0..<4, 4..<6, 6..<8, 8..<10, 10..<16].map { Hex.bytes(userType[$0]) }.joined(separator: "-")
    }

    /// The most header bytes a box can have (size, type, largesize, user type).
    public static let maximumSize = 32

    /// Parses a header from the start of `bytes`, which begin at file offset `offset`.
    ///
    /// - Parameters:
    ///   - bytes: at least the header's bytes (up to ``maximumSize``); fewer is fine when the
    ///     data really ends there.
    ///   - offset: absolute file offset of `bytes.first`.
    ///   - containerEnd: absolute end of the enclosing box or file; resolves `size == 0`.
    /// - Throws: ``MP4Error/Kind/truncated`` when the header itself is cut short,
    ///   ``MP4Error/Kind/malformed`` when the size is smaller than the header.
    ///   A size reaching past `containerEnd` is *not* an error here; callers decide.
    public static func parse(_ bytes: ArraySlice<UInt8>, at offset: UInt64, containerEnd: UInt64) throws -> BoxHeader {
        var reader = ByteReader(Array(bytes.prefix(maximumSize)), baseOffset: offset)
        guard reader.remaining >= 8 else {
            throw MP4Error(.truncated, "box header needs 8 bytes but only \(reader.remaining) remain", offset: offset)
        }
        let size32 = try reader.readUInt32()
        let type = try reader.readFourCC()
        var headerSize = 8
        var size: UInt64
        var usesLargeSize = false
        var extendsToEnd = false
        switch size32 {
        case 1:
            guard reader.remaining >= 8 else {
                throw MP4Error(.truncated, "box '\(type)' announces a 64-bit size but the data ends after \(reader.remaining) of its 8 bytes", offset: offset)
            }
            size = try reader.readUInt64()
            headerSize = 16
            usesLargeSize = true
            if size < 16 {
                throw MP4Error(.malformed, "box '\(type)' has a 64-bit size of \(size), below its 16-byte header", offset: offset)
            }
        case 0:
            extendsToEnd = true
            size = containerEnd >= offset ? containerEnd - offset : 0
        default:
            size = UInt64(size32)
            if size < 8 {
                throw MP4Error(.malformed, "box '\(type)' has size \(size), below its 8-byte header", offset: offset)
            }
        }
        var userType: [UInt8]?
        if type == .uuid {
            guard reader.remaining >= 16 else {
                throw MP4Error(.truncated, "uuid box needs a 16-byte user type but only \(reader.remaining) bytes remain", offset: offset)
            }
            userType = Array(try reader.readBytes(16))
            headerSize += 16
        }
        if size < UInt64(headerSize) {
            if extendsToEnd {
                throw MP4Error(.truncated, "box '\(type)' runs to the end but \(size) bytes cannot hold its \(headerSize)-byte header", offset: offset)
            }
            throw MP4Error(.malformed, "box '\(type)' has size \(size), below its \(headerSize)-byte header", offset: offset)
        }
        return BoxHeader(type: type, offset: offset, headerSize: headerSize, size: size, usesLargeSize: usesLargeSize, extendsToEnd: extendsToEnd, userType: userType)
    }
}
