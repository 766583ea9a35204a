import Testing
@testable import TollgateHTTP

@Suite("HTTPURL: the ASCII parse agrees with the Character-based one")
struct HTTPURLFastPathTests {
    static let samples = [
        "http://example.com", "http://example.com/", "HTTP://Example.COM:8080/a/b?c=d#frag", "https://[::1]:8443/x",
        "http://[::1]", "http://[::1]junk/", "http://[::1/", "http://[]/", "http://[g::1]/", "http://user@host/",
        "http://host:/", "http://host:0/", "http://host:65535/", "http://host:65536/", "http://host:123456/",
        "http://host:8a/", "http://:80/", "http:///path", "http://host?q", "http://host#f", "http:/host",
        "http:host", "://host", "1http://host/", "h+t.t-p://host/", "ht_tp://host/", "http://ho_st/",
        "http://h%20ost/", "http://a.b-c~d!$&'()*+,;=/", "http://host\\path", "http://ho^st/", "http://host:80:90/",
        "http://a:b@c/", "http://example.com:00080/p", "no-colon-at-all", "http:", "http:/", "http://",
        "ftp://files.example/x", "http://EXAMPLE.com/%41?%42#%43",
    ]

    @Test("Same URL or same error for every sample")
    func agree() {
        for sample in Self.samples {
            let fast = Result { () throws(HTTPURL.ParseError) in try HTTPURL.parse(sample) }
            let reference = Result { () throws(HTTPURL.ParseError) in try HTTPURL.parseCharacters(sample) }
            switch (fast, reference) {
            case (.success(let a), .success(let b)):
                #expect(a == b, "\(sample)")
            case (.failure(let a), .failure(let b)):
                #expect(a.description == b.description, "\(sample)")
            default:
                Issue.record("\(sample): \(fast) against \(reference)")
            }
        }
    }

    @Test("parseAuthority: same result for printable ASCII as by Characters")
    func authorities() {
        for sample in ["host", "HOST:80", "[::1]:8080", "[::1]", "a@b", ":80", "host:", "host:99999", "h^st", "[::1]x"] {
            let fast = Result { () throws(HTTPURL.ParseError) in try HTTPURL.parseAuthority(Substring(sample)) }
            let reference = Result { () throws(HTTPURL.ParseError) in try HTTPURL.parseAuthorityCharacters(Substring(sample)) }
            switch (fast, reference) {
            case (.success(let a), .success(let b)):
                #expect(a.host == b.host && a.port == b.port, "\(sample)")
            case (.failure(let a), .failure(let b)):
                #expect(a.description == b.description, "\(sample)")
            default:
                Issue.record("\(sample): \(fast) against \(reference)")
            }
        }
    }

    @Test("The authority leaves out the scheme's default port, keeps any other, and brackets IPv6")
    func authority() {
        let cases: [(String, String)] = [
            ("http://example.com/", "example.com"), ("http://example.com:80/", "example.com"),
            ("https://example.com:443/", "example.com"), ("http://example.com:443/", "example.com:443"),
            ("https://example.com:80/", "example.com:80"), ("http://127.0.0.1:18082/x", "127.0.0.1:18082"),
            ("https://[::1]:8443/x", "[::1]:8443"), ("http://[::1]/", "[::1]"),
            ("http://a-rather-long-host-name.example.org:65535/", "a-rather-long-host-name.example.org:65535"),
        ]
        for (text, authority) in cases {
            #expect(HTTPURL(string: text)?.authority == authority, "\(text)")
        }
    }

    @Test("The absolute string, built in one piece, is scheme://authority then the path and query")
    func absoluteStringIsItsParts() {
        var urls = Self.samples.compactMap { HTTPURL(string: $0) }
        urls += [
            HTTPURL(scheme: "http", host: "h", port: 0, pathAndQuery: "/"),
            HTTPURL(scheme: "https", host: "::1", port: 65535, pathAndQuery: "/a?b"),
            HTTPURL(scheme: "http", host: "h", port: 1_234_567, pathAndQuery: "/x"),
            HTTPURL(scheme: "http", host: "h", port: -8, pathAndQuery: "/x"),
            HTTPURL(scheme: "https", host: String(repeating: "long-", count: 40) + "host", port: 8443, pathAndQuery: "/ünï?q=✓"),
        ]
        #expect(urls.count > 20)
        for url in urls {
            #expect(url.absoluteString == url.scheme + "://" + url.authority + url.pathAndQuery, "\(url)")
            #expect(url.absoluteString(pathAndQuery: "/other") == url.scheme + "://" + url.authority + "/other")
        }
        #expect(HTTPURL(scheme: "http", host: "h", port: -8, pathAndQuery: "/x").absoluteString == "http://h:-8/x")
    }
}

