public import NIOCore

/// The stream task's reads and writes as `async` calls (`URLSessionStreamTask`'s async variants).
extension StreamTask {
    /// Reads at least `minLength` and at most `maxLength` bytes (fewer only at EOF), as
    /// ``readData(ofMinLength:maxLength:timeout:completionHandler:)``.
    /// - Returns: the bytes (nil when none) and whether the peer closed its side.
    public func readData(ofMinLength minLength: Int, maxLength: Int, timeout: Duration) async throws(SessionError) -> (data: ByteBuffer?, atEOF: Bool) {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<(ByteBuffer?, Bool), SessionError>, Never>) in
            readData(ofMinLength: minLength, maxLength: maxLength, timeout: timeout) { bytes, atEOF, error in
                continuation.resume(returning: error.map { .failure($0) } ?? .success((bytes, atEOF)))
            }
        }
        return try result.get()
    }

    /// Writes `data`, as ``write(_:timeout:completionHandler:)``.
    public func write(_ data: ByteBuffer, timeout: Duration) async throws(SessionError) {
        let error = await withCheckedContinuation { (continuation: CheckedContinuation<SessionError?, Never>) in
            write(data, timeout: timeout) { continuation.resume(returning: $0) }
        }
        if let error { throw error }
    }
}
