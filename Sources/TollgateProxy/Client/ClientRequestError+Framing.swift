import TollgateHTTP

extension ClientRequestError {
    /// The answer to a request whose framing the strict core refused: 431 for a head or trailer
    /// section over its limits, 400 for the rest, with the reasons the access log has always had.
    init(_ error: FramingError, limits: RequestDecoder.Limits) {
        switch error {
        case .bareLF(let part): self = .malformed("bare LF in the \(Self.name(of: part))")
        case .bareCR(let part): self = .malformed("bare CR in the \(Self.name(of: part))")
        case .nul(let part): self = .malformed("NUL byte in the \(Self.name(of: part))")
        case .tooLarge(.head): self = .headTooLarge("the request head is larger than \(limits.maxHeaderBytes) bytes")
        case .tooLarge(.chunkSizeLine): self = .malformed("chunk size line too long")
        case .tooLarge(.trailerSection): self = .headTooLarge("the trailer section is too large")
        case .tooManyLines(.head): self = .headTooLarge("more than \(limits.maxHeaders) header fields")
        case .tooManyLines: self = .headTooLarge("more than \(limits.maxHeaders) trailer fields")
        case .invalidChunkSize: self = .malformed("invalid chunk size")
        case .chunkSizeTooLarge: self = .malformed("chunk size too large")
        case .controlByteInChunkExtension: self = .malformed("control byte in a chunk extension")
        case .chunkDataNotFollowedByLineEnd: self = .malformed("chunk data is not followed by CRLF")
        }
    }

    private static func name(of part: FramingError.Part) -> String {
        switch part {
        case .head: "request head"
        case .chunkSizeLine: "chunk size line"
        case .trailerSection: "trailer section"
        }
    }
}
