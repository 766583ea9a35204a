import Testing

@testable import TollgateProxy

/// The `X-Forwarded-Host` a reverse listener sends: the client's `Host`, canonical.
@Suite("X-Forwarded-Host: the client's Host in lower case, without the listener's default port")
struct ForwardedHostTests {
    @Test("Case folded and the scheme's default port dropped; other ports, other schemes' ports and IPv6 literals kept")
    func canonical() {
        #expect(ForwardExchange.forwardedHost("Shop.Example", secure: false) == "shop.example")
        #expect(ForwardExchange.forwardedHost("shop.example:80", secure: false) == "shop.example")
        #expect(ForwardExchange.forwardedHost("SHOP.example:443", secure: true) == "shop.example")
        #expect(ForwardExchange.forwardedHost("shop.example:443", secure: false) == "shop.example:443")
        #expect(ForwardExchange.forwardedHost("shop.example:80", secure: true) == "shop.example:80")
        #expect(ForwardExchange.forwardedHost("shop.example:8080", secure: false) == "shop.example:8080")
        #expect(ForwardExchange.forwardedHost("[2001:DB8::1]:80", secure: false) == "[2001:db8::1]")
        #expect(ForwardExchange.forwardedHost("shop.example", secure: false) == "shop.example")
        #expect(ForwardExchange.forwardedHost(":80", secure: false) == ":80")
    }
}
