import NIOCore

/// The HTTP/2 connection preface (RFC 9113 §3.4), and what a connection's first bytes say.
/// Pure.
enum HTTP2Preface {
    /// `PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n`.
    static let bytes: [UInt8] = Array("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".utf8)

    /// What a connection's first bytes are.
    enum Verdict: Hashable, Sendable {
        /// The whole preface: HTTP/2 with prior knowledge.
        case http2
        /// A byte differs from the preface: anything else (HTTP/1.1).
        case other
        /// The bytes so far are the preface's beginning: wait for more.
        case undecided
    }

    /// The verdict on `received`, the connection's first bytes.
    static func classify(_ received: ByteBuffer) -> Verdict {
        let count = min(received.readableBytes, bytes.count)
        let matches = received.withUnsafeReadableBytes { buffer in
            (0..<count).allSatisfy { buffer[$0] == bytes[$0] }
        }
        if !matches { return .other }
        return count == bytes.count ? .http2 : .undecided
    }
}
