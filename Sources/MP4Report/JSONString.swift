/// A string as JSON text: the one escaper of the CLI's JSON output and the inspector page's
/// data.
public enum JSONString {
    /// Appends `text` to `out` as a quoted JSON string: quote, backslash and control characters
    /// escaped. `forHTML` also escapes what could end or confuse an HTML `<script>` element
    /// (`<`, `>`, `&`, U+2028, U+2029) and the C1 controls, so the JSON can be embedded in a page.
    public static func append(_ text: String, to out: inout String, forHTML: Bool = false) {
        out += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            default:
                let html = forHTML && ("<>&\u{2028}\u{2029}".unicodeScalars.contains(scalar) || (0x7F...0x9F).contains(scalar.value))
                if scalar.value < 0x20 || html {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }
}
