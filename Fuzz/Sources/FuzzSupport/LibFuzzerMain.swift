import CLibFuzzer

#if canImport(Glibc)
import Glibc
#endif

/// The signature of `LLVMFuzzerTestOneInput`: one input, 0 to keep going.
public typealias FuzzTestOneInput = @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt

/// Runs libFuzzer's driver on `test` with the process's arguments (corpus folders, `-runs=`,
/// a reproducer to replay …) and exits with its status.
///
/// Why not libFuzzer's own `main`: SwiftPM on Linux links an executable with `main` aliased to
/// `<Target>_main` (so that tests can link executables), which leaves no room for another
/// `main`; each target's `@main` calls this instead, as `LLVMFuzzerRunDriver` is meant for.
public func runLibFuzzer(_ test: FuzzTestOneInput) -> Never {
    var argc = CommandLine.argc
    var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
    exit(LLVMFuzzerRunDriver(&argc, &argv, test))
}
