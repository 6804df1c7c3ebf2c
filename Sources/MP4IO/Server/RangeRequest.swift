/// What a `Range` request header asks of a resource of known length (RFC 9110 §14), as a
/// server answers it: players probe with `bytes=0-1`, seek with `bytes=N-`, read tails with
/// `bytes=-N`.
public enum RangeRequest: Sendable, Equatable {
    /// No usable `Range` (absent, not `bytes`, several ranges, or invalid syntax): the whole
    /// resource, 200.
    case whole
    /// One satisfiable range, 206 with `Content-Range`.
    case partial(Range<UInt64>)
    /// Syntactically valid but outside the resource: 416 with `Content-Range: bytes */N`.
    case unsatisfiable

    /// Interprets `header` for a resource of `length` bytes.
    public static func parse(_ header: String?, length: UInt64) -> RangeRequest {
        guard let header else { return .whole }
        // On bytes (Characters cost grapheme breaking, for every request a player makes).
        let trimmed = header.trimmingSpaces().utf8
        guard ASCII.equalIgnoringCase(trimmed.prefix(6), "bytes=".utf8) else { return .whole }
        let spec = trimmed.dropFirst(6)
        // Several ranges: answered as the whole entity (allowed, and never garbled).
        guard !spec.contains(UInt8(ascii: ",")), let dash = spec.firstIndex(of: UInt8(ascii: "-")) else { return .whole }
        let first = String(decoding: spec[..<dash], as: UTF8.self).trimmingSpaces()
        let last = String(decoding: spec[spec.index(after: dash)...], as: UTF8.self).trimmingSpaces()
        func number(_ text: String) -> UInt64? {
            guard !text.isEmpty, text.utf8.count <= 20, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else { return nil }
            return UInt64(text)
        }
        if first.isEmpty {
            // Suffix: the last N bytes.
            guard let count = number(last) else { return .whole }
            guard count > 0, length > 0 else { return .unsatisfiable }
            return .partial((length - min(count, length))..<length)
        }
        guard let start = number(first) else { return .whole }
        let end: UInt64
        if last.isEmpty {
            end = length
        } else {
            guard let lastByte = number(last), lastByte >= start else { return .whole }
            end = lastByte == UInt64.max ? length : min(lastByte + 1, length)
        }
        guard start < length else { return .unsatisfiable }
        return .partial(start..<end)
    }
}

extension Character {
    var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
