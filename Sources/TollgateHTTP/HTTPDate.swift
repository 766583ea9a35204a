#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// HTTP timestamps (RFC 9110 §5.6.7): parses the three forms a recipient must accept and
/// formats the one a sender must use.
///
/// - IMF-fixdate: `Sun, 06 Nov 1994 08:49:37 GMT` (the only form sent)
/// - obsolete RFC 850: `Sunday, 06-Nov-94 08:49:37 GMT`
/// - obsolete asctime: `Sun Nov  6 08:49:37 1994`
///
/// The parser works on UTF-8 bytes without allocating (it runs for every cached response).
/// Day and month names are matched ASCII case-insensitively; the day name must be a real
/// one but is not checked against the date (as in most implementations). Leading and trailing
/// whitespace is ignored; anything else out of place, or an impossible date or time, gives nil.
/// A leap second (`:60`) is accepted and lands on the next minute's first second.
public enum HTTPDate {
    /// Parses an HTTP date, or returns nil if it is not a valid one.
    /// - Parameter now: the reference for two-digit RFC 850 years (default: the current time).
    public static func parse(_ value: String, now: Date? = nil) -> Date? {
        var value = value
        return value.withUTF8 { seconds($0, now: now) }.map { Date(timeIntervalSince1970: Double($0)) }
    }

    /// Parses an HTTP date, or returns nil if it is not a valid one.
    /// - Parameter now: the reference for two-digit RFC 850 years (default: the current time).
    public static func parse(_ value: Substring, now: Date? = nil) -> Date? {
        var value = value
        return value.withUTF8 { seconds($0, now: now) }.map { Date(timeIntervalSince1970: Double($0)) }
    }

    /// Formats `date` as an IMF-fixdate, e.g. `Sun, 06 Nov 1994 08:49:37 GMT`.
    ///
    /// Fractions of a second are dropped (rounded down). Dates outside years 1…9999, which the
    /// four-digit year cannot show, are clamped to that range.
    public static func format(_ date: Date) -> String {
        let interval = date.timeIntervalSince1970
        let floored = interval.isNaN ? 0 : interval.rounded(.down)
        let clamped = min(max(floored, Double(minimumSeconds)), Double(maximumSeconds))
        let seconds = Int64(clamped)
        let days = floorDiv(seconds, 86_400)
        let secondOfDay = Int(seconds - days * 86_400)
        let (year, month, day) = civil(fromDays: days)
        let weekday = Int(floorMod(days + 4, 7))  // 1970-01-01 was a Thursday (index 4 from Sunday)
        return String(unsafeUninitializedCapacity: 29) { out in
            func put(_ text: StaticString, at offset: Int) {
                text.withUTF8Buffer { for (i, byte) in $0.enumerated() { out[offset + i] = byte } }
            }
            func put(_ number: Int, digits: Int, at offset: Int) {
                var number = number
                for i in stride(from: digits - 1, through: 0, by: -1) {
                    out[offset + i] = UInt8(ascii: "0") + UInt8(number % 10)
                    number /= 10
                }
            }
            let names = dayNames[weekday].utf8
            for (i, byte) in names.prefix(3).enumerated() { out[i] = byte }
            put(", ", at: 3)
            put(day, digits: 2, at: 5)
            out[7] = UInt8(ascii: " ")
            for (i, byte) in monthNames[month - 1].utf8.enumerated() { out[8 + i] = byte }
            out[11] = UInt8(ascii: " ")
            put(year, digits: 4, at: 12)
            out[16] = UInt8(ascii: " ")
            put(secondOfDay / 3600, digits: 2, at: 17)
            out[19] = UInt8(ascii: ":")
            put(secondOfDay / 60 % 60, digits: 2, at: 20)
            out[22] = UInt8(ascii: ":")
            put(secondOfDay % 60, digits: 2, at: 23)
            put(" GMT", at: 25)
            return 29
        }
    }

    // MARK: - Parsing

    /// Seconds since 1970 of the date in `bytes`, or nil.
    static func seconds(_ bytes: UnsafeBufferPointer<UInt8>, now: Date?) -> Int64? {
        var lo = 0
        var hi = bytes.count
        while lo < hi, bytes[lo] == 0x20 || bytes[lo] == 0x09 { lo += 1 }
        while hi > lo, bytes[hi - 1] == 0x20 || bytes[hi - 1] == 0x09 { hi -= 1 }
        let b = UnsafeBufferPointer(rebasing: bytes[lo..<hi])
        guard b.count >= 24 else { return nil }
        // The fourth byte tells the forms apart: `Sun,` / `Sun ` / `Sunday,`.
        switch b[3] {
        case UInt8(ascii: ","): return imfFixdate(b)
        case UInt8(ascii: " "): return asctime(b)
        default: return rfc850(b, now: now)
        }
    }

    /// `Sun, 06 Nov 1994 08:49:37 GMT`
    private static func imfFixdate(_ b: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard b.count == 29, dayIndex(b, 0) != nil, b[4] == 0x20, let day = twoDigits(b, 5), b[7] == 0x20,
            let month = monthIndex(b, 8), b[11] == 0x20, let high = twoDigits(b, 12), let low = twoDigits(b, 14),
            b[16] == 0x20, let time = timeOfDay(b, 17), b[25] == 0x20, isGMT(b, 26)
        else { return nil }
        return timestamp(year: high * 100 + low, month: month, day: day, secondOfDay: time)
    }

    /// `Sunday, 06-Nov-94 08:49:37 GMT`
    private static func rfc850(_ b: UnsafeBufferPointer<UInt8>, now: Date?) -> Int64? {
        guard let weekday = dayIndex(b, 0) else { return nil }
        let full = dayNames[weekday].utf8
        let k = full.count  // index of the comma
        guard b.count == k + 24 else { return nil }
        for (i, expected) in full.enumerated() where lowercased(b[i]) != lowercased(expected) { return nil }
        guard b[k] == UInt8(ascii: ","), b[k + 1] == 0x20, let day = twoDigits(b, k + 2), b[k + 4] == UInt8(ascii: "-"),
            let month = monthIndex(b, k + 5), b[k + 8] == UInt8(ascii: "-"), let yy = twoDigits(b, k + 9),
            b[k + 11] == 0x20, let time = timeOfDay(b, k + 12), b[k + 20] == 0x20, isGMT(b, k + 21)
        else { return nil }
        return timestamp(year: fullYear(twoDigit: yy, now: now ?? Date()), month: month, day: day, secondOfDay: time)
    }

    /// `Sun Nov  6 08:49:37 1994` (the day is two digits or a space and a digit).
    private static func asctime(_ b: UnsafeBufferPointer<UInt8>) -> Int64? {
        guard b.count == 24, dayIndex(b, 0) != nil, let month = monthIndex(b, 4), b[7] == 0x20 else { return nil }
        let day: Int
        if b[8] == 0x20, let units = digit(b[9]) {
            day = units
        } else if let two = twoDigits(b, 8) {
            day = two
        } else {
            return nil
        }
        guard b[10] == 0x20, let time = timeOfDay(b, 11), b[19] == 0x20, let high = twoDigits(b, 20),
            let low = twoDigits(b, 22)
        else { return nil }
        return timestamp(year: high * 100 + low, month: month, day: day, secondOfDay: time)
    }

    /// RFC 9110 §5.6.7: a two-digit year more than 50 years in the future is the most recent
    /// past year with those digits; that is, the latest such year not after now + 50.
    static func fullYear(twoDigit yy: Int, now: Date) -> Int {
        let nowSeconds = Int64(now.timeIntervalSince1970.rounded(.down))
        let limit = civil(fromDays: floorDiv(nowSeconds, 86_400)).year + 50
        return limit - Int(floorMod(Int64(limit - yy), 100))
    }

    /// `HH:MM:SS` with hour 00–23, minute 00–59, second 00–60, as seconds of the day.
    private static func timeOfDay(_ b: UnsafeBufferPointer<UInt8>, _ i: Int) -> Int? {
        guard let hour = twoDigits(b, i), hour < 24, b[i + 2] == UInt8(ascii: ":"), let minute = twoDigits(b, i + 3),
            minute < 60, b[i + 5] == UInt8(ascii: ":"), let second = twoDigits(b, i + 6), second <= 60
        else { return nil }
        return hour * 3600 + minute * 60 + second
    }

    private static func timestamp(year: Int, month: Int, day: Int, secondOfDay: Int) -> Int64? {
        guard day >= 1, day <= daysIn(month: month, year: year) else { return nil }
        return days(fromCivil: year, month, day) * 86_400 + Int64(secondOfDay)
    }

    private static func digit(_ byte: UInt8) -> Int? {
        byte >= 0x30 && byte <= 0x39 ? Int(byte - 0x30) : nil
    }

    private static func twoDigits(_ b: UnsafeBufferPointer<UInt8>, _ i: Int) -> Int? {
        guard let tens = digit(b[i]), let units = digit(b[i + 1]) else { return nil }
        return tens * 10 + units
    }

    private static func isGMT(_ b: UnsafeBufferPointer<UInt8>, _ i: Int) -> Bool {
        packed(b, i) == gmtKey
    }

    /// 1…12, from a three-letter month name.
    private static func monthIndex(_ b: UnsafeBufferPointer<UInt8>, _ i: Int) -> Int? {
        let key = packed(b, i)
        return monthKeys.firstIndex(of: key).map { $0 + 1 }
    }

    /// 0 (Sunday)…6, from a three-letter day name.
    private static func dayIndex(_ b: UnsafeBufferPointer<UInt8>, _ i: Int) -> Int? {
        dayKeys.firstIndex(of: packed(b, i))
    }

    /// Three bytes lowercased into one integer, so a name is matched with one comparison.
    private static func packed(_ b: UnsafeBufferPointer<UInt8>, _ i: Int) -> UInt32 {
        UInt32(lowercased(b[i])) << 16 | UInt32(lowercased(b[i + 1])) << 8 | UInt32(lowercased(b[i + 2]))
    }

    private static func packed(_ name: String) -> UInt32 {
        let bytes = Array(name.utf8)
        return UInt32(lowercased(bytes[0])) << 16 | UInt32(lowercased(bytes[1])) << 8 | UInt32(lowercased(bytes[2]))
    }

    /// ASCII letters only; other bytes are returned unchanged.
    private static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
    }

    private static let dayNames = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]
    private static let monthNames = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    private static let dayKeys = dayNames.map(packed)
    private static let monthKeys = monthNames.map(packed)
    private static let gmtKey = packed("GMT")

    // MARK: - Calendar arithmetic (proleptic Gregorian, after H. Hinnant's days_from_civil)

    /// 0001-01-01T00:00:00Z and 9999-12-31T23:59:59Z, the range a four-digit year can show.
    private static let minimumSeconds: Int64 = days(fromCivil: 1, 1, 1) * 86_400
    private static let maximumSeconds: Int64 = days(fromCivil: 9999, 12, 31) * 86_400 + 86_399

    private static func isLeap(_ year: Int) -> Bool {
        year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01.
    static func days(fromCivil year: Int, _ month: Int, _ day: Int) -> Int64 {
        // Count years from March so the leap day is the last day of the counted year.
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = floorDiv(y, 400)
        let yearOfEra = y - era * 400
        let dayOfYear = Int64((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1)
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The civil date of a day counted from 1970-01-01.
    static func civil(fromDays days: Int64) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = floorDiv(z, 146_097)
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = Int(dayOfYear - (153 * mp + 2) / 5 + 1)
        let month = Int(mp < 10 ? mp + 3 : mp - 9)
        let year = Int(yearOfEra + era * 400) + (month <= 2 ? 1 : 0)
        return (year, month, day)
    }

    private static func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
        let q = a / b
        return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q
    }

    private static func floorMod(_ a: Int64, _ b: Int64) -> Int64 {
        a - floorDiv(a, b) * b
    }
}
