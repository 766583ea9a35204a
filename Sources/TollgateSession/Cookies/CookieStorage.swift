public import Foundation
import NIOConcurrencyHelpers
public import TollgateHTTP
import TollgateStore

/// A cookie jar in the model of `HTTPCookieStorage`, following RFC 6265: Set-Cookie parsing,
/// domain and path matching, host-only cookies, public suffixes refused as `Domain`, expiry,
/// eviction, and the Cookie header's order.
///
/// ```swift
/// var configuration = SessionConfiguration.default
/// configuration.cookieStorage = try CookieStorage.persistent(directory: dataDirectory + "/cookies")
/// configuration.httpCookieAcceptPolicy = .always
/// ```
///
/// - Memory: every cookie lives in memory; lookups never touch the disk.
/// - Persistent (``persistent(directory:publicSuffixes:)``, for default sessions): cookies with an
///   expiry date are also written to LMDB (directory 0700, files 0600) and read back when the
///   store opens; session cookies (no `Expires`/`Max-Age`) stay in memory, as a browser forgets
///   them when it quits. Writes go through one `StoreWriter` and never block the caller.
///   One instance per directory per process; a change another process makes (`tollgate cookies
///   clear`) is seen after this one reopens the store.
/// - Ephemeral sessions use a memory-only instance each (``init(publicSuffixes:limits:clock:)``).
///
/// Eviction: expired cookies first; then, past ``Limits/perDomain`` cookies for one domain, that
/// domain's least recently used; past ``Limits/total``, the least recently used of all.
///
/// Thread-safe.
public final class CookieStorage: CookieStoring, Sendable {
    /// How many cookies are kept.
    public struct Limits: Hashable, Sendable {
        /// Per cookie domain (RFC 6265 §6.1 asks for at least 50).
        public var perDomain: Int
        /// In all (RFC 6265 §6.1 asks for at least 3000).
        public var total: Int

        /// Limits; the defaults are RFC 6265's minimums.
        public init(perDomain: Int = 50, total: Int = 3000) {
            self.perDomain = perDomain
            self.total = total
        }
    }

    /// The list `Domain` attributes are checked against.
    public let publicSuffixes: PublicSuffixList
    /// The eviction limits.
    public let limits: Limits
    /// The LMDB directory, nil for a memory-only store.
    public let directory: String?
    private let clock: @Sendable () -> Date
    private let cookiesByIdentity: NIOLockedValueBox<[String: Cookie]>
    private let nextOrder: NIOLockedValueBox<UInt64>
    private let persistence: CookiePersistence?

    /// A memory-only store (an ephemeral session's).
    public init(
        publicSuffixes: PublicSuffixList = .system,
        limits: Limits = Limits(),
        clock: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.publicSuffixes = publicSuffixes
        self.limits = limits
        self.clock = clock
        self.directory = nil
        self.persistence = nil
        self.cookiesByIdentity = NIOLockedValueBox([:])
        self.nextOrder = NIOLockedValueBox(1)
    }

    private init(directory: String, publicSuffixes: PublicSuffixList, limits: Limits) throws {
        let persistence = try CookiePersistence(directory: directory)
        self.publicSuffixes = publicSuffixes
        self.limits = limits
        self.clock = { Date() }
        self.directory = directory
        self.persistence = persistence
        let now = Date()
        var loaded: [String: Cookie] = [:]
        var expired: [String] = []
        for cookie in persistence.load() {
            if cookie.isExpired(at: now) { expired.append(cookie.identity) } else { loaded[cookie.identity] = cookie }
        }
        for identity in expired { persistence.delete(identity) }
        self.cookiesByIdentity = NIOLockedValueBox(loaded)
        self.nextOrder = NIOLockedValueBox((loaded.values.map(\.storeOrder).max() ?? 0) + 1)
    }

    /// The persistent store in `directory` (created if missing), shared by every caller in this
    /// process (as `HTTPCookieStorage.shared` is by default sessions).
    public static func persistent(
        directory: String,
        publicSuffixes: PublicSuffixList = .system,
        limits: Limits = Limits()
    ) throws -> CookieStorage {
        try OpenStores.shared(directory) {
            try CookieStorage(directory: $0, publicSuffixes: publicSuffixes, limits: limits)
        }
    }

    // MARK: CookieStoring

    /// `name=value; name2=value2` for a request to `url` (RFC 6265 §5.4): the cookies it
    /// matches, longer paths first, then earlier created; their last-access time is updated.
    public func cookieHeader(for url: HTTPURL) -> String? {
        let sent = cookies(for: url)
        guard !sent.isEmpty else { return nil }
        return sent.map { "\($0.name)=\($0.value)" }.joined(separator: "; ")
    }

    /// Stores the cookies of a response from `url` that `policy` accepts.
    public func store(setCookieValues: [String], from url: HTTPURL, policy: CookieAcceptPolicy) {
        _ = store(setCookieValues: setCookieValues, from: url, mainDocumentURL: nil, policy: policy)
    }

    /// Removes every cookie (`Session.reset()`), on disk too.
    public func removeAll() {
        let removed = cookiesByIdentity.withLockedValue { cookies -> [Cookie] in
            defer { cookies.removeAll() }
            return Array(cookies.values)
        }
        for cookie in removed where !cookie.isSessionOnly { persistence?.delete(cookie.identity) }
        persistence?.deleteAll()
    }

    // MARK: the HTTPCookieStorage model

    /// Stores the cookies of a response from `url`, each as its own Set-Cookie field value;
    /// returns what became of each (the cookie stored, or why not).
    ///
    /// `onlyFromMainDocumentDomain` accepts a cookie only when `url` has the same registrable
    /// domain as `mainDocumentURL` (the page the request was made for); without one the
    /// response's own URL is the main document, so every cookie RFC 6265 allows is kept.
    @discardableResult
    public func store(
        setCookieValues: [String],
        from url: HTTPURL,
        mainDocumentURL: HTTPURL?,
        policy: CookieAcceptPolicy
    ) -> [Result<Cookie, CookieRefusal>] {
        let now = clock()
        var results: [Result<Cookie, CookieRefusal>] = []
        for field in setCookieValues {
            switch policy {
            case .never:
                results.append(.failure(.policy))
                continue
            case .onlyFromMainDocumentDomain where !sameSite(url, mainDocumentURL ?? url):
                results.append(.failure(.policy))
                continue
            case .always, .onlyFromMainDocumentDomain:
                break
            }
            let parsed = Cookie.parse(setCookie: field, from: url, now: now, publicSuffixes: publicSuffixes)
            if case .success(let cookie) = parsed { setCookie(cookie, now: now) }
            results.append(parsed)
        }
        return results
    }

    /// Every cookie that has not expired, by domain, path and name.
    public var cookies: [Cookie] {
        let now = clock()
        return cookiesByIdentity.withLockedValue { Array($0.values) }
            .filter { !$0.isExpired(at: now) }
            .sorted { ($0.domain, $0.path, $0.name) < ($1.domain, $1.path, $1.name) }
    }

    /// The cookies a request to `url` carries, in Cookie header order; marks them used.
    public func cookies(for url: HTTPURL) -> [Cookie] {
        let now = clock()
        var expired: [Cookie] = []
        let matching = cookiesByIdentity.withLockedValue { cookies -> [Cookie] in
            var found: [Cookie] = []
            for (identity, cookie) in cookies {
                if cookie.isExpired(at: now) {
                    expired.append(cookie)
                    cookies[identity] = nil
                } else if cookie.matches(url) {
                    cookies[identity]?.lastAccessDate = now
                    found.append(cookie)
                }
            }
            return found
        }
        for cookie in expired where !cookie.isSessionOnly { persistence?.delete(cookie.identity) }
        return matching.sorted {
            if $0.path.count != $1.path.count { return $0.path.count > $1.path.count }
            if $0.creationDate != $1.creationDate { return $0.creationDate < $1.creationDate }
            return $0.storeOrder < $1.storeOrder
        }
    }

    /// Stores `cookie`, replacing the one with its name, domain and path (keeping that one's
    /// creation date); an expired cookie only removes that one.
    public func setCookie(_ cookie: Cookie) {
        setCookie(cookie, now: clock())
    }

    /// Removes `cookie` (by name, domain and path).
    public func deleteCookie(_ cookie: Cookie) {
        let removed = cookiesByIdentity.withLockedValue { $0.removeValue(forKey: cookie.identity) }
        if let removed, !removed.isSessionOnly { persistence?.delete(removed.identity) }
    }

    /// Removes the cookies whose domain is `domain` or below it; returns how many.
    @discardableResult
    public func removeCookies(forDomain domain: String) -> Int {
        let domain = domain.lowercased().drop { $0 == "." }
        let removed = cookiesByIdentity.withLockedValue { cookies -> [Cookie] in
            let matching = cookies.values.filter { Cookie.domainMatches($0.domain, String(domain)) }
            for cookie in matching { cookies[cookie.identity] = nil }
            return matching
        }
        for cookie in removed where !cookie.isSessionOnly { persistence?.delete(cookie.identity) }
        return removed.count
    }

    /// Waits until every change so far is on disk (not from an event loop).
    public func flush() { persistence?.environment.flush() }

    /// Writes what is pending and closes the LMDB environment; ``persistent(directory:publicSuffixes:limits:)``
    /// opens it anew. A memory-only store just keeps working.
    public func close() {
        guard let persistence, let directory else { return }
        OpenStores.forget(directory)
        persistence.environment.close()
    }

    // MARK: storing and eviction

    private func setCookie(_ incoming: Cookie, now: Date) {
        var cookie = incoming
        let (old, kept, evicted) = cookiesByIdentity.withLockedValue { cookies -> (Cookie?, Cookie?, [Cookie]) in
            let old = cookies.removeValue(forKey: cookie.identity)
            if let old {
                cookie.creationDate = old.creationDate
                cookie.storeOrder = old.storeOrder
            } else {
                cookie.storeOrder = nextOrder.withLockedValue { order in
                    defer { order += 1 }
                    return order
                }
            }
            guard !cookie.isExpired(at: now) else { return (old, nil, []) }
            cookie.lastAccessDate = now
            cookies[cookie.identity] = cookie
            let evicted = evict(&cookies, now: now, keepingDomain: cookie.domain)
            return (old, cookies[cookie.identity], evicted)
        }
        guard let persistence else { return }
        if let kept, !kept.isSessionOnly {
            persistence.put(kept)  // replaces the old one under the same key
        } else if let old, !old.isSessionOnly {
            persistence.delete(old.identity)
        }
        for cookie in evicted where !cookie.isSessionOnly && cookie.identity != kept?.identity {
            persistence.delete(cookie.identity)
        }
    }

    /// Removes what is over the limits; returns what it removed.
    private func evict(_ cookies: inout [String: Cookie], now: Date, keepingDomain domain: String) -> [Cookie] {
        var removed: [Cookie] = []
        for (identity, cookie) in cookies where cookie.isExpired(at: now) {
            cookies[identity] = nil
            removed.append(cookie)
        }
        let sameDomain = cookies.values.filter { $0.domain == domain }
        if sameDomain.count > limits.perDomain {
            for cookie in sameDomain.sorted(by: { $0.lastAccessDate < $1.lastAccessDate }).prefix(
                sameDomain.count - limits.perDomain
            ) {
                cookies[cookie.identity] = nil
                removed.append(cookie)
            }
        }
        if cookies.count > limits.total {
            for cookie in cookies.values.sorted(by: { $0.lastAccessDate < $1.lastAccessDate }).prefix(
                cookies.count - limits.total
            ) {
                cookies[cookie.identity] = nil
                removed.append(cookie)
            }
        }
        return removed
    }

    /// Whether two URLs belong to one site: the same registrable domain (or the same host when
    /// there is none, as for an IP address).
    private func sameSite(_ a: HTTPURL, _ b: HTTPURL) -> Bool {
        let hostA = a.host.lowercased()
        let hostB = b.host.lowercased()
        if hostA == hostB { return true }
        guard !Cookie.isIPAddress(hostA), !Cookie.isIPAddress(hostB),
            let siteA = publicSuffixes.registrableDomain(of: hostA)
        else { return false }
        return siteA == publicSuffixes.registrableDomain(of: hostB)
    }
}

/// The LMDB side of a persistent ``CookieStorage``: database `cookies`, key the cookie's identity
/// (`domain NUL path NUL name`), value the cookie as JSON.
final class CookiePersistence: Sendable {
    let environment: PrivateEnvironment
    private let database: Database

    init(directory: String) throws {
        environment = try PrivateEnvironment(path: directory)
        database = try environment.environment.openDatabase(named: "cookies")
    }

    func load() -> [Cookie] {
        var result: [Cookie] = []
        let decoder = JSONDecoder()
        try? environment.environment.read { txn in
            try txn.forEach(in: database) { (_: String, value: [UInt8]) in
                if let cookie = try? decoder.decode(Cookie.self, from: Data(value)) { result.append(cookie) }
                return true
            }
        }
        return result
    }

    func put(_ cookie: Cookie) {
        guard let bytes = try? JSONEncoder().encode(cookie) else { return }
        let database = self.database
        environment.writer.submit(
            { txn in try txn.put(cookie.identity, Array(bytes), in: database) },
            completion: { _ in }
        )
    }

    func delete(_ identity: String) {
        let database = self.database
        environment.writer.submit({ txn in _ = try txn.delete(identity, in: database) }, completion: { _ in })
    }

    func deleteAll() {
        let database = self.database
        environment.writer.submit({ txn in try txn.clear(database) }, completion: { _ in })
    }
}
