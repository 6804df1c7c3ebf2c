import Foundation

/// HTTP/1.1 message heads and body framing (RFC 9112), as plain functions over bytes: the
/// client parses responses with them, and the server requests. Every size is bounded; malformed input is an error, never a guess.
enum HTTPMessage {
    /// Most bytes a head (start line and header fields) may take.
    static let maxHeadSize = 64 << 10
    /// Most header fields in one head.
    static let maxFieldCount = 200
    /// Longest chunk-size line (with extensions) or trailer line.
    static let maxLineSize = 8 << 10

    /// A parsed head: the start line's three parts and the header fields in order.
    struct Head: Sendable {
        var startLine: (String, String, String)
        var fields: HTTPFields

        func values(_ name: String) -> [String] { fields.values(name) }
    }

    struct Malformed: Error, CustomStringConvertible {
        var description: String
        /// The head is over a bound (its size or its number of fields): a server answers 431.
        var tooLarge = false
    }

    /// Where the head in `bytes` ends (the index just after the empty line), or `nil` when it
    /// has not all arrived. Accepts bare LF line ends, as RFC 9112 §2.2 allows a recipient to.
    /// `scanned` says how many leading bytes an earlier call already searched, so that a head
    /// arriving a byte at a time costs O(n), not O(n²).
    static func headEnd(_ bytes: ArraySlice<UInt8>, scanned: Int = 0) -> Int? {
        // Back up 3 bytes: the empty line may straddle the old end (`\r\n` | `\r\n`).
        var i = bytes.startIndex + max(0, min(scanned, bytes.count) - 3)
        while let newline = bytes[i...].firstIndex(of: 0x0A) {
            let next = newline + 1
            if next < bytes.endIndex && bytes[next] == 0x0A { return next + 1 }
            if next + 1 < bytes.endIndex && bytes[next] == 0x0D && bytes[next + 1] == 0x0A { return next + 2 }
            i = next
        }
        return nil
    }

    /// `bytes` as text when they are valid UTF-8, else `nil`. (Not `String(validating:as:)`:
    /// macOS 15 / iOS 18, newer than the deployment targets; PackageTests keeps the list.)
    static func utf8(_ bytes: ArraySlice<UInt8>) -> String? {
        // Decoded by the standard library (Foundation's decoder cost a request head 10 % of
        // the server's time); invalid bytes become U+FFFD, so a string that does not give the
        // bytes back was not UTF-8.
        let text = String(decoding: bytes, as: UTF8.self)
        // ASCII (almost every head) is UTF-8: no second pass.
        return bytes.allSatisfy({ $0 < 0x80 }) || text.utf8.elementsEqual(bytes) ? text : nil
    }

    /// Parses a head (the bytes up to and including the empty line).
    static func parseHead(_ bytes: ArraySlice<UInt8>) throws -> Head {
        guard bytes.count <= maxHeadSize else { throw Malformed(description: "head longer than \(maxHeadSize) bytes", tooLarge: true) }
        // The lines, each without its LF and a CR before it (one pass, into one array: a
        // split and a map were 40 % of a head's parse).
        var lines: [ArraySlice<UInt8>] = []
        lines.reserveCapacity(16)
        var lineStart = bytes.startIndex
        while true {
            let lineEnd = bytes[lineStart...].firstIndex(of: 0x0A) ?? bytes.endIndex
            let line = bytes[lineStart..<lineEnd]
            lines.append(line.last == 0x0D ? line.dropLast() : line)
            guard lineEnd < bytes.endIndex else { break }
            lineStart = lineEnd + 1
        }
        while lines.last?.isEmpty == true { lines.removeLast() }
        guard let first = lines.first, !first.isEmpty else { throw Malformed(description: "empty start line") }
        guard lines.count - 1 <= maxFieldCount else { throw Malformed(description: "more than \(maxFieldCount) header fields", tooLarge: true) }
        guard !first.contains(0), !first.contains(0x0D), let startText = utf8(first) ?? String(bytes: first, encoding: .isoLatin1) else {
            throw Malformed(description: "unreadable start line")
        }
        // Split on the bytes of the spaces (a split of Characters was a tenth of the head's parse).
        let parts = startText.utf8.split(separator: 0x20, maxSplits: 2, omittingEmptySubsequences: false).map { String(decoding: $0, as: UTF8.self) }
        guard parts.count >= 2 else { throw Malformed(description: "start line '\(startText.prefix(80))' is not 'A B C'") }
        var fields = HTTPFields()
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: 0x3A) else { throw Malformed(description: "header line without ':'") }
            guard line.first != 0x20 && line.first != 0x09 else { throw Malformed(description: "folded header line (obsolete, RFC 9112 §5.2)") }
            let nameBytes = line[line.startIndex..<colon]
            guard let name = utf8(nameBytes), HTTPRequest.isValidHeaderName(name) else {
                throw Malformed(description: "invalid header name")
            }
            var valueBytes = line[(colon + 1)...]
            // NUL, or a CR that is not part of the line end (RFC 9112 §2.2): never passed on (an
            // ETag is sent back in If-Range).
            guard !valueBytes.contains(0), !valueBytes.contains(0x0D) else { throw Malformed(description: "NUL or bare CR in the value of \(name)") }
            // Optional white space around the value (bytes, not Foundation's trimming: this
            // runs for every field of every request).
            while let first = valueBytes.first, first == 0x20 || first == 0x09 { valueBytes = valueBytes.dropFirst() }
            while let last = valueBytes.last, last == 0x20 || last == 0x09 { valueBytes = valueBytes.dropLast() }
            let value = utf8(valueBytes) ?? String(bytes: valueBytes, encoding: .isoLatin1) ?? ""
            fields.append((name, value))
        }
        return Head(startLine: (parts[0], parts[1], parts.count > 2 ? parts[2] : ""), fields: fields)
    }

    /// How a response body is delimited.
    enum Framing: Equatable {
        /// No body (HEAD, 1xx, 204, 304).
        case none
        /// Exactly this many bytes.
        case length(UInt64)
        /// `Transfer-Encoding: chunked`.
        case chunked
        /// Until the server closes the connection.
        case untilClose
    }

    /// The framing of a response with `status` and `head` (RFC 9112 §6.3). A `Content-Length`
    /// that is not a number, or several that disagree, is an error (a response-splitting sign).
    static func responseFraming(status: Int, head: Head, requestWasHead: Bool = false) throws -> Framing {
        if requestWasHead || (100..<200).contains(status) || status == 204 || status == 304 { return .none }
        let transferEncoding = head.values("transfer-encoding").joined(separator: ",").lowercased()
        if !transferEncoding.isEmpty {
            let codings = transferEncoding.split(separator: ",").map { $0.trimmingSpaces() }
            // Chunked must be last; anything else is read until close.
            return codings.last == "chunked" ? .chunked : .untilClose
        }
        let fields = head.values("content-length")
        if fields.isEmpty { return .untilClose }
        let lengths = fields.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false) }.map { $0.trimmingSpaces() }
        guard let first = lengths.first else { throw Malformed(description: "empty Content-Length") }
        guard lengths.allSatisfy({ $0 == first }), !first.isEmpty, first.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let length = UInt64(first) else {
            throw Malformed(description: "invalid Content-Length '\(lengths.joined(separator: ", "))'")
        }
        return .length(length)
    }

    /// The largest chunk taken as real (1 TiB): a larger size is an error of the response.
    static let maxChunkSize: UInt64 = 1 << 40

    /// Parses a chunk-size line (`1a3f;ext=1`): the size, or an error when it is not hex or
    /// has more than 15 digits (sizes over ``maxChunkSize`` are refused by the reader).
    static func chunkSize(_ line: ArraySlice<UInt8>) throws -> UInt64 {
        let digits = line.prefix { $0 != 0x3B && $0 != 0x20 && $0 != 0x09 }
        guard !digits.isEmpty else { throw Malformed(description: "invalid chunk size") }
        guard digits.count <= 15 else { throw Malformed(description: "a chunk size of \(digits.count) hex digits, which cannot be real") }
        // After the digits: optional whitespace, then nothing or a `;` extension.
        let rest = line[digits.endIndex...].drop { $0 == 0x20 || $0 == 0x09 }
        guard rest.isEmpty || rest.first == 0x3B else { throw Malformed(description: "invalid chunk size") }
        var size: UInt64 = 0
        for byte in digits {
            let value: UInt8
            switch byte {
            case 0x30...0x39: value = byte - 0x30
            case 0x41...0x46: value = byte - 0x41 + 10
            case 0x61...0x66: value = byte - 0x61 + 10
            default: throw Malformed(description: "invalid chunk size")
            }
            size = size << 4 | UInt64(value)
        }
        return size
    }

    /// The bytes of a GET request head.
    static func requestHead(method: String = "GET", target: String, host: String, fields: HTTPFields) -> [UInt8] {
        var text = "\(method) \(target) HTTP/1.1\r\nHost: \(host)\r\n"
        for (name, value) in fields { text += "\(name): \(value)\r\n" }
        text += "\r\n"
        return Array(text.utf8)
    }
}
