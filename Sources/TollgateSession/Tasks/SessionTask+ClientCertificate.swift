import TollgateTLS

/// The client-certificate challenge (`NSURLAuthenticationMethodClientCertificate`).
extension SessionTask {
    /// On a new TLS connection whose server asked for a client certificate the session had none
    /// for: raises the client-certificate challenge (session level first, as the seeds route it).
    /// An identity given with `useCredential` is kept for the origin and the request goes again on
    /// a new connection that presents it; cancel fails the task with `clientCertificateRequired`
    /// (or the reason given); default handling and no answer go on without one (the server
    /// decides: many only ask, some then refuse).
    func decideClientCertificate(
        on connection: OriginConnection,
        request: Request,
        body: BodySource,
        then proceed: @escaping () -> Void
    ) {
        guard connection.establishment.tlsEvaluation?.clientCertificateRequested == true else {
            proceed()
            return
        }
        let key = connection.key
        let space = ProtectionSpace(host: key.host, port: key.port, protocol: "https", authenticationMethod: .clientCertificate)
        let exchange = engine.machine.exchange
        raise(AuthenticationChallenge(protectionSpace: space)) { [self] disposition in
            guard engine.machine.accepts(exchange: exchange) else {
                session.pool.release(connection, reusable: false)
                return
            }
            switch disposition?.base {
            case .useCredential(let credential?) where credential.clientIdentity != nil:
                // The connection was made without it: a new one presents it.
                session.pool.release(connection, reusable: false)
                engine.machine.leasedConnectionDropped()
                do throws(SessionError) {
                    try session.clientIdentities.choose(credential, host: key.host, port: key.port)
                } catch {
                    fail(error)
                    return
                }
                sendRequest(request, body: body)
            case .cancelAuthenticationChallenge(let reason):
                session.pool.release(connection, reusable: false)
                engine.machine.leasedConnectionDropped()
                fail(reason ?? SessionError(.clientCertificateRequired, request.url, "\(key.host) asked for a client certificate; the challenge was cancelled"))
            default:
                proceed()
            }
        }
    }
}
