import TollgateHTTP

/// The canonical form of the content negotiation fields `Accept`, `Accept-Encoding` and
/// `Accept-Language` (RFC 9110 §12.5), for Vary matching (RFC 9111 §4.1 lets a cache normalize
/// selecting fields "in a way that is known to have identical semantics").
///
/// What the specification makes meaningless is removed, nothing else:
/// - **case** where it is case-insensitive: language ranges and content codings wholly; media
///   types, parameter names and `charset` values (RFC 9110 §8.3.1, §8.3.2);
/// - **order of the elements**: preference is given by the weights, not by position (§12.4.2);
///   for `Accept`, by weight and specificity (§12.5.1); so is the order of a media range's
///   parameters;
/// - **weights' spelling**: `q=1`, `q=1.000` and no weight are one weight; `q=0.50` is `q=0.5`;
/// - **quoting**: a parameter value that is a token is the same quoted or not;
/// - whitespace (already gone in ``VaryMatching/normalizedValue(_:)``).
///
/// A value that does not parse (a bad weight, a parameter after the weight, a range that is not a
/// token) has no canonical form: it then matches only itself exactly, so no malformed value
/// can select another request's variant.
enum PreferenceListNormalizer {
    /// The fields normalized here (lowercased names).
    static let fieldNames: Set<String> = ["accept", "accept-encoding", "accept-language"]

    /// The canonical form of `value` (already split and joined by ``VaryMatching``) of the field
    /// `name`; nil for other fields or a value that does not parse.
    static func canonical(name: String, value: String) -> String? {
        guard fieldNames.contains(name) else { return nil }
        let isAccept = name == "accept"
        var elements: [(weight: Int, text: String)] = []
        for element in FieldList.elements(value) {
            guard let parsed = isAccept ? mediaRange(element) : simpleRange(element) else { return nil }
            elements.append(parsed)
        }
        elements.sort { $0.weight != $1.weight ? $0.weight > $1.weight : $0.text < $1.text }
        return elements.map { $0.weight == 1000 ? $0.text : "\($0.text);q=\(weightText($0.weight))" }
            .joined(separator: ", ")
    }

    /// A language range or content coding with an optional weight, lowercased.
    static func simpleRange(_ element: Substring) -> (weight: Int, text: String)? {
        let parts = parameters(of: element)
        guard let range = parts.first, FieldList.isToken(range), parts.count <= 2 else { return nil }
        var weight = 1000
        if parts.count == 2 {
            guard let parsed = weightParameter(parts[1]) else { return nil }
            weight = parsed
        }
        return (weight, range.lowercased())
    }

    /// A media range with its parameters (sorted by name) and an optional weight, last.
    static func mediaRange(_ element: Substring) -> (weight: Int, text: String)? {
        let parts = parameters(of: element)
        guard let type = parts.first else { return nil }
        let typeAndSubtype = type.split(separator: "/", omittingEmptySubsequences: false)
        guard typeAndSubtype.count == 2, typeAndSubtype.allSatisfy(FieldList.isToken) else { return nil }
        var weight = 1000
        var params: [(String, String)] = []
        for (index, part) in parts.dropFirst().enumerated() {
            if let parsed = weightParameter(part) {
                guard index == parts.count - 2 else { return nil }  // the weight ends the element (§12.5.1)
                weight = parsed
                continue
            }
            guard let equals = part.firstIndex(of: "=") else { return nil }
            let name = part[..<equals].lowercased()
            let raw = part[part.index(after: equals)...]
            guard FieldList.isToken(name), name != "q",
                var value = FieldList.isToken(raw) ? String(raw) : FieldList.unquote(raw)
            else { return nil }
            if name == "charset" { value = value.lowercased() }
            params.append((name, FieldList.quotedIfNeeded(value)))
        }
        params.sort { $0.0 != $1.0 ? $0.0 < $1.0 : $0.1 < $1.1 }
        return (weight, ([type.lowercased()] + params.map { "\($0.0)=\($0.1)" }).joined(separator: ";"))
    }

    /// `element` split at the semicolons outside quoted strings, each part trimmed.
    private static func parameters(of element: Substring) -> [Substring] {
        var parts: [Substring] = []
        var start = element.startIndex
        var index = element.startIndex
        var quoted = false
        var escaped = false
        while index < element.endIndex {
            let character = element[index]
            if escaped {
                escaped = false
            } else if quoted, character == "\\" {
                escaped = true
            } else if character == "\"" {
                quoted.toggle()
            } else if character == ";", !quoted {
                parts.append(trimmed(element[start..<index]))
                start = element.index(after: index)
            }
            index = element.index(after: index)
        }
        parts.append(trimmed(element[start...]))
        return parts
    }

    private static func trimmed(_ s: Substring) -> Substring {
        var s = s
        while let first = s.first, first == " " || first == "\t" { s = s.dropFirst() }
        while let last = s.last, last == " " || last == "\t" { s = s.dropLast() }
        return s
    }

    /// A `q=` parameter's weight in thousandths (RFC 9110 §12.4.2: `0[.ddd]` or `1[.000]`); nil
    /// for another parameter or a malformed weight.
    static func weightParameter(_ part: Substring) -> Int? {
        guard part.count >= 3, part.prefix(2).lowercased() == "q=" else { return nil }
        let text = part.dropFirst(2)
        guard let first = text.first, first == "0" || first == "1" else { return nil }
        let rest = text.dropFirst()
        if rest.isEmpty { return first == "1" ? 1000 : 0 }
        guard rest.first == ".", rest.count <= 4 else { return nil }
        let digits = rest.dropFirst()
        guard digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        var fraction = 0
        for position in 0..<3 {
            let digit = position < digits.count ? digits[digits.index(digits.startIndex, offsetBy: position)] : "0"
            fraction = fraction * 10 + Int(digit.asciiValue! - UInt8(ascii: "0"))
        }
        if first == "1" { return fraction == 0 ? 1000 : nil }
        return fraction
    }

    /// `q`'s shortest spelling: `0`, `0.5`, `0.25`, `0.125`.
    private static func weightText(_ weight: Int) -> String {
        guard weight > 0 else { return "0" }
        var digits = String(weight + 1000).dropFirst()  // three digits, leading zeros kept
        while digits.last == "0" { digits = digits.dropLast() }
        return "0.\(digits)"
    }
}
