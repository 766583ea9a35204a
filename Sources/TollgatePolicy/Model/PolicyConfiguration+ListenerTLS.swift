public import TollgateTLS

extension PolicyConfiguration.Listener {
    /// A listener's `tls`: it speaks HTTPS. A forward listener with TLS is an HTTPS proxy
    /// (`curl --proxy https://…`); a reverse one an HTTPS gateway.
    public struct TLS: Hashable, Sendable {
        /// The lowest TLS version a client may use (`min-version`).
        public enum MinimumVersion: String, Hashable, Sendable, CaseIterable {
            /// TLS 1.2 and 1.3.
            case tls1_2 = "1.2"
            /// TLS 1.3 only.
            case tls1_3 = "1.3"

            /// The version as ``TLSConfiguration`` takes it.
            public var tlsVersion: TLSVersion { self == .tls1_2 ? .tlsv1_2 : .tlsv1_3 }
        }

        /// One certificate the listener presents: a PEM file with the leaf then any intermediates,
        /// and the unencrypted PEM key file (mode 0600 or stricter). Paths are resolved.
        public struct CertificateFiles: Hashable, Sendable {
            /// The certificate chain file.
            public var certificate: String
            /// The private key file.
            public var key: String
            /// The DER OCSP response about the certificate, stapled to the handshakes of clients
            /// that ask (`ocsp-response`; nginx's `ssl_stapling_file`), while current. Nil: none.
            public var ocspResponse: String?

            /// Creates a pair of files (and an OCSP response's).
            public init(certificate: String, key: String, ocspResponse: String? = nil) {
                self.certificate = certificate
                self.key = key
                self.ocspResponse = ocspResponse
            }

            /// Reads the files and checks that the key belongs to the certificate (and the OCSP
            /// response is about it). The error names the file at fault and what is wrong, never
            /// what the key holds.
            public func load() -> Result<Identity, CertificateFilesError> {
                let chain: [Certificate]
                do {
                    chain = try Certificate.bundle(pemFile: certificate)
                } catch {
                    return .failure(.init(file: .certificate, message: "cannot load the certificate \(certificate): \(error)"))
                }
                guard !chain.isEmpty else {
                    return .failure(.init(file: .certificate, message: "\(certificate) holds no PEM certificate"))
                }
                let privateKey: PrivateKey
                do {
                    privateKey = try PrivateKey(pemFile: key)
                } catch {
                    return .failure(.init(file: .key, message: "cannot load the key \(key): \(error)"))
                }
                var identity: Identity
                do {
                    identity = try Identity(certificateChain: chain, privateKey: privateKey)
                } catch {
                    return .failure(
                        .init(file: .key, message: "the key \(key) does not belong to the certificate \(certificate)")
                    )
                }
                if let ocspResponse {
                    do {
                        identity.ocspResponse = try OCSPResponse(contentsOf: ocspResponse, for: chain)
                    } catch {
                        return .failure(.init(file: .ocspResponse, message: "\(error) (for the certificate \(certificate))"))
                    }
                }
                return .success(identity)
            }
        }

        /// Why a ``CertificateFiles`` pair cannot be used.
        public struct CertificateFilesError: Error, Hashable, Sendable, CustomStringConvertible {
            /// Which of the two files is at fault (the key when they do not belong together).
            public enum File: Hashable, Sendable { case certificate, key, ocspResponse }
            /// The file at fault.
            public let file: File
            /// One line naming the file and the reason.
            public let message: String
            public var description: String { message }
        }

        /// The certificates, the first the default: presented when the client's SNI name matches
        /// none of the others' DNS names, or when it sent none. Never empty.
        public var certificates: [CertificateFiles]
        /// The lowest TLS version accepted (`min-version`). Default: 1.2.
        public var minimumVersion: MinimumVersion
        /// Client certificates asked for and checked (`client-auth`). Default: nil, none asked for.
        public var clientAuth: ClientAuth?
        /// Whether clients get session tickets to resume with, skipping a full handshake when
        /// they connect again (`session-tickets`, nginx's `ssl_session_tickets`). Default: true
        /// without `client-auth`; always false with it (a resumed session skips the certificate's
        /// check).
        public var sessionTickets: Bool = true
        /// The files of the keys session tickets are sealed with (`session-ticket-keys`, nginx's
        /// `ssl_session_ticket_key`): the first seals new tickets, each opens them, so that
        /// instances given the same files — or this one after a restart — resume each other's
        /// sessions. Read at start and at every reload (rotation: put a new file first, keep the
        /// old one after it for a while). Paths are resolved. Default: none, a key made with each
        /// context.
        public var sessionTicketKeyFiles: [String] = []
        /// Whether the OCSP response of each certificate without an `ocsp-response` file is
        /// fetched from the responder the certificate names and stapled (`ocsp-stapling`, nginx's
        /// `ssl_stapling on`). Default: false.
        public var ocspStapling = false

        /// Creates TLS settings.
        public init(certificates: [CertificateFiles], minimumVersion: MinimumVersion = .tls1_2, clientAuth: ClientAuth? = nil) {
            self.certificates = certificates
            self.minimumVersion = minimumVersion
            self.clientAuth = clientAuth
        }
    }
}
