#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// How paths in the policy file are read: `~` and `~/…` are the home directory; a relative path is
/// relative to the directory of the configuration file (not the working directory), so a file and
/// the secrets beside it can move together.
enum PathResolution {
    /// `a` and `b` joined with one slash.
    static func joined(_ a: String, _ b: String) -> String {
        if b.isEmpty { return a }
        if a.hasSuffix("/") { return a + b }
        return a + "/" + b
    }

    /// The absolute path for `path` as written, or the path unchanged when no base is known.
    static func resolve(_ path: String, baseDirectory: String?, homeDirectory: String?) -> String {
        if path == "~", let homeDirectory { return homeDirectory }
        if path.hasPrefix("~/"), let homeDirectory { return joined(homeDirectory, String(path.dropFirst(2))) }
        if path.hasPrefix("/") { return path }
        guard let baseDirectory else { return path }
        return joined(baseDirectory, path.hasPrefix("./") ? String(path.dropFirst(2)) : path)
    }

    /// The directory part of `path` (`.` when it has none).
    static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }

    /// The current working directory, or nil.
    static func currentDirectory() -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        guard getcwd(&buffer, buffer.count) != nil else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Nil when `path` is a readable regular file, else why not ("no such file", "is a directory", …).
    static func problemReadingFile(_ path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0 else { return errnoText() }
        if (info.st_mode & S_IFMT) == S_IFDIR { return "is a directory" }
        guard (info.st_mode & S_IFMT) == S_IFREG else { return "is not a regular file" }
        guard access(path, R_OK) == 0 else { return errnoText() }
        return nil
    }

    /// Nil when the file at `path` is readable by its owner alone (or cannot be looked at: the
    /// readability check says so), else the problem and the fix.
    static func problemWithSecretFileMode(_ path: String) -> String? {
        var info = stat()
        guard stat(path, &info) == 0, info.st_mode & 0o077 != 0 else { return nil }
        return "\"\(path)\" is readable by others (mode \(String(info.st_mode & 0o777, radix: 8))): chmod 600 \(path)"
    }

    /// The file's bytes, or why they cannot be read.
    static func readFile(_ path: String) -> Result<[UInt8], ReadError> {
        if let problem = problemReadingFile(path) { return .failure(ReadError(description: problem)) }
        guard let file = fopen(path, "rb") else { return .failure(ReadError(description: errnoText())) }
        defer { fclose(file) }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while true {
            let count = fread(&chunk, 1, chunk.count, file)
            if count > 0 { bytes.append(contentsOf: chunk[0..<count]) }
            if count < chunk.count {
                if ferror(file) != 0 { return .failure(ReadError(description: errnoText())) }
                break
            }
            if bytes.count > PolicyLoader.maximumFileSize {
                return .failure(ReadError(description: "larger than \(PolicyLoader.maximumFileSize >> 20) MiB"))
            }
        }
        return .success(bytes)
    }

    /// Why a file could not be read.
    struct ReadError: Error {
        let description: String
    }

    private static func errnoText() -> String {
        switch errno {
        case ENOENT: "no such file"
        case EACCES: "permission denied"
        case ENOTDIR: "a part of the path is not a directory"
        default: String(cString: strerror(errno)).lowercased()
        }
    }
}
