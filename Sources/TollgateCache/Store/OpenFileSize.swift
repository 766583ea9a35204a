#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The size of an open file, by `fstat`: one system call, and the file offset left alone (the
/// two `lseek`s it took, to the end and back, moved it). Here rather than beside its callers:
/// a module that imports SwiftNIO sees `struct stat` through NIO's C shims, which its release
/// build then asks it to import.
public enum OpenFileSize {
    /// The size of the file open on `descriptor`; nil when `fstat` fails.
    public static func of(descriptor: CInt) -> Int64? {
        var status = stat()
        guard fstat(descriptor, &status) == 0 else { return nil }
        return Int64(status.st_size)
    }
}
