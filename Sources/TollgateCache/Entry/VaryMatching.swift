import Foundation
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
    /// A request field every stored response varies on, whatever its Vary says: the client's
    /// `Host` as a reverse proxy states it to the origin (`X-Forwarded-Host`). An origin that
    /// builds absolute URLs from it (redirects, links; most frameworks do behind a proxy) would
    /// otherwise have the answer to one client's `Host` — any name it likes — stored and served to
    /// every client of the URL. Varnish keys by `Host` for the same reason.
    ///
    /// Recorded only when the request carried it, and one way only: a response stored for a
    /// request with it is selected only by that value; one stored for a request without it (a
    /// forward proxy's, a warm's) could not have been built from it, and is selected by any
    /// request — so a cache warmed through a forward session still serves a reverse listener.
    public static let alwaysVaried = "x-forwarded-host"

    /// The request fields `vary` names, with the request's normalized values, and
    /// ``alwaysVaried`` when the request carried it and `vary` does not name it.
    public static func varyingFields(of vary: Vary, in request: HeaderFields) -> [VaryingField] {
        var fields = vary.fieldNames.map { name in
            let values = request.values(for: name)
            return VaryingField(name: name, value: values.isEmpty ? nil : normalizedValue(values))
        }
        if !vary.fieldNames.contains(alwaysVaried), case let values = request.values(for: alwaysVaried), !values.isEmpty {
            fields.append(VaryingField(name: alwaysVaried, value: normalizedValue(values)))
        }
        return fields
    }

    /// Whether `request` selects a stored response whose Vary is `vary` and whose original
    /// request carried `recorded`.
    public static func matches(vary: Vary, recorded: [VaryingField], request: HeaderFields) -> Bool {
        if vary.isWildcard { return false }
        for name in vary.fieldNames where !fieldMatches(name, recorded: recorded, request: request) {
            return false
        }
        return alwaysVariedMatches(vary: vary, recorded: recorded, request: request)
    }

    /// Whether `request` agrees on ``alwaysVaried`` with a response whose Vary is `vary` and whose
    /// original request carried `recorded`: a response recorded with a value is selected only by
    /// requests with the same value; one recorded without it, by any.
    public static func alwaysVariedMatches(vary: Vary, recorded: [VaryingField], request: HeaderFields) -> Bool {
        guard let original = recorded.first(where: { $0.name == alwaysVaried }), !vary.fieldNames.contains(alwaysVaried) else {
            return true
        }
        // Asked at every hit behind a reverse listener: one line with the recorded bytes matches
        // as it is, compared in place — no string, array or joined list made.
        var lines = 0
        var same = false
        request.forEachValueBytes(named: .xForwardedHost) { bytes in
            lines += 1
            same =
                original.value?.utf8.withContiguousStorageIfAvailable { stored in
                    stored.count == bytes.count && (bytes.isEmpty || memcmp(stored.baseAddress!, bytes.baseAddress!, bytes.count) == 0)
                } ?? false
        }
        return (lines == 1 && same) || fieldMatches(alwaysVaried, recorded: recorded, request: request)
    }

    /// Whether `request`'s value of `name` selects a response whose original request carried `recorded`.
    private static func fieldMatches(_ name: String, recorded: [VaryingField], request: HeaderFields) -> Bool {
        let values = request.values(for: name)
        let current = values.isEmpty ? nil : normalizedValue(values)
        let original = recorded.first { $0.name == name }?.value
        return sameValue(name: name, current, original)
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
