#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Creates files that hold secrets: mode 0600 before the first byte, never an existing file.
enum KeyFile {
    /// Creates `path` (it must not exist), makes it mode 0600, writes `contents` and syncs it.
    ///
    /// On failure the new file is removed. Errors name the path and the system error, never the contents.
    static func create(at path: String, contents: UnsafeBufferPointer<UInt8>) throws {
        // O_EXCL: never reuse an existing file or follow a symlink planted at `path`. Mode 0600 at
        // creation means no window where others can read; the umask can only narrow that, and fchmod
        // then sets exactly 0600 so the owner can always read the key back.
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            let code = errno
            if code == EEXIST {
                throw OpenSSLError(.io, exactly: "\(path) already exists; refusing to overwrite a key file")
            }
            throw OpenSSLError(.io, exactly: "creating \(path): \(String(cString: strerror(code)))")
        }
        var failure: String? = nil
        if fchmod(fd, 0o600) != 0 {
            failure = "setting mode 0600 on \(path): \(String(cString: strerror(errno)))"
        }
        var offset = 0
        while failure == nil, offset < contents.count {
            let written = write(fd, contents.baseAddress! + offset, contents.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                failure = "writing \(path): \(String(cString: strerror(errno)))"
            } else {
                offset += written
            }
        }
        if failure == nil, fsync(fd) != 0 {
            failure = "syncing \(path): \(String(cString: strerror(errno)))"
        }
        if close(fd) != 0, failure == nil {
            failure = "closing \(path): \(String(cString: strerror(errno)))"
        }
        if let failure {
            unlink(path)
            throw OpenSSLError(.io, exactly: failure)
        }
    }
}
