import MP4Core
/// Number, size and time formatting for human output.
public enum Format {
    /// `1,234,567`.
    public static func grouped(_ value: UInt64) -> String {
        let digits = String(value)
        var out = ""
        for (i, c) in digits.enumerated() {
            if i > 0 && (digits.count - i) % 3 == 0 { out += "," }
            out.append(c)
        }
        return out
    }

    /// `12.3 KiB`, `41.0 MiB`; bytes below 1 KiB as `812 B`.
    public static func bytes(_ value: UInt64) -> String {
        let units = ["KiB", "MiB", "GiB", "TiB"]
        if value < 1024 { return "\(value) B" }
        var amount = Double(value) / 1024
        var unit = 0
        while amount >= 1024 && unit < units.count - 1 {
            amount /= 1024
            unit += 1
        }
        return fixed(amount, 1) + " " + units[unit]
    }

    /// `hh:mm:ss.mmm`.
    public static func clock(_ seconds: Double) -> String {
        guard seconds.isFinite, seconds >= 0, seconds < 9e15 else { return seconds.isFinite && seconds >= 0 ? String(seconds) + " s" : "?" }
        let totalMillis = UInt64((seconds * 1000).rounded())
        let millis = totalMillis % 1000
        let totalSeconds = totalMillis / 1000
        func pad(_ v: UInt64, _ width: Int) -> String {
            let s = String(v)
            return String(repeating: "0", count: max(0, width - s.count)) + s
        }
        return "\(pad(totalSeconds / 3600, 2)):\(pad(totalSeconds / 60 % 60, 2)):\(pad(totalSeconds % 60, 2)).\(pad(millis, 3))"
    }

    /// `value` with `digits` decimals.
    public static func fixed(_ value: Double, _ digits: Int) -> String {
        guard value.isFinite else { return "?" }
        var scale = 1.0
        for _ in 0..<digits { scale *= 10 }
        let scaled = (abs(value) * scale).rounded()
        // A time or rate computed from hostile tables can be any size: beyond what 64-bit
        // integers hold it is printed as Swift prints doubles (1e+20), never converted.
        guard scaled < 9e18 else { return String(value) }
        let whole = UInt64(scaled / scale)
        let fraction = UInt64(scaled) - whole * UInt64(scale)
        var text = (value < 0 && scaled > 0 ? "-" : "") + String(whole)
        if digits > 0 {
            let f = String(fraction)
            text += "." + String(repeating: "0", count: digits - f.count) + f
        }
        return text
    }

    /// `1 234 kb/s` style bit rate (`b/s` below 1 kb/s, so a slow track never shows 0 kb/s).
    public static func bitRate(_ bitsPerSecond: UInt64) -> String {
        if bitsPerSecond >= 10_000_000 { return fixed(Double(bitsPerSecond) / 1_000_000, 1) + " Mb/s" }
        if bitsPerSecond < 1000 { return "\(bitsPerSecond) b/s" }
        return grouped((bitsPerSecond + 500) / 1000) + " kb/s"
    }

    /// `1 sample`, `2,000 samples`: a count with its noun in the right number.
    public static func count(_ value: some BinaryInteger, _ noun: String, plural: String? = nil) -> String {
        let number = grouped(UInt64(clamping: value))
        return value == 1 ? "\(number) \(noun)" : "\(number) \(plural ?? noun + "s")"
    }

    /// An inclusive byte range as HTTP writes it, with its size: `bytes 100-199 (100 bytes)`.
    public static func byteRange(_ range: Range<UInt64>) -> String {
        guard !range.isEmpty else { return "no bytes" }
        return "bytes \(range.lowerBound)-\(range.upperBound - 1) (\(count(range.upperBound - range.lowerBound, "byte")))"
    }

    /// Ranges as the value of an HTTP `Range` header: `bytes=0-99,200-299`.
    public static func rangeHeader(_ ranges: some Collection<Range<UInt64>>) -> String {
        "bytes=" + ranges.filter { !$0.isEmpty }.map { "\($0.lowerBound)-\($0.upperBound - 1)" }.joined(separator: ",")
    }

    /// `0x000001`.
    public static func hexFlags(_ flags: UInt32) -> String { Hex.flags(flags) }
}

extension String {
    /// The text with control characters (C0, DEL, C1: terminal escapes, line breaks) shown as
    /// `\u{1B}` and the like: strings from a file are printed to terminals, and a hostile
    /// file must not move the cursor, recolour the screen or forge lines.
    public func replacingControlCharacters() -> String {
        guard unicodeScalars.contains(where: { $0.value < 0x20 || (0x7F...0x9F).contains($0.value) }) else { return self }
        var result = ""
        for scalar in unicodeScalars {
            if scalar.value < 0x20 || (0x7F...0x9F).contains(scalar.value) {
                result += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }
}
