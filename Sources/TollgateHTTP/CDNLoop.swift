/// The `CDN-Loop` request field (RFC 8586): each intermediary a request passes appends its own
/// identifier, so one that finds its own in a request it is asked to forward knows the request
/// has come round to it again — a forwarding loop (a parent proxy that leads back, a load
/// balancer in front of the instance that sends to it).
public enum CDNLoop {
    private static let field = HeaderNameList([.cdnLoop])

    /// Whether `fields` carry `identifier` as one of their `CDN-Loop` members (compared without
    /// case; a member's parameters after `;` are ignored).
    public static func names(_ identifier: String, in fields: HeaderFields) -> Bool {
        // Nearly every head has no such line: the key mask says so without a walk.
        guard fields.containsAny(of: field) else { return false }
        for value in fields.values(for: .cdnLoop) {
            for member in value.split(separator: ",") {
                let id = member.split(separator: ";", maxSplits: 1).first.map { String($0).trimmingASCIIWhitespace() } ?? ""
                if id.lowercased() == identifier.lowercased() { return true }
            }
        }
        return false
    }
}
