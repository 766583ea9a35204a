public import TollgateHTTP

/// The tags a response carries so that a group of responses can be purged at once
/// (`cache.tag-header`): Fastly's `Surrogate-Key` (separated by spaces), Cloudflare's `Cache-Tag`
/// and Akamai's `Edge-Cache-Tag` (by commas), Varnish's `xkey` (either). Tags compare exactly,
/// case included; every line of the field counts.
public enum CacheTags {
    /// The tags in `text`: the pieces between spaces, tabs and commas.
    public static func tags(in text: Substring) -> [Substring] {
        text.split(whereSeparator: isSeparator)
    }

    /// Whether a line of `field` in `fields` names one of `tags`.
    public static func field(_ field: String, in fields: HeaderFields, namesAnyOf tags: Set<String>) -> Bool {
        fields.values(for: field).contains { value in
            value.split(whereSeparator: isSeparator).contains { tags.contains(String($0)) }
        }
    }

    private static func isSeparator(_ character: Character) -> Bool {
        character == " " || character == "," || character == "\t"
    }
}
