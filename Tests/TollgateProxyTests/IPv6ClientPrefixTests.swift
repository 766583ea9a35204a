import Foundation
import Testing
import TollgateHTTP
import TollgateTesting

@testable import TollgateProxy

/// `access.ipv6-client-prefix`: what `rate-limit` and `connection-limit` count as one IPv6 client.
@Suite("access.ipv6-client-prefix: an IPv6 client is its network", .serialized, .timeLimit(.minutes(1)))
struct IPv6ClientPrefixTests {
    @Test("IPv4 addresses are themselves; an IPv6 address is its network to the prefix; /128 and IPv4-mapped addresses are left whole")
    func keys() {
        let v6: [UInt8] = [0x20, 0x01, 0x0d, 0xb8, 0, 1, 0, 2, 0xaa, 0xaa, 0, 0, 0, 0, 0, 1]
        #expect(ClientLimitKey.of(text: "192.0.2.7", bytes: [192, 0, 2, 7], ipv6Prefix: 64) == "192.0.2.7")
        #expect(ClientLimitKey.of(text: "2001:db8:1:2:aaaa::1", bytes: v6, ipv6Prefix: 64) == "2001:db8:1:2::/64")
        #expect(ClientLimitKey.of(text: "2001:db8:1:2:aaaa::1", bytes: v6, ipv6Prefix: 48) == "2001:db8:1::/48")
        #expect(ClientLimitKey.of(text: "2001:db8:1:2:aaaa::1", bytes: v6, ipv6Prefix: 60) == "2001:db8:1::/60")
        #expect(ClientLimitKey.of(text: "2001:db8:1:2:aaaa::1", bytes: v6, ipv6Prefix: 72) == "2001:db8:1:2:aa00::/72")
        #expect(ClientLimitKey.of(text: "2001:db8:1:2:aaaa::1", bytes: v6, ipv6Prefix: 128) == "2001:db8:1:2:aaaa::1")
        #expect(ClientLimitKey.of(text: "2001:db8:1:2:aaaa::1", bytes: v6, ipv6Prefix: 1) == "::/1")
        let mapped: [UInt8] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 192, 0, 2, 7]
        #expect(ClientLimitKey.of(text: "::ffff:192.0.2.7", bytes: mapped, ipv6Prefix: 64) == "::ffff:192.0.2.7")
    }

    @Test(
        "Behind the PROXY protocol: two addresses of one /64 share a connection limit, another /64 has its own; at 128 each address has its own",
        .enabled(if: tollgateBinary != nil)
    )
    func connectionLimitPerNetwork() async throws {
        let directory = try temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let origin = try await LoopbackOrigin.start { _, respond in respond.send(status: 200, headers: ["Cache-Control": "no-store"], body: "ok") }
        defer { origin.stop() }
        for prefix in [64, 128] {
            let config = directory.appendingPathComponent("tollgate-\(prefix).yaml")
            try """
                listen:
                  - address: "127.0.0.1:0"
                    mode: reverse
                    upstream: "http://127.0.0.1:\(origin.port)"
                    proxy-protocol: true
                access:
                  clients: ["2001:db8::/32"]
                  trusted-forwarders: ["127.0.0.1/32"]
                  connection-limit: 1
                  ipv6-client-prefix: \(prefix)
                cache:
                  path: "\(directory.appendingPathComponent("cache").path)"
                """.write(to: config, atomically: true, encoding: .utf8)
            let served = try await Served.start(["--config", config.path], directory: directory, lines: 1)
            defer { served.child.kill() }
            let port = try served.port("reverse")
            /// A kept-open connection from `source` (as its PROXY header says) and its answer to one GET.
            func connect(from source: String) async throws -> (RawClient, RawResponse) {
                let client = try await RawClient.connect(port: port)
                try await client.send("PROXY TCP6 \(source) 2001:db8::1 40000 443\r\nGET / HTTP/1.1\r\nHost: shop.example\r\n\r\n")
                return (client, try #require(try await client.waitForResponses(1).first))
            }
            let (first, answer) = try await connect(from: "2001:db8:1:2::a")
            defer { first.close() }
            #expect(answer.status == 200)
            let (neighbour, shared) = try await connect(from: "2001:db8:1:2:ffff::b")
            defer { neighbour.close() }
            let (elsewhere, own) = try await connect(from: "2001:db8:1:3::a")
            defer { elsewhere.close() }
            #expect(own.status == 200)
            if prefix == 64 {
                #expect(shared.status == 429 && shared.header("Tollgate-Error") == "too-many-connections")
                #expect(shared.bodyText.contains("client 2001:db8:1:2::/64 has 1 connections open already"), "\(shared.bodyText)")
            } else {
                #expect(shared.status == 200, "\(shared.bodyText)")
            }
        }
    }
}
