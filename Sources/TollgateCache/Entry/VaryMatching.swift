public import TollgateHTTP

/// Secondary keys (RFC 9111 §4.1): a stored response whose Vary names request fields may be
/// reused only for a request whose values of those fields match the original request's.
///
/// Values are compared after normalization §4.1 allows: the field's lines combined with
/// commas, whitespace around list elements removed. Comparison is then exact (case matters:
/// the cache does not know most fields' semantics), except for the content negotiation fields
/// whose semantics it knows (`Accept`, `Accept-Encoding`, `Accept-Language`): those also match
/// when their canonical forms (``PreferenceListNormalizer``) are equal, so `en, de` selects what
/// `De, en` got. `Vary: *` never matches.
public enum VaryMatching {
    /// The request fields `vary` names, with the request's normalized values.
    public static func varyingFields(of vary: Vary, in request: HeaderFields) -> [VaryingField] {
        vary.fieldNames.map { name in
            let values = request.values(for: name)
            return VaryingField(name: name, value: values.isEmpty ? nil : normalizedValue(values))
        }
    }

    /// Whether `request` selects a stored response whose Vary is `vary` and whose original
    /// request carried `recorded`.
    public static func matches(vary: Vary, recorded: [VaryingField], request: HeaderFields) -> Bool {
        if vary.isWildcard { return false }
        for name in vary.fieldNames {
            let values = request.values(for: name)
            let current = values.isEmpty ? nil : normalizedValue(values)
            let original = recorded.first { $0.name == name }?.value
            if !sameValue(name: name, current, original) { return false }
        }
        return true
    }

    /// Whether two normalized values (``normalizedValue(_:)``, nil: absent) of the field `name`
    /// select the same variant. Recorded values are kept as stored and canonicalized when
    /// compared, so entries stored before a field was normalized still match.
    public static func sameValue(name: String, _ one: String?, _ other: String?) -> Bool {
        if one == other { return true }
        guard let one, let other,
            let canonical = PreferenceListNormalizer.canonical(name: name.lowercased(), value: one)
        else { return false }
        return canonical == PreferenceListNormalizer.canonical(name: name.lowercased(), value: other)
    }

    /// Whether `request` selects `stored` (§4.1).
    public static func matches(_ stored: StoredResponse, request: HeaderFields) -> Bool {
        matches(vary: stored.vary, recorded: stored.varyingRequestFields, request: request)
    }

    /// Field lines combined with `, `, whitespace around each comma-separated element trimmed.
    public static func normalizedValue(_ values: [String]) -> String {
        FieldList.elements(values).joined(separator: ", ")
    }
}
