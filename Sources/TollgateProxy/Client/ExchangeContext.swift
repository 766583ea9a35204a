import NIOCore

/// What an exchange is given when it starts, besides its request and its ``ClientResponder``:
/// the listener's environment, the loop it runs on, the rules in force, and the connection's
/// ``ConnectionMemo`` (routes, canonical hosts, forwarding lines, the client's address).
///
/// A value made per request from what the connection already holds: no allocation.
struct ExchangeContext {
    /// The listener's environment (its mode is `.intercepted` inside an intercepted CONNECT).
    let environment: ListenerEnvironment
    /// The client connection's event loop, where the exchange runs.
    let eventLoop: any EventLoop
    /// The rules in force when the exchange started.
    let rules: ExchangeRules
    /// The connection's memo, shared by its exchanges.
    let memo: ConnectionMemo
}
