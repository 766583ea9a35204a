extension PolicyLoader {
    /// One mistake in a policy file, rendered `FILE:LINE: KEY: message` (``description``).
    ///
    /// `KEY` is the path of the offending key from the top of the document, with list positions
    /// 0-based: `hosts[2].trust.pins[0]`. Problems that belong to no key use a word in parentheses:
    /// `(file)` when the file cannot be read (at line 1), `(yaml)` for a YAML syntax error, and
    /// `(document)` when the document as a whole is wrong (not a mapping, too large).
    public struct Problem: Hashable, Sendable, CustomStringConvertible {
        /// The file as it was named to the loader.
        public var file: String
        /// The 1-based line.
        public var line: Int
        /// The key path, such as `hosts[2].trust.pins[0]`.
        public var key: String
        /// What is wrong, in one line.
        public var message: String

        /// Creates a problem.
        public init(file: String, line: Int, key: String, message: String) {
            self.file = file
            self.line = line
            self.key = key
            self.message = message
        }

        /// `FILE:LINE: KEY: message`.
        public var description: String { "\(file):\(line): \(key): \(message)" }
    }

    /// The file could not be loaded; ``problems`` lists every mistake found (never empty).
    public struct Failure: Error, Sendable, CustomStringConvertible {
        /// The problems, in line order.
        public var problems: [Problem]

        /// Creates a failure.
        public init(problems: [Problem]) { self.problems = problems }

        /// One problem per line.
        public var description: String { problems.map(\.description).joined(separator: "\n") }
    }
}
