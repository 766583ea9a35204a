import NIOCore

extension ChannelPipeline.SynchronousOperations {
    /// Adds a client-side ``TLSHandler`` at the front of the pipeline, so everything after it sees plaintext.
    ///
    /// Keep the returned handler to call ``TLSHandler/approvePeer()`` when the context defers the trust
    /// decision.
    ///
    /// - Parameters:
    ///   - context: the TLS context.
    ///   - serverHostname: the host connected to, for SNI and the certificate check.
    ///   - name: the handler's name in the pipeline; generated when nil.
    /// - Returns: the handler.
    /// - Throws: as ``TLSHandler/makeClientHandler(context:serverHostname:)``, or when the pipeline refuses.
    @discardableResult
    public func addTLSClientHandler(
        context: TLSContext,
        serverHostname: String?,
        name: String? = nil
    ) throws -> TLSHandler {
        let handler = try TLSHandler.makeClientHandler(context: context, serverHostname: serverHostname)
        try self.addHandler(handler, name: name, position: .first)
        return handler
    }

    /// Adds a server-side ``TLSHandler`` at the front of the pipeline.
    ///
    /// - Parameters:
    ///   - context: the TLS context; its configuration needs an identity or a server-name handler.
    ///   - name: the handler's name in the pipeline; generated when nil.
    /// - Returns: the handler.
    /// - Throws: as ``TLSHandler/makeServerHandler(context:)``, or when the pipeline refuses.
    @discardableResult
    public func addTLSServerHandler(context: TLSContext, name: String? = nil) throws -> TLSHandler {
        let handler = try TLSHandler.makeServerHandler(context: context)
        try self.addHandler(handler, name: name, position: .first)
        return handler
    }
}
