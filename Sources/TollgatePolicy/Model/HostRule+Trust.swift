public import Foundation
public import TollgateTLS

extension HostRule {
    /// How a host's server certificate is checked (`trust`).
    ///
    /// Normal chain verification against ``roots`` always runs (unless ``insecure``); pins are
    /// checked on the verified chain after it, any certificate of the chain matching any pin.
    public struct Trust: Hashable, Sendable {
        /// The trust anchors a chain must lead to.
        public struct Roots: Hashable, Sendable, CustomStringConvertible {
            /// Whether the system's roots are included (`system`).
            public var includesSystem: Bool
            /// PEM bundle files whose certificates are trust anchors too (a `PATH`).
            public var bundles: [String]
            /// PEM bundle files used when they exist and skipped when they do not
            /// (`{ file: PATH, optional: true }`): a developer's local CA that not every machine has.
            public var optionalBundles: [String]

            /// Creates a roots setting.
            public init(includesSystem: Bool, bundles: [String] = [], optionalBundles: [String] = []) {
                self.includesSystem = includesSystem
                self.bundles = bundles
                self.optionalBundles = optionalBundles
            }

            /// The system roots only.
            public static let system = Roots(includesSystem: true)

            public var description: String {
                ((includesSystem ? ["system"] : []) + bundles + optionalBundles.map { "\($0) (if present)" })
                    .joined(separator: ", ")
            }
        }

        /// What a pin mismatch does.
        public enum PinMode: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
            /// The connection is refused (`Tollgate-Error: pin-mismatch`).
            case enforce
            /// The connection goes ahead and the mismatch is logged and counted.
            case report

            public var description: String { rawValue }
        }

        /// What the server's stapled OCSP response (`status_request`) must say (`ocsp`).
        public enum OCSPCheck: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
            /// Not asked for.
            case off
            /// Asked for; a verified response saying the certificate is revoked refuses the
            /// connection. None stapled, or one that cannot be verified, is let through (soft-fail,
            /// as browsers do).
            case check
            /// Asked for; anything but a verified, current response saying `good` refuses the
            /// connection (a must-staple policy).
            case require

            public var description: String { rawValue }
        }

        /// The trust anchors (`roots`: `system`, a PEM bundle `PATH`, or a list of both). Default: system.
        public var roots: Roots = .system
        /// Files of certificate revocation lists (`crls`, PEM or DER): when any is given, every
        /// certificate of the chain but its anchor must be covered by its issuer's list and not be
        /// revoked (``CertificateRevocationList``). Default: none, no revocation check.
        public var crls: [String] = []
        /// SPKI pins (`pins`); empty means no pinning. Default: none.
        public var pins: [SPKIPin] = []
        /// Enforce or report pin mismatches (`pin-mode`). Default: enforce.
        public var pinMode: PinMode = .enforce
        /// From this instant on the pins are only reported, never enforced (`pins-expire`), so a
        /// forgotten key rotation cannot lock the host out for good. Default: nil, no expiry.
        public var pinsExpire: Date?
        /// The server's OCSP response: not asked for, checked when stapled, or required (`ocsp`).
        /// Default: off.
        public var ocsp: OCSPCheck = .off
        /// No certificate verification at all (`insecure`), logged loudly on every connection.
        /// Default: false.
        public var insecure: Bool = false
        /// Refuse every request and tunnel to these hosts (`deny`, `Tollgate-Error: host-denied`).
        /// Default: false.
        public var deny: Bool = false

        /// A trust setting with every field at its default.
        public init() {}

        /// The pin mode in force at `now`: ``pinMode``, or report once ``pinsExpire`` has passed.
        public func effectivePinMode(at now: Date) -> PinMode {
            if let pinsExpire, now >= pinsExpire { return .report }
            return pinMode
        }
    }
}
