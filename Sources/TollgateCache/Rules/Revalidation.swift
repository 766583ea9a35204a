public import TollgateHTTP

/// A conditional request to confirm a stored response with the origin (RFC 9111 §4.3.1).
public struct Revalidation: Sendable, Hashable {
    /// The stored response being validated.
    public var stored: StoredResponse
    /// If-None-Match (from its ETag) or else If-Modified-Since (from its Last-Modified); empty
    /// when it has no validator, in which case the request is a plain one whose response
    /// replaces the stored one (which still serves `stale-if-error`).
    public var conditionalHeaders: HeaderFields
    /// Whether, at decision time, the stored response may be served if the origin cannot
    /// be reached or answers 5xx (`stale-if-error`); re-check with
    /// ``CacheRules/staleIfErrorAllows(stored:request:now:)`` when the error comes later.
    public var staleIfErrorAllowed: Bool

    /// Creates a revalidation.
    public init(stored: StoredResponse, conditionalHeaders: HeaderFields, staleIfErrorAllowed: Bool) {
        self.stored = stored
        self.conditionalHeaders = conditionalHeaders
        self.staleIfErrorAllowed = staleIfErrorAllowed
    }

    /// `request` as sent upstream: the client's own conditional fields replaced by ours, so
    /// that a 304 is about the stored response (the client's conditions are then evaluated
    /// against it with ``CacheRules/answersConditional(clientRequest:stored:)``).
    public func upstreamRequest(from request: HTTPRequestHead) -> HTTPRequestHead {
        var upstream = request.withoutConditionalFields
        for field in conditionalHeaders { upstream.headerFields.add(name: field.name, value: field.value) }
        return upstream
    }
}
