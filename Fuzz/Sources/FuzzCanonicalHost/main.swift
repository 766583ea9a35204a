import FuzzSupport

@testable import TollgateProxy

// The destination canonicalizer (CanonicalHost: every spelling of an IPv4 or IPv6 address, or a
// name) fed an arbitrary host as a client could write it in a request target or a Host field.
//
// Invariants:
// - canonicalization is idempotent: the canonical text parses to itself, same address;
// - for an address, the canonical text is what the system's resolver (getaddrinfo with
//   AI_NUMERICHOST, which `AddressResolver` would be asked) reads as exactly that address;
// - when glibc's inet_aton — the reading a connect by name would get — accepts the spelling as
//   an IPv4 address, the canonicalizer gives the same address (never a name, never another one);
// - a canonical name is never something the resolver reads as a numeric address (a name that
//   is secretly an IP would skip the address checks).
#if canImport(Glibc)
import Glibc
#endif

/// The addresses getaddrinfo reads from `text` as a numeric host (no DNS), 4 or 16 bytes each.
func numericAddresses(_ text: String) -> [[UInt8]]? {
    var hints = addrinfo()
    hints.ai_family = AF_UNSPEC
    hints.ai_flags = AI_NUMERICHOST
    hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
    var result: UnsafeMutablePointer<addrinfo>?
    guard getaddrinfo(text, nil, &hints, &result) == 0, let first = result else { return nil }
    defer { freeaddrinfo(first) }
    var addresses: [[UInt8]] = []
    var cursor: UnsafeMutablePointer<addrinfo>? = first
    while let info = cursor {
        if let address = info.pointee.ai_addr, let bytes = canonicalNetworkAddressBytes(address),
            !addresses.contains(bytes)
        {
            addresses.append(bytes)
        }
        cursor = info.pointee.ai_next
    }
    return addresses
}

/// glibc's inet_aton reading of `text`, or nil.
func inetAton(_ text: String) -> [UInt8]? {
    var address = in_addr()
    guard inet_aton(text, &address) != 0 else { return nil }
    return withUnsafeBytes(of: address.s_addr) { Array($0) }  // network order in memory
}

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzCanonicalHost(_ start: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let host = FuzzInput(start, count).text
    guard !host.utf8.contains(0) else { return 0 }  // a C string cannot carry it to inet_aton
    let canonical = try? CanonicalHost.parse(host)
    if let canonical {
        let again = try? CanonicalHost.parse(canonical.text)
        fuzzCheck(again == canonical, "'\(host)' → '\(canonical.text)' → \(String(describing: again))")
        let numeric = numericAddresses(canonical.text)
        if let address = canonical.address {
            fuzzCheck(
                numeric == [address],
                "'\(canonical.text)' (from '\(host)') resolves to \(String(describing: numeric)), not \(address)"
            )
        } else {
            fuzzCheck(
                numeric == nil,
                "the name '\(canonical.text)' (from '\(host)') resolves numerically to \(numeric ?? [])"
            )
        }
    }
    if let aton = inetAton(host), host.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) {
        // inet_aton stops at the first space; without spaces the whole text was read.
        if let canonical {
            fuzzCheck(
                canonical.address == aton,
                "'\(host)': inet_aton reads \(aton), canonicalized to '\(canonical.text)'"
            )
        }
    }
    return 0
}

/// The executable's entry point: libFuzzer's driver, calling ``fuzzCanonicalHost(_:_:)`` for each input.
@main
enum Main {
    static func main() { runLibFuzzer(fuzzCanonicalHost) }
}
