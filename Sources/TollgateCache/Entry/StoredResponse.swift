public import Foundation
public import TollgateHTTP

/// The metadata of one stored response (one variant): everything but the body bytes.
///
/// Times are wall-clock `Date`s because they outlive the process and are compared with the
/// `Date` and `Expires` fields of the response. The header fields are the ones kept for
/// reuse (``StoredHeaders``: no hop-by-hop fields, no Set-Cookie), with Content-Length set
/// to the body's real length.
public struct StoredResponse: Sendable, Hashable {
    /// The key it is filed under.
    public var key: CacheKey
    /// The request URL as the client sent it (before key normalization); used for revalidation.
    public var url: String
    /// The status code.
    public var status: Int
    /// The reason phrase as received.
    public var reason: String
    /// The stored header fields, in received order.
    public var headerFields: HeaderFields
    /// When the request that produced it was sent (RFC 9111 §4.2.3 `request_time`).
    public var requestTime: Date
    /// When the response was received (`response_time`).
    public var responseTime: Date
    /// The request header fields the response's Vary names, as the request carried them.
    public var varyingRequestFields: [VaryingField]
    /// The body's length in bytes.
    public var bodyLength: Int64
    /// The body's SHA-256 digest, 32 bytes.
    public var bodyDigest: [UInt8]
    /// Where the body lives.
    public var bodyLocation: BodyLocation
    /// When it was stored.
    public var storedAt: Date
    /// When it was last served (at most a flush interval behind; see ``CacheStore``).
    public var lastAccess: Date

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
        lastAccess: Date? = nil
    ) {
        self.key = key
        self.url = url
        self.status = status
        self.reason = reason
        self.headerFields = headerFields
        self.requestTime = requestTime
        self.responseTime = responseTime
        self.varyingRequestFields = varyingRequestFields
        self.bodyLength = bodyLength
        self.bodyDigest = bodyDigest
        self.bodyLocation = bodyLocation
        self.storedAt = storedAt ?? responseTime
        self.lastAccess = lastAccess ?? storedAt ?? responseTime
    }

    /// The body digest in lowercase hex.
    public var bodySHA256: String { SHA256.hex(bodyDigest) }

    /// The response head to serve (before the Age field a hit adds).
    public var responseHead: HTTPResponseHead {
        HTTPResponseHead(status: status, reason: reason, headerFields: headerFields)
    }

    /// The Vary field of the stored response.
    public var vary: Vary { Vary(fieldValues: headerFields.values(for: "Vary")) }
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
