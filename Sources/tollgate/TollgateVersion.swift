/// The version `tollgate --version` prints. Raised by hand at a release; between releases the
/// `-dev` suffix says the binary was built from a working tree.
enum TollgateVersion {
    static let current = "0.2.0-dev"
}
