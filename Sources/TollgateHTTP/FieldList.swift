/// Helpers for list-based field values (RFC 9110 §5.6.1, `#element`): splitting on commas
/// outside quoted strings, tokens, quoted strings.
///
/// Several field lines of a list-based field mean the same as one line joined with commas
/// (RFC 9110 §5.3), so every function taking `[String]` treats them that way.
///
/// The parsers in this module scan UTF-8 bytes rather than Characters, because these fields
/// are read for every response the cache sees.
public enum FieldList {
    /// The elements of one field value: split at commas that are not inside a quoted string,
    /// with optional whitespace trimmed around each and empty elements dropped (§5.6.1.2).
    ///
    /// An unterminated quoted string runs to the end of the value.
    public static func elements(_ value: Substring) -> [Substring] {
        var copy = value
        let ranges = copy.withUTF8 { bytes in
            var ranges: [Range<Int>] = []
            FieldScanner(bytes).forEachElement { ranges.append($0) }
            return ranges
        }
        let utf8 = value.utf8
        return ranges.map { range in
            let lower = utf8.index(utf8.startIndex, offsetBy: range.lowerBound)
            return value[lower..<utf8.index(lower, offsetBy: range.count)]
        }
    }

    /// The elements of one field value, as the `Substring` overload splits them.
    public static func elements(_ value: String) -> [Substring] {
        elements(value[...])
    }

    /// The elements of all field lines of one field, in order.
    public static func elements(_ fieldValues: [String]) -> [Substring] {
        fieldValues.flatMap { elements($0[...]) }
    }

    /// Whether `byte` may appear in a `token` (`tchar`, RFC 9110 §5.6.2).
    @inlinable
    public static func isTokenByte(_ byte: UInt8) -> Bool {
        // One bit per byte value below 128 (literals, not stored constants: no lazy global): a
        // shift and a test instead of a chain of ranges, for every byte of every field name.
        // Bytes 0-63: !#$%&'*+-. and digits; 64-127: letters and ^_`|~. Checked against the
        // grammar in FieldListTests.
        byte < 64
            ? (0x03FF_6CFA_0000_0000 as UInt64) &>> UInt64(byte) & 1 != 0
            : byte < 128 && (0x57FF_FFFF_C7FF_FFFE as UInt64) &>> UInt64(byte &- 64) & 1 != 0
    }

    /// The byte ranges of the comma-separated elements of `bytes`, trimmed of spaces and tabs,
    /// empty ones skipped, to `body` until it returns false.
    public static func forEachTokenRange(in bytes: UnsafeRawBufferPointer, _ body: (Range<Int>) -> Bool) {
        var start = 0
        while start < bytes.count {
            var end = start
            while end < bytes.count, bytes[end] != UInt8(ascii: ",") { end += 1 }
            var first = start
            var last = end
            while first < last, bytes[first] == 0x20 || bytes[first] == 0x09 { first += 1 }
            while last > first, bytes[last - 1] == 0x20 || bytes[last - 1] == 0x09 { last -= 1 }
            if first < last, !body(first..<last) { return }
            start = end + 1
        }
    }

    /// Calls `body` with each comma-separated element of a list of tokens, trimmed of spaces and
    /// tabs, empty ones skipped; slices of `value`, so nothing is allocated. (No quoted strings:
    /// for `Connection`, `Transfer-Encoding` and the like.)
    public static func forEachToken(in value: String, _ body: (Substring) -> Void) {
        let utf8 = value.utf8
        func isBlank(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 }
        // Over the string's bytes in place where it has them (native and small strings): walking
        // `utf8` by index cost about fifteen instructions a byte, for every Connection field.
        let read: Void? = utf8.withContiguousStorageIfAvailable { bytes in
            // Cut at ASCII bytes (comma, blanks), so the offsets fall on character boundaries.
            forEachTokenRange(in: UnsafeRawBufferPointer(bytes)) { range in
                body(value[value.utf8Index(at: range.lowerBound)..<value.utf8Index(at: range.upperBound)])
                return true
            }
        }
        if read != nil { return }
        var start = utf8.startIndex
        while start < utf8.endIndex {
            let end = utf8[start...].firstIndex(of: UInt8(ascii: ",")) ?? utf8.endIndex
            var first = start
            var last = end
            while first < last, isBlank(utf8[first]) { first = utf8.index(after: first) }
            while last > first, isBlank(utf8[utf8.index(before: last)]) { last = utf8.index(before: last) }
            // Cut at ASCII bytes (comma, blanks), so the indices fall on character boundaries.
            if first < last { body(value[first..<last]) }
            start = end < utf8.endIndex ? utf8.index(after: end) : end
        }
    }

    /// Whether `s` is a non-empty `token` (RFC 9110 §5.6.2).
    public static func isToken(_ s: Substring) -> Bool {
        !s.isEmpty && s.utf8.allSatisfy(isTokenByte)
    }

    /// Whether `s` is a non-empty `token` (RFC 9110 §5.6.2).
    public static func isToken(_ s: String) -> Bool {
        isToken(s[...])
    }

    /// The content of a quoted-string (RFC 9110 §5.6.4) with its quotes removed and its
    /// quoted-pairs unescaped; nil when `s` is not exactly one well-formed quoted-string.
    public static func unquote(_ s: Substring) -> String? {
        var copy = s
        return copy.withUTF8 { bytes in
            let scanner = FieldScanner(bytes)
            return scanner.isQuotedString(0..<bytes.count) ? scanner.string(0..<bytes.count) : nil
        }
    }

    /// `s` as a token when it is one, otherwise as a quoted-string with `"` and `\` escaped.
    public static func quotedIfNeeded(_ s: String) -> String {
        isToken(s) ? s : quoted(s)
    }

    /// `s` as a quoted-string, with `"` and `\` escaped.
    ///
    /// By Unicode scalar, not by Character: a backslash followed by a combining mark is one
    /// Character that is not `\`, and was left unescaped (a fuzz finding: the value then read
    /// back without its backslash).
    public static func quoted(_ s: String) -> String {
        var out = "\""
        for scalar in s.unicodeScalars {
            if scalar == "\"" || scalar == "\\" { out.unicodeScalars.append("\\") }
            out.unicodeScalars.append(scalar)
        }
        out.append("\"")
        return out
    }

    /// Lowercased, de-duplicated tokens of the list elements of `fieldValues` (field names,
    /// connection options); `*` is reported apart, and elements that are not tokens are dropped.
    static func names(_ fieldValues: [String]) -> (names: [String], star: Bool, allValid: Bool) {
        var names: [String] = []
        var star = false
        var allValid = true
        for value in fieldValues {
            FieldScanner.withBytes(of: value) { scanner in
                scanner.forEachElement { element in
                    if element.count == 1, scanner.bytes[element.lowerBound] == UInt8(ascii: "*") {
                        star = true
                    } else if scanner.isToken(element) {
                        let name = scanner.lowercasedString(element)
                        if !names.contains(name) { names.append(name) }
                    } else {
                        allValid = false
                    }
                }
            }
        }
        return (names, star, allValid)
    }
}

/// One `name[=value]` list element of a directive field (Cache-Control, Pragma).
public struct FieldDirective: Sendable, Hashable, CustomStringConvertible {
    /// The directive name, lowercased.
    public var name: String
    /// The argument, unquoted; nil when the element had no `=`.
    public var value: String?

    /// Creates a directive; `name` is lowercased.
    public init(name: String, value: String? = nil) {
        self.name = name.lowercased()
        self.value = value
    }

    /// `name` or `name=value`, quoting the value when it is not a token.
    public var description: String {
        guard let value else { return name }
        return "\(name)=\(FieldList.quotedIfNeeded(value))"
    }
}

extension FieldDirective {
    /// The directive as received, name lowercased and value unquoted.
    init(_ scanner: FieldScanner, _ directive: FieldScanner.Directive) {
        self.name = scanner.lowercasedString(directive.name)
        self.value = directive.value.map(scanner.string)
    }
}

/// The field names a response varies on (RFC 9110 §12.5.5), from all its Vary field lines.
public struct Vary: Sendable, Hashable, CustomStringConvertible {
    /// Whether a member is `*`: the response varies on more than request fields, so a cache
    /// can never select it for a later request without validation.
    public var isWildcard: Bool
    /// The field names, lowercased, de-duplicated, in first-seen order (`*` excluded).
    /// Elements that are not tokens cannot name a request field and are dropped.
    public var fieldNames: [String]

    /// Parses the values of every Vary field line.
    public init(fieldValues: [String]) {
        (fieldNames, isWildcard, _) = FieldList.names(fieldValues)
    }

    /// Creates a value from field names (lowercased and de-duplicated here).
    public init(fieldNames: [String], isWildcard: Bool = false) {
        self.isWildcard = isWildcard
        self.fieldNames = FieldList.names(fieldNames).names
    }

    /// Whether the response varies on nothing (no Vary field, or only empty elements).
    public var isEmpty: Bool { !isWildcard && fieldNames.isEmpty }

    /// `*`, or the field names joined with `, `.
    public var description: String {
        isWildcard ? "*" : fieldNames.joined(separator: ", ")
    }
}

/// The connection options of a message (RFC 9110 §7.6.1): the Connection field's tokens.
///
/// A proxy must remove every field these name, and the Connection field itself, before
/// forwarding the message.
public struct ConnectionOptions: Sendable, Hashable, CustomStringConvertible {
    /// The option tokens, lowercased, de-duplicated, in first-seen order.
    public var options: [String]

    /// Parses the values of every Connection field line.
    public init(fieldValues: [String]) {
        self.options = FieldList.names(fieldValues).names
    }

    /// Whether `option` is listed (ASCII case-insensitive).
    public func contains(_ option: String) -> Bool {
        options.contains(option.lowercased())
    }

    /// Whether `close` is listed: the connection ends after this message.
    public var close: Bool { contains("close") }
    /// Whether `keep-alive` is listed (HTTP/1.0 persistent connections).
    public var keepAlive: Bool { contains("keep-alive") }
    /// Whether `upgrade` is listed (the Upgrade field is hop-by-hop for this message).
    public var upgrade: Bool { contains("upgrade") }

    /// The options joined with `, `.
    public var description: String { options.joined(separator: ", ") }
}

/// A byte scanner over one field value, shared by the list parsers of this module.
/// Ranges are byte offsets into `bytes`.
struct FieldScanner {
    /// One `name[=value]` element: the name's range, the raw value's range (quotes included).
    struct Directive {
        var name: Range<Int>
        var value: Range<Int>?
        /// A value that is neither a token nor one well-formed quoted-string.
        var malformed: Bool
    }

    let bytes: UnsafeBufferPointer<UInt8>

    static let quote = UInt8(ascii: "\"")
    static let backslash = UInt8(ascii: "\\")
    static let comma = UInt8(ascii: ",")
    static let equals = UInt8(ascii: "=")
    static let space = UInt8(ascii: " ")
    static let tab = UInt8(ascii: "\t")

    init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    /// Runs `body` with a scanner over the UTF-8 bytes of `value` (without copying native strings).
    static func withBytes<R>(of value: String, _ body: (FieldScanner) -> R) -> R {
        var value = value
        return value.withUTF8 { body(FieldScanner($0)) }
    }

    /// Calls `body` with each list element: split at commas outside quoted strings, OWS
    /// trimmed, empty elements skipped.
    func forEachElement(_ body: (Range<Int>) -> Void) {
        var start = 0
        var index = 0
        var inQuotes = false
        while index < bytes.count {
            switch bytes[index] {
            // In a quoted string, skip the byte after a backslash so `\"` does not end it.
            case Self.backslash where inQuotes: index += 1
            case Self.quote: inQuotes.toggle()
            case Self.comma where !inQuotes:
                emit(start..<index, body)
                start = index + 1
            default: break
            }
            index += 1
        }
        emit(start..<bytes.count, body)
    }

    private func emit(_ range: Range<Int>, _ body: (Range<Int>) -> Void) {
        let element = trimmed(range)
        if !element.isEmpty { body(element) }
    }

    /// Splits an element at its first `=`; nil when the name is not a token.
    func directive(_ element: Range<Int>) -> Directive? {
        var equals = element.lowerBound
        while equals < element.upperBound, bytes[equals] != Self.equals { equals += 1 }
        let name = trimmed(element.lowerBound..<equals)
        guard isToken(name) else { return nil }
        guard equals < element.upperBound else { return Directive(name: name, value: nil, malformed: false) }
        let value = trimmed(equals + 1..<element.upperBound)
        let wellFormed = value.isEmpty || isToken(value) || isQuotedString(value)
        return Directive(name: name, value: value, malformed: !wellFormed)
    }

    /// Whether the name in `range` equals `lowercaseName`, ASCII case-insensitively.
    func nameEquals(_ range: Range<Int>, _ lowercaseName: StaticString) -> Bool {
        guard range.count == lowercaseName.utf8CodeUnitCount else { return false }
        let name = lowercaseName.utf8Start
        for offset in 0..<range.count where Self.lowercased(bytes[range.lowerBound + offset]) != name[offset] {
            return false
        }
        return true
    }

    /// The non-negative integer in a token or quoted-string value, saturated at `limit`;
    /// nil when it is empty or holds anything but digits.
    func digits(_ range: Range<Int>, saturatingAt limit: Int) -> Int? {
        var result = 0
        var count = 0
        var failed = false
        forEachContentByte(range) { byte in
            guard byte >= 0x30, byte <= 0x39 else { failed = true; return }
            // Saturate as we go so a long run of digits cannot overflow.
            result = min(result * 10 + Int(byte - 0x30), limit)
            count += 1
        }
        return failed || count == 0 ? nil : result
    }

    /// The value as a String: quoted-string content unescaped, anything else as received.
    func string(_ range: Range<Int>) -> String {
        guard isQuotedString(range) else {
            return String(decoding: UnsafeBufferPointer(rebasing: bytes[range]), as: UTF8.self)
        }
        var content: [UInt8] = []
        content.reserveCapacity(range.count)
        forEachContentByte(range) { content.append($0) }
        return String(decoding: content, as: UTF8.self)
    }

    /// The bytes in `range`, ASCII letters lowercased, as a String.
    func lowercasedString(_ range: Range<Int>) -> String {
        String(unsafeUninitializedCapacity: range.count) { out in
            for offset in 0..<range.count { out[offset] = Self.lowercased(bytes[range.lowerBound + offset]) }
            return range.count
        }
    }

    /// Calls `body` with each byte of a token, or of a quoted-string's content with escapes removed.
    private func forEachContentByte(_ range: Range<Int>, _ body: (UInt8) -> Void) {
        guard isQuotedString(range) else {
            for index in range { body(bytes[index]) }
            return
        }
        var index = range.lowerBound + 1
        while index < range.upperBound - 1 {
            if bytes[index] == Self.backslash { index += 1 }
            body(bytes[index])
            index += 1
        }
    }

    /// Whether `range` is exactly one quoted-string: `"`, content with `\x` escapes, `"`.
    func isQuotedString(_ range: Range<Int>) -> Bool {
        guard range.count >= 2, bytes[range.lowerBound] == Self.quote else { return false }
        var index = range.lowerBound + 1
        while index < range.upperBound {
            switch bytes[index] {
            case Self.quote: return index == range.upperBound - 1
            case Self.backslash: index += 2
            default: index += 1
            }
        }
        return false
    }

    func isToken(_ range: Range<Int>) -> Bool {
        !range.isEmpty && range.allSatisfy { Self.isTokenByte(bytes[$0]) }
    }

    func trimmed(_ range: Range<Int>) -> Range<Int> {
        var lower = range.lowerBound
        var upper = range.upperBound
        while lower < upper, bytes[lower] == Self.space || bytes[lower] == Self.tab { lower += 1 }
        while upper > lower, bytes[upper - 1] == Self.space || bytes[upper - 1] == Self.tab { upper -= 1 }
        return lower..<upper
    }

    static func lowercased(_ byte: UInt8) -> UInt8 {
        byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
    }

    static func isTokenByte(_ byte: UInt8) -> Bool { FieldList.isTokenByte(byte) }
}
