import ArgumentParser
import Foundation
import TollgatePolicy
import TollgateSession

/// `tollgate cookies list|clear`: the persistent cookie jar of `cookies: jar` sessions
/// (`DATA-DIR/cookies`, LMDB). Only cookies with an expiry date are on disk; session cookies live
/// in the proxy's memory. Values are masked unless `--show-values`. A running proxy keeps its own
/// copy in memory: a `clear` reaches it when it restarts.
struct CookiesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cookies",
        abstract: "List or clear the stored cookies (values masked).",
        subcommands: [List.self, Clear.self]
    )

    struct Location: ParsableArguments {
        @OptionGroup var data: DataDirectoryOption
        @Option(help: "Only cookies whose domain is this domain or below it.")
        var domain: String?

        var cookiesDirectory: String {
            CookieCredentialStores.cookiesDirectory(in: data.directory)
        }

        func open() throws -> CookieStorage? {
            guard FileManager.default.fileExists(atPath: cookiesDirectory + "/data.mdb") else { return nil }
            do {
                return try CookieStorage.persistent(directory: cookiesDirectory)
            } catch {
                throw CommandFailure.user("cannot open the cookie store in \(cookiesDirectory): \(error)")
            }
        }

        func selected(_ cookies: [Cookie]) -> [Cookie] {
            guard let domain else { return cookies }
            let wanted = domain.lowercased().drop { $0 == "." }
            return cookies.filter { Cookie.domainMatches($0.domain, String(wanted)) }
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List the stored cookies, one a line: DOMAIN PATH NAME=**** expires DATE and flags."
        )
        @OptionGroup var location: Location
        @Flag(help: "Show the values instead of ****.") var showValues = false

        func run() throws {
            guard let storage = try location.open() else { return }
            defer { storage.close() }
            for cookie in location.selected(storage.cookies) {
                var line =
                    "\(cookie.isHostOnly ? "" : ".")\(cookie.domain)  \(cookie.path)  \(cookie.name)=\(showValues ? cookie.value : "****")"
                line += cookie.expiresDate.map { "  expires \(ISO8601DateFormatter().string(from: $0))" } ?? "  session"
                if cookie.isSecure { line += "  secure" }
                if cookie.isHTTPOnly { line += "  httponly" }
                if let sameSite = cookie.sameSite { line += "  samesite=\(sameSite.rawValue)" }
                print(line)
            }
        }
    }

    struct Clear: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Remove the stored cookies (all, or one domain's with --domain)."
        )
        @OptionGroup var location: Location

        func run() throws {
            guard let storage = try location.open() else {
                print("removed 0 cookies")
                return
            }
            defer { storage.close() }
            let count: Int
            if let domain = location.domain {
                count = storage.removeCookies(forDomain: domain)
            } else {
                count = storage.cookies.count
                storage.removeAll()
            }
            print("removed \(count) cookie\(count == 1 ? "" : "s")")
        }
    }
}
