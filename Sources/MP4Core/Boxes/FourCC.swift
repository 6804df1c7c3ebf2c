/// A four-character code: the type of a box, a brand, a codec, a handler.
///
/// Printable codes print as their four characters (`moov`, `avc1`, `.4 (`); others print as
/// `0x` and eight hex digits, so that every code has a readable, unambiguous text form.
public struct FourCC: Hashable, Sendable, Comparable, CustomStringConvertible, ExpressibleByStringLiteral, Codable {
    /// The code as a big-endian 32-bit number.
    public let rawValue: UInt32

    /// A code from its numeric value.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// A code from four characters of Latin-1 text (for literals in code, not for file data).
    public init(stringLiteral value: String) {
        var raw: UInt32 = 0
        var count = 0
        for scalar in value.unicodeScalars {
            precondition(scalar.value <= 0xFF, "four-character code literal must be Latin-1")
            raw = raw << 8 | scalar.value
            count += 1
        }
        precondition(count == 4, "four-character code literal must have four characters")
        self.rawValue = raw
    }

    /// A code from text, or `nil` unless it is exactly four Latin-1 characters.
    public init?(_ text: String) {
        var raw: UInt32 = 0
        var count = 0
        for scalar in text.unicodeScalars {
            guard scalar.value <= 0xFF else { return nil }
            raw = raw << 8 | scalar.value
            count += 1
        }
        guard count == 4 else { return nil }
        self.rawValue = raw
    }

    /// The four bytes, most significant first.
    public var bytes: [UInt8] {
        [UInt8(rawValue >> 24), UInt8(truncatingIfNeeded: rawValue >> 16), UInt8(truncatingIfNeeded: rawValue >> 8), UInt8(truncatingIfNeeded: rawValue)]
    }

    /// Whether all four bytes are printable ASCII (or `©`, used by iTunes and QuickTime tags).
    public var isPrintable: Bool {
        bytes.allSatisfy { ($0 >= 0x20 && $0 <= 0x7E) || $0 == 0xA9 }
    }

    public var description: String {
        if isPrintable {
            return String(String.UnicodeScalarView(bytes.map { Unicode.Scalar($0) }))
        }
        let hex = String(rawValue, radix: 16)
        return "0x" + String(repeating: "0", count: 8 - hex.count) + hex
    }

    public static func < (lhs: FourCC, rhs: FourCC) -> Bool { lhs.rawValue < rhs.rawValue }

    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        if let code = FourCC(text) {
            self = code
        } else if text.hasPrefix("0x"), let raw = UInt32(text.dropFirst(2), radix: 16) {
            self.init(rawValue: raw)
        } else {
            throw MP4Error(.malformed, "not a four-character code: \(text)")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
