import TollgateHTTP

extension ResponseDecoder.Failure {
    /// Why a response's framing cannot be read, in the words the origin connection's errors
    /// have always used.
    init(_ error: FramingError) {
        switch error {
        case .bareLF(let part): self.init(message: "a bare LF in the \(Self.name(of: part))")
        case .bareCR(let part): self.init(message: "a bare CR in the \(Self.name(of: part))")
        case .nul(let part): self.init(message: "a NUL byte in the \(Self.name(of: part))")
        case .tooLarge(.head):
            self.init(message: "the response head is larger than \(ResponseDecoder.maximumHeadBytes) bytes")
        case .tooLarge(.chunkSizeLine): self.init(message: "the chunk size line is too long")
        case .tooLarge(.trailerSection): self.init(message: "the trailer section is too large")
        case .tooManyLines(let part): self.init(message: "too many lines in the \(Self.name(of: part))")
        case .invalidChunkSize(let line): self.init(message: "invalid chunk size \"\(line)\"")
        case .chunkSizeTooLarge: self.init(message: "chunk size too large")
        case .controlByteInChunkExtension: self.init(message: "a control byte in a chunk extension")
        case .chunkDataNotFollowedByLineEnd: self.init(message: "chunk data is not followed by a line end")
        }
    }

    private static func name(of part: FramingError.Part) -> String {
        switch part {
        case .head: "response head"
        case .chunkSizeLine: "chunk size line"
        case .trailerSection: "trailer section"
        }
    }
}
