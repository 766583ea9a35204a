/// The configuration `tollgate serve` runs without `--config` (CONTRACT.md "Embedded default"),
/// as policy file text, the same in meaning as `conf/default.yaml`.
///
/// A forward proxy on 127.0.0.1:3128, the admin API on 127.0.0.1:9090, a shared cache of 1 GiB at
/// `$XDG_CACHE_HOME/tollgate` (else `~/.cache/tollgate`), clients from loopback only, CONNECT to
/// port 443 only, and system trust roots for every host.
public enum EmbeddedDefaultConfig {
    /// The name problems and logs give this text in place of a file name.
    public static let fileName = "(embedded default)"

    /// The policy file text.
    public static let yaml = """
        # Tollgate's embedded default (CONTRACT.md, "Embedded default").
        listen:
          - address: "127.0.0.1:3128"       # forward proxy, loopback only
            mode: forward

        admin:
          address: "127.0.0.1:9090"          # admin HTTP API

        cache:
          # no path: $XDG_CACHE_HOME/tollgate, else ~/.cache/tollgate
          max-size: "1GiB"
          kind: shared

        access:
          clients: ["127.0.0.0/8", "::1/128"]   # loopback only
          connect-ports: [443]                  # CONNECT only to port 443

        hosts:
          - match: "**"                      # every host
            session: default
            trust:
              roots: system

        """

    /// ``yaml`` loaded. It references no files, so nothing on the machine can make it fail; the
    /// tests load it on every run.
    public static func configuration() -> PolicyConfiguration {
        do {
            return try PolicyLoader(checkFiles: false).load(yaml: yaml, file: fileName, baseDirectory: nil)
        } catch {
            preconditionFailure("the embedded default configuration does not load:\n\(error)")
        }
    }
}
