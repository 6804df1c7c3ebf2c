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

    /// `value` scaled by 2^`fractionBits` and rounded, as a fixed-point field is written
    /// (16.16 rates and dimensions, 8.8 volumes, 2.30 matrix terms): never trapping, NaN is 0
    /// and anything beyond ±2^62 is clamped there; callers clamp to the field's width.
    public static func fixedPoint(_ value: Double, fractionBits: Int) -> Int64 {
        let scaled = (value * Double(sign: .plus, exponent: fractionBits, significand: 1)).rounded()
        guard !scaled.isNaN else { return 0 }
        let bound = Double(sign: .plus, exponent: 62, significand: 1)
        return Int64(min(max(scaled, -bound), bound))
    }
}

