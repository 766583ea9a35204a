import Testing
import NIOCore
import NIOHPACK
import NIOHTTP2
import TollgateHTTP
@testable import TollgateSession

@Suite("Connection pool state machine: HTTP/2 connections and their streams")
struct OriginPoolStreamsTests {
    @Test("While the origin's protocol is unknown one connection is made; as h2 it serves one stream until SETTINGS, then all waiters")
    func oneConnectionThenStreams() {
        var pool = OriginPoolState(limit: 6, mayMultiplex: true)
        #expect(pool.leaseRequested(waiter: 1, priority: 0.5) == [.connect])
        #expect(pool.leaseRequested(waiter: 2, priority: 0.5) == [])
        #expect(pool.leaseRequested(waiter: 3, priority: 0.5) == [])
        // The first stream only: its task decides the server's trust before others start.
        #expect(pool.connected(10, http2: true) == [.lease(connection: 10, waiter: 1)])
        #expect(pool.originProtocol == .http2)
        #expect(pool.streamCapacityChanged(10, maximumConcurrentStreams: 100)
            == [.lease(connection: 10, waiter: 2), .lease(connection: 10, waiter: 3)])
        #expect(pool.openStreams(on: 10) == 3)
        #expect(pool.total == 1)
        // A new task gets a stream at once, no connection made.
        #expect(pool.leaseRequested(waiter: 4, priority: 0.5) == [.lease(connection: 10, waiter: 4)])
        #expect(pool.takeIdle(loop: 0) == 10)
        #expect(pool.openStreams(on: 10) == 5)
    }

    @Test("Streams are capped by the server's SETTINGS_MAX_CONCURRENT_STREAMS: later tasks wait for a stream, and another connection is made only when this one is full")
    func capacity() {
        var pool = OriginPoolState(limit: 2, mayMultiplex: true)
        _ = pool.leaseRequested(waiter: 1, priority: 0.5)
        _ = pool.connected(10, http2: true)
        #expect(pool.streamCapacityChanged(10, maximumConcurrentStreams: 2) == [])
        #expect(pool.leaseRequested(waiter: 2, priority: 0.5) == [.lease(connection: 10, waiter: 2)])
        // Full: the one connection still allowed is made for the next task.
        #expect(pool.leaseRequested(waiter: 3, priority: 0.5) == [.connect])
        #expect(pool.leaseRequested(waiter: 4, priority: 0.5) == [])
        // A stream ends: the first waiter gets it.
        #expect(pool.released(10, reusable: true) == [.lease(connection: 10, waiter: 3)])
        #expect(pool.connected(20, http2: true) == [.lease(connection: 20, waiter: 4)])
        #expect(pool.total == 2)
    }

    @Test("An h2 connection with no open stream is parked (its idle timer runs) and times out like any other")
    func parkAndTimeOut() {
        var pool = OriginPoolState(limit: 2, mayMultiplex: true)
        _ = pool.leaseRequested(waiter: 1, priority: 0.5)
        _ = pool.connected(10, http2: true)
        _ = pool.streamCapacityChanged(10, maximumConcurrentStreams: 10)
        #expect(pool.leaseRequested(waiter: 2, priority: 0.5) == [.lease(connection: 10, waiter: 2)])
        #expect(pool.released(10, reusable: true) == [])
        #expect(pool.released(10, reusable: true) == [.park(connection: 10)])
        #expect(pool.idle == [10])
        #expect(pool.leaseRequested(waiter: 3, priority: 0.5) == [.lease(connection: 10, waiter: 3)])
        #expect(pool.idle.isEmpty)
        #expect(pool.released(10, reusable: true) == [.park(connection: 10)])
        #expect(pool.idleTimedOut(10) == [.close(connection: 10)])
        #expect(pool.openStreams(on: 10) == nil)
        #expect(pool.leaseRequested(waiter: 4, priority: 0.5) == [.connect])
    }

    @Test("A GOAWAY takes the connection out of use: its open streams finish, it closes after the last, and waiters get a new connection")
    func goAway() {
        var pool = OriginPoolState(limit: 2, mayMultiplex: true)
        _ = pool.leaseRequested(waiter: 1, priority: 0.5)
        _ = pool.connected(10, http2: true)
        _ = pool.streamCapacityChanged(10, maximumConcurrentStreams: 10)
        _ = pool.leaseRequested(waiter: 2, priority: 0.5)
        #expect(pool.goAwayReceived(10) == [])
        #expect(pool.leaseRequested(waiter: 3, priority: 0.5) == [.connect])
        #expect(pool.released(10, reusable: true) == [])
        #expect(pool.released(10, reusable: true) == [.close(connection: 10)])
        #expect(pool.connected(20, http2: true) == [.lease(connection: 20, waiter: 3)])
        // An idle connection that is told to go away closes at once.
        #expect(pool.released(20, reusable: true) == [.park(connection: 20)])
        #expect(pool.goAwayReceived(20) == [.close(connection: 20)])
        #expect(pool.idle.isEmpty)
    }

    @Test("A refused stream drains its connection: the request sent again waits for a new connection, the other streams finish, then it closes")
    func refusedStream() {
        var pool = OriginPoolState(limit: 2, mayMultiplex: true)
        _ = pool.leaseRequested(waiter: 1, priority: 0.5)
        _ = pool.connected(10, http2: true)
        _ = pool.streamCapacityChanged(10, maximumConcurrentStreams: 10)
        _ = pool.leaseRequested(waiter: 2, priority: 0.5)
        #expect(pool.openStreams(on: 10) == 2)
        #expect(pool.streamRefused(10) == [])
        #expect(pool.openStreams(on: 10) == 1)
        #expect(pool.freeStreams == 0)
        // The resend: no stream of 10 for it, a new connection.
        #expect(pool.leaseRequested(waiter: 3, priority: 0.5) == [.connect])
        #expect(pool.released(10, reusable: true) == [.close(connection: 10)])
        #expect(pool.connected(20, http2: true) == [.lease(connection: 20, waiter: 3)])
    }

    @Test("A stream released as not reusable (trust refused) closes the connection; the next waiter gets a new one")
    func notReusable() {
        var pool = OriginPoolState(limit: 2, mayMultiplex: true)
        _ = pool.leaseRequested(waiter: 1, priority: 0.5)
        _ = pool.leaseRequested(waiter: 2, priority: 0.5)
        _ = pool.connected(10, http2: true)
        #expect(pool.released(10, reusable: false) == [.close(connection: 10), .connect])
        #expect(pool.closed(10) == [])
        #expect(pool.connected(20, http2: true) == [.lease(connection: 20, waiter: 2)])
    }

    @Test("An origin that answers http/1.1 is pooled as before: after the first connection, more are made for waiting tasks")
    func fallsBackToHTTP1() {
        var pool = OriginPoolState(limit: 3, mayMultiplex: true)
        #expect(pool.leaseRequested(waiter: 1, priority: 0.5) == [.connect])
        #expect(pool.leaseRequested(waiter: 2, priority: 0.5) == [])
        #expect(pool.leaseRequested(waiter: 3, priority: 0.5) == [])
        #expect(pool.connected(10) == [.lease(connection: 10, waiter: 1), .connect, .connect])
        #expect(pool.originProtocol == .http1)
        #expect(pool.leaseRequested(waiter: 4, priority: 0.5) == [])
        #expect(pool.released(10, reusable: true) == [.lease(connection: 10, waiter: 2)])
    }

    @Test("A failed first connection to an origin of unknown protocol lets the next waiter try one")
    func unknownConnectFails() {
        var pool = OriginPoolState(limit: 3, mayMultiplex: true)
        _ = pool.leaseRequested(waiter: 1, priority: 0.5)
        _ = pool.leaseRequested(waiter: 2, priority: 0.5)
        #expect(pool.connectFailed() == [.fail(waiter: 1), .connect])
    }
}

@Suite("HTTP/2 heads and the stream exchange's state")
struct HTTP2StreamExchangeTests {
    @Test("A request head becomes pseudo-fields first, Host as :authority, connection-specific fields dropped")
    func requestHeaders() throws {
        var fields = HeaderFields()
        fields.add(name: "Host", value: "example.test:8443")
        fields.add(name: "Connection", value: "keep-alive, X-Hop")
        fields.add(name: "Keep-Alive", value: "timeout=5")
        fields.add(name: "X-Hop", value: "1")
        fields.add(name: "Transfer-Encoding", value: "chunked")
        fields.add(name: "TE", value: "trailers, gzip")
        fields.add(name: "Accept", value: "*/*")
        let url = try #require(HTTPURL(string: "https://example.test:8443/a/b?c=d"))
        let headers = HTTP2Heads.requestHeaders(HTTPRequestHead(method: .post, url: url, headerFields: fields))
        let pairs = headers.map { "\($0.name): \($0.value)" }
        #expect(pairs == [
            ":method: POST", ":scheme: https", ":authority: example.test:8443", ":path: /a/b?c=d", "te: trailers", "accept: */*",
        ])
    }

    @Test("A response header block becomes our head: status from :status, HTTP/2, pseudo-fields left out; no :status is no head")
    func responseHead() {
        let head = HTTP2Heads.responseHead(HPACKHeaders([(":status", "404"), ("content-type", "text/plain")]))
        #expect(head?.status == 404)
        #expect(head?.version == "HTTP/2")
        #expect(head?.headerFields["Content-Type"] == "text/plain")
        #expect(head?.headerFields.count == 1)
        #expect(HTTP2Heads.responseHead(HPACKHeaders([("content-type", "text/plain")])) == nil)
        #expect(HTTP2Heads.responseHead(HPACKHeaders([(":status", "20")])) == nil)
    }

    @Test("Frames in order: 1xx interim, final head, DATA, END_STREAM; trailers end the stream too")
    func frames() {
        var state = HTTP2StreamExchangeState()
        let started = state.startRequest()
        let startedAgain = state.startRequest()
        #expect(started)
        #expect(!startedAgain)
        let interim = HTTP2Heads.responseHead(HPACKHeaders([(":status", "103")]))!
        #expect(state.received(.headers(.init(headers: HPACKHeaders([(":status", "103")])))) == .interim(interim))
        #expect(!state.responseStarted)
        let final = HTTP2Heads.responseHead(HPACKHeaders([(":status", "200")]))!
        #expect(state.received(.headers(.init(headers: HPACKHeaders([(":status", "200")])))) == .head(final, ended: false))
        #expect(state.responseStarted)
        let piece = ByteBuffer(string: "abc")
        #expect(state.received(.data(.init(data: .byteBuffer(piece)))) == .body(piece, ended: false))
        #expect(state.received(.headers(.init(headers: HPACKHeaders([("x-trailer", "1")]), endStream: true))) == .end)
        #expect(!state.isRunning)
        #expect(state.received(.data(.init(data: .byteBuffer(piece)))) == .ignored)
    }

    @Test("RST_STREAM fails the exchange (REFUSED_STREAM before the head: not started, so it may be sent again); DATA before a head is a bad response")
    func failures() {
        var refused = HTTP2StreamExchangeState()
        _ = refused.startRequest()
        #expect(refused.received(.rstStream(.refusedStream)) == .failed(SessionError(.networkConnectionLost)))
        #expect(!refused.responseStarted)
        var early = HTTP2StreamExchangeState()
        _ = early.startRequest()
        #expect(early.received(.data(.init(data: .byteBuffer(ByteBuffer())))) == .failed(SessionError(.badServerResponse)))
        var headOnly = HTTP2StreamExchangeState()
        _ = headOnly.startRequest()
        let noContent = HTTP2Heads.responseHead(HPACKHeaders([(":status", "204")]))!
        #expect(headOnly.received(.headers(.init(headers: HPACKHeaders([(":status", "204")]), endStream: true))) == .head(noContent, ended: true))
        #expect(!headOnly.isRunning)
    }
}
