import Foundation
import TollgateHTTP
import TollgatePolicy

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Proxy authentication with the Basic scheme (RFC 9110 §11.7, RFC 7617) against
/// `access.users`.
///
/// Each user's password is the first line of their `password-file`, read once when the
/// authenticator is made. A password file must be readable by its owner alone (mode 0600 or
/// stricter): a file others can read is refused, and the proxy does not start with it.
/// Passwords are compared in constant time. `Proxy-Authorization` is a hop-by-hop field and is
/// never forwarded.
struct ProxyAuthenticator: Sendable {
    /// Why the users could not be loaded.
    struct Failure: Error, Sendable, CustomStringConvertible {
        let description: String
    }

    /// The realm sent in `Proxy-Authenticate`.
    static let realm = "tollgate"

    private let credentials: [(user: String, secret: [UInt8])]

    /// Reads every user's password file.
    init(users: [PolicyConfiguration.Access.User]) throws(Failure) {
        var credentials: [(String, [UInt8])] = []
        for user in users {
            var info = stat()
            guard stat(user.passwordFile, &info) == 0 else {
                throw Failure(
                    description:
                        "password file \(user.passwordFile) of user \(user.name): \(String(cString: strerror(errno)))"
                )
            }
            let mode = info.st_mode & 0o777
            guard mode & 0o077 == 0 else {
                throw Failure(
                    description: "password file \(user.passwordFile) of user \(user.name) is readable by others (mode "
                        + String(mode, radix: 8) + "); it must be 0600: chmod 600 \(user.passwordFile)"
                )
            }
            guard let data = FileManager.default.contents(atPath: user.passwordFile) else {
                throw Failure(description: "password file \(user.passwordFile) of user \(user.name) cannot be read")
            }
            var password = Array(data.prefix { $0 != 0x0A })
            if password.last == 0x0D { password.removeLast() }
            guard !password.isEmpty else {
                throw Failure(description: "password file \(user.passwordFile) of user \(user.name) is empty")
            }
            credentials.append((user.name, Array("\(user.name):".utf8) + password))
        }
        self.credentials = credentials
    }

    /// Whether there is any user (without users, no authentication is asked for).
    var isEnabled: Bool { !credentials.isEmpty }

    /// The user a `Proxy-Authorization` value authenticates, or nil.
    func user(for authorization: String?) -> String? {
        guard let authorization else { return nil }
        let parts = authorization.split(separator: " ", maxSplits: 1, omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "basic",
            let decoded = Data(base64Encoded: String(parts[1]).trimmingCharacters(in: .whitespaces))
        else { return nil }
        let presented = Array(decoded)
        var match: String?
        for (user, secret) in credentials where Self.constantTimeEqual(presented, secret) {
            match = user
        }
        return match
    }

    /// The answer asking for credentials.
    static func challenge(_ message: String) -> OwnResponse {
        var answer = OwnResponse(.proxyAuthenticationRequired, message)
        answer.extraFields.add(name: "Proxy-Authenticate", value: "Basic realm=\"\(realm)\", charset=\"UTF-8\"")
        return answer
    }

    private static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var difference = UInt8(truncatingIfNeeded: a.count ^ b.count)
        for index in 0..<max(a.count, b.count) {
            let x = index < a.count ? a[index] : 0
            let y = index < b.count ? b[index] : 0
            difference |= x ^ y
        }
        return difference == 0
    }
}
