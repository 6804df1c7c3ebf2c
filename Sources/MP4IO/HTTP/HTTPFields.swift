/// The header fields of an HTTP message, in order, names as sent: the one header type of the
/// client and the server (requests and responses, parsed and written). Looked up by name
/// case-insensitively; a repeated field's values are joined with ", " (RFC 9110 §5.3).
public struct HTTPFields: Sendable, RandomAccessCollection, ExpressibleByArrayLiteral {
    public typealias Element = (name: String, value: String)

    private var fields: [Element]

    public init(_ fields: [Element] = []) { self.fields = fields }
    public init(arrayLiteral elements: (String, String)...) { fields = elements.map { (name: $0.0, value: $0.1) } }

    public var startIndex: Int { fields.startIndex }
    public var endIndex: Int { fields.endIndex }
    public subscript(position: Int) -> Element { fields[position] }

    /// The value of field `name` (any case): its values joined with ", ", or `nil` when absent.
    public subscript(name: String) -> String? {
        // Most fields come once: their value as it is, without an array of one.
        guard let first = fields.firstIndex(where: { Self.same($0.name, name) }) else { return nil }
        guard fields[(first + 1)...].contains(where: { Self.same($0.name, name) }) else { return fields[first].value }
        return values(name).joined(separator: ", ")
    }

    /// Every value of field `name` (any case), in order.
    public func values(_ name: String) -> [String] {
        fields.filter { Self.same($0.name, name) }.map(\.value)
    }

    /// Whether a field `name` (any case) is present.
    public func contains(_ name: String) -> Bool { fields.contains { Self.same($0.name, name) } }

    public mutating func append(_ field: Element) { fields.append(field) }
    public mutating func append(contentsOf other: HTTPFields) { fields += other.fields }

    /// Removes every field `name` (any case).
    public mutating func remove(_ name: String) { fields.removeAll { Self.same($0.name, name) } }

    /// The fields whose names (lower-cased) are not in `names`.
    public func removing(_ names: Set<String>) -> HTTPFields { HTTPFields(fields.filter { !names.contains($0.name.lowercased()) }) }

    /// ASCII case-insensitive equality of two field names (names are tokens: RFC 9110 §5.1).
    static func same(_ a: String, _ b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        // Over contiguous UTF-8 when both have it (native strings: every parsed field).
        let fast = a.utf8.withContiguousStorageIfAvailable { x in b.utf8.withContiguousStorageIfAvailable { y in ASCII.equalIgnoringCase(x, y) } }
        if let fast, let result = fast { return result }
        return ASCII.equalIgnoringCase(a.utf8, b.utf8)
    }
}

/// Bytes of ASCII text compared as HTTP compares tokens (header names, the `bytes` unit of a
/// range) and as the loader compares file name suffixes: letters in either case, every other
/// byte as it is.
package enum ASCII {
    static func lowered(_ byte: UInt8) -> UInt8 { (0x41...0x5A).contains(byte) ? byte | 0x20 : byte }

    package static func equalIgnoringCase(_ a: some Collection<UInt8>, _ b: some Collection<UInt8>) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { lowered($0) == lowered($1) }
    }
}

extension StringProtocol {
    /// Without the spaces and tabs at either end (HTTP's optional white space), with the
    /// standard library alone: Foundation's `trimmingCharacters(in:)` bridges to `NSString`,
    /// and header values are trimmed several times for every request and response.
    package func trimmingSpaces() -> String {
        // On bytes: Characters cost grapheme breaking, for every field of every request.
        let bytes = utf8
        var start = bytes.endIndex, end = bytes.endIndex
        var index = bytes.startIndex
        while index < bytes.endIndex {
            let next = bytes.index(after: index)
            if bytes[index] != 0x20 && bytes[index] != 0x09 {
                if start == bytes.endIndex { start = index }
                end = next
            }
            index = next
        }
        return start == bytes.endIndex ? "" : String(decoding: bytes[start..<end], as: UTF8.self)
    }

    /// Whether this comma-separated list of tokens (a `Connection` field) holds `token`
    /// (lowercase), in any case: with the standard library alone, as above (Foundation's
    /// `contains` of a string goes through `NSString`).
    package func hasToken(_ token: String) -> Bool {
        split(separator: ",").contains { $0.trimmingSpaces().lowercased() == token }
    }
}
