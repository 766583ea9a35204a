public import TollgateHTTP

/// The answer of the `willCacheResponse` gate (``CacheRules/storability(request:response:bodyLength:context:)``).
public enum Storability: Sendable, Hashable {
    /// Store it; `notes` say what the stored copy leaves out (e.g. ``StorabilityReason/setCookieStripped``).
    case store(notes: [StorabilityReason])
    /// Do not store it, for the first reason found.
    case doNotStore(StorabilityReason)

    /// Whether the response may be stored.
    public var allowsStoring: Bool {
        if case .store = self { return true }
        return false
    }
}

/// What the gate needs besides the messages.
public struct StorabilityContext: Sendable, Hashable {
    /// Whether the response came from the network (default true); a response served from
    /// the cache is never stored again.
    public var fromNetwork: Bool
    /// The request's cache policy (default `.protocol`).
    public var policy: RequestCachePolicy
    /// Whether the session's configuration lets this response be stored (default true).
    public var sessionAllowsStoring: Bool
    /// The cache's capacity in bytes (the size limit is a fraction of it).
    public var capacity: Int64
    /// Whether the response will be stored fresh for a set time whatever its headers say (a
    /// rule's `cache.force-ttl`, as nginx's `proxy_cache_valid`): a `302`, `303` or `307`, which
    /// is stored only with explicit freshness, may then be stored without (default false).
    public var freshnessForced = false

    /// A context with the defaults above.
    public init(
        capacity: Int64,
        fromNetwork: Bool = true,
        policy: RequestCachePolicy = .protocol,
        sessionAllowsStoring: Bool = true
    ) {
        self.capacity = capacity
        self.fromNetwork = fromNetwork
        self.policy = policy
        self.sessionAllowsStoring = sessionAllowsStoring
    }
}

/// One step of the gate: passes, or fails with its reason.
public struct StorabilityCheck: Sendable {
    /// The reason given when the check fails (the check itself is ``CacheRules``'s rule for it).
    public let reason: StorabilityReason
}

extension CacheRules {
    /// The gate, in order (the seeds' `willCacheResponse` conditions, then RFC 9111 §3 and
    /// §3.5 for a shared cache); the first check that fails gives the reason.
    public static let storabilityChecks: [StorabilityCheck] = gate.map { StorabilityCheck(reason: $0.reason) }

    /// The gate's checks, in order.
    private enum GateCheck {
        case scheme, method, partial, status, notFromNetwork, policy, noStore, `private`, authorization, varyStar
        case sizeLimit

        /// The reason given when the check fails.
        var reason: StorabilityReason {
            switch self {
            case .scheme: .scheme
            case .method: .method
            case .partial: .partial
            case .status: .status
            case .notFromNetwork: .notFromNetwork
            case .policy: .policy
            case .noStore: .noStore
            case .private: .private
            case .authorization: .authorization
            case .varyStar: .varyStar
            case .sizeLimit: .sizeLimit
            }
        }
    }

    private static let gate: [GateCheck] = [
        .scheme, .method, .partial, .status, .notFromNetwork, .policy, .noStore, .private, .authorization, .varyStar,
        .sizeLimit,
    ]

    /// Whether `check` passes. The inputs are parsed once and borrowed by each check: no copy of
    /// the messages or the rules, and no closure, per check (the gate runs for every response
    /// from the network).
    private func passes(
        _ check: GateCheck,
        request: HTTPRequestHead,
        response: HTTPResponseHead,
        bodyLength: Int64?,
        context: StorabilityContext,
        requestControl: CacheControl,
        responseControl: CacheControl
    ) -> Bool {
        switch check {
        case .scheme:
            return request.url.scheme == "http" || request.url.scheme == "https"
        case .method:
            return request.method == .get || postResponseAnswersGET(request: request, response: response)
        case .partial:
            // A 206 is kept as partial content, never whole; a 416 answers a range, not the
            // resource, and stored under the URL's key it would answer requests without one.
            return response.status != 206 && response.status != 416
        case .status:
            return isStorableStatus(response, control: responseControl)
                || (context.freshnessForced && Self.isRedirectStoredWhenForced(response.status))
        case .notFromNetwork:
            return context.fromNetwork
        case .policy:
            return context.policy.allowsStoring && context.sessionAllowsStoring
        case .noStore:
            // `must-understand` on a status this cache implements: `no-store` is then ignored (§5.2.2.3).
            let understoodMustUnderstand =
                responseControl.mustUnderstand && CacheRules.understoodStatuses.contains(response.status)
            return !requestControl.noStore && (!responseControl.noStore || understoodMustUnderstand)
        case .private:
            return !isShared || responseControl.private != .all
        case .authorization:
            // A `Client-Cert` (RFC 9440: a certificate a TLS-terminating proxy verified, ours with
            // `client-auth` or a trusted forwarder's) names the client as Authorization does: an
            // origin may answer it for that client alone.
            guard isShared,
                request.headerFields.contains(.authorization) || request.headerFields.contains(.clientCert)
            else { return true }
            return responseControl.public || responseControl.sMaxAge != nil || responseControl.mustRevalidate
        case .varyStar:
            return !Vary(fieldValues: response.headerFields.values(for: .vary)).isWildcard
        case .sizeLimit:
            guard let bodyLength else { return true }  // checked while streaming
            return bodyLength <= maximumBodyLength(capacity: context.capacity)
        }
    }

    /// Whether `response`, answering `request`, may be stored, and if not why.
    ///
    /// - Parameters:
    ///   - bodyLength: the body's length when known (Content-Length, or after the body
    ///     ended); nil defers the size check to the writer, which stops at the same limit.
    ///   - context: where the response came from, the policies, the capacity.
    public func storability(
        request: HTTPRequestHead,
        response: HTTPResponseHead,
        bodyLength: Int64?,
        context: StorabilityContext
    ) -> Storability {
        let requestControl = CacheControl(request: request.headerFields)
        let responseControl = responseControl(response.headerFields)
        for check in Self.gate
        where !passes(
            check, request: request, response: response, bodyLength: bodyLength, context: context,
            requestControl: requestControl, responseControl: responseControl
        ) {
            return .doNotStore(check.reason)
        }
        var notes: [StorabilityReason] = []
        let stripped = StoredHeaders.filter(response.headerFields, shared: isShared, keepsCookies: storesSetCookie).stripped
        if stripped.contains(where: StoredHeaders.cookieFields.contains) { notes.append(.setCookieStripped) }
        if stripped.contains(where: { !StoredHeaders.cookieFields.contains($0) }) {
            notes.append(.privateFieldsStripped)
        }
        return .store(notes: notes)
    }

    /// The largest body stored for a cache of `capacity` bytes.
    public func maximumBodyLength(capacity: Int64) -> Int64 {
        Int64((Double(max(0, capacity)) * maximumBodyFraction).rounded(.down))
    }

    /// §3: a final status the cache understands, heuristically cacheable or made cacheable
    /// by explicit freshness or `public` (or `private` in a private cache).
    /// Whether `status` is a redirect a forced freshness lets be stored without freshness of its
    /// own (302, 303, 307): a registry's or a release page's download redirect to its storage (the
    /// heuristically cacheable 301 and 308 need none). A comparison, not a set: it is asked of
    /// every response from the network.
    public static func isRedirectStoredWhenForced(_ status: Int) -> Bool {
        status == 302 || status == 303 || status == 307
    }

    private func isStorableStatus(_ response: HTTPResponseHead, control: CacheControl) -> Bool {
        let status = response.status
        guard (200..<600).contains(status), status != 304 else { return false }
        if control.mustUnderstand, !CacheRules.understoodStatuses.contains(status) { return false }
        if Self.heuristicallyCacheableStatuses.contains(status) { return true }
        return response.headerFields.contains(.expires) || control.maxAge != nil || control.public
            || (isShared && control.sMaxAge != nil)
            || (!isShared && control.private != nil)
    }
}
