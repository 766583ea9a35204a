internal import COpenSSL
import NIOCore

/// One connection's OpenSSL state: the `SSL`, its two memory BIOs, and what OpenSSL's callbacks recorded.
///
/// The handler feeds ciphertext from the socket into ``feedCiphertext(_:)``, drives the handshake, reads
/// and writes plaintext, and takes the ciphertext OpenSSL produced with ``takeCiphertext(allocator:)``. No
/// socket is touched here. C callbacks cannot capture, so the `SSL` carries a pointer back to this object
/// in its ex-data slot (see `TLSConnection+Callbacks.swift`); the `SSL` never outlives it.
///
/// Not thread-safe: used on its channel's event loop only.
final class TLSConnection {
    /// Which side of the handshake this connection plays.
    enum Role: Equatable {
        /// A client connecting to `serverHostname` (a DNS name or IP address; nil when unknown).
        case client(serverHostname: String?)
        /// A server.
        case server
    }

    /// How a handshake step ended.
    enum HandshakeResult: Equatable {
        case needsMoreData
        case completed
        case failed(TLSError)
    }

    /// How decrypting what has arrived ended.
    enum ReadResult: Equatable {
        /// Everything decryptable was decrypted; more ciphertext is needed.
        case needsMoreData
        /// The peer sent `close_notify`.
        case closeNotify
        case failed(TLSError)
    }

    /// How one call to encrypt ended.
    enum WriteResult: Equatable {
        /// This many plaintext bytes were encrypted (and consumed from the buffer).
        case wrote(Int)
        /// OpenSSL needs to read first (a post-handshake message is half-received).
        case needsRead
        case failed(TLSError)
    }

    let context: TLSContext
    let role: Role

    /// The owned `SSL*`; freed on deinit together with both BIOs. Only the callbacks use it outside this file.
    let ssl: OpaquePointer
    /// Ciphertext from the peer, which OpenSSL reads.
    private let networkInput: OpaquePointer
    /// Ciphertext for the peer, which OpenSSL writes.
    private let networkOutput: OpaquePointer

    /// The host name or IP address the leaf must match (clients with full verification), for errors.
    let expectedHost: String?
    /// The host name sent in SNI (clients; nil for an IP address).
    private let sentServerName: String?

    // What OpenSSL's callbacks recorded (set in TLSConnection+Callbacks.swift).

    /// The first error the verify callback saw, with the certificate's depth and subject.
    var verificationError: CertificateVerificationError?
    /// Whether the verify callback rejected the chain (failing the handshake) rather than only noting it.
    var rejectedChain = false
    /// The last fatal alert the peer sent, as OpenSSL names it.
    var receivedAlert: String?
    /// The server asked for a client certificate and the client had none (clients).
    var clientCertificateRequested = false
    /// The SNI host name a client sent (servers).
    var receivedServerName: String?
    /// Why the server-name hook could not choose an identity, when it could not.
    var serverNameFailure: String?
    /// Servers: the identity the SNI callback chose for this connection (nil: the context's).
    var chosenIdentity: Identity?

    /// Creates the `SSL` for one connection.
    ///
    /// - Throws: ``TLSError/invalidConfiguration`` when a client with full verification has no host name or
    ///   a server has no identity and no server-name handler; ``OpenSSLError`` when OpenSSL refuses.
    init(context: TLSContext, role: Role) throws {
        let configuration = context.configuration
        var expectedHost: String? = nil
        var sentServerName: String? = nil
        switch role {
        case .client(let host):
            if configuration.certificateVerification.checksHostname {
                guard let host, !host.isEmpty else {
                    throw TLSError.invalidConfiguration("full certificate verification needs the server's host name")
                }
                expectedHost = host
            }
            if let host, !host.isEmpty, IPAddress.parse(host) == nil { sentServerName = host }
        case .server:
            guard configuration.identity != nil || configuration.serverNameHandler != nil else {
                throw TLSError.invalidConfiguration("a server needs an identity or a server-name handler")
            }
        }

        tg_ERR_clear_error()
        guard let ssl = SSL_new(context.ctx) else { throw OpenSSLError(.io, "allocating an SSL connection") }
        guard let input = BIO_new(BIO_s_mem()), let output = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            throw OpenSSLError(.io, "allocating memory BIOs")
        }
        // An empty input BIO means "retry later", never EOF: the socket, not the BIO, reports EOF.
        _ = tg_BIO_set_mem_eof_return(input, -1)
        SSL_set_bio(ssl, input, output)  // the SSL owns both BIOs from here on

        self.context = context
        self.role = role
        self.ssl = ssl
        self.networkInput = input
        self.networkOutput = output
        self.expectedHost = expectedHost
        self.sentServerName = sentServerName
        // From here on deinit runs on a throw and frees the SSL.
        guard tg_SSL_set_ex_data(ssl, TLSConnection.exDataIndex, Unmanaged.passUnretained(self).toOpaque()) == 1
        else {
            throw OpenSSLError(.io, "attaching the connection to its SSL")
        }
        try self.configureRole()
    }

    deinit {
        SSL_free(self.ssl)
    }

    private func configureRole() throws {
        let configuration = self.context.configuration
        switch self.role {
        case .client:
            SSL_set_connect_state(self.ssl)
            // Always VERIFY_PEER: the callback decides whether a failure ends the handshake.
            SSL_set_verify(self.ssl, tg_SSL_VERIFY_PEER(), tlsVerify)
            if let name = self.sentServerName, tg_SSL_set_tlsext_host_name(self.ssl, name) != 1 {
                throw OpenSSLError(.invalidArgument, "setting the SNI host name \"\(name)\"")
            }
            if let expected = self.expectedHost {
                try self.expect(host: expected)
            }
            if configuration.requestsCertificateStatus, tg_SSL_set_tlsext_status_type_ocsp(self.ssl) != 1 {
                throw OpenSSLError(.invalidArgument, "asking for the server's OCSP response")
            }
        case .server:
            SSL_set_accept_state(self.ssl)
            let requirement = configuration.clientCertificateRequirement
            var mode = tg_SSL_VERIFY_NONE()
            if requirement.asksForCertificate {
                mode = tg_SSL_VERIFY_PEER() | tg_SSL_VERIFY_CLIENT_ONCE()
                if requirement.failsWithoutCertificate { mode |= tg_SSL_VERIFY_FAIL_IF_NO_PEER_CERT() }
            }
            SSL_set_verify(self.ssl, mode, tlsVerify)
        }
    }

    /// Makes OpenSSL check the leaf against `host` during the handshake.
    private func expect(host: String) throws {
        if let bytes = IPAddress.parse(host), let address = IPAddress.format(bytes) {
            guard X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(self.ssl), address) == 1 else {
                throw OpenSSLError(.invalidArgument, "setting the expected IP address \(address)")
            }
        } else {
            SSL_set_hostflags(self.ssl, UInt32(X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS))
            guard SSL_set1_host(self.ssl, host) == 1 else {
                throw OpenSSLError(.invalidArgument, "setting the expected host name \"\(host)\"")
            }
        }
    }

    // MARK: - Ciphertext

    /// Hands ciphertext from the socket to OpenSSL.
    func feedCiphertext(_ buffer: ByteBuffer) {
        buffer.withUnsafeReadableBytes { bytes in
            guard let base = bytes.baseAddress, bytes.count > 0 else { return }
            // A memory BIO grows to take everything; it only fails on allocation failure.
            var offset = 0
            while offset < bytes.count {
                let written = BIO_write(
                    self.networkInput,
                    base + offset,
                    Int32(min(bytes.count - offset, Int(Int32.max)))
                )
                guard written > 0 else { break }
                offset += Int(written)
            }
        }
    }

    /// How many bytes of ciphertext OpenSSL has produced and nobody has taken yet.
    var pendingCiphertextCount: Int { Int(tg_BIO_pending(self.networkOutput)) }

    /// Takes all ciphertext OpenSSL has produced, or nil when there is none.
    func takeCiphertext(allocator: ByteBufferAllocator) -> ByteBuffer? {
        let pending = self.pendingCiphertextCount
        guard pending > 0 else { return nil }
        var buffer = allocator.buffer(capacity: pending)
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: pending) { bytes in
            Int(max(0, BIO_read(self.networkOutput, bytes.baseAddress, Int32(pending))))
        }
        return buffer
    }

    // MARK: - Handshake, data, shutdown

    /// Runs the handshake as far as the ciphertext received so far allows.
    func doHandshake() -> HandshakeResult {
        tg_ERR_clear_error()
        let result = SSL_do_handshake(self.ssl)
        if result == 1 { return .completed }
        switch SSL_get_error(self.ssl, result) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            return .needsMoreData
        case let code:
            return .failed(self.handshakeFailure(code))
        }
    }

    private func handshakeFailure(_ code: Int32) -> TLSError {
        let queue = OpenSSLError.drainErrorQueue()
        if let alert = self.receivedAlert { return .alertReceived(alert, duringHandshake: true) }
        if let failure = self.serverNameFailure { return .handshakeFailed(failure) }
        if self.rejectedChain, let error = self.verificationError { return .peerUntrusted(error) }
        if code == SSL_ERROR_ZERO_RETURN { return .closedDuringHandshake("the peer closed the TLS session") }
        return .handshakeFailed(queue.isEmpty ? "SSL error \(code)" : queue.joined(separator: "; "))
    }

    /// Decrypts everything decryptable into `buffer`.
    func readPlaintext(into buffer: inout ByteBuffer) -> ReadResult {
        while true {
            tg_ERR_clear_error()
            var result: Int32 = 0
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: 16_384) { bytes in
                result = SSL_read(self.ssl, bytes.baseAddress, Int32(min(bytes.count, Int(Int32.max))))
                return Int(max(result, 0))
            }
            if result > 0 { continue }
            switch SSL_get_error(self.ssl, result) {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
                return .needsMoreData
            case SSL_ERROR_ZERO_RETURN:
                return .closeNotify
            default:
                return .failed(self.dataFailure())
            }
        }
    }

    /// Encrypts up to `limit` bytes from the front of `buffer` (one record or more), consuming them.
    func writePlaintext(_ buffer: inout ByteBuffer, limit: Int) -> WriteResult {
        guard buffer.readableBytes > 0 else { return .wrote(0) }
        tg_ERR_clear_error()
        let result = buffer.withUnsafeReadableBytes { bytes in
            SSL_write(self.ssl, bytes.baseAddress, Int32(min(bytes.count, limit, Int(Int32.max))))
        }
        if result > 0 {
            buffer.moveReaderIndex(forwardBy: Int(result))
            return .wrote(Int(result))
        }
        switch SSL_get_error(self.ssl, result) {
        case SSL_ERROR_WANT_READ:
            return .needsRead
        case SSL_ERROR_WANT_WRITE:
            // A memory BIO never refuses a write; treat it like a read OpenSSL is waiting for.
            return .needsRead
        default:
            return .failed(self.dataFailure())
        }
    }

    private func dataFailure() -> TLSError {
        let queue = OpenSSLError.drainErrorQueue()
        if let alert = self.receivedAlert { return .alertReceived(alert, duringHandshake: false) }
        return .connectionFailed(queue.isEmpty ? "SSL error" : queue.joined(separator: "; "))
    }

    /// Queues our `close_notify` alert as ciphertext. Safe to call more than once.
    func shutdown() {
        tg_ERR_clear_error()
        _ = SSL_shutdown(self.ssl)
        tg_ERR_clear_error()
    }

    // MARK: - What the handshake established

    /// The negotiated parameters, the peer's chains and OpenSSL's verdict; call after the handshake.
    func evaluation() -> TLSPeerEvaluation {
        let version = TLSVersion(rawValue: SSL_version(self.ssl))
        var alpnData: UnsafePointer<UInt8>? = nil
        var alpnLength: UInt32 = 0
        tg_SSL_get0_alpn_selected(self.ssl, &alpnData, &alpnLength)
        let alpn = alpnData.flatMap { data -> String? in
            alpnLength > 0
                ? String(decoding: UnsafeBufferPointer(start: data, count: Int(alpnLength)), as: UTF8.self) : nil
        }
        let cipher =
            SSL_get_current_cipher(self.ssl).flatMap { SSL_CIPHER_get_name($0) }.map { String(cString: $0) } ?? ""

        var presented: [Certificate] = []
        if self.role == .server, let leaf = SSL_get0_peer_certificate(self.ssl) {
            presented += [try? Certificate(retaining: leaf)].compactMap { $0 }
        }
        presented += TLSConnection.certificates(in: SSL_get_peer_cert_chain(self.ssl))

        let trust: TLSPeerEvaluation.TrustResult
        if presented.isEmpty {
            trust = .noCertificate
        } else if let error = self.verificationError {
            trust = .untrusted(error)
        } else if case let result = Int32(SSL_get_verify_result(self.ssl)), result != X509_V_OK {
            // The callback saw no error, yet OpenSSL recorded one: trust OpenSSL.
            trust = .untrusted(CertificateVerificationError(code: .init(rawValue: result), host: self.expectedHost))
        } else {
            trust = .trusted
        }
        let verified = trust == .trusted ? TLSConnection.certificates(in: SSL_get0_verified_chain(self.ssl)) : []

        let serverName: String?
        switch self.role {
        case .client: serverName = self.sentServerName
        case .server: serverName = self.receivedServerName
        }
        var stapled: [UInt8]?
        if case .client = self.role, self.context.configuration.requestsCertificateStatus {
            var bytes: UnsafePointer<UInt8>?
            let length = tg_SSL_get_tlsext_status_ocsp_resp(self.ssl, &bytes)
            if length > 0, let bytes { stapled = Array(UnsafeBufferPointer(start: bytes, count: length)) }
        }
        return TLSPeerEvaluation(
            protocolVersion: version,
            applicationProtocol: alpn,
            cipherSuite: cipher,
            serverName: serverName,
            presentedChain: presented,
            verifiedChain: verified,
            trustResult: trust,
            clientCertificateRequested: self.clientCertificateRequested,
            stapledOCSPResponse: stapled
        )
    }

    static func certificates(in stack: OpaquePointer?) -> [Certificate] {
        guard let stack else { return [] }
        return (0..<tg_sk_X509_num(stack)).compactMap { index in
            tg_sk_X509_value(stack, index).flatMap { try? Certificate(retaining: $0) }
        }
    }
}
