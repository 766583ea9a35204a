import NIOCore
import NIOEmbedded
import Testing
import TollgatePolicy

@testable import TollgateProxy

/// The client connection's four timeouts, through its injected clock: no sleeps.
@Suite("The client connection's timeouts, on an EmbeddedChannel with a manual clock")
struct ClientConnectionTimeoutTests {
    private static func limits() -> PolicyConfiguration.Limits {
        var limits = PolicyConfiguration.Limits()
        limits.headerReadTimeout = .seconds(10)
        limits.clientIdleTimeout = .seconds(15)
        limits.clientSendTimeout = .seconds(60)
        return limits
    }

    @Test("A connection with no request for client-idle-timeout is closed without a word")
    func idleConnectionCloses() throws {
        let connection = try EmbeddedClientConnection(limits: Self.limits())
        connection.advance(by: .seconds(14))
        #expect(connection.isOpen)
        connection.advance(by: .seconds(1))
        #expect(!connection.isOpen)
        #expect(try connection.written().isEmpty)
    }

    @Test("The idle timeout starts again after each request served")
    func idleTimeoutStartsAfterEachRequest() throws {
        let connection = try EmbeddedClientConnection(limits: Self.limits())
        connection.advance(by: .seconds(10))
        try connection.send("GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n")
        connection.exchanges[0].answer("ok")
        connection.advance(by: .seconds(10))
        #expect(connection.isOpen, "15 s from the request's end, not from the connection's start")
        connection.advance(by: .seconds(5))
        #expect(!connection.isOpen)
    }

    @Test("A head begun and not finished within header-read-timeout gets 408 and the connection closes")
    func slowHeadGets408() throws {
        let connection = try EmbeddedClientConnection(limits: Self.limits())
        try connection.send("GET http://a.test/ HTTP/1.1\r\nHost: a.te")
        connection.advance(by: .seconds(9))
        #expect(connection.isOpen)
        connection.advance(by: .seconds(1))
        let responses = try connection.responses()
        #expect(responses.first?.status == 408)
        #expect(responses.first?.header("Connection") == "close")
        #expect(!connection.isOpen)
        #expect(connection.exchanges.isEmpty)
    }

    @Test("A request body with no byte for client-idle-timeout fails the exchange with 408")
    func stalledBodyFailsTheExchange() throws {
        let connection = try EmbeddedClientConnection(limits: Self.limits())
        try connection.send("POST http://a.test/ HTTP/1.1\r\nHost: a.test\r\nContent-Length: 10\r\n\r\nab")
        connection.advance(by: .seconds(10))
        try connection.send("cd")  // a byte: the body timeout starts again
        connection.advance(by: .seconds(10))
        #expect(connection.exchanges[0].failure == nil)
        connection.advance(by: .seconds(5))
        #expect(connection.exchanges[0].failure != nil)
        #expect(try connection.responses().first?.status == 408)
        #expect(!connection.isOpen)
    }

    @Test("No body timeout runs while an exchange holds reads")
    func noBodyTimeoutWhileReadsAreHeld() throws {
        let connection = try EmbeddedClientConnection(limits: Self.limits())
        connection.onStart = { $0.responder.holdReads() }
        try connection.send("POST http://a.test/ HTTP/1.1\r\nHost: a.test\r\nContent-Length: 10\r\n\r\nab")
        connection.advance(by: .seconds(60))
        #expect(connection.exchanges[0].failure == nil)
        #expect(connection.isOpen)
    }

    @Test("A client whose socket stays full for client-send-timeout is closed, the exchange told why; one that drains in time starts the count again")
    func stalledClientIsClosed() throws {
        let connection = try EmbeddedClientConnection(limits: Self.limits())
        try connection.send("GET http://a.test/large HTTP/1.1\r\nHost: a.test\r\n\r\n")
        connection.setClientWritable(false)
        connection.advance(by: .seconds(59))
        #expect(connection.isOpen)
        connection.setClientWritable(true)  // it took some: the count stops
        connection.advance(by: .seconds(30))
        connection.setClientWritable(false)
        connection.advance(by: .seconds(59))
        #expect(connection.isOpen, "60 s from when it filled again, not from the first time")
        #expect(!connection.exchanges[0].sawSendTimeout)
        connection.advance(by: .seconds(1))
        #expect(!connection.isOpen)
        #expect(connection.exchanges[0].sawSendTimeout && connection.exchanges[0].sawClientClose)
    }

    @Test("A client that stops reading while it is idle between requests is left to the idle timeout")
    func stalledIdleClientFollowsIdleTimeout() throws {
        let connection = try EmbeddedClientConnection(limits: Self.limits())
        try connection.send("GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n")
        connection.exchanges[0].answer("ok")
        connection.setClientWritable(false)
        connection.advance(by: .seconds(15))
        #expect(!connection.isOpen)
        #expect(!connection.exchanges[0].sawSendTimeout)
    }
}
