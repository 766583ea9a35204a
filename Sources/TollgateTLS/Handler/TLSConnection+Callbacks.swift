internal import COpenSSL

// OpenSSL's C callbacks. C function pointers cannot capture, so each finds its connection through the
// SSL's ex-data slot (`TLSConnection.from(ssl:)`) and hands over. They run inside SSL_do_handshake /
// SSL_read, on the connection's event loop, while the connection is alive.

/// `SSL_verify_cb`: called for every certificate OpenSSL checks, and again for every error it finds.
func tlsVerify(_ preverified: Int32, _ store: OpaquePointer?) -> Int32 {
    guard let store,
        let raw = X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()),
        let connection = TLSConnection.from(ssl: OpaquePointer(raw))
    else {
        return preverified
    }
    return connection.verify(preverified: preverified == 1, store: store) ? 1 : 0
}

/// The info callback: notes fatal alerts the peer sends, so errors can name them.
func tlsInfo(_ ssl: OpaquePointer?, _ kind: Int32, _ value: Int32) {
    guard kind & tg_SSL_CB_READ_ALERT() == tg_SSL_CB_READ_ALERT(), let ssl,
        let connection = TLSConnection.from(ssl: ssl)
    else { return }
    connection.peerSentAlert(value)
}

/// The SNI callback (servers): runs once per ClientHello, whether or not the client sent a name.
func tlsServerName(
    _ ssl: OpaquePointer?,
    _ alert: UnsafeMutablePointer<Int32>?,
    _ argument: UnsafeMutableRawPointer?
)
    -> Int32
{
    guard let ssl, let connection = TLSConnection.from(ssl: ssl) else { return tg_SSL_TLSEXT_ERR_NOACK() }
    return connection.selectIdentity(alert: alert)
}

/// The certificate status callback (servers; clients that sent `status_request`): staples the
/// served identity's current OCSP response — the one fetched for it (``TLSConfiguration/ocspStaples``),
/// else its own (``Identity/ocspResponse``) — else none.
func tlsCertificateStatus(_ ssl: OpaquePointer?, _ argument: UnsafeMutableRawPointer?) -> Int32 {
    guard let ssl, let connection = TLSConnection.from(ssl: ssl) else { return tg_SSL_TLSEXT_ERR_NOACK() }
    // A client (one with a client certificate has this callback too) that asked for the server's
    // response: acceptable here (a positive value); the session judges it after the handshake.
    if case .client = connection.role { return 1 }
    guard let identity = connection.chosenIdentity ?? connection.context.configuration.identity else { return tg_SSL_TLSEXT_ERR_NOACK() }
    let fetched = connection.context.configuration.ocspStaples?.response(for: identity.certificate).flatMap { $0.isCurrent() ? $0 : nil }
    guard let response = fetched ?? identity.ocspResponse, response.isCurrent(), let copy = tg_OPENSSL_malloc(response.der.count)
    else { return tg_SSL_TLSEXT_ERR_NOACK() }
    response.der.withUnsafeBytes { copy.copyMemory(from: $0.baseAddress!, byteCount: $0.count) }
    // OpenSSL takes the copy and frees it with the connection.
    guard tg_SSL_set_tlsext_status_ocsp_resp(ssl, copy.assumingMemoryBound(to: UInt8.self), response.der.count) == 1 else {
        tg_OPENSSL_free(copy)
        return tg_SSL_TLSEXT_ERR_NOACK()
    }
    return tg_SSL_TLSEXT_ERR_OK()
}

/// The ALPN selection callback (servers).
func tlsSelectALPN(
    _ ssl: OpaquePointer?,
    _ out: UnsafeMutablePointer<UnsafePointer<UInt8>?>?,
    _ outLength: UnsafeMutablePointer<UInt8>?,
    _ offered: UnsafePointer<UInt8>?,
    _ offeredLength: UInt32,
    _ argument: UnsafeMutableRawPointer?
) -> Int32 {
    guard let ssl, let connection = TLSConnection.from(ssl: ssl) else { return tg_SSL_TLSEXT_ERR_NOACK() }
    return connection.selectALPN(out, outLength, offered, offeredLength)
}

/// `client_cert_cb` (clients without an identity): the server sent a CertificateRequest. Noted, and
/// answered with no certificate (0): the handshake goes on, and the session asks its delegate for
/// an identity (the client-certificate challenge) before it uses the connection.
func tlsClientCertificateRequested(
    _ ssl: OpaquePointer?,
    _ certificate: UnsafeMutablePointer<OpaquePointer?>?,
    _ key: UnsafeMutablePointer<OpaquePointer?>?
) -> Int32 {
    if let ssl, let connection = TLSConnection.from(ssl: ssl) { connection.clientCertificateRequested = true }
    return 0
}

/// The session ticket key callback (servers issuing tickets, ``SessionTicketKeyRing``): sets up the
/// cipher and the MAC to seal a new ticket (`encrypt` 1: the sealing key, a fresh IV) or to open
/// one (`encrypt` 0: the key the ticket names). Returns 1 (sealed, or opened with the sealing key), 2
/// (opened with an older key: resumed, and a ticket under the sealing key is issued), 0 (no such
/// key, or one past its time: a full handshake) or -1 (an error).
func tlsTicketKey(
    _ ssl: OpaquePointer?,
    _ keyName: UnsafeMutablePointer<UInt8>?,
    _ iv: UnsafeMutablePointer<UInt8>?,
    _ cipher: OpaquePointer?,
    _ mac: OpaquePointer?,
    _ encrypt: Int32
) -> Int32 {
    guard let ssl, let keyName, let iv, let cipher, let mac, let connection = TLSConnection.from(ssl: ssl) else { return -1 }
    guard let ring = connection.context.ticketKeys else { return -1 }
    let key: SessionTicketKey
    let isSealing: Bool
    if encrypt == 1 {
        guard let sealing = ring.sealingKey(), RAND_bytes(iv, 16) == 1 else { return -1 }
        (key, isSealing) = (sealing, true)
        key.name.withUnsafeBufferPointer { keyName.update(from: $0.baseAddress!, count: 16) }
    } else {
        guard let found = ring.key(named: Array(UnsafeBufferPointer(start: keyName, count: 16))) else { return 0 }
        (key, isSealing) = found
    }
    let algorithm = key.isAES256 ? EVP_aes_256_cbc() : EVP_aes_128_cbc()
    let ready = key.aesKey.withUnsafeBufferPointer { aes in
        encrypt == 1
            ? EVP_EncryptInit_ex(cipher, algorithm, nil, aes.baseAddress, iv)
            : EVP_DecryptInit_ex(cipher, algorithm, nil, aes.baseAddress, iv)
    }
    guard ready == 1 else { return -1 }
    let macReady = key.hmacSecret.withUnsafeBufferPointer { secret in
        "sha256".withCString { digest in
            "key".withCString { keyParameter in
                "digest".withCString { digestParameter in
                    var parameters = [
                        OSSL_PARAM_construct_octet_string(keyParameter, UnsafeMutableRawPointer(mutating: secret.baseAddress), secret.count),
                        OSSL_PARAM_construct_utf8_string(digestParameter, UnsafeMutablePointer(mutating: digest), 0),
                        OSSL_PARAM_construct_end(),
                    ]
                    return EVP_MAC_CTX_set_params(mac, &parameters)
                }
            }
        }
    }
    guard macReady == 1 else { return -1 }
    return isSealing ? 1 : 2
}

extension TLSConnection {
    /// The ex-data slot of every `SSL` that points back to its connection.
    static let exDataIndex: Int32 = tg_SSL_get_ex_new_index(0, nil)

    /// The connection an `SSL` belongs to.
    static func from(ssl: OpaquePointer) -> TLSConnection? {
        guard let raw = tg_SSL_get_ex_data(ssl, TLSConnection.exDataIndex) else { return nil }
        return Unmanaged<TLSConnection>.fromOpaque(raw).takeUnretainedValue()
    }

    /// Records OpenSSL's verdict on one certificate and decides whether verification goes on.
    func verify(preverified: Bool, store: OpaquePointer) -> Bool {
        if preverified { return self.checkClientPins(store) }
        if self.verificationError == nil {
            let subject = X509_STORE_CTX_get_current_cert(store).map { Certificate.oneLine(X509_get_subject_name($0)) }
            self.verificationError = CertificateVerificationError(
                code: .init(rawValue: X509_STORE_CTX_get_error(store)),
                depth: Int(X509_STORE_CTX_get_error_depth(store)),
                subject: subject,
                host: self.expectedHost
            )
        }
        let configuration = self.context.configuration
        if configuration.deferTrustDecision || !configuration.certificateVerification.enforcesTrust {
            return true  // note it and let the handshake finish; the application decides
        }
        self.rejectedChain = true
        return false
    }

    /// A server's last call, for the leaf of a chain OpenSSL verified: the chain must hold one of
    /// ``TLSConfiguration/clientCertificatePins``, else the handshake fails here (OpenSSL sends
    /// `bad_certificate` for `X509_V_ERR_CERT_REJECTED`) rather than after it.
    private func checkClientPins(_ store: OpaquePointer) -> Bool {
        let pins = self.context.configuration.clientCertificatePins
        guard self.role == .server, !pins.isEmpty, X509_STORE_CTX_get_error_depth(store) == 0 else { return true }
        let chain = TLSConnection.certificates(in: X509_STORE_CTX_get0_chain(store))
        if ChainVerifier.pinMatch(chain: chain, pins: pins) { return true }
        X509_STORE_CTX_set_error(store, X509_V_ERR_CERT_REJECTED)
        let mismatch = PinMismatchError(host: nil, expectedPins: pins, presentedChain: chain)
        self.verificationError = CertificateVerificationError(
            code: .certificateRejected, depth: 0, subject: chain.first?.subject,
            reason: "no certificate of its chain has a client-auth pin: \(mismatch)"
        )
        self.rejectedChain = true
        return false
    }

    /// Records a fatal alert from the peer.
    func peerSentAlert(_ value: Int32) {
        // value = level << 8 | description; level 2 is fatal. close_notify (a warning) is not an error.
        guard value >> 8 == 2 else { return }
        let name = SSL_alert_desc_string_long(value).map { String(cString: $0) }
        // OpenSSL 3.0 has no names for some TLS 1.3 alerts (RFC 8446 §6).
        let tls13Names: [Int32: String] = [
            109: "missing extension", 116: "certificate required", 120: "no application protocol",
        ]
        switch name {
        case .some(let name) where name != "unknown": self.receivedAlert = name
        default: self.receivedAlert = tls13Names[value & 0xFF] ?? "alert \(value & 0xFF)"
        }
    }

    /// Picks the server identity for the SNI name in the ClientHello; returns an `SSL_TLSEXT_ERR_*` value.
    func selectIdentity(alert: UnsafeMutablePointer<Int32>?) -> Int32 {
        let name = SSL_get_servername(self.ssl, tg_TLSEXT_NAMETYPE_host_name()).map { String(cString: $0) }
        self.receivedServerName = name
        let configuration = self.context.configuration
        guard let handler = configuration.serverNameHandler else { return tg_SSL_TLSEXT_ERR_OK() }
        guard let identity = handler(name) else {
            if configuration.identity != nil { return tg_SSL_TLSEXT_ERR_OK() }
            self.serverNameFailure = "no certificate for the server name \(name.map { "\"\($0)\"" } ?? "(none sent)")"
            alert?.pointee = tg_SSL_AD_UNRECOGNIZED_NAME()
            return tg_SSL_TLSEXT_ERR_ALERT_FATAL()
        }
        guard let chain = tg_sk_X509_new_null() else {
            alert?.pointee = tg_SSL_AD_INTERNAL_ERROR()
            return tg_SSL_TLSEXT_ERR_ALERT_FATAL()
        }
        defer { tg_sk_X509_free(chain) }  // shallow: SSL_use_cert_and_key takes its own references
        let used = withExtendedLifetime(identity) { () -> Bool in
            for certificate in identity.certificateChain.dropFirst() where tg_sk_X509_push(chain, certificate.x509) <= 0
            {
                return false
            }
            return SSL_use_cert_and_key(self.ssl, identity.certificate.x509, identity.privateKey.pkey, chain, 1) == 1
        }
        if used { self.chosenIdentity = identity }
        guard used else {
            self.serverNameFailure =
                "cannot use the certificate chosen for \(name ?? "(no name)"): "
                + OpenSSLError.drainErrorQueue().joined(separator: "; ")
            alert?.pointee = tg_SSL_AD_INTERNAL_ERROR()
            return tg_SSL_TLSEXT_ERR_ALERT_FATAL()
        }
        return tg_SSL_TLSEXT_ERR_OK()
    }

    /// Chooses the ALPN protocol: the first of ours (server order) that the client offered.
    func selectALPN(
        _ out: UnsafeMutablePointer<UnsafePointer<UInt8>?>?,
        _ outLength: UnsafeMutablePointer<UInt8>?,
        _ offered: UnsafePointer<UInt8>?,
        _ offeredLength: UInt32
    ) -> Int32 {
        let context = self.context
        guard context.alpnWireCount > 0, let out, let outLength, let offered, let ours = context.alpnWire.baseAddress
        else {
            return tg_SSL_TLSEXT_ERR_NOACK()
        }
        let result = out.withMemoryRebound(to: UnsafeMutablePointer<UInt8>?.self, capacity: 1) { selected in
            SSL_select_next_proto(selected, outLength, ours, UInt32(context.alpnWireCount), offered, offeredLength)
        }
        return result == OPENSSL_NPN_NEGOTIATED ? tg_SSL_TLSEXT_ERR_OK() : tg_SSL_TLSEXT_ERR_NOACK()
    }
}
