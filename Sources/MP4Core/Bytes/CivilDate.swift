/// A UTC calendar date and time of day from seconds since 1970-01-01, computed (Howard
/// Hinnant's civil_from_days, the proleptic Gregorian calendar): what the movie metadata's
/// dates and `serve`'s access log print, without a formatter.
public struct CivilDate: Sendable, Hashable {
    public var year: Int64
    /// 1 to 12.
    public var month: Int64
    /// 1 to 31.
    public var day: Int64
    /// Seconds since midnight, 0 to 86,399.
    public var secondOfDay: Int64

    public init(unixSeconds: Int64) {
        let days = unixSeconds >= 0 ? unixSeconds / 86400 : (unixSeconds - 86399) / 86400
        secondOfDay = unixSeconds - days * 86400
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        day = doy - (153 * mp + 2) / 5 + 1
        month = mp < 10 ? mp + 3 : mp - 9
        year = yoe + era * 400 + (month <= 2 ? 1 : 0)
    }

    /// Two digits, zero-padded.
    public static func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
}
