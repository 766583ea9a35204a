import NIOCore
import NIOEmbedded
import Testing

@testable import TollgateProxy

/// The client connection's request/response cycle on an EmbeddedChannel, with scripted exchanges:
/// pipelining, closing after a response, read gating, malformed requests.
@Suite("The client connection's request cycle, on an EmbeddedChannel")
struct ClientConnectionCycleTests {
    @Test("Pipelined requests are served one at a time and answered in request order")
    func pipelinedRequestsAnsweredInOrder() throws {
        let connection = try EmbeddedClientConnection()
        try connection.send(
            "GET http://a.test/1 HTTP/1.1\r\nHost: a.test\r\n\r\nGET http://a.test/2 HTTP/1.1\r\nHost: a.test\r\n\r\n"
        )
        // The second waits in the decoder until the first's response has ended.
        #expect(connection.exchanges.count == 1)
        #expect(connection.exchanges[0].head.target == "http://a.test/1")
        #expect(connection.exchanges[0].requestEnded)
        connection.exchanges[0].answer("one")
        connection.channel.embeddedEventLoop.run()
        #expect(connection.exchanges.count == 2)
        #expect(connection.exchanges[1].head.target == "http://a.test/2")
        connection.exchanges[1].answer("two")
        let responses = try connection.responses()
        #expect(responses.map(\.bodyText) == ["one", "two"])
        #expect(responses.allSatisfy { $0.header("Connection") == nil })
        #expect(connection.isOpen)
    }

    @Test("A request with Connection: close is answered with Connection: close, then the connection closes")
    func connectionCloseClosesAfterTheResponse() throws {
        let connection = try EmbeddedClientConnection()
        try connection.send("GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\nConnection: close\r\n\r\n")
        connection.exchanges[0].answer("bye")
        let responses = try connection.responses()
        #expect(responses.count == 1)
        #expect(responses[0].header("Connection") == "close")
        #expect(!connection.isOpen)
    }

    @Test("An HTTP/1.0 request without keep-alive closes the connection after its response")
    func http10ClosesAfterTheResponse() throws {
        let connection = try EmbeddedClientConnection()
        try connection.send("GET http://a.test/ HTTP/1.0\r\nHost: a.test\r\n\r\n")
        connection.exchanges[0].answer("old")
        let text = try connection.written()
        #expect(text.hasPrefix("HTTP/1.0 200"))
        #expect(text.contains("Connection: close\r\n"))
        #expect(!connection.isOpen)
    }

    @Test("An HTTP/1.0 request with keep-alive is answered with Connection: keep-alive and the connection stays")
    func http10KeepAliveStays() throws {
        let connection = try EmbeddedClientConnection()
        try connection.send("GET http://a.test/ HTTP/1.0\r\nHost: a.test\r\nConnection: keep-alive\r\n\r\n")
        connection.exchanges[0].answer("old")
        #expect(try connection.written().contains("Connection: keep-alive\r\n"))
        #expect(connection.isOpen)
    }

    @Test("Reads from the client wait while an exchange holds them, and go on when it lets go")
    func readsWaitWhileAnExchangeHoldsThem() throws {
        let connection = try EmbeddedClientConnection()
        connection.onStart = { $0.responder.holdReads() }
        try connection.send("POST http://a.test/ HTTP/1.1\r\nHost: a.test\r\nContent-Length: 4\r\n\r\nab")
        let before = connection.reads.reads
        connection.channel.read()
        #expect(connection.reads.reads == before, "no read while held")
        connection.exchanges[0].responder.releaseReads()
        #expect(connection.reads.reads == before + 1, "the waiting read goes on once released")
        try connection.send("cd")
        #expect(connection.exchanges[0].bodyBytes == 4)
        #expect(connection.exchanges[0].requestEnded)
    }

    @Test("Reads wait while a request body piece is with the session, and go on once it is taken")
    func readsWaitForABodyPieceTaken() throws {
        let connection = try EmbeddedClientConnection()
        try connection.send("POST http://a.test/ HTTP/1.1\r\nHost: a.test\r\nContent-Length: 4\r\n\r\nab")
        let taken = connection.channel.embeddedEventLoop.makePromise(of: Void.self)
        connection.exchanges[0].responder.trackBodyPiece(taken.futureResult)
        let before = connection.reads.reads
        connection.channel.read()
        #expect(connection.reads.reads == before)
        taken.succeed()
        connection.channel.embeddedEventLoop.run()
        #expect(connection.reads.reads == before + 1)
    }

    @Test("A malformed request is answered 400 by the connection itself, which then closes")
    func malformedRequestGets400AndClose() throws {
        let connection = try EmbeddedClientConnection()
        try connection.send("GET http://a.test/ HTTP/1.1\r\nHost a.test\r\n\r\n")
        let responses = try connection.responses()
        #expect(responses.count == 1)
        #expect(responses[0].status == 400)
        #expect(responses[0].header("Connection") == "close")
        #expect(connection.exchanges.isEmpty)
        #expect(!connection.isOpen)
    }

    @Test("An origin-form request to a forward listener is refused 400 and the connection stays")
    func originFormRefusedKeepsTheConnection() throws {
        let connection = try EmbeddedClientConnection()
        try connection.send("GET /x HTTP/1.1\r\nHost: a.test\r\n\r\n")
        let responses = try connection.responses()
        #expect(responses.first?.status == 400)
        #expect(connection.exchanges.isEmpty)
        #expect(connection.isOpen)
    }

    @Test("A response that ends before its request body was read closes the connection")
    func unreadBodyClosesTheConnection() throws {
        let connection = try EmbeddedClientConnection()
        try connection.send("POST http://a.test/ HTTP/1.1\r\nHost: a.test\r\nContent-Length: 10\r\n\r\nab")
        connection.exchanges[0].answer("early")
        // The head went out before the body was known to be unread: it says nothing of closing,
        // but the rest of the body cannot be told from a next request, so the connection closes.
        let responses = try connection.responses()
        #expect(responses.first?.bodyText == "early")
        #expect(!connection.isOpen)
    }

    @Test("The client closing is told to the exchange in progress")
    func clientCloseIsToldToTheExchange() throws {
        let connection = try EmbeddedClientConnection()
        try connection.send("GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n")
        try connection.channel.close().wait()
        #expect(connection.exchanges[0].sawClientClose)
    }
}
