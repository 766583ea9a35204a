/// The deprecated Pragma field (RFC 9111 §5.4), kept for HTTP/1.0 clients.
///
/// `Pragma: no-cache` only matters in a request that has no Cache-Control field: there it
/// means the same as `Cache-Control: no-cache` (RFC 7234 §5.4). When Cache-Control is present,
/// Pragma is ignored. In a response its meaning was never specified, so caches ignore it there.
public struct Pragma: Sendable, Hashable, CustomStringConvertible {
    /// Whether `no-cache` is listed; see the type's documentation for when it applies.
    public var noCache: Bool
    /// The other pragma directives, in received order, names lowercased.
    public var extensions: [FieldDirective]

    /// Creates a value.
    public init(noCache: Bool = false, extensions: [FieldDirective] = []) {
        self.noCache = noCache
        self.extensions = extensions
    }

    /// Parses the values of every Pragma field line of a message.
    public init(fieldValues: [String]) {
        self.init()
        for value in fieldValues {
            FieldScanner.withBytes(of: value) { scanner in
                scanner.forEachElement { element in
                    guard let directive = scanner.directive(element) else { return }
                    // `no-cache=x` is not in the grammar; reading it as no-cache is the restrictive choice.
                    if scanner.nameEquals(directive.name, "no-cache") {
                        noCache = true
                    } else {
                        extensions.append(FieldDirective(scanner, directive))
                    }
                }
            }
        }
    }

    /// The directives as one field value (`no-cache` first).
    public var description: String {
        ((noCache ? ["no-cache"] : []) + extensions.map(\.description)).joined(separator: ", ")
    }
}
