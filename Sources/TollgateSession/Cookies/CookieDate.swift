import Foundation

/// The cookie-date algorithm of RFC 6265 §5.1.1: lenient about order and delimiters, strict
/// about ranges. Returns nil for a date it cannot read (the `Expires` attribute is then ignored).
enum CookieDate {
    static func parse(_ text: String) -> Date? {
        var time: (Int, Int, Int)?
        var dayOfMonth: Int?
        var month: Int?
        var year: Int?
        for token in tokens(text) {
            if time == nil, let parsed = parseTime(token) {
                time = parsed
            } else if dayOfMonth == nil, let value = leadingDigits(token, minimum: 1, maximum: 2) {
                dayOfMonth = value
            } else if month == nil, let value = parseMonth(token) {
                month = value
            } else if year == nil, let value = leadingDigits(token, minimum: 2, maximum: 4) {
                year = value
            }
        }
        guard var year, let dayOfMonth, let month, let (hour, minute, second) = time else { return nil }
        if (70...99).contains(year) { year += 1900 }
        if (0...69).contains(year) { year += 2000 }
        guard (1...31).contains(dayOfMonth), year >= 1601, hour <= 23, minute <= 59, second <= 59 else { return nil }
        var components = DateComponents()
        components.year = year
        components.month = month
        components.day = dayOfMonth
        components.hour = hour
        components.minute = minute
        components.second = second
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = TimeZone(identifier: "UTC")!
        guard let date = calendar.date(from: components),
            calendar.component(.day, from: date) == dayOfMonth  // 31 February is not a date
        else { return nil }
        return date
    }

    /// delimiter = %x09 / %x20-2F / %x3B-40 / %x5B-60 / %x7B-7E
    private static func isDelimiter(_ byte: UInt8) -> Bool {
        byte == 0x09 || (0x20...0x2F).contains(byte) || (0x3B...0x40).contains(byte) || (0x5B...0x60).contains(byte)
            || (0x7B...0x7E).contains(byte)
    }

    private static func tokens(_ text: String) -> [[UInt8]] {
        var result: [[UInt8]] = []
        var current: [UInt8] = []
        for byte in text.utf8 {
            if isDelimiter(byte) {
                if !current.isEmpty { result.append(current) }
                current = []
            } else {
                current.append(byte)
            }
        }
        if !current.isEmpty { result.append(current) }
        return result
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= 48 && byte <= 57 }

    /// `minimum…maximum` digits, then anything but a digit.
    private static func leadingDigits(_ token: [UInt8], minimum: Int, maximum: Int) -> Int? {
        let digits = token.prefix { isDigit($0) }
        guard digits.count >= minimum, digits.count <= maximum else { return nil }
        return digits.reduce(0) { $0 * 10 + Int($1 - 48) }
    }

    /// hms-time = time-field ":" time-field ":" time-field, each 1*2DIGIT; anything may follow.
    private static func parseTime(_ token: [UInt8]) -> (Int, Int, Int)? {
        var fields: [Int] = []
        var index = 0
        for position in 0..<3 {
            var value = 0
            var count = 0
            while index < token.count, isDigit(token[index]), count < 2 {
                value = value * 10 + Int(token[index] - 48)
                index += 1
                count += 1
            }
            guard count > 0 else { return nil }
            fields.append(value)
            if position < 2 {
                guard index < token.count, token[index] == UInt8(ascii: ":") else { return nil }
                index += 1
            } else if index < token.count, isDigit(token[index]) {
                return nil
            }
        }
        return (fields[0], fields[1], fields[2])
    }

    private static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    private static func parseMonth(_ token: [UInt8]) -> Int? {
        guard token.count >= 3 else { return nil }
        let prefix = String(decoding: token.prefix(3), as: UTF8.self).lowercased()
        return months.firstIndex(of: prefix).map { $0 + 1 }
    }
}
