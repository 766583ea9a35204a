import NIOCore
import TollgatePolicy

extension ConnectionMemo {
    /// The memo of a new client connection from `remote`, and whether `access.clients` lets that
    /// client in: what the HTTP/1.1 handler and the HTTP/2 front each decide once per connection.
    /// `pipeline` is the connection's, where ``ConnectionOverLimit`` marks a connection past
    /// `access.connection-limit`.
    static func forClient(
        at remote: SocketAddress?,
        in pipeline: ChannelPipeline.SynchronousOperations,
        access: PolicyConfiguration.Access,
        clientTLS: ClientTLS?
    ) -> (memo: ConnectionMemo, allowed: Bool) {
        let addressBytes = remote?.networkBytes
        let clientAddress = remote?.addressText ?? "-"
        let memo = ConnectionMemo(
            clientAddress: clientAddress,
            clientIsLoopback: addressBytes.map(CIDR.isLoopback) ?? false,
            clientTrustedForwarder: addressBytes.map { access.trustsForwarding(address: $0) } ?? false,
            clientMayPurge: access.purgeClients.isEmpty ? nil : addressBytes.flatMap(access.allowsPurge) ?? false,
            overConnectionLimit: ConnectionOverLimit.limit(in: pipeline, access: access),
            clientLimitKey: ClientLimitKey.of(text: clientAddress, bytes: addressBytes, ipv6Prefix: access.ipv6ClientPrefix)
        )
        memo.clientTLS = clientTLS
        return (memo, addressBytes.map { access.allowsClient(address: $0) } ?? false)
    }

    /// The context an exchange of this connection starts with, under `rules` (the rules in force,
    /// ``exchangeRules(_:)``).
    func exchangeContext(_ environment: ListenerEnvironment, eventLoop: any EventLoop, rules: ExchangeRules) -> ExchangeContext {
        ExchangeContext(environment: environment, eventLoop: eventLoop, rules: rules, memo: self)
    }
}
