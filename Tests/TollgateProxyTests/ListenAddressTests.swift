import Testing
import TollgateProxy

@Suite("ListenAddress parsing")
struct ListenAddressTests {
    @Test("HOST:PORT, [IPv6]:PORT and port 0 are accepted")
    func accepted() throws {
        #expect(try ListenAddress.parse("127.0.0.1:3128") == ListenAddress(host: "127.0.0.1", port: 3128))
        #expect(try ListenAddress.parse("[::1]:8080") == ListenAddress(host: "::1", port: 8080))
        #expect(try ListenAddress.parse("localhost:0") == ListenAddress(host: "localhost", port: 0))
        #expect(ListenAddress(host: "::1", port: 8080).description == "[::1]:8080")
        #expect(ListenAddress.defaultForward.description == "127.0.0.1:3128")
    }

    @Test(
        "Missing or bad parts are refused with a message",
        arguments: [
            "3128", "127.0.0.1", ":3128", "127.0.0.1:", "127.0.0.1:65536", "127.0.0.1:-1", "::1:80", "[::1]80",
            "[::1:80", "host:8o",
        ]
    )
    func refused(text: String) {
        #expect(throws: ListenAddress.ParseError.self) { try ListenAddress.parse(text) }
    }
}
