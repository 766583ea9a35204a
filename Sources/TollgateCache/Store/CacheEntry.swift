/// The identity of one stored variant, stable for its lifetime in the store.
public struct CacheEntryID: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The variant's number in the store.
    public let rawValue: UInt64

    /// An id from its number.
    public init(rawValue: UInt64) { self.rawValue = rawValue }

    public var description: String { String(rawValue, radix: 16) }
}

/// A stored variant found by ``CacheStore/lookup(_:requestHeaders:)``.
public struct CacheEntry: Sendable {
    /// Its id, for ``CacheStore/updateHeaders(of:notModified:requestTime:responseTime:)`` and removal.
    public var id: CacheEntryID
    /// Its metadata.
    public var response: StoredResponse
    /// Its body.
    public var body: CacheBody

    /// An entry as a lookup returns it (or a response held in pieces, served as one).
    public init(id: CacheEntryID, response: StoredResponse, body: CacheBody) {
        self.id = id
        self.response = response
        self.body = body
    }
}
