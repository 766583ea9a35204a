import RawStructuredFieldValues
public import TollgateHTTP

/// Targeted cache control (RFC 9213): a field such as `CDN-Cache-Control` that carries
/// Cache-Control directives for the caches it names. A cache that honours one of
/// ``CacheRules/targetedFields`` uses the first of them the response carries, in the list's
/// order (its own name first), *instead of* Cache-Control (and Pragma); the field itself is
/// stored and passed on unchanged, for the caches further down.
///
/// Unlike Cache-Control, a targeted field is a Structured Field Dictionary (RFC 8941, parsed by
/// swift-http-structured-headers): one that does not parse, or whose delta-seconds directives are
/// not integers, is ignored as a whole (§2.1), and Cache-Control applies.
extension CacheRules {
    /// The response directives this cache goes by: the first valid targeted field present, else
    /// Cache-Control (``CacheControl/init(response:)``).
    public func responseControl(_ fields: HeaderFields) -> CacheControl {
        for name in targetedFields where fields.contains(name) {
            let values = fields.values(for: name)
            guard Self.isValidTargetedValue(values.joined(separator: ", ")) else { continue }
            return CacheControl(fieldValues: values)
        }
        return CacheControl(response: fields)
    }

    /// The directives of a stored response: its memo of Cache-Control unless it carries a
    /// targeted field this cache honours (a hit then parses nothing), else ``responseControl(_:)``.
    public func responseControl(for stored: StoredResponse) -> CacheControl {
        if targetedFields.isEmpty { return stored.cacheControl }
        let fields = stored.headerFields
        guard targetedFields.contains(where: { fields.contains($0) }) else { return stored.cacheControl }
        return responseControl(fields)
    }

    /// The directives whose value is delta-seconds: an Integer in a targeted field.
    private static let integerDirectives: Set<String> = ["max-age", "s-maxage", "stale-while-revalidate", "stale-if-error"]

    /// Whether `value` is a Structured Field Dictionary whose delta-seconds members are Integers.
    static func isValidTargetedValue(_ value: String) -> Bool {
        var parser = StructuredFieldValueParser(Array(value.utf8))
        guard let dictionary = try? parser.parseDictionaryFieldValue() else { return false }
        for (key, member) in dictionary where integerDirectives.contains(key) {
            guard case .item(let item) = member, case .integer(let seconds) = item.rfc9651BareItem, seconds >= 0 else {
                return false
            }
        }
        return true
    }
}
