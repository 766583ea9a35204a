import NIOCore
import TollgateSession

/// Reads `task` to its EOF (each read at most 100 bytes, each within five seconds) and returns the
/// text read.
func readToEOF(_ task: StreamTask) async throws -> String {
    var text = ""
    var atEOF = false
    while !atEOF {
        let read = try await task.readData(ofMinLength: 1, maxLength: 100, timeout: .seconds(5))
        text += read.data.map { String(buffer: $0) } ?? ""
        atEOF = read.atEOF
    }
    return text
}
