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
    /// The reason given when the check fails.
    public let reason: StorabilityReason
    let passes: @Sendable (StorabilityCandidate) -> Bool
}

/// The inputs of the gate's checks, parsed once.
struct StorabilityCandidate {
    let rules: CacheRules
    let request: HTTPRequestHead
    let response: HTTPResponseHead
    let bodyLength: Int64?
    let context: StorabilityContext
    let requestControl: CacheControl
    let responseControl: CacheControl

    /// `must-understand` on a status this cache implements: `no-store` is then ignored (§5.2.2.3).
    var understoodMustUnderstand: Bool {
        responseControl.mustUnderstand && CacheRules.understoodStatuses.contains(response.status)
    }
}

extension CacheRules {
    /// The gate, in order (the seeds' `willCacheResponse` conditions, then RFC 9111 §3 and
    /// §3.5 for a shared cache); the first check that fails gives the reason.
    public static let storabilityChecks: [StorabilityCheck] = [
        StorabilityCheck(reason: .scheme) { $0.request.url.scheme == "http" || $0.request.url.scheme == "https" },
        StorabilityCheck(reason: .method) { candidate in
            candidate.request.method == .get
                || candidate.rules.postResponseAnswersGET(request: candidate.request, response: candidate.response)
        },
        // A 206 is kept as partial content, never whole; a 416 answers a range, not the resource,
        // and stored under the URL's key it would answer requests without one.
        StorabilityCheck(reason: .partial) { $0.response.status != 206 && $0.response.status != 416 },
        StorabilityCheck(reason: .status) { isStorableStatus($0) },
        StorabilityCheck(reason: .notFromNetwork) { $0.context.fromNetwork },
        StorabilityCheck(reason: .policy) { $0.context.policy.allowsStoring && $0.context.sessionAllowsStoring },
        StorabilityCheck(reason: .noStore) { candidate in
            !candidate.requestControl.noStore
                && (!candidate.responseControl.noStore || candidate.understoodMustUnderstand)
        },
        StorabilityCheck(reason: .private) { !$0.rules.isShared || $0.responseControl.private != .all },
        StorabilityCheck(reason: .authorization) { candidate in
            guard candidate.rules.isShared, candidate.request.headerFields.contains(.authorization) else {
                return true
            }
            let control = candidate.responseControl
            return control.public || control.sMaxAge != nil || control.mustRevalidate
        },
        StorabilityCheck(reason: .varyStar) {
            !Vary(fieldValues: $0.response.headerFields.values(for: .vary)).isWildcard
        },
        StorabilityCheck(reason: .sizeLimit) { candidate in
            guard let length = candidate.bodyLength else { return true }  // checked while streaming
            return length <= candidate.rules.maximumBodyLength(capacity: candidate.context.capacity)
        },
    ]

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
        let candidate = StorabilityCandidate(
            rules: self,
            request: request,
            response: response,
            bodyLength: bodyLength,
            context: context,
            requestControl: CacheControl(request: request.headerFields),
            responseControl: responseControl(response.headerFields)
        )
        for check in Self.storabilityChecks where !check.passes(candidate) {
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
    private static func isStorableStatus(_ candidate: StorabilityCandidate) -> Bool {
        let status = candidate.response.status
        guard (200..<600).contains(status), status != 304 else { return false }
        let control = candidate.responseControl
        if control.mustUnderstand, !CacheRules.understoodStatuses.contains(status) { return false }
        if heuristicallyCacheableStatuses.contains(status) { return true }
        return candidate.response.headerFields.contains(.expires) || control.maxAge != nil || control.public
            || (candidate.rules.isShared && control.sMaxAge != nil)
            || (!candidate.rules.isShared && control.private != nil)
    }
}
