import Foundation
import Synchronization
import TollgateHTTP

/// A session's answer to its upstream proxy's `407`: the configured
/// ``SessionConfiguration/upstreamProxyCredential`` sent as `Proxy-Authorization: Basic`.
///
/// Nothing is sent until the proxy asks (as for an origin's 401): the first `407` offering Basic
/// marks the proxy as one that authenticates, the request or CONNECT that got it is sent once more
/// with the credential, and from then on every request and CONNECT carries it from the start
/// (curl's `--proxy-anyauth` and URLSession behave so). A `407` to a request that carried it is
/// the proxy's refusal and is not answered again, so a wrong password cannot loop.
///
/// The value never enters a task's request (``SessionTask/currentRequest``, logs, the HAR
/// journal): it is added to the bytes of a head on its way to the proxy.
final class UpstreamProxyAuthentication: Sendable {
    /// The `Proxy-Authorization` value (the secret, base64: never logged).
    private let value: String
    private let asked = Atomic<Bool>(false)

    init(credential: Credential) {
        value = BasicAuthorization.value(user: credential.user ?? "", password: credential.password ?? "")
    }

    /// The value to send with a request or CONNECT now: only once the proxy has asked.
    var preemptiveValue: String? { asked.load(ordering: .relaxed) ? value : nil }

    /// The value to send again after a `407` to a request that went without one; nil when the
    /// proxy offers no Basic challenge (nothing the session can answer). Marks the proxy as one
    /// that asks.
    func answer(challenges: [String]) -> String? {
        guard Self.offersBasic(challenges) else { return nil }
        asked.store(true, ordering: .relaxed)
        return value
    }

    /// Whether one of the `Proxy-Authenticate` values offers the Basic scheme.
    static func offersBasic(_ challenges: [String]) -> Bool {
        challenges.contains { field in
            // A field may carry several challenges ("Digest realm=…, Basic realm=…"): look at each
            // word that starts a challenge, which is followed by a space or ends the field.
            field.split(whereSeparator: { $0 == "," || $0 == " " }).contains { $0.lowercased() == "basic" }
        }
    }
}
