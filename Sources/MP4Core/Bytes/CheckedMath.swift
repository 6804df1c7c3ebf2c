/// Overflow-checked arithmetic on numbers that come from files.
public enum CheckedMath {
    /// `a + b`, or `nil` on overflow.
    @inline(__always)
    public static func add(_ a: UInt64, _ b: UInt64) -> UInt64? {
        let (sum, overflow) = a.addingReportingOverflow(b)
        return overflow ? nil : sum
    }

    /// `a * b`, or `nil` on overflow.
    @inline(__always)
    public static func multiply(_ a: UInt64, _ b: UInt64) -> UInt64? {
        let (product, overflow) = a.multipliedReportingOverflow(by: b)
        return overflow ? nil : product
    }

    /// `value * 8 / seconds` as an integer bit rate, or `nil` when undefined.
    public static func bitRate(byteCount: UInt64, seconds: Double) -> UInt64? {
        guard seconds > 0, seconds.isFinite else { return nil }
        let rate = Double(byteCount) * 8 / seconds
        guard rate.isFinite, rate >= 0, rate < 1e18 else { return nil }
        return UInt64(rate.rounded())
    }
}
