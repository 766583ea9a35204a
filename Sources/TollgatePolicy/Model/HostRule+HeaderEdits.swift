public import TollgateHTTP

extension HostRule {
    /// Changes to the header fields of these hosts' requests as they go upstream
    /// (`request-headers`) or of their responses as they go to the client (`response-headers`):
    /// nginx's `proxy_set_header`/`proxy_hide_header`/`add_header`, HAProxy's `http-request` and
    /// `http-response` `set-header`/`add-header`/`del-header`, mitmproxy's `modify_headers`.
    ///
    /// Applied in a fixed order: `remove`, then `set` (every line of the name replaced by the
    /// value), then `add` (a line appended). Names compare case-insensitively.
    public struct HeaderEdits: Hashable, Sendable {
        /// Field names removed (`remove`).
        public var remove: [String] = []
        /// Fields set, replacing any lines of the name (`set`).
        public var set: [Field] = []
        /// Fields added after any lines of the name (`add`).
        public var add: [Field] = []

        /// One field line of `set` or `add`.
        public struct Field: Hashable, Sendable {
            public var name: String
            public var value: String

            public init(name: String, value: String) {
                self.name = name
                self.value = value
            }
        }

        /// No change.
        public init() {}

        /// Whether nothing is changed.
        public var isEmpty: Bool { remove.isEmpty && set.isEmpty && add.isEmpty }

        /// Applies the changes to `fields`.
        public func apply(to fields: inout HeaderFields) {
            for name in remove { fields.remove(name) }
            for field in set {
                fields.remove(field.name)
                fields.add(name: field.name, value: field.value)
            }
            for field in add { fields.add(name: field.name, value: field.value) }
        }

        /// `set X-A, X-B; add X-C; remove Server`: the names, never the values (a value may be a
        /// token an origin asks for).
        public var summary: String {
            var parts: [String] = []
            if !set.isEmpty { parts.append("set " + set.map(\.name).joined(separator: ", ")) }
            if !add.isEmpty { parts.append("add " + add.map(\.name).joined(separator: ", ")) }
            if !remove.isEmpty { parts.append("remove " + remove.joined(separator: ", ")) }
            return parts.joined(separator: "; ")
        }
    }
}
