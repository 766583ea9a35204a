import ArgumentParser
import Foundation
import TollgatePolicy
import TollgateTLS

/// `tollgate ca init [--dir DIR]` / `tollgate ca export [--dir DIR]`: the local CA that signs the
/// certificates of intercepted hosts. `ca.pem` (certificate) and `ca.key` (key, mode 0600).
struct CACommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ca",
        abstract: "Create or print the local interception CA.",
        subcommands: [Init.self, Export.self]
    )

    /// How long a new CA is valid (two years; the proxy warns at start-up when it nears its end).
    static let validityDays = 730

    struct Location: ParsableArguments {
        @Option(name: .long, help: "The CA directory (default: interception.ca-dir, else ~/.local/share/tollgate/ca).")
        var dir: String?
        @Option(name: .long, help: "The configuration file whose interception.ca-dir to use.")
        var config: String?

        func directory() throws -> String {
            if let dir { return dir }
            let configuration = try ConfigurationSource.load(config)
            return configuration.interception.caDirectory
                ?? PolicyConfiguration.Interception.defaultCADirectory(environment: ProcessInfo.processInfo.environment)
        }
    }

    struct Init: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Create the CA (refuses to replace one unless --force).")
        @OptionGroup var location: Location
        @Flag(help: "Replace an existing CA.") var force = false
        @Option(help: "The CA's common name.") var name = "Tollgate Local CA"

        func run() throws {
            let directory = try location.directory()
            let certificatePath = directory + "/ca.pem"
            let keyPath = directory + "/ca.key"
            if FileManager.default.fileExists(atPath: certificatePath), !force {
                throw CommandFailure.user("a CA already exists in \(directory) (use --force to replace it)")
            }
            do {
                try FileManager.default.createDirectory(
                    atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700]
                )
                let authority = try CertificateAuthority.create(commonName: name, validityDays: CACommand.validityDays)
                try authority.privateKey.write(toPEMFile: keyPath, overwrite: force)
                try authority.certificate.pemString.write(toFile: certificatePath, atomically: true, encoding: .utf8)
                print("created \(certificatePath) (valid until \(ISO8601DateFormatter().string(from: authority.certificate.notAfter)))")
                print("key: \(keyPath) (mode 0600)")
            } catch let failure as CommandFailure {
                throw failure
            } catch {
                throw CommandFailure.user("cannot create the CA in \(directory): \(error)")
            }
        }
    }

    struct Export: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the CA certificate (PEM) for clients to trust.")
        @OptionGroup var location: Location

        func run() throws {
            let directory = try location.directory()
            let path = directory + "/ca.pem"
            guard let pem = try? String(contentsOfFile: path, encoding: .utf8), let certificate = try? Certificate(pem: pem) else {
                throw CommandFailure.user("no CA in \(directory) (run tollgate ca init)")
            }
            print(certificate.pemString, terminator: certificate.pemString.hasSuffix("\n") ? "" : "\n")
        }
    }
}
