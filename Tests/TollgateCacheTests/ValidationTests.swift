import Foundation
import Testing
import TollgateCache
import TollgateHTTP

@Suite("Validation: conditional requests, 304 merging, client conditionals", .timeLimit(.minutes(1)))
struct ValidationTests {
    let rules = CacheRules.shared

    @Test(
        "Validators sent when revalidating",
        arguments: [
            (["ETag: \"v1\"", "Last-Modified: @-100"], ["If-None-Match: \"v1\""]),
            (["ETag: W/\"v1\""], ["If-None-Match: W/\"v1\""]),
            (["Last-Modified: @-100"], ["If-None-Match-absent"]),
            (["ETag: unquoted", "Last-Modified: @-100"], ["If-None-Match-absent"]),
            ([String](), [String]()),
        ]
    )
    func conditionalHeaders(_ lines: [String], expected: [String]) {
        let storedResponse = stored(lines)
        let conditional = rules.conditionalHeaders(for: storedResponse)
        if expected == ["If-None-Match-absent"] {
            #expect(conditional["If-None-Match"] == nil)
            #expect(conditional["If-Modified-Since"] == storedResponse.headerFields["Last-Modified"])
        } else {
            #expect(conditional.map { "\($0.name): \($0.value)" } == expected)
        }
    }

    @Test("A 304 updates the stored fields except those the body depends on (§3.2)")
    func merge() throws {
        let original = stored(
            [
                "Cache-Control: max-age=60", "ETag: \"v1\"", "Content-Type: text/plain", "Content-Length: 5",
                "X-Old: kept",
            ],
            received: -1000
        )
        let notModified = response(
            [
                "Cache-Control: max-age=600", "ETag: \"v1\"", "Content-Type: text/html", "Content-Length: 0",
                "X-New: added", "Set-Cookie: s=1", "Connection: close", "Date: @0",
            ],
            status: 304
        )
        let merged = try #require(
            rules.merge304(
                stored: original,
                notModified: notModified,
                requestTime: now.addingTimeInterval(-1),
                responseTime: now
            )
        )
        #expect(merged.headerFields.values(for: "Cache-Control") == ["max-age=600"])
        #expect(merged.headerFields["Content-Type"] == "text/plain")
        #expect(merged.headerFields["Content-Length"] == "5")
        #expect(merged.headerFields["X-Old"] == "kept")
        #expect(merged.headerFields["X-New"] == "added")
        #expect(merged.headerFields["Set-Cookie"] == nil)
        #expect(merged.headerFields["Connection"] == nil)
        #expect(merged.headerFields.values(for: "Date") == [httpDate(0)])
        #expect(merged.responseTime == now)
        #expect(merged.requestTime == now.addingTimeInterval(-1))
        #expect(merged.bodyDigest == original.bodyDigest)
        // The age restarts: fresh again.
        #expect(Freshness(merged, now: now).isFresh)
    }

    @Test(
        "A 304 about another representation is not used",
        arguments: [
            (["ETag: \"v1\""], ["ETag: \"v2\""], false),
            (["ETag: \"v1\""], ["ETag: W/\"v1\""], true),
            (["ETag: W/\"v1\""], ["ETag: \"v1\""], false),
            (["ETag: W/\"v1\""], ["ETag: W/\"v1\""], true),
            (["Last-Modified: @-100"], ["Last-Modified: @-100"], true),
            (["Last-Modified: @-100"], ["Last-Modified: @-50"], false),
            (["ETag: \"v1\""], [String](), true),
        ]
    )
    func mergeSelection(_ storedLines: [String], _ notModifiedLines: [String], _ used: Bool) {
        let merged = rules.merge304(
            stored: stored(storedLines),
            notModified: response(notModifiedLines, status: 304),
            requestTime: now,
            responseTime: now
        )
        #expect((merged != nil) == used)
    }

    @Test(
        "A HEAD's 200 updates the stored GET response only when it identifies it (§4.3.5)",
        arguments: [
            (["ETag: \"v1\""], ["ETag: \"v1\""], true),
            (["ETag: \"v1\""], ["ETag: \"v2\""], false),
            (["ETag: \"v1\""], ["ETag: \"v1\"", "Content-Length: 5"], true),
            (["ETag: \"v1\""], ["ETag: \"v1\"", "Content-Length: 6"], false),
            (["Last-Modified: @-100"], ["Last-Modified: @-100"], true),
            (["Last-Modified: @-100"], ["Last-Modified: @-50"], false),
            (["ETag: \"v1\"", "Last-Modified: @-100"], ["ETag: \"v1\"", "Last-Modified: @-50"], false),
            (["Last-Modified: @-100"], ["ETag: \"v1\"", "Last-Modified: @-100"], false),
            // No validator in the HEAD's answer: it might describe another representation.
            (["ETag: \"v1\""], ["Content-Length: 5"], false),
            ([String](), [String](), false),
        ]
    )
    func headSelection(_ storedLines: [String], _ headLines: [String], _ used: Bool) {
        var original = stored(storedLines)
        original.bodyLength = 5
        let merged = rules.mergeHEAD(stored: original, head: response(headLines), requestTime: now, responseTime: now)
        #expect((merged != nil) == used)
    }

    @Test("A HEAD's 200 updates fields and freshness as a 304 does; another status updates nothing")
    func headMerge() throws {
        var original = stored(["Cache-Control: max-age=60", "ETag: \"v1\"", "Content-Length: 5", "X-Old: kept", "X-Version: 1"], received: -1000)
        original.bodyLength = 5
        let head = response(["Cache-Control: max-age=600", "ETag: \"v1\"", "Content-Length: 5", "X-Version: 2", "Set-Cookie: s=1", "Date: @0"])
        let merged = try #require(rules.mergeHEAD(stored: original, head: head, requestTime: now, responseTime: now))
        #expect(merged.headerFields.values(for: "Cache-Control") == ["max-age=600"])
        #expect(merged.headerFields["X-Version"] == "2")
        #expect(merged.headerFields["X-Old"] == "kept")
        #expect(merged.headerFields["Set-Cookie"] == nil)
        #expect(merged.bodyDigest == original.bodyDigest)
        #expect(Freshness(merged, now: now).isFresh)
        #expect(rules.mergeHEAD(stored: original, head: response(["ETag: \"v1\""], status: 410), requestTime: now, responseTime: now) == nil)
    }

    @Test(
        "A client's conditional request against a stored response",
        arguments: [
            (["If-None-Match: \"v1\""], true),
            (["If-None-Match: \"v0\", \"v1\""], true),
            (["If-None-Match: W/\"v1\""], true),
            (["If-None-Match: \"v2\""], false),
            (["If-None-Match: *"], true),
            (["If-None-Match: \"v2\"", "If-Modified-Since: @0"], false),
            (["If-Modified-Since: @-100"], true),
            (["If-Modified-Since: @-101"], false),
            (["If-Modified-Since: not a date"], false),
            ([String](), false),
        ]
    )
    func clientConditionals(_ lines: [String], _ notModified: Bool) {
        let storedResponse = stored(["ETag: \"v1\"", "Last-Modified: @-100"])
        #expect(rules.answersConditional(clientRequest: request(lines), stored: storedResponse) == notModified)
    }

    @Test("If-Modified-Since falls back to Date without Last-Modified; only GET and HEAD")
    func conditionalFallbacks() {
        let storedResponse = stored(["ETag: \"v1\""], received: -100)
        #expect(rules.answersConditional(clientRequest: request(["If-Modified-Since: @-50"]), stored: storedResponse))
        #expect(!rules.answersConditional(clientRequest: request(["If-Modified-Since: @-150"]), stored: storedResponse))
        #expect(
            !rules.answersConditional(
                clientRequest: request(["If-None-Match: \"v1\""], method: .post),
                stored: storedResponse
            )
        )
    }

    @Test("The 304 sent to a client repeats the validators and caching fields, not the content fields")
    func notModifiedResponse() throws {
        let storedResponse = stored(
            [
                "Cache-Control: max-age=60", "ETag: \"v1\"", "Content-Type: text/plain", "Content-Length: 3",
                "Vary: Accept",
            ],
            received: -10
        )
        let hit = try #require(
            rules.decide(request: request(), policy: .protocol, stored: storedResponse, now: now).hit
        )
        let head = rules.notModifiedResponse(for: hit)
        #expect(head.status == 304)
        #expect(head.headerFields["ETag"] == "\"v1\"")
        #expect(head.headerFields["Cache-Control"] == "max-age=60")
        #expect(head.headerFields["Vary"] == "Accept")
        #expect(head.headerFields["Age"] == "10")
        #expect(head.headerFields["Content-Type"] == nil)
        #expect(head.headerFields["Content-Length"] == nil)
    }
}

@Suite("Invalidation (RFC 9111 §4.4)", .timeLimit(.minutes(1)))
struct InvalidationTests {
    let rules = CacheRules.shared

    func keys(
        _ method: HTTPMethod,
        _ status: Int,
        _ lines: [String],
        normalizer: CacheKeyNormalizer = .standard
    ) -> [String] {
        rules.invalidations(
            for: request(method: method, url: "https://example.com/items/7?x=1"),
            response: response(lines, status: status),
            normalizer: normalizer
        ).map(\.url)
    }

    @Test("An unsafe method invalidates the target and same-origin Location and Content-Location")
    func sameOrigin() {
        #expect(
            keys(.post, 201, ["Location: /items/8", "Content-Location: https://example.com:443/items/7/view"]) == [
                "https://example.com/items/7?x=1", "https://example.com/items/8", "https://example.com/items/7/view",
            ]
        )
    }

    @Test("Location on another origin is not invalidated")
    func otherOrigin() {
        #expect(
            keys(
                .put,
                200,
                ["Location: https://other.example/items/8", "Content-Location: http://example.com/items/7"]
            )
                == ["https://example.com/items/7?x=1"]
        )
    }

    @Test(
        "Safe methods and error responses invalidate nothing; 3xx does",
        arguments: [
            (HTTPMethod.get, 200, 0), (.head, 200, 0), (.options, 200, 0), (.post, 500, 0), (.delete, 404, 0),
            (.delete, 204, 1), (.post, 303, 1), (HTTPMethod("PURGE"), 200, 1),
        ]
    )
    func scope(_ method: HTTPMethod, _ status: Int, _ count: Int) {
        #expect(keys(method, status, []).count == count)
    }

    @Test("Invalidation keys use the lookup normalizer")
    func normalized() {
        #expect(
            keys(.post, 200, [], normalizer: CacheKeyNormalizer(ignoresQuery: true)) == ["https://example.com/items/7"]
        )
    }
}
