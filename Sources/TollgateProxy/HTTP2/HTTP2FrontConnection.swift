import NIOCore
import TollgatePolicy

/// What the streams of one HTTP/2 client connection share: the listener's environment, the
/// connection's ``ConnectionMemo`` (the client's address, routes, hosts), and whether the client
/// may use the proxy at all (`access.clients`, decided once per connection as for HTTP/1.1).
///
/// Made by ``NIOCore/ChannelPipeline/SynchronousOperations/configureHTTP2Front(environment:)``;
/// used on the connection's event loop only (its streams run there too).
final class HTTP2FrontConnection {
    let environment: ListenerEnvironment
    let memo: ConnectionMemo
    let clientAllowed: Bool

    init(environment: ListenerEnvironment, remoteAddress: SocketAddress?, clientTLS: String? = nil) {
        self.environment = environment
        let access = environment.policy.access
        let addressBytes = remoteAddress?.networkBytes
        clientAllowed = addressBytes.map { access.allowsClient(address: $0) } ?? false
        memo = ConnectionMemo(
            clientAddress: remoteAddress?.ipAddress ?? "-",
            clientIsLoopback: addressBytes.map(CIDR.isLoopback) ?? false,
            clientTrustedForwarder: addressBytes.map { access.trustsForwarding(address: $0) } ?? false
        )
        memo.clientTLS = clientTLS
    }
}
