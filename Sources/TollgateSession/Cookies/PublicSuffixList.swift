import Foundation

/// The Public Suffix List (publicsuffix.org): the domains under which anyone can register
/// names (`com`, `co.uk`, `github.io`, …). A cookie store refuses a `Domain` attribute that is
/// one of them, so `example.co.uk` cannot set a cookie for every `.co.uk` site (RFC 6265 §5.3
/// step 5).
///
/// Read from Debian's `publicsuffix` package (`/usr/share/publicsuffix/public_suffix_list.dat`),
/// both its ICANN and private sections. Without the file only the list's default rule `*`
/// applies: every top-level domain is a public suffix, nothing below is.
public struct PublicSuffixList: Sendable {
    /// Where Debian installs the list.
    public static let systemPath = "/usr/share/publicsuffix/public_suffix_list.dat"

    /// The system list, read once (an empty list if the file is missing).
    public static let system: PublicSuffixList = {
        (try? PublicSuffixList(contentsOf: systemPath)) ?? PublicSuffixList(rules: "")
    }()

    private let rules: Set<String>
    private let wildcards: Set<String>
    private let exceptions: Set<String>

    /// The number of rules read.
    public var ruleCount: Int { rules.count + wildcards.count + exceptions.count }

    /// Reads a list in the publicsuffix.org format.
    public init(contentsOf path: String) throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        self.init(rules: String(decoding: data, as: UTF8.self))
    }

    /// Parses list text: one rule a line, `//` comments, `*.` wildcards, `!` exceptions;
    /// internationalized rules are converted to their `xn--` form.
    public init(rules text: String) {
        var rules: Set<String> = []
        var wildcards: Set<String> = []
        var exceptions: Set<String> = []
        for rawLine in text.split(whereSeparator: { $0 == "\n" || $0 == "\r" }) {
            let line = rawLine.prefix { $0 != " " && $0 != "\t" }
            guard !line.isEmpty, !line.hasPrefix("//") else { continue }
            var rule = String(line)
            let isException = rule.hasPrefix("!")
            if isException { rule.removeFirst() }
            let isWildcard = rule.hasPrefix("*.")
            if isWildcard { rule.removeFirst(2) }
            guard let ascii = Punycode.asciiDomain(rule.lowercased()) else { continue }
            if isException {
                exceptions.insert(ascii)
            } else if isWildcard {
                wildcards.insert(ascii)
            } else {
                rules.insert(ascii)
            }
        }
        self.rules = rules
        self.wildcards = wildcards
        self.exceptions = exceptions
    }

    /// The public suffix of `domain` (lowercase ASCII, no trailing dot), by the list's algorithm.
    public func publicSuffix(of domain: String) -> String {
        let labels = domain.lowercased().split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard !labels.isEmpty else { return domain }
        let n = labels.count
        for i in 0..<n where exceptions.contains(labels[i...].joined(separator: ".")) {
            return labels[(i + 1)...].joined(separator: ".")
        }
        var longest = 1  // the default rule `*`
        for i in 0..<n {
            let suffix = labels[i...].joined(separator: ".")
            if rules.contains(suffix) { longest = max(longest, n - i) }
            if i > 0, wildcards.contains(suffix) { longest = max(longest, n - i + 1) }
        }
        return labels[(n - min(longest, n))...].joined(separator: ".")
    }

    /// Whether `domain` is itself a public suffix.
    public func isPublicSuffix(_ domain: String) -> Bool {
        let domain = domain.lowercased()
        return publicSuffix(of: domain) == domain
    }

    /// The registrable domain (public suffix plus one label), or nil when `domain` is a public suffix.
    public func registrableDomain(of domain: String) -> String? {
        let domain = domain.lowercased()
        let suffix = publicSuffix(of: domain)
        guard domain != suffix, domain.hasSuffix("." + suffix) else { return nil }
        let rest = domain.dropLast(suffix.count + 1)
        let label = rest.split(separator: ".").last.map(String.init) ?? String(rest)
        return label + "." + suffix
    }
}

/// Punycode (RFC 3492) encoding of domain labels, for the list's internationalized rules.
enum Punycode {
    /// `domain` with each non-ASCII label as `xn--…`, or nil if a label cannot be encoded.
    static func asciiDomain(_ domain: String) -> String? {
        var labels: [String] = []
        for label in domain.split(separator: ".", omittingEmptySubsequences: false) {
            if label.unicodeScalars.allSatisfy(\.isASCII) {
                labels.append(String(label))
            } else {
                guard let encoded = encode(String(label)) else { return nil }
                labels.append("xn--" + encoded)
            }
        }
        return labels.joined(separator: ".")
    }

    static func encode(_ input: String) -> String? {
        let base = 36
        let tMin = 1
        let tMax = 26
        let skew = 38
        let damp = 700
        let scalars = input.unicodeScalars.map { Int($0.value) }
        var output = String(String.UnicodeScalarView(input.unicodeScalars.filter(\.isASCII)))
        let basicCount = output.unicodeScalars.count
        var handled = basicCount
        if basicCount > 0 { output.append("-") }
        func digit(_ d: Int) -> Character {
            Character(Unicode.Scalar(UInt8(d < 26 ? d + 97 : d - 26 + 48)))
        }
        func adapt(_ delta: Int, _ numPoints: Int, _ first: Bool) -> Int {
            var delta = first ? delta / damp : delta / 2
            delta += delta / numPoints
            var k = 0
            while delta > ((base - tMin) * tMax) / 2 {
                delta /= base - tMin
                k += base
            }
            return k + (base - tMin + 1) * delta / (delta + skew)
        }
        var n = 128
        var delta = 0
        var bias = 72
        while handled < scalars.count {
            guard let m = scalars.filter({ $0 >= n }).min() else { return nil }
            let (product, overflow) = (m - n).multipliedReportingOverflow(by: handled + 1)
            guard !overflow else { return nil }
            delta += product
            n = m
            for c in scalars {
                if c < n { delta += 1 }
                if c == n {
                    var q = delta
                    var k = base
                    while true {
                        let t = k <= bias ? tMin : (k >= bias + tMax ? tMax : k - bias)
                        if q < t { break }
                        output.append(digit(t + (q - t) % (base - t)))
                        q = (q - t) / (base - t)
                        k += base
                    }
                    output.append(digit(q))
                    bias = adapt(delta, handled + 1, handled == basicCount)
                    delta = 0
                    handled += 1
                }
            }
            delta += 1
            n += 1
        }
        return output
    }
}
