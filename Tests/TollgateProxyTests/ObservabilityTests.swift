import Foundation
import Testing
import TollgateHTTP
import TollgateTesting

/// The executable named `name` on PATH, or nil.
func executableOnPath(_ name: String) -> String? {
    let directories = (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":")
    return directories.map { "\($0)/\(name)" }.first { FileManager.default.isExecutableFile(atPath: $0) }
}

/// python3 on PATH when it can import `module`, else nil.
func python3(importing module: String) -> String? {
    guard let python = executableOnPath("python3") else { return nil }
    return (try? ChildProcess.runBlocking(python, ["-c", "import \(module)"]))?.status == 0 ? python : nil
}

/// python3 when it can import prometheus_client (`make test` installs it).
let pythonWithPrometheusClient: String? = python3(importing: "prometheus_client")

/// Parses Prometheus text with prometheus_client's own parser and prints each sample as
/// `name{label=value,…} value`, labels sorted; exits 1 with the parser's error.
private let parserScript = """
    import sys
    from prometheus_client.parser import text_string_to_metric_families
    text = open(sys.argv[1]).read()
    try:
        for family in text_string_to_metric_families(text):
            print("# family %s %s" % (family.name, family.type))
            for s in family.samples:
                labels = ",".join("%s=%s" % kv for kv in sorted(s.labels.items()))
                print("%s{%s} %r" % (s.name, labels, float(s.value)))
    except Exception as error:
        print("parse error: %s" % error, file=sys.stderr)
        sys.exit(1)
    """

@Suite(
    "/metrics and /har through the built executable",
    .serialized,
    .timeLimit(.minutes(1)),
    .enabled(if: tollgateBinary != nil, "the tollgate executable was not found next to the tests or in .build/debug")
)
struct ObservabilityTests {
    @Test(
        "/metrics is accepted by prometheus_client's parser and has every series: requests, errors, durations, connections, bytes, cache, upstream phases",
        .enabled(if: pythonWithPrometheusClient != nil, "python3 with prometheus_client is not installed")
    )
    func metricsParse() async throws {
        let setup = try await ExchangeRecordTests.Setup.start()
        defer { setup.stop() }
        _ = try await setup.get("/stored")
        _ = try await setup.get("/stored")
        // A port bound and never listened on: a stopped origin's port can be taken by a test running
        // beside this one, which then answers (seen under AddressSanitizer: connection-lost, 2 connects).
        let closed = ClosedPort()
        defer { withExtendedLifetime(closed) {} }
        #expect(try await setup.get("/gone", port: closed.port).status == 502)
        try await eventually("three log lines") {
            setup.served.child.standardError.split(separator: "\n").filter { $0.hasPrefix("{") }.count >= 3
        }

        let metrics = try await request("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: setup.admin)
        #expect(metrics.status == 200)
        let file = setup.directory.appendingPathComponent("metrics.txt")
        try metrics.bodyText.write(to: file, atomically: true, encoding: .utf8)
        let python = try #require(pythonWithPrometheusClient)
        let parsed = try await ChildProcess.run(python, ["-c", parserScript, file.path])
        #expect(parsed.status == 0, "\(parsed.stderr)\n\(metrics.bodyText)")
        let samples = Set(parsed.stdout.split(separator: "\n").map(String.init))

        #expect(samples.contains("tollgate_requests_total{cache=hit} 1.0"), "\(parsed.stdout)")
        #expect(samples.contains("tollgate_requests_total{cache=miss} 2.0"))
        #expect(samples.contains("tollgate_upstream_errors_total{kind=upstream-unreachable} 1.0"))
        #expect(samples.contains("tollgate_task_duration_seconds_count{} 3.0"))
        let ownAnswer = try lastBodyLength(of: setup)
        #expect(samples.contains("tollgate_bytes_out_total{peer=client} \(Double(12 + ownAnswer))"))
        #expect(samples.contains("tollgate_bytes_in_total{peer=upstream} 6.0"))
        #expect(samples.contains("tollgate_upstream_connect_seconds_count{} 1.0"))
        #expect(samples.contains("tollgate_upstream_first_byte_seconds_count{} 1.0"))
        #expect(samples.contains("tollgate_cache_entries{} 1.0"))
        #expect(samples.contains("tollgate_cache_evictions_total{} 0.0"))
        for family in [
            "# family tollgate_requests counter", "# family tollgate_upstream_errors counter",
            "# family tollgate_task_duration_seconds histogram", "# family tollgate_client_connections gauge",
            "# family tollgate_bytes_in counter", "# family tollgate_bytes_out counter",
            "# family tollgate_cache_entries gauge", "# family tollgate_cache_bytes gauge",
            "# family tollgate_cache_capacity_bytes gauge", "# family tollgate_cache_evictions counter",
            "# family tollgate_upstream_connect_seconds histogram", "# family tollgate_upstream_tls_seconds histogram",
            "# family tollgate_upstream_first_byte_seconds histogram",
        ] {
            #expect(samples.contains(family), "missing \(family)")
        }
        // The names as Prometheus sees them in the text (the parser drops _total from counter families).
        #expect(metrics.bodyText.contains("tollgate_requests_total{cache=\"hit\"} 1\n"))
        #expect(metrics.bodyText.contains("tollgate_upstream_errors_total{kind=\"upstream-unreachable\"} 1\n"))
        #expect(metrics.bodyText.contains("tollgate_client_connections "))
    }

    /// The body length of the proxy's own 502 (its bytes count as sent to the client too).
    private func lastBodyLength(of setup: ExchangeRecordTests.Setup) throws -> Int {
        let line = try #require(setup.served.child.standardError.split(separator: "\n").last { $0.contains("/gone") })
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        return try #require(object["bytes"] as? Int)
    }

    @Test("/har is a HAR 1.2 log with every required field, secrets masked, the newest exchanges last, limit honoured")
    func harLog() async throws {
        let setup = try await ExchangeRecordTests.Setup.start()
        defer { setup.stop() }
        _ = try await setup.get("/stored?q=a+b&x=1", headers: "Cookie: session=sekrit1\r\nAuthorization: Bearer sekrit2\r\n")
        _ = try await setup.get("/stored")
        _ = try await setup.get("/stored")
        try await eventually("three log lines") {
            setup.served.child.standardError.split(separator: "\n").filter { $0.hasPrefix("{") }.count >= 3
        }
        let response = try await request("GET /har HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: setup.admin)
        #expect(response.status == 200)
        #expect(response.header("Content-Type") == "application/json")
        #expect(!response.bodyText.contains("sekrit"), "secrets masked: \(response.bodyText)")
        let root = try #require(try JSONSerialization.jsonObject(with: Data(response.bodyText.utf8)) as? [String: Any])
        let log = try #require(root["log"] as? [String: Any])
        #expect(log["version"] as? String == "1.2")
        let creator = try #require(log["creator"] as? [String: Any])
        #expect(creator["name"] is String && creator["version"] is String)
        let entries = try #require(log["entries"] as? [[String: Any]])
        try #require(entries.count == 3, "\(setup.served.child.standardError)")
        for entry in entries { try Self.checkRequiredFields(entry) }

        let first = entries[0]
        let request = try #require(first["request"] as? [String: Any])
        #expect(request["url"] as? String == "http://127.0.0.1:\(setup.origin.port)/stored?q=a+b&x=1")
        let headers = try #require(request["headers"] as? [[String: String]])
        #expect(headers.contains { $0["name"] == "Cookie" && $0["value"] == "***" })
        #expect(headers.contains { $0["name"] == "Authorization" && $0["value"] == "***" })
        let query = try #require(request["queryString"] as? [[String: String]])
        #expect(query == [["name": "q", "value": "a b"], ["name": "x", "value": "1"]])
        #expect(first["_cache"] as? String == "miss")
        #expect(first["serverIPAddress"] as? String == "127.0.0.1")
        #expect(first["_notStoredReason"] as? String == "authorization")
        #expect(entries[1]["_stored"] as? Bool == true)
        #expect(entries[2]["_cache"] as? String == "hit")

        let limited = try await ExchangeRecordTests.harEntries(admin: setup.admin, query: "?limit=1")
        #expect(limited.count == 1)
        #expect(limited.first?["_cache"] as? String == "hit", "the most recent one")
    }

    /// HAR 1.2's required fields of an entry, with their types.
    static func checkRequiredFields(_ entry: [String: Any]) throws {
        #expect(entry["startedDateTime"] is String)
        #expect(entry["time"] is NSNumber)
        #expect(entry["cache"] is [String: Any])
        let request = try #require(entry["request"] as? [String: Any])
        for key in ["method", "url", "httpVersion"] { #expect(request[key] is String, "request.\(key)") }
        for key in ["cookies", "headers", "queryString"] { #expect(request[key] is [Any], "request.\(key)") }
        for key in ["headersSize", "bodySize"] { #expect(request[key] is NSNumber, "request.\(key)") }
        let response = try #require(entry["response"] as? [String: Any])
        for key in ["status", "headersSize", "bodySize"] { #expect(response[key] is NSNumber, "response.\(key)") }
        for key in ["statusText", "httpVersion", "redirectURL"] { #expect(response[key] is String, "response.\(key)") }
        for key in ["cookies", "headers"] { #expect(response[key] is [Any], "response.\(key)") }
        let content = try #require(response["content"] as? [String: Any])
        #expect(content["size"] is NSNumber && content["mimeType"] is String)
        let timings = try #require(entry["timings"] as? [String: Any])
        for key in ["send", "wait", "receive"] {
            let value = try #require(timings[key] as? Double, "timings.\(key)")
            #expect(value >= 0, "timings.\(key) must not be negative")
        }
        let started = try #require(entry["startedDateTime"] as? String)
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        #expect(formatter.date(from: started) != nil, "startedDateTime is ISO 8601: \(started)")
    }
}

extension ExchangeRecordTests {
    /// The entries of `GET /har` + `query`.
    static func harEntries(admin: Int, query: String = "") async throws -> [[String: Any]] {
        let response = try await request("GET /har\(query) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", port: admin)
        let root = try #require(try JSONSerialization.jsonObject(with: Data(response.bodyText.utf8)) as? [String: Any])
        return try #require((root["log"] as? [String: Any])?["entries"] as? [[String: Any]])
    }
}
