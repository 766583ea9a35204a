internal import COpenSSL
import NIOCore

/// An OpenSSL `SSL_CTX` built from a ``TLSConfiguration``: the expensive, shareable half of TLS.
///
/// Building one loads the trust roots (the system bundle alone is about 140 certificates) and the identity,
/// so build it once per configuration, or get it from a ``TLSContextCache``, and hand it to every
/// ``TLSHandler`` that should behave alike. A context serves clients and servers; the handler picks the role.
///
/// Every context turns session resumption off in the client role (no client session cache, no tickets):
/// a resumed session has no verified chain, and pins are checked on that chain (DESIGN.md, "Pinning with
/// OpenSSL"). A server resumes only from the stateless tickets it issues when
/// ``TLSConfiguration/issuesSessionTickets`` says so and it asks for no client certificate; it keeps no
/// session cache. Its tickets are encrypted with ``TLSConfiguration/sessionTicketKeys`` when given,
/// else with a key OpenSSL makes with the context.
///
/// `@unchecked Sendable`: the `SSL_CTX` is fully configured in `init` and never changed afterwards, and
/// OpenSSL allows `SSL_new` and handshakes on many threads at once against one such context (it locks
/// the reference counts and the certificate store lookups itself).
public final class TLSContext: @unchecked Sendable {
    /// The owned `SSL_CTX*`; freed on deinit.
    let ctx: OpaquePointer

    /// The configuration this context was built from.
    public let configuration: TLSConfiguration

    /// A verifier over the same trust store, for checks outside a handshake (such as replaying a decision).
    public let chainVerifier: ChainVerifier

    /// The ALPN protocols in wire form (each prefixed by its length) in the first ``alpnWireCount`` bytes,
    /// allocated for the context's life: the server's ALPN callback hands OpenSSL pointers into it.
    let alpnWire: UnsafeMutableBufferPointer<UInt8>

    /// How many bytes of ``alpnWire`` are used; 0 when no protocols are configured.
    let alpnWireCount: Int

    /// The keys session tickets are sealed and opened with; nil when the context issues none.
    let ticketKeys: SessionTicketKeyRing?

    /// Builds the OpenSSL context for `configuration`.
    ///
    /// - Throws: ``TLSError/invalidConfiguration`` for settings that cannot work, ``OpenSSLError`` when
    ///   OpenSSL refuses a trust root, the identity or an option.
    public init(configuration: TLSConfiguration) throws {
        let wire = try TLSContext.encodeALPN(configuration.applicationProtocols)
        if let maximum = configuration.maximumVersion, maximum < configuration.minimumVersion {
            throw TLSError.invalidConfiguration(
                "the maximum version \(maximum) is below the minimum \(configuration.minimumVersion)"
            )
        }
        let explicitRoots = try configuration.trustRoots.explicitCertificates()
        let verifier = try ChainVerifier(
            trustedCertificates: explicitRoots,
            systemRoots: configuration.trustRoots.includesSystemRoots,
            revocationLists: try configuration.trustRoots.allRevocationLists()
        )
        let alpn = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(wire.count, 1))
        _ = alpn.initialize(from: wire)
        let ctx: OpaquePointer
        do {
            ctx = try TLSContext.makeContext(configuration, verifier: verifier, clientCAs: explicitRoots, alpn: wire)
        } catch {
            alpn.deallocate()
            throw error
        }
        self.ctx = ctx
        self.configuration = configuration
        self.chainVerifier = verifier
        self.alpnWire = alpn
        self.alpnWireCount = wire.count
        self.ticketKeys =
            TLSContext.issuesTickets(configuration)
            ? SessionTicketKeyRing(given: configuration.sessionTicketKeys)
                ?? SessionTicketKeyRing(rotatingEvery: configuration.sessionTicketKeyRotation)
            : nil
    }

    /// Whether a context of `configuration` issues session tickets: a server that says so and asks
    /// for no client certificate (see ``TLSConfiguration/issuesSessionTickets``).
    static func issuesTickets(_ configuration: TLSConfiguration) -> Bool {
        configuration.issuesSessionTickets && configuration.clientCertificateRequirement == .notRequested
    }

    deinit {
        SSL_CTX_free(self.ctx)
        self.alpnWire.deallocate()
    }

    private static func makeContext(
        _ configuration: TLSConfiguration,
        verifier: ChainVerifier,
        clientCAs: [Certificate],
        alpn: [UInt8]
    ) throws -> OpaquePointer {
        tg_ERR_clear_error()
        guard let ctx = SSL_CTX_new(TLS_method()) else { throw OpenSSLError(.io, "allocating an SSL context") }
        do {
            try configure(ctx, configuration, verifier: verifier, clientCAs: clientCAs, alpn: alpn)
            return ctx
        } catch {
            SSL_CTX_free(ctx)
            throw error
        }
    }

    private static func configure(
        _ ctx: OpaquePointer,
        _ configuration: TLSConfiguration,
        verifier: ChainVerifier,
        clientCAs: [Certificate],
        alpn: [UInt8]
    ) throws {
        // Tickets only where a server issues them (never with client certificates: see
        // `issuesSessionTickets`); a client never offers a session, ticket or not.
        let tickets = issuesTickets(configuration)
        _ = tg_SSL_CTX_set_options(
            ctx,
            tg_SSL_OP_NO_COMPRESSION() | tg_SSL_OP_NO_RENEGOTIATION() | (tickets ? 0 : tg_SSL_OP_NO_TICKET())
        )
        guard tg_SSL_CTX_set_min_proto_version(ctx, configuration.minimumVersion.rawValue) == 1,
            tg_SSL_CTX_set_max_proto_version(ctx, configuration.maximumVersion?.rawValue ?? 0) == 1
        else {
            throw OpenSSLError(.invalidArgument, "setting the TLS version range")
        }
        // Partial writes let the handler encrypt a large buffer one record at a time; a moving write buffer
        // lets it retry from a ByteBuffer whose storage may have moved. Released buffers keep idle
        // connections small. No auto chain: send exactly the identity's chain, never certificates OpenSSL
        // would pull from the trust store.
        _ = tg_SSL_CTX_set_mode(
            ctx,
            tg_SSL_MODE_ENABLE_PARTIAL_WRITE() | tg_SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER()
                | tg_SSL_MODE_RELEASE_BUFFERS() | tg_SSL_MODE_NO_AUTO_CHAIN()
        )
        // No resumption in either role but from a server's stateless tickets: see the type's
        // documentation. (No session cache: a ticket holds the session itself.)
        _ = tg_SSL_CTX_set_session_cache_mode(ctx, tg_SSL_SESS_CACHE_OFF())
        _ = SSL_CTX_set_num_tickets(ctx, tickets ? 2 : 0)

        // The context takes its own reference to the verifier's store.
        guard X509_STORE_up_ref(verifier.store) == 1 else {
            throw OpenSSLError(.trustStore, "sharing the trust store")
        }
        SSL_CTX_set_cert_store(ctx, verifier.store)
        // The handshake's verification takes its flags from the context's parameters as well as the
        // store's: set on both, so the CRL check cannot be lost between them.
        if verifier.checksRevocation,
            X509_VERIFY_PARAM_set_flags(SSL_CTX_get0_param(ctx), ChainVerifier.revocationFlags) != 1
        {
            throw OpenSSLError(.trustStore, "turning on the CRL check")
        }

        if configuration.clientCertificateRequirement.asksForCertificate {
            for certificate in clientCAs where SSL_CTX_add_client_CA(ctx, certificate.x509) != 1 {
                throw OpenSSLError(.trustStore, "adding \(certificate.subject) to the acceptable client CAs")
            }
        }

        if let identity = configuration.identity {
            try withExtendedLifetime(identity) {
                guard SSL_CTX_use_certificate(ctx, identity.certificate.x509) == 1 else {
                    throw OpenSSLError(.invalidArgument, "using the certificate \(identity.certificate.subject)")
                }
                guard SSL_CTX_use_PrivateKey(ctx, identity.privateKey.pkey) == 1 else {
                    throw OpenSSLError(.invalidArgument, "using the private key of \(identity.certificate.subject)")
                }
                for certificate in identity.certificateChain.dropFirst()
                where tg_SSL_CTX_add1_chain_cert(ctx, certificate.x509) != 1 {
                    throw OpenSSLError(.invalidArgument, "adding \(certificate.subject) to the certificate chain")
                }
                guard SSL_CTX_check_private_key(ctx) == 1 else {
                    throw OpenSSLError(.invalidArgument, "the private key does not match the certificate")
                }
            }
        }

        if !alpn.isEmpty {
            // Returns 0 on success, unlike most of OpenSSL.
            guard tg_SSL_CTX_set_alpn_protos(ctx, alpn, UInt32(alpn.count)) == 0 else {
                throw OpenSSLError(.invalidArgument, "setting the ALPN protocols")
            }
            tg_SSL_CTX_set_alpn_select_cb(ctx, tlsSelectALPN, nil)
        }
        if configuration.identity == nil { SSL_CTX_set_client_cert_cb(ctx, tlsClientCertificateRequested) }
        if tickets {
            // Every ticket through ``SessionTicketKeyRing``: the keys given, or the context's own,
            // rotated (OpenSSL's own key would be kept for the context's life).
            guard SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx, tlsTicketKey) == 1 else {
                throw OpenSSLError(.invalidArgument, "setting the session ticket keys")
            }
            if configuration.sessionTicketKeys.isEmpty {
                // A ticket lives two periods: as long as its key opens tickets after it stopped sealing.
                let lifetime = configuration.sessionTicketKeyRotation * 2
                _ = SSL_CTX_set_timeout(ctx, Int(max(1, lifetime.components.seconds)))
            }
        }
        // A server staples its identity's OCSP response to handshakes that ask for one.
        if configuration.identity != nil || configuration.serverNameHandler != nil {
            _ = tg_SSL_CTX_set_tlsext_status_cb(ctx, tlsCertificateStatus)
        }
        _ = tg_SSL_CTX_set_tlsext_servername_callback(ctx, tlsServerName)
        SSL_CTX_set_info_callback(ctx, tlsInfo)
    }

    /// ALPN's wire form: each protocol prefixed by its one-byte length.
    static func encodeALPN(_ protocols: [String]) throws -> [UInt8] {
        var wire: [UInt8] = []
        for name in protocols {
            let bytes = Array(name.utf8)
            guard (1...255).contains(bytes.count) else {
                throw TLSError.invalidConfiguration("the ALPN protocol \"\(name)\" must be 1 to 255 bytes")
            }
            wire.append(UInt8(bytes.count))
            wire.append(contentsOf: bytes)
        }
        return wire
    }
}
