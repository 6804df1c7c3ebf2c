/// A value in a box's dump (`mp4probe boxes`, text and JSON), independent of any output format.
public enum FieldValue: Sendable, Hashable {
    case int(Int64)
    case uint(UInt64)
    case double(Double)
    case string(String)
    case bool(Bool)
    case list([FieldValue])
    /// Unknown (an all-ones duration, an absent optional field).
    case null

    /// A 32-bit duration or time, `null` when it is the "unknown" all-ones value.
    public static func duration(_ value: UInt64) -> FieldValue { value == UInt64.max ? .null : .uint(value) }
    /// `value` through `make`, or `null`.
    public static func optional<T>(_ value: T?, _ make: (T) -> FieldValue) -> FieldValue { value.map(make) ?? .null }
    /// Flags as `0x000000` text.
    public static func hexFlags(_ flags: UInt32) -> FieldValue { .string(Hex.flags(flags)) }
}

/// One box type, declared once: its type and spec name, whether it is a full box, its parser
/// (over a reader bounded to the payload), its fields for dumps and, for a
/// ``WritableBoxModel``, its writer. A new typed
/// box is one file with a type conforming to this protocol plus one row in
/// ``BoxCatalog/models``: parsing, `boxes` output (text and JSON) and writing all follow.
///
/// ```swift
/// public struct PixelAspectRatioBox: BoxModel {
///     public static let type: FourCC = "pasp"
///     public static let specName = "PixelAspectRatioBox"
///     public static let isFullBox = false
///     public var hSpacing: UInt32, vSpacing: UInt32
///     ...
/// }
/// ```
public protocol BoxModel: Sendable, Hashable {
    /// The four-character code.
    static var type: FourCC { get }
    /// The class name in the specification (`PixelAspectRatioBox`).
    static var specName: String { get }
    /// Whether the payload starts with version and flags.
    static var isFullBox: Bool { get }
    /// Parses the payload (after version and flags for full boxes). The reader ends where the
    /// box ends; bytes left over are reported by the parser as `box-extra-bytes`.
    static func parse(_ reader: inout ByteReader, version: UInt8, flags: UInt32) throws -> Self
    /// The fields a dump shows, in order.
    var fields: [(name: String, value: FieldValue)] { get }

    // The model's roles: what `self as? any P` gives, without a dynamic cast. The runtime
    // answers a type's first cast to a protocol by searching every conformance in the binary
    // (Foundation's included): 3% of `mp4probe info` on a small file (perf). Each refining
    // protocol answers for its own role; a model declares none of these itself.

    /// The model as a sample-table box (`stts`, `stsz`, `stco`, ...), when it is one.
    var asSampleTableBox: (any SampleTableBoxModel)? { get }
    /// The model as a decoder configuration box (`avcC`, `esds`, ...), when it is one.
    var asCodecConfigurationBox: (any CodecConfigurationBoxModel)? { get }
    /// The model as a box whose payload is a table of entries, when it is one.
    var asTabularBox: (any TabularBoxModel)? { get }
    /// The model as a box that holds absolute file offsets, when it is one.
    var asFileOffsetBox: (any FileOffsetBox)? { get }
    /// Whether boxes of this type hold absolute file offsets (``FileOffsetBox``).
    static var holdsFileOffsets: Bool { get }
}

extension BoxModel {
    public var asSampleTableBox: (any SampleTableBoxModel)? { nil }
    public var asCodecConfigurationBox: (any CodecConfigurationBoxModel)? { nil }
    public var asTabularBox: (any TabularBoxModel)? { nil }
    public var asFileOffsetBox: (any FileOffsetBox)? { nil }
    public static var holdsFileOffsets: Bool { false }
}

/// A ``BoxModel`` that keeps every byte of its payload, so it can write it again.
public protocol WritableBoxModel: BoxModel {
    /// Writes the payload (after version and flags): ``BoxModel/parse(_:version:flags:)`` of
    /// what it writes gives the same model.
    func write(to writer: inout ByteWriter)
}

/// A ``BoxModel`` whose payload is a table (`elst`, `sidx`, `tfra`): `mp4probe boxes --full`
/// prints its entries one at a time.
public protocol TabularBoxModel: BoxModel {
    /// The names of an entry's fields, in order.
    static var entryFieldNames: [String] { get }
    var entryCount: Int { get }
    /// The fields of entry `index` (`0..<entryCount`).
    func entryFields(at index: Int) -> [FieldValue]
}

extension TabularBoxModel {
    public var asTabularBox: (any TabularBoxModel)? { self }
}

/// A parsed ``BoxModel`` of any type, as ``BoxContent/model(_:)`` holds it.
public struct AnyBoxModel: Sendable, Hashable {
    /// The model.
    public let base: any BoxModel

    public init(_ base: any BoxModel) { self.base = base }

    /// The model as `T`, when it is one.
    public func `as`<T: BoxModel>(_ type: T.Type) -> T? { base as? T }

    public static func == (a: AnyBoxModel, b: AnyBoxModel) -> Bool { AnyHashable(a.base) == AnyHashable(b.base) }
    public func hash(into hasher: inout Hasher) { hasher.combine(AnyHashable(base)) }
}
