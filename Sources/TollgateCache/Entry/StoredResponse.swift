public import Foundation
public import TollgateHTTP

/// The metadata of one stored response (one variant): everything but the body bytes.
///
/// Times are wall-clock `Date`s because they outlive the process and are compared with the
/// `Date` and `Expires` fields of the response. The header fields are the ones kept for
/// reuse (``StoredHeaders``: no hop-by-hop fields, no Set-Cookie), with Content-Length set
/// to the body's real length.
public struct StoredResponse: Sendable, Hashable {
    // One copy-on-write box: a hit copies the stored response several times (lookup, rules,
    // the hit, the task) and each copy is one retain instead of a dozen.
    private struct Parts: Hashable, Sendable {
        var key: CacheKey
        var url: String
        var status: Int
        var reason: String
        var headerFields: HeaderFields
        /// ``headerFields``' Cache-Control, parsed when the fields are set: every lookup's
        /// freshness decision needs it, and a decoded response is reused across hits.
        var cacheControl: CacheControl
        var requestTime: Date
        var responseTime: Date
        /// The parts of its age that do not change with time, worked out when the fields or
        /// times change (from the Date and Age fields: two parses per lookup otherwise).
        var ageBasis: Freshness.AgeBasis
        var varyingRequestFields: [VaryingField]
        var bodyLength: Int64
        var bodyDigest: [UInt8]
        var bodyLocation: BodyLocation
        var storedAt: Date
        var lastAccess: Date
        var staleSince: Date?
    }

    @CopyOnWrite private var parts: Parts

    /// The key it is filed under.
    public var key: CacheKey {
        _read { yield parts.key }
        _modify { yield &parts.key }
    }

    /// The request URL as the client sent it (before key normalization); used for revalidation.
    public var url: String {
        _read { yield parts.url }
        _modify { yield &parts.url }
    }

    /// The status code.
    public var status: Int {
        _read { yield parts.status }
        _modify { yield &parts.status }
    }

    /// The reason phrase as received.
    public var reason: String {
        _read { yield parts.reason }
        _modify { yield &parts.reason }
    }

    /// The stored header fields, in received order.
    public var headerFields: HeaderFields {
        _read { yield parts.headerFields }
        _modify {
            yield &parts.headerFields
            parts.cacheControl = CacheControl(response: parts.headerFields)
            parts.ageBasis = Self.ageBasis(parts)
        }
    }

    /// The response's Cache-Control directives (parsed once per change of ``headerFields``).
    public var cacheControl: CacheControl { parts.cacheControl }

    /// When the request that produced it was sent (RFC 9111 §4.2.3 `request_time`).
    public var requestTime: Date {
        _read { yield parts.requestTime }
        _modify {
            yield &parts.requestTime
            parts.ageBasis = Self.ageBasis(parts)
        }
    }

    /// When the response was received (`response_time`).
    public var responseTime: Date {
        _read { yield parts.responseTime }
        _modify {
            yield &parts.responseTime
            parts.ageBasis = Self.ageBasis(parts)
        }
    }

    /// Its Date value and corrected initial age (RFC 9111 §4.2.3), kept with the fields.
    var ageBasis: Freshness.AgeBasis { parts.ageBasis }

    private static func ageBasis(_ parts: Parts) -> Freshness.AgeBasis {
        Freshness.AgeBasis(headerFields: parts.headerFields, requestTime: parts.requestTime, responseTime: parts.responseTime)
    }

    /// The request header fields the response's Vary names, as the request carried them.
    public var varyingRequestFields: [VaryingField] {
        _read { yield parts.varyingRequestFields }
        _modify { yield &parts.varyingRequestFields }
    }

    /// The body's length in bytes.
    public var bodyLength: Int64 {
        _read { yield parts.bodyLength }
        _modify { yield &parts.bodyLength }
    }

    /// The body's SHA-256 digest, 32 bytes.
    public var bodyDigest: [UInt8] {
        _read { yield parts.bodyDigest }
        _modify { yield &parts.bodyDigest }
    }

    /// Where the body lives.
    public var bodyLocation: BodyLocation {
        _read { yield parts.bodyLocation }
        _modify { yield &parts.bodyLocation }
    }

    /// When it was stored.
    public var storedAt: Date {
        _read { yield parts.storedAt }
        _modify { yield &parts.storedAt }
    }

    /// When it was last served (at most a flush interval behind; see ``CacheStore``).
    public var lastAccess: Date {
        _read { yield parts.lastAccess }
        _modify { yield &parts.lastAccess }
    }

    /// When a soft purge marked it stale (Fastly's soft purge, Varnish's `xkey.softpurge`): from
    /// then on it is stale however long its lifetime, and has been for the time since
    /// (``Freshness``), so `stale-while-revalidate` and `stale-if-error` still serve it while
    /// the origin is asked. A validation (a 304, a HEAD) clears it. Nil: not marked.
    public var staleSince: Date? {
        _read { yield parts.staleSince }
        _modify { yield &parts.staleSince }
    }

    /// Creates the metadata of a stored response.
    public init(
        key: CacheKey,
        url: String,
        status: Int,
        reason: String,
        headerFields: HeaderFields,
        requestTime: Date,
        responseTime: Date,
        varyingRequestFields: [VaryingField] = [],
        bodyLength: Int64 = 0,
        bodyDigest: [UInt8] = SHA256.hash([UInt8]()),
        bodyLocation: BodyLocation = .inline,
        storedAt: Date? = nil,
        lastAccess: Date? = nil,
        staleSince: Date? = nil
    ) {
        _parts = CopyOnWrite(
            wrappedValue: Parts(
                key: key,
                url: url,
                status: status,
                reason: reason,
                headerFields: headerFields,
                cacheControl: CacheControl(response: headerFields),
                requestTime: requestTime,
                responseTime: responseTime,
                ageBasis: Freshness.AgeBasis(headerFields: headerFields, requestTime: requestTime, responseTime: responseTime),
                varyingRequestFields: varyingRequestFields,
                bodyLength: bodyLength,
                bodyDigest: bodyDigest,
                bodyLocation: bodyLocation,
                storedAt: storedAt ?? responseTime,
                lastAccess: lastAccess ?? storedAt ?? responseTime,
                staleSince: staleSince
            )
        )
    }

    /// The body digest in lowercase hex.
    public var bodySHA256: String { SHA256.hex(bodyDigest) }

    /// The response head to serve (before the Age field a hit adds).
    public var responseHead: HTTPResponseHead {
        HTTPResponseHead(status: status, reason: reason, headerFields: headerFields)
    }

    /// The Vary field of the stored response.
    public var vary: Vary { Vary(fieldValues: headerFields.values(for: .vary)) }
}

/// One request header field a response varies on, with the request's value.
public struct VaryingField: Sendable, Hashable {
    /// The field name, lowercased.
    public var name: String
    /// The normalized value (``VaryMatching/normalizedValue(_:)``), or nil when the request lacked the field.
    public var value: String?

    /// Creates a varying field; the name is lowercased.
    public init(name: String, value: String?) {
        self.name = name.lowercased()
        self.value = value
    }
}

/// Where a stored body is.
public enum BodyLocation: Sendable, Hashable {
    /// In the LMDB record, after the metadata.
    case inline
    /// In a file of the store's `bodies/` directory, by file name.
    case file(String)
}
