import Foundation
import NIOConcurrencyHelpers
import NIOCore
import Testing
import TollgateHTTP
import TollgateTesting

@testable import TollgateSession

/// `multipart/x-mixed-replace`: the parser byte by byte, and a data task against a loopback
/// origin that pushes frames.
@Suite("multipart/x-mixed-replace", .timeLimit(.minutes(1)))
struct MultipartReplaceTests {
    static let body =
        "preamble\r\n--frame\r\nContent-Type: text/plain\r\n\r\none\r\n--frame\r\nContent-Type: text/html\r\nX-N: 2\r\n\r\n"
        + "<b>two</b>\r\n--frame\r\n\r\nthree--frame-ish\r\n--frame--\r\nepilogue"

    /// Events with data pieces joined per part: "part text/plain", "data one", ….
    private func summary(_ events: [MultipartReplaceParser.Event]) -> [String] {
        var lines: [String] = []
        for event in events {
            switch event {
            case .part(let fields): lines.append("part \(fields["Content-Type"] ?? "-")")
            case .data(let bytes):
                if let last = lines.last, last.hasPrefix("data ") {
                    lines[lines.count - 1] = last + String(buffer: bytes)
                } else {
                    lines.append("data " + String(buffer: bytes))
                }
            }
        }
        return lines
    }

    @Test("The parser finds each part's fields and body, whole or fed one byte at a time")
    func parser() {
        let expected = ["part text/plain", "data one", "part text/html", "data <b>two</b>", "part -", "data three--frame-ish"]
        var whole = MultipartReplaceParser(boundary: "frame")
        #expect(summary(whole.feed(ByteBuffer(string: Self.body))) == expected)
        var bytewise = MultipartReplaceParser(boundary: "frame")
        var events: [MultipartReplaceParser.Event] = []
        for byte in Self.body.utf8 { events += bytewise.feed(ByteBuffer(bytes: [byte])) }
        #expect(summary(events) == expected)
    }

    @Test("The boundary comes from the Content-Type, quoted or not; other types have none")
    func boundary() {
        #expect(MultipartReplaceParser.boundary(ofContentType: "multipart/x-mixed-replace; boundary=frame") == "frame")
        #expect(MultipartReplaceParser.boundary(ofContentType: "Multipart/X-Mixed-Replace;boundary=\"a b\"") == "a b")
        #expect(MultipartReplaceParser.boundary(ofContentType: "multipart/mixed; boundary=x") == nil)
        #expect(MultipartReplaceParser.boundary(ofContentType: "multipart/x-mixed-replace") == nil)
    }

    /// Records each response (status and Content-Type) and the data between them.
    final class PartRecorder: SessionDelegate, DataTaskDelegate, @unchecked Sendable {
        let events = NIOLockedValueBox<[String]>([])
        let cancelAtPart: Int?
        init(cancelAtPart: Int? = nil) { self.cancelAtPart = cancelAtPart }

        func dataTask(_ task: DataTask, didReceive response: HTTPResponseHead, completionHandler: @escaping @Sendable (ResponseDisposition) -> Void) {
            let count = events.withLockedValue { events in
                events.append("response \(response.status) \(response.headerFields["Content-Type"] ?? "-")")
                return events.filter { $0.hasPrefix("response") }.count
            }
            completionHandler(count == cancelAtPart ? .cancel : .allow)
        }
        func dataTask(_ task: DataTask, didReceive data: ByteBuffer) {
            events.withLockedValue { events in
                if let last = events.last, last.hasPrefix("data ") {
                    events[events.count - 1] = last + String(buffer: data)
                } else {
                    events.append("data " + String(buffer: data))
                }
            }
        }
        func task(_ task: SessionTask, didCompleteWithError error: SessionError?) {
            events.withLockedValue { $0.append(error.map { "complete \($0.code)" } ?? "complete") }
        }
    }

    private func pushOrigin() async throws -> LoopbackOrigin {
        try await LoopbackOrigin.start { _, respond in
            respond.send(status: 200, headers: ["Content-Type": "multipart/x-mixed-replace; boundary=frame"], body: Self.body)
        }
    }

    @Test("A data task announces the response, then each part with its own didReceive response, its bytes after it")
    func partsDelivered() async throws {
        let origin = try await pushOrigin()
        defer { origin.stop() }
        let recorder = PartRecorder()
        let session = Session(configuration: .ephemeral, delegate: recorder)
        defer { session.invalidateAndCancel() }
        try session.dataTask(with: Request(url: origin.url("/push"))).resume()
        try await eventually("complete") { recorder.events.withLockedValue { $0.last?.hasPrefix("complete") == true } }
        #expect(recorder.events.withLockedValue { $0 } == [
            "response 200 multipart/x-mixed-replace; boundary=frame",
            "response 200 text/plain", "data one",
            "response 200 text/html", "data <b>two</b>",
            "response 200 -", "data three--frame-ish",
            "complete",
        ])
    }

    @Test("Cancel in answer to a part cancels the task; the proxy's sessions relay the body whole")
    func cancelAtAPartAndProxySessions() async throws {
        let origin = try await pushOrigin()
        defer { origin.stop() }
        let recorder = PartRecorder(cancelAtPart: 3)
        let session = Session(configuration: .ephemeral, delegate: recorder)
        defer { session.invalidateAndCancel() }
        try session.dataTask(with: Request(url: origin.url("/push"))).resume()
        try await eventually("complete") { recorder.events.withLockedValue { $0.last?.hasPrefix("complete") == true } }
        #expect(recorder.events.withLockedValue { $0 }.suffix(3) == ["data one", "response 200 text/html", "complete cancelled"])

        var whole = SessionConfiguration.ephemeral
        whole.deliversMultipartReplaceParts = false
        let relaying = PartRecorder()
        let proxySession = Session(configuration: whole, delegate: relaying)
        defer { proxySession.invalidateAndCancel() }
        try proxySession.dataTask(with: Request(url: origin.url("/push"))).resume()
        try await eventually("complete") { relaying.events.withLockedValue { $0.last?.hasPrefix("complete") == true } }
        #expect(relaying.events.withLockedValue { $0 } == [
            "response 200 multipart/x-mixed-replace; boundary=frame", "data " + Self.body, "complete",
        ])
    }
}
