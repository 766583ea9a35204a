/// How strictly the framing core reads HTTP/1: the one place where the request side (strict:
/// a proxy that reads a request differently from the server behind it can be used to smuggle
/// one) and the response side (lenient where RFC 9112 lets a recipient be) differ.
///
/// Two presets, ``strict(maximumHeadBytes:maximumHeadFields:)`` for requests from clients and
/// ``lenient(maximumHeadBytes:)`` for responses from origins; each keeps exactly what its side
/// accepted before the two decoders shared this core, limits included to the byte.
package struct FramingRules: Hashable, Sendable {
    /// Whether an LF alone ends a line (RFC 9112 §2.2 lets a recipient accept it). Strict: no.
    package var acceptsBareLF: Bool
    /// Whether a control byte other than HTAB in a chunk extension is refused. Strict: yes.
    package var refusesControlBytesInChunkExtensions: Bool
    /// The limit of a head: its start line and field lines with their line ends.
    package var maximumHeadBytes: Int
    /// The most lines a head may have before its empty line (start line included); nil: no limit here.
    package var maximumHeadLines: Int?
    /// The limit of a chunk-size line (size and extensions).
    package var maximumChunkLineBytes: Int
    /// The limit of a trailer section, counted as each line's bytes plus two for its line end.
    package var maximumTrailerBytes: Int
    /// The most trailer field lines; nil: no count.
    package var maximumTrailerFields: Int?
    /// How far past a limit the end of a line may reach. The request side counted a line up to
    /// and including its CR against a limit (its LF may be one byte past); the response side
    /// counted the bytes before the line end (two bytes past). Kept as each side had it.
    package var lineLimitSlack: Int

    /// The request side: CRLF only, no control bytes in chunk extensions, trailers bounded like
    /// the head and their fields counted.
    /// - Parameters:
    ///   - maximumHeadBytes: the most bytes of a head, and of a trailer section.
    ///   - maximumHeadFields: the most field lines of a head, and of a trailer section.
    package static func strict(maximumHeadBytes: Int, maximumHeadFields: Int) -> FramingRules {
        FramingRules(
            acceptsBareLF: false,
            refusesControlBytesInChunkExtensions: true,
            maximumHeadBytes: maximumHeadBytes,
            maximumHeadLines: maximumHeadFields + 1,
            maximumChunkLineBytes: 4096,
            maximumTrailerBytes: maximumHeadBytes,
            maximumTrailerFields: maximumHeadFields,
            lineLimitSlack: 1
        )
    }

    /// The response side: a bare LF ends a line, chunk extensions are not looked into, trailers
    /// are bounded in bytes only (the head's field count is checked where fields are parsed).
    /// - Parameter maximumHeadBytes: the most bytes of a head (one more is tolerated, as it
    ///   always was), and of a trailer section.
    package static func lenient(maximumHeadBytes: Int) -> FramingRules {
        FramingRules(
            acceptsBareLF: true,
            refusesControlBytesInChunkExtensions: false,
            maximumHeadBytes: maximumHeadBytes,
            maximumHeadLines: nil,
            maximumChunkLineBytes: 4096,
            maximumTrailerBytes: maximumHeadBytes,
            maximumTrailerFields: nil,
            lineLimitSlack: 2
        )
    }
}
