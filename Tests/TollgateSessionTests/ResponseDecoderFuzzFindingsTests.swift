import NIOCore
import Testing
@testable import TollgateSession

/// Responses that FuzzResponseDecoder (Fuzz/, `make fuzz`) found the decoder mishandling.
@Suite("Origin responses found by fuzzing")
struct ResponseDecoderFuzzFindingsTests {
    /// Before the fix a head refused by `parseHead` (here a field name with a `/`) threw without
    /// failing the decoder: the next `next()` read on and returned the 204 behind it.
    @Test("After a head it cannot read, the decoder reads nothing more, not the next response")
    func nothingAfterAnUnreadableHead() {
        var decoder = ResponseDecoder()
        let bytes = "HTTP/1.1 200 OK\r\nContent-Le/gth: 100\r\n\r\n" + "HTTP/1.1 204 No Content\r\n\r\n"
        decoder.feed(ByteBuffer(string: bytes))
        var failed = false
        do { _ = try decoder.next() } catch { failed = true }
        #expect(failed)
        let after = try? decoder.next()
        #expect(after == nil)
        #expect(decoder.bufferedBytes == 0)
        decoder.feed(ByteBuffer(string: "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"))
        #expect((try? decoder.next()) == nil)
    }
}
