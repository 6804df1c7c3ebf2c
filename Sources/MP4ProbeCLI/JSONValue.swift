import MP4Report
/// A JSON value with ordered object keys, rendered deterministically: the output of every
/// `--json` report is stable byte for byte for the same input.
indirect enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case uint(UInt64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])
    /// An array whose elements are produced while the document is written, by
    /// ``stream(_:pretty:to:elements:)`` (index `n` of that call's producer); `[]` elsewhere.
    case streamedArray(Int)

    static func == (lhs: JSONValue, rhs: JSONValue) -> Bool { lhs.rendered(pretty: false) == rhs.rendered(pretty: false) }

    /// Renders the value; `pretty` uses two-space indentation and one member per line.
    func rendered(pretty: Bool) -> String {
        var out = ""
        write(to: &out, pretty: pretty, indent: 0)
        return out
    }

    /// Writes `document` to `output` as ``rendered(pretty:)`` would, except that each
    /// ``streamedArray(_:)`` becomes an array whose elements `elements(n, emit)` produces one
    /// at a time: memory holds one element and 64 KiB of text, whatever the array's length (a
    /// listing of millions of samples).
    static func stream(_ document: JSONValue, pretty: Bool, to output: some TextOutput,
                       elements: (Int, (JSONValue) -> Void) -> Void) {
        var buffer = ""
        document.write(to: &buffer, pretty: pretty, indent: 0) { index, indent, buffer in
            var count = 0
            elements(index) { element in
                buffer += count == 0 ? "[" : ","
                if pretty { buffer += "\n" + String(repeating: "  ", count: indent + 1) }
                element.write(to: &buffer, pretty: pretty, indent: indent + 1)
                count += 1
                if buffer.utf8.count >= 1 << 16 { output.write(buffer); buffer = "" }
            }
            if count == 0 { buffer += "[]"; return }
            if pretty { buffer += "\n" + String(repeating: "  ", count: indent) }
            buffer += "]"
        }
        output.write(buffer)
    }

    private func write(to out: inout String, pretty: Bool, indent: Int,
                       streamed: (Int, Int, inout String) -> Void = { _, _, out in out += "[]" }) {
        switch self {
        case .streamedArray(let index):
            streamed(index, indent, &out)
        case .null: out += "null"
        case .bool(let b): out += b ? "true" : "false"
        case .int(let i): out += String(i)
        case .uint(let u): out += String(u)
        case .double(let d):
            if !d.isFinite { out += "null" } else if d == d.rounded(), abs(d) < 1e15 { out += String(Int64(d)) + ".0" } else { out += String(d) }
        case .string(let s): Self.escape(s, into: &out)
        case .array(let items):
            if items.isEmpty { out += "[]"; return }
            out += "["
            for (i, item) in items.enumerated() {
                if i > 0 { out += "," }
                if pretty { out += "\n" + String(repeating: "  ", count: indent + 1) }
                item.write(to: &out, pretty: pretty, indent: indent + 1, streamed: streamed)
            }
            if pretty { out += "\n" + String(repeating: "  ", count: indent) }
            out += "]"
        case .object(let members):
            if members.isEmpty { out += "{}"; return }
            out += "{"
            for (i, (key, value)) in members.enumerated() {
                if i > 0 { out += "," }
                if pretty { out += "\n" + String(repeating: "  ", count: indent + 1) }
                Self.escape(key, into: &out)
                out += pretty ? ": " : ":"
                value.write(to: &out, pretty: pretty, indent: indent + 1, streamed: streamed)
            }
            if pretty { out += "\n" + String(repeating: "  ", count: indent) }
            out += "}"
        }
    }

    private static func escape(_ text: String, into out: inout String) {
        JSONString.append(text, to: &out)
    }
}

extension JSONValue {
    static func optional<T>(_ value: T?, _ transform: (T) -> JSONValue) -> JSONValue {
        value.map(transform) ?? .null
    }
}
