import TollgateTLS

extension PolicyConfiguration.Listener.TLS {
    /// Reads a listener's `tls`. With a loader that checks files, every certificate and key is
    /// read now, so `check-config` and a reload catch what the listener would refuse: a missing
    /// file, a key readable by others, a key that does not belong to its certificate.
    ///
    /// ## Configuration keys:
    /// | key | type | default |
    /// |---|---|---|
    /// | `certificate` | PEM file path: the leaf, then intermediates | one of `certificate` and `certificates` is required |
    /// | `key` | PEM key file path, mode 0600 or stricter | required with `certificate` |
    /// | `ocsp-response` | DER OCSP response file about `certificate`, stapled while current | none |
    /// | `ocsp-stapling` | boolean: fetch and staple the responses of certificates without `ocsp-response` | `false` |
    /// | `certificates` | list of `{ certificate, key, ocsp-response }`, chosen by SNI; the first is the default | |
    /// | `min-version` | `"1.2"` \| `"1.3"` | `"1.2"` |
    /// | `client-auth` | mapping (``ClientAuth``) | none: no client certificates asked for |
    /// | `session-tickets` | boolean | `true`; `false` with `client-auth` (`true` with it is refused) |
    /// | `session-ticket-keys` | a key file path (80 or 48 random bytes, mode 0600), or a list of them: the first seals new tickets, each opens them | none: a key made at each start and reload |
    init?(node: ConfigNode, mode: PolicyConfiguration.Listener.Mode) {
        guard
            let entry = node.mapping(keys: [
                "certificate", "key", "ocsp-response", "ocsp-stapling", "certificates", "min-version", "client-auth", "session-tickets",
                "session-ticket-keys",
            ])
        else { return nil }
        let minimumVersion = entry["min-version"].map { $0.choice(MinimumVersion.self) } ?? .tls1_2
        var clientAuth: ClientAuth?
        if let clientAuthNode = entry["client-auth"] {
            guard let read = ClientAuth(node: clientAuthNode, mode: mode) else { return nil }
            clientAuth = read
        }
        var certificates: [CertificateFiles]?
        switch (entry["certificate"], entry["certificates"]) {
        case (_?, let listNode?):
            listNode.report("give either certificate and key, or certificates, not both")
        case (nil, _?) where entry["ocsp-response"] != nil:
            entry["ocsp-response"]!.report("with certificates, give each certificate's ocsp-response in its entry")
        case (_?, nil):
            certificates = CertificateFiles(entry: entry).map { [$0] }
        case (nil, let listNode?):
            if let items = listNode.list("a list of { certificate, key }") {
                let read = items.map { item in item.mapping(keys: ["certificate", "key", "ocsp-response"]).flatMap(CertificateFiles.init(entry:)) }
                if items.isEmpty { listNode.report("no certificates; list at least one { certificate, key }") }
                if !items.isEmpty, read.allSatisfy({ $0 != nil }) { certificates = read.compactMap { $0 } }
            }
        case (nil, nil):
            node.report("missing key \"certificate\" (with \"key\") or \"certificates\"")
        }
        var sessionTickets = clientAuth == nil
        if let ticketsNode = entry["session-tickets"], let value = ticketsNode.bool() {
            if value, clientAuth != nil {
                ticketsNode.report(
                    "session tickets are off with client-auth: a resumed session would skip the client certificate's check (revocation lists, pins)"
                )
            }
            sessionTickets = value && clientAuth == nil
        }
        var ticketKeyFiles: [String] = []
        if let keysNode = entry["session-ticket-keys"] {
            if !sessionTickets {
                keysNode.report(
                    clientAuth != nil
                        ? "session tickets are off with client-auth: no keys to give"
                        : "session tickets are off (session-tickets: false): no keys to give"
                )
            } else {
                guard let files = Self.ticketKeyFiles(keysNode) else { return nil }
                ticketKeyFiles = files
            }
        }
        let ocspStapling = entry["ocsp-stapling"].map { $0.bool() ?? false } ?? false
        guard let certificates, let minimumVersion else { return nil }
        // A problem with fetching is the key's; a must-staple certificate with nothing to staple, the listener's.
        Self.checkStaples(certificates, fetched: ocspStapling, node: ocspStapling ? entry["ocsp-stapling"] ?? node : node)
        self.init(certificates: certificates, minimumVersion: minimumVersion, clientAuth: clientAuth)
        self.sessionTickets = sessionTickets
        self.sessionTicketKeyFiles = ticketKeyFiles
        self.ocspStapling = ocspStapling
    }

    /// With a loader that checks files, each certificate without an `ocsp-response` file: with
    /// `fetched` (`ocsp-stapling`), it names a responder and its file holds the issuer an OCSP
    /// request names; without, it is not must-staple (RFC 7633: the clients that honour it refuse
    /// it with no stapled response). Each certificate file read once.
    private static func checkStaples(_ certificates: [CertificateFiles], fetched: Bool, node: ConfigNode) {
        guard node.context.loader.checkFiles else { return }
        for files in certificates where files.ocspResponse == nil {
            guard let chain = try? Certificate.bundle(pemFile: files.certificate), let leaf = chain.first else { continue }
            if !fetched {
                guard leaf.mustStaple else { continue }
                node.report(
                    "the certificate \(files.certificate) is OCSP must-staple: clients refuse it without a stapled response; "
                        + "give it an ocsp-response file or set ocsp-stapling: true"
                )
            } else if OCSPResponse.responderURLs(of: leaf).isEmpty {
                node.report("the certificate \(files.certificate) names no OCSP responder (authorityInfoAccess): give it an ocsp-response file")
            } else if chain.count < 2 {
                node.report("the certificate file \(files.certificate) holds no issuer after the leaf: add the intermediate (an OCSP request names it)")
            }
        }
    }

    /// `session-ticket-keys`: each file readable by its owner alone and, with a loader that checks
    /// files, holding a key (80 or 48 bytes).
    private static func ticketKeyFiles(_ node: ConfigNode) -> [String]? {
        guard let items = node.scalarOrList("a key file path or a list of them") else { return nil }
        if items.isEmpty { node.report("list at least one key file (openssl rand 80 > FILE; chmod 600 FILE)") }
        let files = items.map { item -> String? in
            guard let path = item.readableFile() else { return nil }
            guard item.context.loader.checkFiles, PathResolution.problemReadingFile(path) == nil else { return path }
            // A ticket key opens every session sealed with it: a secret, kept as a server key is.
            if let problem = PathResolution.problemWithSecretFileMode(path) {
                item.report(problem)
                return nil
            }
            do {
                _ = try SessionTicketKey(contentsOf: path)
            } catch {
                item.report("\(error)")
                return nil
            }
            return path
        }
        guard !items.isEmpty, files.allSatisfy({ $0 != nil }) else { return nil }
        return files.compactMap { $0 }
    }
}

extension PolicyConfiguration.Listener.TLS.ClientAuth {
    /// Reads a TLS listener's `client-auth`; with a loader that checks files, every roots bundle
    /// and revocation list is read now.
    ///
    /// ## Configuration keys:
    /// | key | type | default |
    /// |---|---|---|
    /// | `roots` | a PEM bundle path, or a list of them | required |
    /// | `crls` | a CRL file path (PEM or DER), or a list of them | none |
    /// | `pins` | `sha256/BASE64`, or a list of them | none |
    /// | `verify` | `required` \| `optional` | `required` |
    /// | `forward` | `client-cert` \| `off` | `client-cert` on a reverse listener, `off` on a forward one |
    init?(node: ConfigNode, mode: PolicyConfiguration.Listener.Mode) {
        guard let entry = node.mapping(keys: ["roots", "crls", "pins", "verify", "forward"]) else { return nil }
        var roots: [String]?
        if let rootsNode = entry.required("roots"), let items = rootsNode.scalarOrList("a PEM bundle path or a list of them") {
            if items.isEmpty { rootsNode.report("list at least one PEM bundle of the CAs that issue client certificates") }
            roots = items.compactMap { item in
                guard let text = item.nonEmptyString("a PEM bundle path") else { return nil }
                if text == "system" {
                    item.report("the system roots are public CAs, anyone can get a certificate from them: name the bundle of your own client CA")
                    return nil
                }
                guard let path = item.readableFile() else { return nil }
                if item.context.loader.checkFiles, PathResolution.problemReadingFile(path) == nil {
                    do {
                        _ = try Certificate.bundle(pemFile: path)
                    } catch {
                        item.report("cannot read the client CA bundle \(path): \(error)")
                    }
                }
                return path
            }
        }
        let crls = entry["crls"].map { HostRule.Trust.revocationListFiles($0) ?? [] } ?? []
        let pins = entry["pins"].map(HostRule.Trust.readPins) ?? []
        let verify = entry["verify"].map { $0.choice(Verify.self) } ?? .required
        let forward = entry["forward"].map { $0.choice(Forward.self) } ?? (mode == .reverse ? .clientCert : .off)
        guard let roots, !roots.isEmpty, let verify, let forward else { return nil }
        self.init(roots: roots, crls: crls, pins: pins, verify: verify, forward: forward)
    }
}

extension PolicyConfiguration.Listener.TLS.CertificateFiles {
    /// Reads `certificate`, `key` and `ocsp-response` of a mapping and, when the loader checks
    /// files, loads them: a response that is not about the certificate, or no longer current, is
    /// a problem at its line.
    init?(entry: ConfigMapping) {
        let certificateNode = entry.required("certificate")
        let keyNode = entry.required("key")
        guard let certificateNode, let keyNode else { return nil }
        let certificate = certificateNode.readableFile()
        let key = keyNode.readableFile()
        let ocspNode = entry["ocsp-response"]
        let ocspResponse = ocspNode?.readableFile()
        guard let certificate, let key, ocspNode == nil || ocspResponse != nil else { return nil }
        self.init(certificate: certificate, key: key, ocspResponse: ocspResponse)
        guard keyNode.context.loader.checkFiles,
            PathResolution.problemReadingFile(certificate) == nil, PathResolution.problemReadingFile(key) == nil,
            ocspResponse.map({ PathResolution.problemReadingFile($0) == nil }) ?? true
        else { return }
        // A server key is a secret, kept as password files are: readable by its owner alone.
        if let problem = PathResolution.problemWithSecretFileMode(key) {
            keyNode.report(problem)
            return
        }
        switch load() {
        case .failure(let error):
            switch error.file {
            case .certificate: certificateNode.report(error.message)
            case .key: keyNode.report(error.message)
            case .ocspResponse: (ocspNode ?? keyNode).report(error.message)
            }
        case .success(let identity):
            // Stapled only while current: one already out of date would never be.
            if let ocspNode, let response = identity.ocspResponse, !response.isCurrent() {
                ocspNode.report(
                    "the OCSP response's nextUpdate (\(response.nextUpdate.map { "\($0)" } ?? "-")) has passed: it would not be stapled; fetch a new one"
                )
            }
        }
    }
}
