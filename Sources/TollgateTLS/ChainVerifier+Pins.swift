extension ChainVerifier {
    /// Whether any certificate in `chain` has one of `pins`.
    ///
    /// Run it on the chain ``verify(chain:host:purpose:at:)`` returned, so a pin on the root or an
    /// intermediate counts only when that certificate really is part of the verified path.
    ///
    /// - Returns: false when `pins` is empty.
    public static func pinMatch(chain: [Certificate], pins: [SPKIPin]) -> Bool {
        let expected = Set(pins)
        return chain.contains { expected.contains($0.spkiPin) }
    }

    /// Throws unless any certificate in `chain` has one of `pins`.
    ///
    /// - Parameters:
    ///   - chain: the verified chain.
    ///   - pins: the pins configured for the host.
    ///   - host: named in the error.
    /// - Throws: ``PinMismatchError``, which lists every pin in the chain with its subject.
    public static func checkPins(chain: [Certificate], pins: [SPKIPin], host: String? = nil) throws {
        guard pinMatch(chain: chain, pins: pins) else {
            throw PinMismatchError(host: host, expectedPins: pins, presentedChain: chain)
        }
    }
}
