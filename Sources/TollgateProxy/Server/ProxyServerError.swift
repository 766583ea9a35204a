/// Why a ``ProxyServer`` could not start.
public enum ProxyServerError: Error, Sendable, CustomStringConvertible {
    /// Binding the listener failed (address in use, not available, permission denied, bad host).
    case cannotListen(ListenAddress, reason: String)
    /// The configuration cannot be used as it is (a password file readable by others, …).
    case badConfiguration(String)

    public var description: String {
        switch self {
        case .cannotListen(let address, let reason): "cannot listen on \(address): \(reason)"
        case .badConfiguration(let message): message
        }
    }
}
