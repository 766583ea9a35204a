import Foundation
import Testing

@testable import TollgateProxy

@Suite("The access log's file writer: lines batched in memory, written within the batch interval")
struct AccessLogWriterTests {
    private func entry(_ target: String) -> AccessLogEntry {
        AccessLogEntry(
            clientAddress: "127.0.0.1", time: 0, method: "GET", target: target, version: "HTTP/1.1",
            status: 200, bodyBytes: 1, referer: nil, userAgent: nil, rule: "-", session: "default"
        )
    }

    private func withLogFile(_ body: (FileHandle, String) async throws -> Void) async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("tollgate-log-\(UUID().uuidString)").path
        #expect(FileManager.default.createFile(atPath: path, contents: nil))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let handle = try #require(FileHandle(forWritingAtPath: path))
        defer { try? handle.close() }
        try await body(handle, path)
    }

    private func lines(_ path: String) -> [String] {
        (try? String(contentsOfFile: path, encoding: .utf8))?.split(separator: "\n").map(String.init) ?? []
    }

    @Test("Lines recorded close together reach the file in order without a flush, soon after")
    func linesArriveWithoutFlush() async throws {
        try await withLogFile { handle, path in
            let log = AccessLog.writing(to: handle)
            for index in 0..<3 { log.record(entry("http://example.com/\(index)")) }
            let deadline = Date().addingTimeInterval(5)
            while lines(path).count < 3, Date() < deadline { try await Task.sleep(for: .milliseconds(20)) }
            let written = lines(path)
            #expect(written.count == 3)
            #expect(written.enumerated().allSatisfy { $0.element.contains("GET http://example.com/\($0.offset) ") })
        }
    }

    @Test("flush() writes every line recorded so far at once, without waiting for the interval")
    func flushWritesAtOnce() async throws {
        try await withLogFile { handle, path in
            let log = AccessLog.writing(to: handle)
            for index in 0..<100 { log.record(entry("http://example.com/\(index)")) }
            await log.flush()
            #expect(lines(path).count == 100)
        }
    }

    @Test("A batch past the size limit is written before the interval ends")
    func largeBatchWrittenEarly() async throws {
        try await withLogFile { handle, path in
            let log = AccessLog.writing(to: handle)
            let long = "http://example.com/" + String(repeating: "a", count: 1000)
            let count = AccessLog.batchLimit / 1000 + 10
            for _ in 0..<count { log.record(entry(long)) }
            // The interval's write would come 50 ms after the first line; the limit's is queued
            // at once. Both end in the same file, so what is checked is that nothing is lost.
            await log.flush()
            #expect(lines(path).count == count)
        }
    }
}
