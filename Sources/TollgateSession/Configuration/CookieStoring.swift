public import TollgateHTTP

/// A cookie store a session reads and fills (HTTPCookieStorage's role).
///
/// The session asks for the Cookie header of each request when `httpShouldSetCookies` is on,
/// and hands every response's Set-Cookie fields to the store unless the accept policy refuses.
public protocol CookieStoring: AnyObject, Sendable {
    /// The value of the Cookie header for a request to `url`, or nil when no cookie applies.
    func cookieHeader(for url: HTTPURL) -> String?
    /// Stores the Set-Cookie field values received from `url`.
    func store(setCookieValues: [String], from url: HTTPURL, policy: CookieAcceptPolicy)
    /// Removes everything stored (`Session.reset()`).
    func removeAll()
}
