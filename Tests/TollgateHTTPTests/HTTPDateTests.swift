import Foundation
import Testing
import TollgateHTTP

@Suite("HTTP dates (RFC 9110 §5.6.7)")
struct HTTPDateTests {
    /// 1994-11-06T08:49:37Z, the example of RFC 9110 §5.6.7.
    static let rfcExample: Int64 = 784_111_777
    /// A fixed "now" (2026-06-01T00:00:00Z) for two-digit years.
    static let now2026 = Date(timeIntervalSince1970: 1_780_272_000)

    func seconds(_ s: String, now: Date = HTTPDateTests.now2026) -> Int64? {
        HTTPDate.parse(s, now: now).map { Int64($0.timeIntervalSince1970) }
    }

    @Test(
        "Each of the three date forms parses to the same instant",
        arguments: [
            "Sun, 06 Nov 1994 08:49:37 GMT",  // IMF-fixdate
            "Sunday, 06-Nov-94 08:49:37 GMT",  // RFC 850
            "Sun Nov  6 08:49:37 1994",  // asctime, day padded with a space
            "Sun Nov 06 08:49:37 1994",  // asctime, two-digit day
        ])
    func threeForms(_ value: String) {
        #expect(seconds(value) == Self.rfcExample)
    }

    @Test(
        "Valid dates parse to the right second",
        arguments: [
            ("Thu, 01 Jan 1970 00:00:00 GMT", Int64(0)),
            ("Wed, 31 Dec 1969 23:59:59 GMT", -1),
            ("Tue, 29 Feb 2000 12:00:00 GMT", 951_825_600),  // 2000 is a leap year (divisible by 400)
            ("Thu, 29 Feb 2024 23:59:59 GMT", 1_709_251_199),
            ("Thu, 01 Mar 1900 00:00:00 GMT", -2_203_891_200),
            ("Tue, 19 Jan 2038 03:14:08 GMT", 2_147_483_648),  // past 32-bit time_t
            ("Fri, 31 Dec 9999 23:59:59 GMT", 253_402_300_799),
            ("Mon, 01 Jan 0001 00:00:00 GMT", -62_135_596_800),
            ("Saturday, 31-Dec-16 23:59:60 GMT", 1_483_228_800),  // leap second: next minute's first second
            ("Wednesday, 29-Feb-24 23:59:59 GMT", 1_709_251_199),
            ("Thu Feb 29 23:59:59 2024", 1_709_251_199),
        ])
    func validDates(_ value: String, expected: Int64) {
        #expect(seconds(value) == expected)
    }

    @Test(
        "Names are matched case-insensitively and surrounding whitespace is ignored",
        arguments: [
            "sun, 06 nov 1994 08:49:37 gmt",
            "SUNDAY, 06-NOV-94 08:49:37 GMT",
            "sUN nOV  6 08:49:37 1994",
            "  Sun, 06 Nov 1994 08:49:37 GMT\t ",
        ])
    func lenientCaseAndWhitespace(_ value: String) {
        #expect(seconds(value) == Self.rfcExample)
    }

    @Test(
        "Invalid days, months, times and malformed dates give nil",
        arguments: [
            "Sun, 31 Nov 1994 08:49:37 GMT",  // November has 30 days
            "Thu, 29 Feb 1900 08:49:37 GMT",  // 1900 is not a leap year
            "Wed, 29 Feb 2023 08:49:37 GMT",
            "Sun, 00 Nov 1994 08:49:37 GMT",  // day 0
            "Sun, 32 Jan 1994 08:49:37 GMT",
            "Sun, 06 Nox 1994 08:49:37 GMT",  // unknown month
            "Xyz, 06 Nov 1994 08:49:37 GMT",  // unknown day name
            "Sun, 06 Nov 1994 24:00:00 GMT",  // hour 24
            "Sun, 06 Nov 1994 08:60:37 GMT",  // minute 60
            "Sun, 06 Nov 1994 08:49:61 GMT",  // second 61
            "Sun, 06 Nov 1994 08:49:37 UTC",  // only GMT
            "Sun, 06 Nov 1994 08:49:37 +0000",
            "Sun, 6 Nov 1994 08:49:37 GMT",  // one-digit day in IMF-fixdate
            "Sun, 06 Nov 94 08:49:37 GMT",  // two-digit year in IMF-fixdate
            "Sun, 06 Nov 1994 8:49:37 GMT",
            "Sun, 06 Nov 1994 08:49 GMT",
            "Sun, 06 Nov 1994 08:49:37 GMT extra",
            "Sun,06 Nov 1994 08:49:37 GMT ",
            "Sun, 06 Nov 1994 08-49-37 GMT",
            "Sun, 06 Nov 199x 08:49:37 GMT",
            "Sun, 06-Nov-94 08:49:37 GMT",  // RFC 850 needs the full day name
            "Sundae, 06-Nov-94 08:49:37 GMT",
            "Sunday, 06 Nov 1994 08:49:37 GMT",
            "Sunday, 06-Nov-1994 08:49:37 GMT",
            "Sunday, 31-Apr-94 08:49:37 GMT",  // April has 30 days
            "Sunday, 06-Nov-94 08:49:37",
            "Sun Nov 31 08:49:37 1994",
            "Sun Nov 6 08:49:37 1994",  // asctime pads the day to two characters
            "Sun Nov  6 08:49:37 94",
            "Sun Nov  6 08:49:37 1994 GMT",
            "Sun Nov  x 08:49:37 1994",
            "Sün, 06 Nov 1994 08:49:37 GMT",
            "",
            "   ",
            "1994-11-06T08:49:37Z",
            "784111777",
        ])
    func invalidDates(_ value: String) {
        #expect(HTTPDate.parse(value) == nil)
    }

    @Test(
        "Two-digit RFC 850 years more than 50 years ahead are read as the past century",
        arguments: [
            (2026, "94", 1994),
            (2026, "26", 2026),
            (2026, "00", 2000),
            (2026, "76", 2076),  // exactly 50 years ahead: kept
            (2026, "77", 1977),  // 51 years ahead: previous century
            (2099, "00", 2100),  // the latest year not more than 50 years ahead
            (2099, "49", 2149),
            (2099, "50", 2050),
        ])
    func twoDigitYears(nowYear: Int, yy: String, expectedYear: Int) throws {
        let now = try #require(HTTPDate.parse("Mon, 01 Jun \(nowYear) 00:00:00 GMT"))
        let expected = try #require(HTTPDate.parse("Mon, 01 Jan \(expectedYear) 00:00:00 GMT"))
        #expect(HTTPDate.parse("Monday, 01-Jan-\(yy) 00:00:00 GMT", now: now) == expected)
    }

    @Test(
        "Formatting gives IMF-fixdate, rounding fractions down and clamping to years 1–9999",
        arguments: [
            (784_111_777.0, "Sun, 06 Nov 1994 08:49:37 GMT"),
            (784_111_777.999, "Sun, 06 Nov 1994 08:49:37 GMT"),
            (0, "Thu, 01 Jan 1970 00:00:00 GMT"),
            (-0.5, "Wed, 31 Dec 1969 23:59:59 GMT"),
            (951_825_600, "Tue, 29 Feb 2000 12:00:00 GMT"),
            (1_483_228_799, "Sat, 31 Dec 2016 23:59:59 GMT"),
            (2_147_483_648, "Tue, 19 Jan 2038 03:14:08 GMT"),
            (253_402_300_799, "Fri, 31 Dec 9999 23:59:59 GMT"),
            (1e15, "Fri, 31 Dec 9999 23:59:59 GMT"),
            (-62_135_596_800, "Mon, 01 Jan 0001 00:00:00 GMT"),
            (-1e15, "Mon, 01 Jan 0001 00:00:00 GMT"),
        ])
    func formatting(_ interval: Double, expected: String) {
        #expect(HTTPDate.format(Date(timeIntervalSince1970: interval)) == expected)
    }

    @Test("Formatting then parsing gives back the same second, over years 1–9999")
    func roundTrip() {
        var failures: [Int64] = []
        // A stride that is not a whole number of days or hours, to vary every field.
        for t in stride(from: Int64(-62_135_596_800), through: 253_402_300_799, by: 86_400 * 37 + 3_607) {
            let text = HTTPDate.format(Date(timeIntervalSince1970: Double(t)))
            if seconds(text) != t { failures.append(t) }
        }
        #expect(failures.isEmpty, "first failures: \(failures.prefix(5))")
    }

    @Test("Formatting agrees with Foundation's Gregorian calendar, weekday included")
    func agreesWithFoundation() throws {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = try #require(TimeZone(identifier: "GMT"))
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        var mismatches: [String] = []
        // 1600–2400: within the range where Foundation's calendar is proleptic Gregorian.
        for t in stride(from: Int64(-11_676_096_000), through: 13_569_465_600, by: 86_400 * 11 + 4_321) {
            let date = Date(timeIntervalSince1970: Double(t))
            let c = calendar.dateComponents([.year, .month, .day, .hour, .minute, .second, .weekday], from: date)
            func pad(_ n: Int?, _ width: Int) -> String {
                let digits = String(n ?? -1)
                return String(repeating: "0", count: max(0, width - digits.count)) + digits
            }
            let expected = "\(days[(c.weekday ?? 1) - 1]), \(pad(c.day, 2)) \(months[(c.month ?? 1) - 1]) "
                + "\(pad(c.year, 4)) "
                + "\(pad(c.hour, 2)):\(pad(c.minute, 2)):\(pad(c.second, 2)) GMT"
            let actual = HTTPDate.format(date)
            if actual != expected, mismatches.count < 5 { mismatches.append("\(actual) != \(expected)") }
        }
        #expect(mismatches.isEmpty, "\(mismatches)")
    }

    @Test("Parsing a Substring gives the same result as a String")
    func substringParsing() {
        let line = "Date: Sun, 06 Nov 1994 08:49:37 GMT"
        let value = line[line.index(line.startIndex, offsetBy: 6)...]
        #expect(HTTPDate.parse(value).map { Int64($0.timeIntervalSince1970) } == Self.rfcExample)
    }
}
