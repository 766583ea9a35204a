/// Parsers for the value forms of the configuration file (CONTRACT.md): durations such as
/// `500ms`, `30s`, `10m`, `2h`, `7d`, and sizes such as `512KiB`, `100MiB`, `1GiB`.
public enum ConfigValueParsers {
    /// A duration, or nil when the text is not one of the accepted forms.
    public static func duration(_ text: String) -> Duration? {
        let units: [(String, Int64)] = [("ms", 1), ("s", 1000), ("m", 60_000), ("h", 3_600_000), ("d", 86_400_000)]
        for (suffix, milliseconds) in units where text.hasSuffix(suffix) {
            let number = text.dropLast(suffix.count)
            // "ms" also ends in "s": only accept a plain number before the suffix.
            guard !number.isEmpty, number.allSatisfy({ $0.isASCII && $0.isNumber }), let value = Int64(number) else {
                continue
            }
            let (product, overflow) = value.multipliedReportingOverflow(by: milliseconds)
            guard !overflow else { return nil }
            return .milliseconds(product)
        }
        return nil
    }

    /// A rate in bytes a second, or nil: a size per second (`64KiB/s`, `2MiB/s`, `500B/s`), or
    /// bits a second in decimal units as networks are rated (`750kbit/s`, `20Mbit/s`, `1Gbit/s`).
    public static func byteRate(_ text: String) -> Int64? {
        guard text.hasSuffix("/s") else { return nil }
        let amount = String(text.dropLast(2))
        for (suffix, bits) in [("kbit", Int64(1_000)), ("Mbit", 1_000_000), ("Gbit", 1_000_000_000)] where amount.hasSuffix(suffix) {
            let number = amount.dropLast(suffix.count)
            guard !number.isEmpty, number.allSatisfy({ $0.isASCII && $0.isNumber }), let value = Int64(number) else { return nil }
            let (product, overflow) = value.multipliedReportingOverflow(by: bits)
            return overflow ? nil : product / 8
        }
        return size(amount)
    }

    /// A size in bytes, or nil. Binary units (KiB, MiB, GiB, TiB) and a bare byte count are accepted.
    public static func size(_ text: String) -> Int64? {
        let units: [(String, Int64)] = [
            ("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("TiB", 1 << 40), ("B", 1), ("", 1),
        ]
        for (suffix, factor) in units where text.hasSuffix(suffix) {
            let number = text.dropLast(suffix.count)
            guard !number.isEmpty, number.allSatisfy({ $0.isASCII && $0.isNumber }), let value = Int64(number) else {
                continue
            }
            let (product, overflow) = value.multipliedReportingOverflow(by: factor)
            return overflow ? nil : product
        }
        return nil
    }
}
