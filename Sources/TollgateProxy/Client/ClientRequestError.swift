/// Why a client's request is refused before anything is forwarded: the status and code of the
/// answer, and what was wrong. After one of these the connection is closed, since the client
/// and the proxy may no longer agree on where the next request starts.
struct ClientRequestError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The status of the answer (400, 408, 431, 505).
    var status: Int
    /// The `Tollgate-Error` code.
    var code: ProxyErrorCode
    /// What was wrong, in one line.
    var message: String

    /// A malformed or ambiguous request (400 `bad-request`).
    static func malformed(_ message: String) -> ClientRequestError {
        ClientRequestError(status: 400, code: .badRequest, message: message)
    }

    /// The head is larger than `limits.max-header-bytes` or has more lines than `limits.max-headers`.
    static func headTooLarge(_ message: String) -> ClientRequestError {
        ClientRequestError(status: 431, code: .headerTooLarge, message: message)
    }

    /// The client was too slow sending its head or its body.
    static func timedOut(_ message: String) -> ClientRequestError {
        ClientRequestError(status: 408, code: .requestTimeout, message: message)
    }

    /// The answer the client gets.
    var answer: OwnResponse { OwnResponse(code, status: status, message) }

    var description: String { "\(status) \(code): \(message)" }
}
