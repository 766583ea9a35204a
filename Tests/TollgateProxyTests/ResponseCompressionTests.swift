import Foundation
import NIOCore
import Testing
import TollgateHTTP
import TollgatePolicy
import TollgateTesting

@testable import TollgateProxy

@Suite("hosts[].compress: which responses are compressed, and how their fields change")
struct ResponseCompressionTests {
    private let rule = HostRule.Compression()

    private func verdict(
        _ response: HeaderFields, status: Int = 200, accept: String? = "gzip, br", rule: HostRule.Compression? = HostRule.Compression()
    ) -> ResponseCompression.Verdict {
        var request = HeaderFields()
        if let accept { request.add(name: "Accept-Encoding", value: accept) }
        return ResponseCompression.verdict(rule: rule, requestFields: request, status: status, responseFields: response)
    }

    private let br = ResponseCompression.Verdict.compressed("br")
    private let gzip = ResponseCompression.Verdict.compressed("gzip")

    @Test("Text of a listed type, long enough, not coded, not a range, not no-transform, to a client accepting br or gzip")
    func verdicts() {
        let page: HeaderFields = ["Content-Type": "text/html; charset=utf-8", "Content-Length": "5000"]
        #expect(verdict(page) == br)
        #expect(verdict(page, rule: nil) == .none)
        #expect(verdict(["Content-Type": "Application/JSON"]) == br, "no length: compressed; the type's case does not matter")
        #expect(verdict(page, status: 404) == br)
        #expect(verdict(page, status: 500) == .none)
        #expect(verdict(page, status: 206) == .none)
        #expect(verdict(["Content-Type": "image/png", "Content-Length": "5000"]) == .none)
        #expect(verdict(["Content-Type": "text/html", "Content-Length": "1000"]) == .none, "under 1 KiB")
        #expect(verdict(["Content-Type": "text/html", "Content-Encoding": "br"]) == .none)
        #expect(verdict(["Content-Type": "text/html", "Content-Encoding": "identity"]) == br)
        #expect(verdict(["Content-Type": "text/html", "Cache-Control": "public, no-transform"]) == .none)
        var noTransform: HeaderFields = ["Accept-Encoding": "gzip", "Cache-Control": "no-transform"]
        #expect(ResponseCompression.verdict(rule: rule, requestFields: noTransform, status: 200, responseFields: page) == .none)
        noTransform.remove("Cache-Control")
        #expect(ResponseCompression.verdict(rule: rule, requestFields: noTransform, status: 200, responseFields: page) == gzip)
        #expect(verdict(["Content-Type": "text/html", "Content-Range": "bytes 0-9/100"]) == .none)
        #expect(verdict(["Text": "x"]) == .none, "no Content-Type")
        // The client's Accept-Encoding: the coding it weighs highest above zero, ties to the rule's order.
        #expect(verdict(page, accept: nil) == .varyOnly)
        #expect(verdict(page, accept: "identity") == .varyOnly)
        #expect(verdict(page, accept: "br") == br)
        #expect(verdict(page, accept: "gzip") == gzip)
        #expect(verdict(page, accept: "gzip;q=0, br") == br)
        #expect(verdict(page, accept: "gzip, br;q=0.5") == gzip)
        #expect(verdict(page, accept: "gzip, deflate, br, zstd") == br, "what browsers and curl --compressed send")
        #expect(verdict(page, accept: "*") == br)
        #expect(verdict(page, accept: "x-gzip") == gzip)
        #expect(verdict(page, accept: "*, br;q=0") == gzip)
        #expect(verdict(page, accept: "*;q=0") == .varyOnly)
        var gzipOnly = HostRule.Compression()
        gzipOnly.encodings = ["gzip"]
        #expect(verdict(page, accept: "br", rule: gzipOnly) == .varyOnly)
        #expect(verdict(page, accept: "gzip, br", rule: gzipOnly) == gzip)
        var gzipFirst = HostRule.Compression()
        gzipFirst.encodings = ["gzip", "br"]
        #expect(verdict(page, accept: "gzip, br", rule: gzipFirst) == gzip)
    }

    @Test("Compressed: the coding named, no length, a weak ETag, Vary added once, the byte fields gone")
    func fields() {
        var fields: HeaderFields = [
            "Content-Type": "text/html", "Content-Length": "5000", "ETag": "\"abc\"", "Accept-Ranges": "bytes", "Vary": "Accept-Language",
            "Content-Digest": "sha-256=:x:",
        ]
        ResponseCompression.apply(br, to: &fields)
        #expect(fields[.contentEncoding] == "br")
        #expect(fields[.contentLength] == nil)
        #expect(fields[.eTag] == "W/\"abc\"")
        #expect(fields.values(for: .vary) == ["Accept-Language", "Accept-Encoding"])
        #expect(fields["Accept-Ranges"] == nil && fields["Content-Digest"] == nil)
        var weak: HeaderFields = ["ETag": "W/\"abc\"", "Vary": "accept-encoding"]
        ResponseCompression.apply(gzip, to: &weak)
        #expect(weak[.eTag] == "W/\"abc\"")
        #expect(weak.values(for: .vary) == ["accept-encoding"])
        var plain: HeaderFields = ["Content-Length": "5000", "ETag": "\"abc\""]
        ResponseCompression.apply(.varyOnly, to: &plain)
        #expect(plain[.contentLength] == "5000" && plain[.eTag] == "\"abc\"" && plain[.vary] == "Accept-Encoding")
    }

    @Test("The encoder's pieces, flushed one by one, and its end are one gzip stream gzip decodes")
    func encoderRoundTrip() async throws {
        let encoder = try #require(GzipEncoder(level: 6))
        let text = String(repeating: "<p>the same words again and again</p>\n", count: 3_000)
        var pieces: [ByteBuffer] = []
        var input = ByteBuffer(string: text)
        while input.readableBytes > 0, let piece = input.readSlice(length: min(7_000, input.readableBytes)) {
            let out = encoder.compress(piece, allocator: ByteBufferAllocator())
            #expect(out.readableBytes > 0, "each piece is flushed")
            pieces.append(out)
        }
        pieces.append(encoder.finish(allocator: ByteBufferAllocator()))
        #expect(encoder.finish(allocator: ByteBufferAllocator()).readableBytes == 0, "spent")
        var all = ByteBuffer()
        for var piece in pieces { all.writeBuffer(&piece) }
        #expect(all.readableBytes < text.utf8.count / 10)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-gzip-\(UUID().uuidString).gz")
        let plain = file.deletingPathExtension()
        defer {
            try? FileManager.default.removeItem(at: file)
            try? FileManager.default.removeItem(at: plain)
        }
        try Data(all.readableBytesView).write(to: file)
        // gzip decodes it into the file without .gz (a pipe would hold only 64 KiB of it).
        let decoded = try await ChildProcess.run("/bin/gzip", ["-d", "-f", file.path])
        #expect(decoded.status == 0, "\(decoded.stderr)")
        #expect(try String(contentsOf: plain, encoding: .utf8) == text)
    }

    @Test("The Brotli encoder's pieces, flushed one by one, and its end are one stream brotli decodes", .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/brotli")))
    func brotliRoundTrip() async throws {
        let encoder = try #require(BrotliEncoder(quality: 5))
        let text = String(repeating: "<p>the same words again and again</p>\n", count: 3_000)
        var all = ByteBuffer()
        var input = ByteBuffer(string: text)
        while input.readableBytes > 0, let piece = input.readSlice(length: min(7_000, input.readableBytes)) {
            var out = encoder.compress(piece, allocator: ByteBufferAllocator())
            #expect(out.readableBytes > 0, "each piece is flushed")
            all.writeBuffer(&out)
        }
        var end = encoder.finish(allocator: ByteBufferAllocator())
        all.writeBuffer(&end)
        #expect(encoder.finish(allocator: ByteBufferAllocator()).readableBytes == 0, "spent")
        #expect(all.readableBytes < text.utf8.count / 10)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-br-\(UUID().uuidString).br")
        let plain = file.deletingPathExtension()
        defer {
            try? FileManager.default.removeItem(at: file)
            try? FileManager.default.removeItem(at: plain)
        }
        try Data(all.readableBytesView).write(to: file)
        let decoded = try await ChildProcess.run("/usr/bin/brotli", ["-d", "-f", "-o", plain.path, file.path])
        #expect(decoded.status == 0, "\(decoded.stderr)")
        #expect(try String(contentsOf: plain, encoding: .utf8) == text)
    }
}
