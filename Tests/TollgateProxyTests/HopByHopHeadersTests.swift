import Testing
import TollgateHTTP

@testable import TollgateProxy

@Suite("Hop-by-hop fields (RFC 9110 §7.6.1): the fixed ones and those Connection names")
struct HopByHopHeadersTests {
    @Test("Fixed hop-by-hop fields go, in any case; the message's own fields stay in order")
    func fixed() {
        let fields: HeaderFields = [
            "Host": "a", "connection": "close", "KEEP-ALIVE": "timeout=5", "TE": "trailers", "X-Kept": "1",
            "Proxy-Authorization": "Basic eA==", "Transfer-Encoding": "chunked", "Upgrade": "h2c", "Accept": "*/*",
        ]
        let kept = HopByHopHeaders.removing(from: fields)
        #expect(kept.pairs.map(\.0) == ["Host", "X-Kept", "Accept"])
    }

    @Test("Fields Connection names go, whatever the spacing and case of the list")
    func named() {
        let fields: HeaderFields = [
            "Connection": " x-private ,,\tKeep-Alive, X-Other\t", "Connection": "x-third", "X-Private": "1",
            "x-other": "2", "X-Third": "3", "X-Public": "4",
        ]
        #expect(HopByHopHeaders.removing(from: fields).pairs.map(\.0) == ["X-Public"])
    }

    @Test("A list naming nothing present removes only Connection itself; without any, nothing is copied")
    func namingNothing() {
        let withConnection: HeaderFields = ["Connection": "keep-alive, close", "Close": "x", "ETag": "\"e\""]
        #expect(HopByHopHeaders.removing(from: withConnection).pairs.map(\.0) == ["ETag"])
        let plain: HeaderFields = ["ETag": "\"e\"", "Content-Length": "3"]
        #expect(HopByHopHeaders.removing(from: plain) == plain)
    }

    @Test("listContains finds a token among several lines, ignoring case and blanks")
    func lists() {
        let fields: HeaderFields = ["Connection": "keep-alive", "Connection": " Upgrade ,x"]
        #expect(fields.listContains("Connection", token: "upgrade"))
        #expect(fields.listContains("Connection", token: "KEEP-ALIVE"))
        #expect(!fields.listContains("Connection", token: "close"))
        #expect(!(["Connection": "upgraded"] as HeaderFields).listContains("Connection", token: "upgrade"))
        // Empty elements, tabs, an element at either end, a token that is only part of one.
        let edges: HeaderFields = ["Connection": ",\t, close\t,,", "Te": "trailers,gzip"]
        #expect(edges.listContains("Connection", token: "close"))
        #expect(!edges.listContains("Connection", token: "clos"))
        #expect(!edges.listContains("Connection", token: "close,"))
        #expect(edges.listContains("TE", token: "trailers"))
        #expect(edges.listContains("TE", token: "GZIP"))
        #expect(!edges.listContains("TE", token: "zip"))
    }
}
