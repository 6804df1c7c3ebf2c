/// JSON text written straight into a string, for the inspector's data: arrays of numbers
/// (chunk spans, seek ranges) run to tens of thousands of values, so nothing is built as a
/// tree first. Every string is escaped for JSON and for an HTML `<script>` element (`<` is
/// written `\u003c`, so no `</script>` can end it early: ``JSONString``).
struct PageJSON {
    private(set) var text = ""
    /// Whether the next value in the current array or object needs a comma first.
    private var needsComma = false

    init() { text.reserveCapacity(1 << 16) }

    private mutating func separate() {
        if needsComma { text += "," }
        needsComma = true
    }

    mutating func key(_ name: String) {
        separate()
        Self.escape(name, into: &text)
        text += ":"
        needsComma = false
    }

    mutating func string(_ value: String) {
        separate()
        Self.escape(value, into: &text)
    }

    /// A number; a value JSON cannot hold (NaN, infinity) is `null`.
    mutating func number(_ value: Double) {
        separate()
        guard value.isFinite else { text += "null"; return }
        if abs(value) >= 9e15 {
            text += String(value)  // 1e+300: JSON, and never multiplied past infinity
        } else if value == value.rounded() {
            text += String(Int64(value))
        } else {
            text += String((value * 1000).rounded() / 1000)
        }
    }

    mutating func number(_ value: UInt64) {
        separate()
        text += String(value)
    }

    mutating func number(_ value: Int) {
        separate()
        text += String(value)
    }

    mutating func bool(_ value: Bool) {
        separate()
        text += value ? "true" : "false"
    }

    mutating func null() {
        separate()
        text += "null"
    }

    mutating func optional<T>(_ value: T?, _ write: (inout PageJSON, T) -> Void) {
        if let value { write(&self, value) } else { null() }
    }

    mutating func array(_ body: (inout PageJSON) -> Void) {
        separate()
        text += "["
        needsComma = false
        body(&self)
        text += "]"
        needsComma = true
    }

    mutating func object(_ body: (inout PageJSON) -> Void) {
        separate()
        text += "{"
        needsComma = false
        body(&self)
        text += "}"
        needsComma = true
    }

    /// A member `name: value` of the current object.
    mutating func member(_ name: String, _ write: (inout PageJSON) -> Void) {
        key(name)
        write(&self)
    }

    static func escape(_ value: String, into out: inout String) {
        JSONString.append(value, to: &out, forHTML: true)
    }
}
