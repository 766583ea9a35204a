import Testing
import TollgateCache
import TollgateHTTP

/// What an offline proxy may serve in place of the variant a request would select: a stored
/// representation the request accepts by Accept-Encoding (§12.5.3) or Accept (§12.5.1), and
/// nothing else.
@Suite("Content negotiation offline: a stored representation the request accepts", .timeLimit(.minutes(1)))
struct ContentNegotiationTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var vary: String
        /// The Vary'd values of the request the variant was stored for (absent: nil).
        var recorded: [String: String]
        /// The stored response's own fields (Content-Encoding, Content-Type).
        var representation: [(String, String)]
        var request: [(String, String)]
        var accepts: Bool
        var note: String

        var testDescription: String { note }
    }

    static let cases: [Case] = [
        Case(vary: "Accept-Encoding", recorded: [:], representation: [], request: [("Accept-Encoding", "gzip, deflate")],
             accepts: true, note: "identity (a warm without Accept-Encoding) to npm's gzip, deflate"),
        Case(vary: "Accept-Encoding", recorded: [:], representation: [("Content-Encoding", "identity")], request: [("Accept-Encoding", "br")],
             accepts: true, note: "an explicit identity coding is identity"),
        Case(vary: "Accept-Encoding", recorded: [:], representation: [], request: [("Accept-Encoding", "gzip, identity;q=0")],
             accepts: false, note: "identity excluded by identity;q=0"),
        Case(vary: "Accept-Encoding", recorded: [:], representation: [], request: [("Accept-Encoding", "gzip, *;q=0")],
             accepts: false, note: "identity excluded by *;q=0"),
        Case(vary: "Accept-Encoding", recorded: [:], representation: [], request: [("Accept-Encoding", "*;q=0, identity")],
             accepts: true, note: "*;q=0 with identity named keeps identity"),
        Case(vary: "Accept-Encoding", recorded: ["accept-encoding": "gzip"], representation: [("Content-Encoding", "gzip")],
             request: [("Accept-Encoding", "deflate, GZIP;q=0.5")], accepts: true, note: "gzip to a request accepting gzip at a lower weight"),
        Case(vary: "Accept-Encoding", recorded: ["accept-encoding": "gzip"], representation: [("Content-Encoding", "gzip")],
             request: [("Accept-Encoding", "x-gzip")], accepts: true, note: "x-gzip is gzip"),
        Case(vary: "Accept-Encoding", recorded: ["accept-encoding": "gzip"], representation: [("Content-Encoding", "gzip")],
             request: [("Accept-Encoding", "br")], accepts: false, note: "gzip to a request that names only br"),
        Case(vary: "Accept-Encoding", recorded: ["accept-encoding": "gzip"], representation: [("Content-Encoding", "gzip")],
             request: [("Accept-Encoding", "br, *")], accepts: true, note: "gzip to a request accepting any coding"),
        Case(vary: "Accept-Encoding", recorded: ["accept-encoding": "gzip"], representation: [("Content-Encoding", "gzip")],
             request: [], accepts: false, note: "gzip never to a request without Accept-Encoding"),
        Case(vary: "Accept-Encoding", recorded: ["accept-encoding": "gzip"], representation: [("Content-Encoding", "gzip")],
             request: [("Accept-Encoding", "gzip;q=2")], accepts: false, note: "a value that does not parse accepts nothing"),
        Case(vary: "Accept", recorded: [:], representation: [("Content-Type", "text/html; charset=utf-8")],
             request: [("Accept", "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html; q=0.1, text/html; q=0.01")],
             accepts: true, note: "pip's Accept takes the text/html page a warm stored"),
        Case(vary: "Accept", recorded: [:], representation: [("Content-Type", "Application/JSON")],
             request: [("Accept", "text/*, application/*;q=0.2")], accepts: true, note: "type/* matches, case-insensitive"),
        Case(vary: "Accept", recorded: [:], representation: [("Content-Type", "application/json")],
             request: [("Accept", "application/json;q=0, */*")], accepts: false, note: "the most specific range decides: json;q=0 over */*"),
        Case(vary: "Accept", recorded: [:], representation: [("Content-Type", "text/html")],
             request: [("Accept", "application/json")], accepts: false, note: "text/html to a request for json only"),
        Case(vary: "Accept", recorded: [:], representation: [], request: [("Accept", "*/*")],
             accepts: false, note: "no Content-Type: only a request without Accept takes it"),
        Case(vary: "Accept-Encoding, Accept-Language", recorded: ["accept-language": "de"], representation: [],
             request: [("Accept-Encoding", "gzip"), ("Accept-Language", "de")], accepts: true, note: "the other Vary'd field matches"),
        Case(vary: "Accept-Encoding, Accept-Language", recorded: ["accept-language": "de"], representation: [],
             request: [("Accept-Encoding", "gzip"), ("Accept-Language", "en")], accepts: false, note: "Accept-Language is never negotiated"),
        Case(vary: "Accept-Encoding, Cookie", recorded: ["cookie": "a=1"], representation: [],
             request: [("Accept-Encoding", "gzip")], accepts: false, note: "another field that does not match (Cookie absent)"),
        Case(vary: "*", recorded: [:], representation: [], request: [], accepts: false, note: "Vary: * never"),
    ]

    @Test("Accepted exactly when the request accepts the stored coding and media type, and every other Vary'd field matches", arguments: cases)
    func negotiation(_ c: Case) {
        var request = HeaderFields()
        for (name, value) in c.request { request.add(name: name, value: value) }
        var representation = HeaderFields()
        for (name, value) in c.representation { representation.add(name: name, value: value) }
        let accepted = ContentNegotiation.accepts(
            request, vary: Vary(fieldValues: [c.vary]), recorded: { c.recorded[$0] }, representation: representation
        )
        #expect(accepted == c.accepts)
    }
}
