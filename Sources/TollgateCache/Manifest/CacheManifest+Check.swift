public import TollgateHTTP

/// What is wrong with one manifest entry, checked against the cache.
public struct ManifestProblem: Sendable, Hashable, CustomStringConvertible {
    /// The kind of problem.
    public enum Kind: String, Sendable, Hashable {
        /// Nothing is stored for the entry's key and Vary'd values.
        case missing
        /// A response is stored, with another status.
        case statusDiffers = "status-differs"
        /// The stored body's length is not the manifest's.
        case sizeDiffers = "size-differs"
        /// The stored body's SHA-256 (recorded, or recomputed from the bytes) is not the manifest's.
        case digestDiffers = "digest-differs"
        /// The stored body cannot be read.
        case unreadable
    }

    /// The entry.
    public var entry: CacheManifest.Entry
    /// What is wrong.
    public var kind: Kind
    /// The detail (what the cache has instead).
    public var detail: String

    /// `URL: kind (detail)`.
    public var description: String {
        "\(entry.url): \(kind.rawValue)" + (detail.isEmpty ? "" : " (\(detail))")
    }
}

extension CacheManifest.Entry {
    /// The request header fields that select this entry's variant (its Vary'd values).
    public var selectingHeaderFields: HeaderFields {
        var fields = HeaderFields()
        for name in vary.keys.sorted() {
            if let value = vary[name] ?? nil { fields.add(name: name, value: value) }
        }
        return fields
    }

    /// Sets `fields`' Vary'd fields to this entry's recorded values (removing those the recorded
    /// request lacked): the fields a request must have to select this very variant.
    public func selectVariant(in fields: inout HeaderFields) {
        for (name, recorded) in vary {
            fields.remove(name)
            if let recorded { fields.add(name: name, value: recorded) }
        }
    }

    /// Whether this entry varies on a field ``ContentNegotiation`` negotiates offline.
    var isNegotiable: Bool { vary.keys.contains("accept") || vary.keys.contains("accept-encoding") }

    /// Whether an offline request with `fields` accepts this entry's variant, whose stored
    /// `representation` fields are given (``ContentNegotiation``).
    public func isAcceptable(to fields: HeaderFields, representation: HeaderFields) -> Bool {
        ContentNegotiation.accepts(
            fields, vary: Vary(fieldNames: vary.keys.sorted()), recorded: { vary[$0] ?? nil }, representation: representation
        )
    }

    /// Whether a request with `fields` selects this entry's variant: each Vary'd field has the
    /// recorded value (compared as ``VaryMatching`` compares them), or is absent where the
    /// recorded request lacked it.
    public func isSelected(by fields: HeaderFields) -> Bool {
        for (name, recorded) in vary {
            let values = fields.values(for: name)
            let current = values.isEmpty ? nil : VaryMatching.normalizedValue(values)
            if !VaryMatching.sameValue(name: name, current, recorded) { return false }
        }
        return true
    }
}

extension CacheStore {
    /// Checks one manifest entry against the store: present (under its key, for its Vary'd
    /// values), same status and size, and the body's SHA-256 — the one recorded and, read again
    /// from the bytes, the one stored now — the manifest's. Nil when it matches. Blocking: reads
    /// the whole body.
    public func check(_ entry: CacheManifest.Entry) -> ManifestProblem? {
        func problem(_ kind: ManifestProblem.Kind, _ detail: String = "") -> ManifestProblem {
            ManifestProblem(entry: entry, kind: kind, detail: detail)
        }
        guard let url = HTTPURL(string: entry.key) else { return problem(.missing, "the key is not a URL") }
        let key = CacheKey(url: url, normalizer: options.keyNormalizer)
        let found: CacheEntry?
        do {
            found = try lookup(key, requestHeaders: entry.selectingHeaderFields)
        } catch {
            return problem(.unreadable, "\(error)")
        }
        guard let found else { return problem(.missing) }
        let stored = found.response
        if stored.status != entry.status { return problem(.statusDiffers, "stored: \(stored.status)") }
        if stored.bodyLength != entry.size { return problem(.sizeDiffers, "stored: \(stored.bodyLength) bytes") }
        if SHA256.hex(stored.bodyDigest) != entry.sha256 {
            return problem(.digestDiffers, "recorded: \(SHA256.hex(stored.bodyDigest))")
        }
        let actual: (length: Int64, digest: [UInt8])
        do {
            actual = try found.body.digest()
        } catch {
            return problem(.unreadable, "\(error)")
        }
        if actual.length != entry.size { return problem(.sizeDiffers, "the body on disk has \(actual.length) bytes") }
        let hex = SHA256.hex(actual.digest)
        if hex != entry.sha256 { return problem(.digestDiffers, "the body on disk hashes to \(hex)") }
        return nil
    }

    /// The `Content-Type` and `Content-Encoding` stored for each entry of `entries` that varies on
    /// `Accept` or `Accept-Encoding`, by ``CacheManifest/Entry/identity``: what an offline request
    /// with other preferences is matched against (``CacheManifest/Entry/isAcceptable(to:representation:)``).
    public func representations(of entries: [CacheManifest.Entry]) -> [String: HeaderFields] {
        var found: [String: HeaderFields] = [:]
        for entry in entries where entry.isNegotiable {
            guard let url = HTTPURL(string: entry.key),
                let stored = try? lookup(CacheKey(url: url, normalizer: options.keyNormalizer), requestHeaders: entry.selectingHeaderFields)
            else { continue }
            var fields = HeaderFields()
            for name in [HeaderName.contentType, .contentEncoding] {
                for value in stored.response.headerFields.values(for: name) { fields.add(name: name, value: value) }
            }
            found[entry.identity] = fields
        }
        return found
    }

    /// Checks every entry of `manifest` (``check(_:)``); the problems in the manifest's order.
    public func check(_ manifest: CacheManifest) -> [ManifestProblem] {
        manifest.entries.compactMap { check($0) }
    }

    /// The manifest entry for what the store holds under `key` for a request with
    /// `requestHeaders`, or nil when nothing is stored for it.
    /// - Parameters:
    ///   - listedURL: the URL as the warm list gave it.
    ///   - configSHA256: the configuration's hash, recorded with the entry.
    public func manifestEntry(
        key: CacheKey, requestHeaders: HeaderFields, listedURL: String, configSHA256: String
    ) throws -> CacheManifest.Entry? {
        guard let found = try lookup(key, requestHeaders: requestHeaders) else { return nil }
        let stored = found.response
        var vary: [String: String?] = [:]
        for field in stored.varyingRequestFields { vary[field.name] = .some(field.value) }
        return CacheManifest.Entry(
            method: key.method.rawValue,
            url: listedURL,
            key: key.url,
            vary: vary,
            status: stored.status,
            size: stored.bodyLength,
            sha256: SHA256.hex(stored.bodyDigest),
            storedAt: stored.storedAt,
            configSHA256: configSHA256
        )
    }
}
