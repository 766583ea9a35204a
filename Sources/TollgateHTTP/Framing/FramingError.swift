/// Why the HTTP/1 framing of a message cannot be read: one error for both directions.
///
/// The framing core (``LineReader``, ``HeadScanner``, ``ChunkedBodyDecoder``) reports these; each
/// side maps them at its edge, the client side to a status and `Tollgate-Error` code, the origin
/// side to the reason its connection fails with. After one of these the bytes that follow have
/// no reading: the connection is not used again.
package enum FramingError: Error, Hashable, Sendable {
    /// The part of a message a refused byte or line belongs to.
    package enum Part: Hashable, Sendable {
        /// The start line and field lines.
        case head
        /// A chunk's size and extensions.
        case chunkSizeLine
        /// The field lines after the last chunk.
        case trailerSection
    }

    /// An LF without a CR before it, where the rules ask for CRLF.
    case bareLF(Part)
    /// A CR followed by anything but LF.
    case bareCR(Part)
    /// A NUL byte.
    case nul(Part)
    /// A line, head or trailer section longer than its limit.
    case tooLarge(Part)
    /// More lines than the limit allows (a head's field lines with its start line, or trailer fields).
    case tooManyLines(Part)
    /// A chunk-size line that is not `1*HEXDIG [ BWS ";" chunk-ext ]`; the line as far as it can be
    /// shown in a message (at most 80 bytes, control bytes as `?`).
    case invalidChunkSize(String)
    /// A chunk size of more than 15 hexadecimal digits (leading zeros count): it might not fit in 64 bits.
    case chunkSizeTooLarge
    /// A control byte in a chunk extension, where the rules refuse it.
    case controlByteInChunkExtension
    /// Chunk data not followed by the line end the rules ask for.
    case chunkDataNotFollowedByLineEnd

    /// At most 80 bytes of `bytes` for an error message, control bytes shown as `?`.
    package static func printable(_ bytes: UnsafeRawBufferPointer) -> String {
        String(decoding: bytes.prefix(80).map { $0 < 0x20 || $0 == 0x7F ? UInt8(ascii: "?") : $0 }, as: UTF8.self)
    }
}
