/// Proleptic Gregorian dates and days since 1970-01-01, without a calendar or a time zone
/// (Howard Hinnant's `days_from_civil` and `civil_from_days`): LocalSend's ISO 8601 dates and a
/// zip entry's MS-DOS date both need them, and Foundation's calendars are slow and locale-bound.
package enum CivilDate {
    /// Days since 1970-01-01 of a date (`days_from_civil`); month 1-12, day 1-31.
    package static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = floorDivide(y, 400)
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// The date (year, month 1-12, day 1-31) of a count of days since 1970-01-01 (`civil_from_days`).
    package static func civil(fromDays days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = floorDivide(z, 146_097)
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// a / b rounded down (towards minus infinity), for b > 0: days before 1970 are negative.
    package static func floorDivide(_ a: Int64, _ b: Int64) -> Int64 { a >= 0 ? a / b : -((-a + b - 1) / b) }
}
