public import TollgateHTTP

/// Whether a stored representation is one a request accepts, by the content negotiation fields
/// whose meaning the cache knows (RFC 9110 §12.5.1 `Accept`, §12.5.3 `Accept-Encoding`): for an
/// offline proxy (`return-cache-dont-load`), which cannot ask the origin for the variant a
/// request's own preferences would select.
///
/// A CI warm asks without `Accept-Encoding` and stores the identity representation of a response
/// that says `Vary: Accept-Encoding`; the build's npm, cargo or pip then asks with
/// `Accept-Encoding: gzip, deflate`. By §4.1 of RFC 9111 that is another variant, and offline a
/// miss would fail the build — although identity is acceptable to every client that does not
/// exclude it (§12.5.3), so the origin itself could have answered with those very bytes. Offline,
/// the cache serves a stored variant when each Vary'd field either matches (``VaryMatching``) or
/// is one of these two and the request accepts the stored representation's coding or media type.
/// Every other field (`Accept-Language`, `Cookie`, `Authorization`, …) must still match: the cache
/// cannot know what another value would have got.
public enum ContentNegotiation {
    /// Whether a request with `request` fields accepts a stored response with `representation`
    /// (its header fields), stored for a request whose Vary'd fields were `recorded`.
    public static func accepts(
        _ request: HeaderFields, vary: Vary, recorded: (String) -> String?, representation: HeaderFields
    ) -> Bool {
        if vary.isWildcard { return false }
        for name in vary.fieldNames {
            let values = request.values(for: name)
            let current = values.isEmpty ? nil : VaryMatching.normalizedValue(values)
            if VaryMatching.sameValue(name: name, current, recorded(name)) { continue }
            switch name {
            case "accept-encoding":
                guard acceptsCodings(of: representation, current) else { return false }
            case "accept":
                guard acceptsMediaType(of: representation, current) else { return false }
            default:
                return false
            }
        }
        return true
    }

    /// Whether `request` accepts `stored` (``accepts(_:vary:recorded:representation:)``).
    public static func accepts(_ stored: StoredResponse, request: HeaderFields) -> Bool {
        let recorded = stored.varyingRequestFields
        // The client's host (``VaryMatching/alwaysVaried``) is never negotiated: it must match.
        return VaryMatching.alwaysVariedMatches(vary: stored.vary, recorded: recorded, request: request)
            && accepts(request, vary: stored.vary, recorded: { name in recorded.first { $0.name == name }?.value }, representation: stored.headerFields)
    }

    /// Whether an `Accept-Encoding` value (nil: the field is absent) accepts every content coding
    /// `representation` was sent with. Without the field only identity is taken as acceptable:
    /// §12.5.3 allows any coding then, but a client that names none may not decode one.
    static func acceptsCodings(of representation: HeaderFields, _ acceptEncoding: String?) -> Bool {
        let codings = FieldList.elements(representation.values(for: .contentEncoding))
            .map { $0.lowercased() }.filter { $0 != "identity" }
        guard let acceptEncoding else { return codings.isEmpty }
        // A value that does not parse accepts nothing it does not match exactly.
        let (weights, parsed) = codingWeights(FieldList.elements(acceptEncoding))
        guard parsed else { return false }
        guard !codings.isEmpty else {
            // Identity: acceptable unless excluded by `identity;q=0`, or by `*;q=0` without it.
            return (weights["identity"] ?? weights["*"] ?? 1) > 0
        }
        return codings.allSatisfy { coding in
            (weights[coding == "x-gzip" ? "gzip" : coding] ?? weights["*"] ?? 0) > 0
        }
    }

    /// Of `offered` content codings (in the server's order of preference), the one `Accept-Encoding`
    /// lines weigh highest above zero (`*` standing for those not named; ties go to the earlier
    /// offered); nil when none is acceptable or the client sent no `Accept-Encoding` (RFC 9110
    /// §12.5.3: it may not decode any).
    public static func preferredCoding(_ acceptEncoding: [String], among offered: [String]) -> String? {
        guard !acceptEncoding.isEmpty else { return nil }
        let weights = codingWeights(FieldList.elements(acceptEncoding)).weights
        var best: (coding: String, weight: Int)?
        for coding in offered {
            let weight = weights[coding] ?? weights["*"] ?? 0
            if weight > 0, weight > best?.weight ?? 0 { best = (coding, weight) }
        }
        return best?.coding
    }

    /// The weight of each coding an `Accept-Encoding` list names (`x-gzip` as `gzip`), and whether
    /// every element parsed (those that do not are left out).
    private static func codingWeights(_ elements: [Substring]) -> (weights: [String: Int], parsed: Bool) {
        var weights: [String: Int] = [:]
        var parsed = true
        for element in elements {
            guard let (weight, coding) = PreferenceListNormalizer.simpleRange(element) else {
                parsed = false
                continue
            }
            weights[coding == "x-gzip" ? "gzip" : coding] = weight
        }
        return (weights, parsed)
    }

    /// Whether an `Accept` value (nil: absent, any media type) accepts `representation`'s
    /// `Content-Type`, by the most specific range that matches it (`type/subtype`, then
    /// `type/*`, then `*/*`; a range's parameters are not compared).
    static func acceptsMediaType(of representation: HeaderFields, _ accept: String?) -> Bool {
        guard let accept else { return true }
        // The Content-Type parsed as a media range would be: lowercased, its parameters dropped.
        guard let contentType = representation[.contentType],
            let (_, parsed) = PreferenceListNormalizer.mediaRange(Substring(contentType)),
            let mediaType = parsed.split(separator: ";").first.map(String.init),
            let slash = mediaType.firstIndex(of: "/")
        else { return false }
        let type = mediaType[..<slash]
        var best: (specificity: Int, weight: Int)?
        for element in FieldList.elements(accept) {
            guard let (weight, text) = PreferenceListNormalizer.mediaRange(element) else { return false }
            let range = text.split(separator: ";").first.map(String.init) ?? text
            let specificity: Int
            if range == mediaType {
                specificity = 2
            } else if range == "\(type)/*" {
                specificity = 1
            } else if range == "*/*" {
                specificity = 0
            } else {
                continue
            }
            if best.map({ specificity > $0.specificity }) ?? true { best = (specificity, weight) }
        }
        return (best?.weight ?? 0) > 0
    }
}
