import Foundation
import Glibc

/// The machines a Python lockfile's files are warmed for (`warm --python-version`,
/// `--python-platform`): of each pinned release, only the wheels an installer there could take,
/// and its source distributions only when no wheel fits — as pip, uv and poetry choose.
///
/// Lockfiles pin every file of a release (uv's lock is universal; `pip-compile --generate-hashes`
/// and poetry list each platform's wheel): without a target the warm fetches them all, some
/// forty wheels for one numpy pin. Compatibility follows the wheel tags of PEP 425 as
/// `packaging.tags` orders them for CPython: `cp3Y-{cp3Y,abi3,none}`, `cp3X-abi3` for X ≤ Y,
/// `py3`/`py3X` with `none`; platform tags by glibc (`manylinux_2_K` for K up to the target's,
/// with the `manylinux1`/`2010`/`2014` aliases), musl, macOS version and architecture, Windows;
/// `any` everywhere.
struct PythonTarget: Equatable {
    /// CPython versions (3, minor); empty: any interpreter.
    var versions: [Int]
    /// Platforms; empty: any platform.
    var platforms: [Platform]

    /// A platform a build runs on, as the highest tag it takes.
    enum Platform: Equatable, CustomStringConvertible {
        /// glibc Linux: `manylinux_2_MINOR_ARCH` and below, and `linux_ARCH`.
        case manylinux(glibcMinor: Int, arch: String)
        /// musl Linux: `musllinux_1_MINOR_ARCH` and below, and `linux_ARCH`.
        case musllinux(minor: Int, arch: String)
        /// `linux_ARCH` alone (a wheel built on the machine, not for distribution).
        case linux(arch: String)
        /// macOS VERSION on ARCH: `macosx_X_Y_ARCH` for X.Y up to it, and the fat architectures.
        case macos(major: Int, minor: Int, arch: String)
        /// `win_amd64`, `win32`, `win_arm64`.
        case windows(tag: String)

        var description: String {
            switch self {
            case .manylinux(let minor, let arch): "manylinux_2_\(minor)_\(arch)"
            case .musllinux(let minor, let arch): "musllinux_1_\(minor)_\(arch)"
            case .linux(let arch): "linux_\(arch)"
            case .macos(let major, let minor, let arch): "macosx_\(major)_\(minor)_\(arch)"
            case .windows(let tag): tag
            }
        }

        /// Reads a platform tag (`manylinux_2_36_x86_64`, `manylinux2014_aarch64`,
        /// `musllinux_1_2_x86_64`, `linux_x86_64`, `macosx_14_0_arm64`, `win_amd64`), or `local`:
        /// this machine's (its architecture and glibc).
        static func parse(_ text: String) -> Platform? {
            if text == "local" { return local() }
            for (prefix, minor) in legacyManylinux where text.hasPrefix(prefix) {
                let arch = String(text.dropFirst(prefix.count))
                return arch.isEmpty ? nil : .manylinux(glibcMinor: minor, arch: arch)
            }
            if ["win_amd64", "win32", "win_arm64"].contains(text) { return .windows(tag: text) }
            for (prefix, major) in [("manylinux_", 2), ("musllinux_", 1), ("macosx_", 0)] where text.hasPrefix(prefix) {
                let parts = text.dropFirst(prefix.count).split(separator: "_", maxSplits: 2).map(String.init)
                guard parts.count == 3, let first = Int(parts[0]), let second = Int(parts[1]), !parts[2].isEmpty else { return nil }
                switch prefix {
                case "macosx_": return .macos(major: first, minor: second, arch: parts[2])
                default:
                    guard first == major else { return nil }
                    return prefix == "manylinux_" ? .manylinux(glibcMinor: second, arch: parts[2]) : .musllinux(minor: second, arch: parts[2])
                }
            }
            if text.hasPrefix("linux_"), text.count > 6 { return .linux(arch: String(text.dropFirst(6))) }
            return nil
        }

        /// This machine: its architecture (`uname`) and glibc version.
        static func local() -> Platform? {
            var names = utsname()
            guard uname(&names) == 0 else { return nil }
            let arch = withUnsafeBytes(of: &names.machine) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
            // "glibc 2.36" (confstr: gnu_get_libc_version's header is not in the Glibc module).
            var buffer = [CChar](repeating: 0, count: 64)
            let length = confstr(Int32(_CS_GNU_LIBC_VERSION), &buffer, buffer.count)
            let text = length > 0 ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : ""
            let glibc = text.hasPrefix("glibc ") ? text.dropFirst(6).split(separator: ".").compactMap { Int($0) } : []
            guard glibc.count >= 2, glibc[0] == 2 else { return .linux(arch: arch) }
            return .manylinux(glibcMinor: glibc[1], arch: arch)
        }

        /// Whether a wheel with platform tag `tag` installs here.
        func accepts(_ tag: String) -> Bool {
            if tag == "any" { return true }
            switch self {
            case .manylinux(let minor, let arch):
                if tag == "linux_\(arch)" { return true }
                if let legacy = Self.legacyManylinux.first(where: { tag.hasPrefix($0.key) }) {
                    return tag == legacy.key + arch && legacy.value <= minor
                }
                guard let (major, wheelMinor, wheelArch) = Self.versioned(tag, prefix: "manylinux_") else { return false }
                return major == 2 && wheelMinor <= minor && wheelArch == arch
            case .musllinux(let minor, let arch):
                if tag == "linux_\(arch)" { return true }
                guard let (major, wheelMinor, wheelArch) = Self.versioned(tag, prefix: "musllinux_") else { return false }
                return major == 1 && wheelMinor <= minor && wheelArch == arch
            case .linux(let arch):
                return tag == "linux_\(arch)"
            case .macos(let major, let minor, let arch):
                guard let (wheelMajor, wheelMinor, wheelArch) = Self.versioned(tag, prefix: "macosx_") else { return false }
                guard (wheelMajor, wheelMinor) <= (major, minor) else { return false }
                let fat: Set<String> = arch == "x86_64" ? ["universal2", "intel", "fat64", "fat3", "universal"] : ["universal2"]
                return wheelArch == arch || fat.contains(wheelArch)
            case .windows(let windowsTag):
                return tag == windowsTag
            }
        }

        /// The manylinux tags before PEP 600, with the glibc 2 minor each stands for.
        static let legacyManylinux = ["manylinux1_": 5, "manylinux2010_": 12, "manylinux2014_": 17]

        /// `PREFIX{A}_{B}_{ARCH}` as its parts.
        private static func versioned(_ tag: String, prefix: String) -> (Int, Int, String)? {
            guard tag.hasPrefix(prefix) else { return nil }
            let parts = tag.dropFirst(prefix.count).split(separator: "_", maxSplits: 2).map(String.init)
            guard parts.count == 3, let first = Int(parts[0]), let second = Int(parts[1]) else { return nil }
            return (first, second, parts[2])
        }
    }

    /// The target of `--python-version` and `--python-platform`; nil when neither is given (every
    /// file is warmed).
    static func parse(versions: [String], platforms: [String]) throws(CommandFailure) -> PythonTarget? {
        guard !versions.isEmpty || !platforms.isEmpty else { return nil }
        var minors: [Int] = []
        for text in versions.flatMap({ $0.split(separator: ",").map(String.init) }) {
            let parts = text.split(separator: ".")
            guard parts.count == 2, parts[0] == "3", let minor = Int(parts[1]), (0...99).contains(minor) else {
                throw CommandFailure.user("--python-version: '\(text)' is not a Python 3 version such as 3.11")
            }
            minors.append(minor)
        }
        var parsed: [Platform] = []
        for text in platforms.flatMap({ $0.split(separator: ",").map(String.init) }) {
            guard let platform = Platform.parse(text) else {
                throw CommandFailure.user(
                    "--python-platform: '\(text)' is not a platform tag such as manylinux_2_36_x86_64, musllinux_1_2_aarch64, "
                        + "macosx_14_0_arm64, win_amd64 or local"
                )
            }
            parsed.append(platform)
        }
        return PythonTarget(versions: minors, platforms: parsed)
    }

    /// What the target is, for the summary line: `CPython 3.11 on manylinux_2_36_x86_64`.
    var description: String {
        let interpreters = versions.isEmpty ? "any Python" : "CPython " + versions.map { "3.\($0)" }.joined(separator: ", ")
        let places = platforms.isEmpty ? "any platform" : platforms.map(\.description).joined(separator: ", ")
        return "\(interpreters) on \(places)"
    }

    /// Whether the file named `filename` is a wheel that installs on the target; nil when it is
    /// not a wheel.
    func acceptsWheel(_ filename: String) -> Bool? {
        guard filename.hasSuffix(".whl") else { return nil }
        let parts = filename.dropLast(4).split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 5 || parts.count == 6 else { return false }
        let pythons = parts[parts.count - 3].split(separator: ".")
        let abis = parts[parts.count - 2].split(separator: ".")
        let platformTags = parts[parts.count - 1].split(separator: ".")
        let platformFits = platforms.isEmpty || platformTags.contains { tag in platforms.contains { $0.accepts(String(tag)) } }
        guard platformFits else { return false }
        guard !versions.isEmpty else { return true }
        return versions.contains { minor in
            pythons.contains { python in abis.contains { abi in Self.interpreter(String(python), String(abi), takenBy: minor) } }
        }
    }

    /// Whether CPython 3.`minor` takes a wheel tagged `python`-`abi`.
    private static func interpreter(_ python: String, _ abi: String, takenBy minor: Int) -> Bool {
        if python == "cp3\(minor)" {
            return abi == "cp3\(minor)" || abi == "abi3" || abi == "none" || (minor <= 7 && abi == "cp3\(minor)m")
        }
        if python.hasPrefix("cp3"), let older = Int(python.dropFirst(3)), older >= 2, older < minor { return abi == "abi3" }
        guard abi == "none" else { return false }
        if python == "py3" { return true }
        if python.hasPrefix("py3"), let older = Int(python.dropFirst(3)) { return older <= minor }
        return false
    }

    /// Of one release's files, the ones an installer on the target takes: the wheels that fit,
    /// else (no wheel fits) its other files — source distributions to build from.
    func select<File>(_ files: [File], filename: (File) -> String) -> [File] {
        let fitting = files.filter { acceptsWheel(filename($0)) == true }
        if !fitting.isEmpty { return fitting }
        return files.filter { acceptsWheel(filename($0)) == nil }
    }

    /// A URL's file name (its last path segment, percent-decoded).
    static func filename(ofURLPath path: String) -> String {
        let last = path.split(separator: "/").last.map(String.init) ?? ""
        return last.removingPercentEncoding ?? last
    }
}
