public import TollgateHTTP

extension HostRule.RemoteMapping {
    /// What the client gets for a `Location` or `Content-Location` value the mapped origin sent
    /// for the request it loaded at `loaded` (the mapped URL) on behalf of `client` (the URL the
    /// client asked for), or nil to pass the value unchanged — nginx's `proxy_redirect default`.
    ///
    /// A reference that resolves under ``to`` is written for the client's URL: an absolute URL
    /// (or `//host/…`) becomes the client's scheme and host with the mapped prefix swapped back to
    /// ``path``; a path (`/…`) gets its prefix swapped back. A reference outside ``to``, and a
    /// relative one (`next`, `../x`, which resolve alike on both sides of the mapping while they
    /// stay under the prefix), is left as it is. The fragment is kept.
    public func clientReference(for reference: String, loaded: HTTPURL, client: HTTPURL) -> String? {
        let trimmed = reference.trimmingASCIIWhitespace()
        let isAbsolute = trimmed.firstIndex(of: ":").map { colon in
            trimmed[colon...].hasPrefix("://") && trimmed[..<colon].allSatisfy { $0.isLetter }
        } ?? false
        guard isAbsolute || trimmed.hasPrefix("/") else { return nil }
        guard let resolved = try? loaded.resolving(trimmed), resolved.isSameOrigin(as: to),
            let path = clientPath(for: resolved.path)
        else { return nil }
        let fragment = trimmed.firstIndex(of: "#").map { trimmed[$0...] } ?? ""
        let pathAndQuery = path + (resolved.query.map { "?" + $0 } ?? "")
        if isAbsolute { return client.absoluteString(pathAndQuery: pathAndQuery) + fragment }
        if trimmed.hasPrefix("//") { return "//" + client.authority + pathAndQuery + fragment }
        return pathAndQuery + fragment
    }

    /// What the client gets for a `Set-Cookie` value from the mapped origin, or nil to pass it
    /// unchanged: a `Domain` naming ``to``'s host (or a parent of it) is dropped, so the cookie
    /// is the client's host's alone (a browser refuses a cookie for another domain); a `Path`
    /// under ``to``'s path gets the mapped prefix swapped back to ``path``.
    public func clientSetCookie(_ value: String, client: HTTPURL) -> String? {
        var parts = value.split(separator: ";", omittingEmptySubsequences: false).map(String.init)
        guard parts.count > 1 else { return nil }
        var changed = false
        var index = 1
        while index < parts.count {
            let part = parts[index]
            let equals = part.firstIndex(of: "=") ?? part.endIndex
            let name = String(part[..<equals]).trimmingASCIIWhitespace().lowercased()
            let attribute = equals < part.endIndex ? String(part[part.index(after: equals)...]).trimmingASCIIWhitespace() : ""
            if name == "domain", client.host != to.host, coversMappedHost(domain: attribute) {
                parts.remove(at: index)
                changed = true
                continue
            }
            if name == "path", attribute.hasPrefix("/"), let path = clientPath(for: attribute), path != attribute {
                parts[index] = " Path=" + path
                changed = true
            }
            index += 1
        }
        return changed ? parts.joined(separator: ";") : nil
    }

    /// ``path`` with the rest of `mappedPath` past ``to``'s path, or nil when `mappedPath` is not
    /// under it (at a `/`) — the inverse of ``map(_:)``.
    func clientPath(for mappedPath: String) -> String? {
        Self.rest(of: mappedPath, under: to.path).map { Self.joined(path, $0) }
    }

    /// Whether a cookie's `Domain` (RFC 6265 §5.2.3: a leading dot ignored) domain-matches
    /// ``to``'s host.
    private func coversMappedHost(domain: String) -> Bool {
        var domain = domain.lowercased()
        if domain.hasPrefix(".") { domain.removeFirst() }
        guard !domain.isEmpty else { return false }
        let host = to.host.lowercased()
        return host == domain || host.hasSuffix("." + domain)
    }
}
