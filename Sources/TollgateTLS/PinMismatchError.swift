/// No certificate in a verified chain had a configured pin.
///
/// The description lists the expected pins and then every presented certificate's pin and subject, so an
/// operator can copy the right pin into the configuration:
///
/// ```
/// pin mismatch for example.com: expected sha256/A…=, sha256/B…=; presented: sha256/X…= CN=example.com,
/// sha256/Y…= CN=Example CA
/// ```
public struct PinMismatchError: Error, CustomStringConvertible, Sendable {
    /// The host whose pins were checked, if known.
    public let host: String?

    /// The configured pins.
    public let expectedPins: [SPKIPin]

    /// The chain that was checked, leaf first.
    public let presentedChain: [Certificate]

    /// An error for a chain that matched none of `expectedPins`.
    public init(host: String?, expectedPins: [SPKIPin], presentedChain: [Certificate]) {
        self.host = host
        self.expectedPins = expectedPins
        self.presentedChain = presentedChain
    }

    /// `pin mismatch for <host>: expected <pins>; presented: <pin> <subject>, …`.
    public var description: String {
        let target = self.host.map { " for \($0)" } ?? ""
        let expected =
            self.expectedPins.isEmpty ? "(no pins)" : self.expectedPins.map(\.description).joined(separator: ", ")
        let presented = self.presentedChain.map { "\($0.spkiPin) \($0.subject)" }.joined(separator: ", ")
        return "pin mismatch\(target): expected \(expected); presented: \(presented)"
    }
}
