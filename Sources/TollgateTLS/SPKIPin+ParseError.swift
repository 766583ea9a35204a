extension SPKIPin {
    /// A pin string could not be parsed; ``message`` says what is wrong with it.
    ///
    /// Equality looks at the kind only, so tests and callers can match the static members.
    public struct ParseError: Error, Hashable, CustomStringConvertible, Sendable {
        private enum Code: String, Sendable {
            case missingPrefix
            case unsupportedAlgorithm
            case invalidBase64
            case wrongLength
        }

        private let code: Code

        /// What is wrong, quoting the pin (pins are public values, not secrets).
        public let message: String

        private init(code: Code, message: String) {
            self.code = code
            self.message = message
        }

        init(_ kind: ParseError, _ message: String) {
            self.init(code: kind.code, message: message)
        }

        /// The string does not start with `sha256/`.
        public static let missingPrefix = ParseError(code: .missingPrefix, message: "missing sha256/ prefix")
        /// The string names another algorithm, such as `sha1/`.
        public static let unsupportedAlgorithm = ParseError(
            code: .unsupportedAlgorithm,
            message: "unsupported pin algorithm"
        )
        /// The text after `sha256/` is not standard base64.
        public static let invalidBase64 = ParseError(code: .invalidBase64, message: "invalid base64")
        /// The base64 does not decode to 32 bytes.
        public static let wrongLength = ParseError(code: .wrongLength, message: "digest is not 32 bytes")

        /// The message.
        public var description: String { self.message }

        /// Errors are equal when they are of the same kind, whatever their messages.
        public static func == (lhs: ParseError, rhs: ParseError) -> Bool { lhs.code == rhs.code }

        /// Hashes the kind only, to agree with `==`.
        public func hash(into hasher: inout Hasher) { hasher.combine(self.code) }
    }
}
