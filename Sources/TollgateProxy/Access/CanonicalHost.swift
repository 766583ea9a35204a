import TollgatePolicy

/// A destination host in its one canonical spelling, so that access rules are checked against
/// the address the proxy will really connect to, however the client wrote it.
///
/// A URL parser, `inet_aton` and `getaddrinfo` accept many spellings of one IPv4 address:
/// `2130706433`, `0x7f000001`, `0177.0.0.1`, `127.1`, `0x7f.1`, `%31%32%37.0.0.1`,
/// `[::ffff:127.0.0.1]`, `127.0.0.1.`. A proxy that checks one spelling and connects with
/// another can be steered to a denied address, so every destination is rewritten here to its
/// canonical form (dotted quad, compressed IPv6, or a lowercase name without trailing dot),
/// and that form is both what is checked and what is connected to. What cannot be read one
/// way only is refused.
///
/// The rules (the WHATWG URL standard's host parser, which browsers and curl follow):
/// - percent-escapes are decoded first; the result must be ASCII;
/// - letters are lowercased; one trailing dot is dropped (`example.com.` is `example.com`);
/// - a host whose last label is a number (decimal, `0x` hex, or octal with a leading `0`) is an
///   IPv4 address of one to four parts, the last part filling the remaining bytes; anything
///   else ending in a number (`1.2.3.4.5`, `256.1.1.1`, `08.1.1.1`) is refused;
/// - an IPv6 literal is parsed and compressed; an IPv4-mapped one (`::ffff:a.b.c.d`) is the IPv4
///   address it carries;
/// - a name is letters, digits, `-` and `_` in dot-separated labels of 1 to 63 characters,
///   253 at most in all.
struct CanonicalHost: Hashable, Sendable, CustomStringConvertible {
    /// The canonical spelling (IPv6 without brackets).
    let text: String
    /// The address bytes (4 or 16) when the host is an IP literal; nil for a name.
    let address: [UInt8]?

    /// Why a host was refused.
    struct Invalid: Error, Hashable, Sendable, CustomStringConvertible {
        let description: String
    }

    /// The four bytes of `host` when it is a dotted quad in canonical form — four decimal numbers
    /// of 0…255 without leading zeros, as `inet_ntop` writes them — else nil (any other spelling
    /// goes through the general parse). Read straight from the UTF-8: asked for every request.
    static func canonicalDottedQuad(_ host: String) -> [UInt8]? {
        var bytes: [UInt8] = []
        var value = 0
        var digits = 0
        var leadingZero = false
        for byte in host.utf8 {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                if leadingZero { return nil }  // "01"
                if digits == 0, byte == UInt8(ascii: "0") { leadingZero = true }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
                digits += 1
                guard digits <= 3, value <= 255 else { return nil }
            case UInt8(ascii: "."):
                guard digits > 0, bytes.count < 3 else { return nil }
                if bytes.isEmpty { bytes.reserveCapacity(4) }
                bytes.append(UInt8(value))
                (value, digits, leadingZero) = (0, 0, false)
            default:
                return nil
            }
        }
        guard digits > 0, bytes.count == 3 else { return nil }
        bytes.append(UInt8(value))
        return bytes
    }

    /// The canonical form of `host` (IPv6 without brackets; brackets are accepted too).
    static func parse(_ host: String) throws(Invalid) -> CanonicalHost {
        // The usual case, a dotted quad already in canonical form, without the general parse.
        if let bytes = canonicalDottedQuad(host) { return CanonicalHost(text: host, address: bytes) }
        var text = host
        if text.hasPrefix("["), text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        if text.contains("%") { text = try percentDecoded(text) }
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            throw Invalid(description: "'\(host)' is not a valid host")
        }
        text = text.lowercased()
        if text.contains(":") { return try ipv6(text, original: host) }
        if text.hasSuffix(".") { text.removeLast() }
        let labels = text.split(separator: ".", omittingEmptySubsequences: false)
        guard let last = labels.last, !last.isEmpty else { throw Invalid(description: "'\(host)' is not a valid host") }
        if endsInANumber(last) {
            guard let bytes = ipv4(labels) else { throw Invalid(description: "'\(host)' is not a valid IPv4 address") }
            return CanonicalHost(bytes)
        }
        guard text.utf8.count <= 253,
            labels.allSatisfy({ label in
                !label.isEmpty && label.utf8.count <= 63
                    && label.utf8.allSatisfy {
                        ($0 >= 0x61 && $0 <= 0x7A) || ($0 >= 0x30 && $0 <= 0x39) || $0 == 0x2D || $0 == 0x5F
                    }
            })
        else {
            throw Invalid(description: "'\(host)' is not a valid host name")
        }
        return CanonicalHost(text: text, address: nil)
    }

    /// The host of an IP address.
    init(_ address: [UInt8]) {
        var bytes = address
        if bytes.count == 16, bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
            bytes = Array(bytes[12...])
        }
        self.address = bytes
        self.text = CIDR.addressText(bytes) ?? "?"
    }

    private init(text: String, address: [UInt8]?) {
        self.text = text
        self.address = address
    }

    /// The host as written in a URL or a Host field (IPv6 in brackets).
    var forURL: String { text.contains(":") ? "[\(text)]" : text }

    var description: String { text }

    // MARK: parsing

    private static func percentDecoded(_ text: String) throws(Invalid) -> String {
        var bytes: [UInt8] = []
        var iterator = Array(text.utf8).makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexDigit), let low = iterator.next().flatMap(hexDigit) else {
                throw Invalid(description: "'\(text)' has a bad percent-escape")
            }
            bytes.append(high << 4 | low)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func hexDigit(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: byte - 0x30
        case 0x41...0x46: byte - 0x41 + 10
        case 0x61...0x66: byte - 0x61 + 10
        default: nil
        }
    }

    private static func ipv6(_ text: String, original: String) throws(Invalid) -> CanonicalHost {
        guard let bytes = CIDR.addressBytes(text), bytes.count == 16 else {
            throw Invalid(description: "'\(original)' is not a valid IPv6 address")
        }
        return CanonicalHost(bytes)
    }

    /// Whether a label reads as a number: all decimal digits, or `0x` and hex digits.
    private static func endsInANumber(_ label: Substring) -> Bool {
        if label.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) { return true }
        let lower = label.lowercased()
        return lower.hasPrefix("0x") && lower.dropFirst(2).utf8.allSatisfy { hexDigit($0) != nil }
    }

    /// The WHATWG IPv4 parser: one to four parts, each decimal, `0x` hex or `0` octal.
    private static func ipv4(_ labels: [Substring]) -> [UInt8]? {
        guard (1...4).contains(labels.count) else { return nil }
        var numbers: [UInt64] = []
        for label in labels {
            guard let number = ipv4Number(label) else { return nil }
            numbers.append(number)
        }
        guard numbers.dropLast().allSatisfy({ $0 <= 255 }) else { return nil }
        let lastLimit = UInt64(1) << (8 * (5 - numbers.count))
        guard numbers[numbers.count - 1] < lastLimit else { return nil }
        var value = numbers[numbers.count - 1]
        for (index, number) in numbers.dropLast().enumerated() {
            value += number << (8 * (3 - index))
        }
        return [UInt8(value >> 24 & 0xFF), UInt8(value >> 16 & 0xFF), UInt8(value >> 8 & 0xFF), UInt8(value & 0xFF)]
    }

    private static func ipv4Number(_ label: Substring) -> UInt64? {
        guard !label.isEmpty else { return nil }
        var digits = Substring(label.lowercased())
        var radix: UInt64 = 10
        if digits.hasPrefix("0x") {
            radix = 16
            digits = digits.dropFirst(2)
        } else if digits.count > 1, digits.hasPrefix("0") {
            radix = 8
            digits = digits.dropFirst()
        }
        var value: UInt64 = 0
        for byte in digits.utf8 {
            guard let digit = hexDigit(byte).map(UInt64.init), digit < radix else { return nil }
            value = value * radix + digit
            guard value <= UInt64(UInt32.max) else { return nil }
        }
        return value
    }
}
