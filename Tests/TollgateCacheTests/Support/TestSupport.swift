import Foundation
import NIOCore
import TollgateCache
import TollgateHTTP
import TollgateStore

/// The fixed "now" of every rule test.
let now = Date(timeIntervalSince1970: 1_700_000_000)

/// An HTTP date `offset` seconds from `now`.
func httpDate(_ offset: TimeInterval) -> String {
    HTTPDate.format(now.addingTimeInterval(offset))
}

/// Header fields from `Name: value` lines; a value `@N` is the HTTP date N seconds from `now`.
func fields(_ lines: [String]) -> HeaderFields {
    HeaderFields(
        lines.map { line in
            let colon = line.firstIndex(of: ":")!
            let name = String(line[..<colon])
            var value = String(line[line.index(after: colon)...]).trimmingASCIIWhitespace()
            if value.hasPrefix("@"), let offset = TimeInterval(value.dropFirst()) { value = httpDate(offset) }
            return (name, value)
        }
    )
}

/// A request head.
func request(
    _ lines: [String] = [],
    method: HTTPMethod = .get,
    url: String = "https://example.com/resource"
) -> HTTPRequestHead {
    HTTPRequestHead(method: method, url: HTTPURL(string: url)!, headerFields: fields(lines))
}

/// A response head.
func response(_ lines: [String] = [], status: Int = 200) -> HTTPResponseHead {
    HTTPResponseHead(status: status, headerFields: fields(lines))
}

/// Stored metadata as the store would record it, received `received` seconds from `now`
/// (a Date field with that time is added unless `addsDate` is false).
func stored(
    _ lines: [String],
    status: Int = 200,
    received: TimeInterval = 0,
    addsDate: Bool = true,
    originalRequest: [String] = [],
    url: String = "https://example.com/resource"
) -> StoredResponse {
    var headerFields = fields(lines)
    if addsDate, !headerFields.contains("Date") { headerFields.add(name: "Date", value: httpDate(received)) }
    let original = request(originalRequest, url: url)
    return StoredResponse(
        key: CacheKey(url: original.url),
        url: url,
        status: status,
        reason: "",
        headerFields: headerFields,
        requestTime: now.addingTimeInterval(received),
        responseTime: now.addingTimeInterval(received),
        varyingRequestFields: VaryMatching.varyingFields(
            of: Vary(fieldValues: headerFields.values(for: "Vary")),
            in: original.headerFields
        )
    )
}

/// A buffer holding `bytes`.
func buffer(_ bytes: [UInt8]) -> ByteBuffer {
    var buffer = ByteBufferAllocator().buffer(capacity: bytes.count)
    buffer.writeBytes(bytes)
    return buffer
}

/// `count` bytes of a pattern that depends on `seed`.
func pattern(_ count: Int, seed: UInt8 = 0) -> [UInt8] {
    (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed)) }
}

/// A fresh directory under the system temporary directory, removed by `remove()`.
struct TemporaryDirectory {
    let path: String

    init() {
        path = NSTemporaryDirectory() + "tollgate-cache-tests-" + UUID().uuidString
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// A clock tests move by hand.
final class TestClock: @unchecked Sendable {
    // @unchecked: `current` is guarded by `lock`.
    private let lock = NSLock()
    private var current: Date

    init(_ start: Date = TollgateCacheTests.now) { current = start }

    var now: Date { lock.withLock { current } }

    func advance(_ seconds: TimeInterval) { lock.withLock { current = current.addingTimeInterval(seconds) } }
}

/// Runs `body` with a store in a temporary directory, closed and removed afterwards.
func withStore<T>(
    maxSize: Int64 = 1 << 30,
    inlineBodyLimit: Int = 64 << 10,
    clock: TestClock = TestClock(),
    _ body: (CacheStore, TemporaryDirectory) throws -> T
) throws -> T {
    let directory = TemporaryDirectory()
    defer { directory.remove() }
    let store = try CacheStore(
        options: options(directory, maxSize: maxSize, inlineBodyLimit: inlineBodyLimit, clock: clock)
    )
    defer { store.close() }
    return try body(store, directory)
}

/// Store options for a test directory.
func options(
    _ directory: TemporaryDirectory,
    maxSize: Int64 = 1 << 30,
    inlineBodyLimit: Int = 64 << 10,
    clock: TestClock = TestClock()
) -> CacheStoreOptions {
    CacheStoreOptions(
        path: directory.path,
        maxSize: maxSize,
        inlineBodyLimit: inlineBodyLimit,
        accessBatchSize: 1_000,
        accessFlushInterval: 3_600,
        clock: { clock.now }
    )
}

/// Stores `body` for `url` with the given response fields; returns the id.
@discardableResult
func put(
    _ store: CacheStore,
    _ url: String,
    body: [UInt8],
    responseLines: [String] = ["Cache-Control: max-age=60"],
    requestLines: [String] = [],
    status: Int = 200
) throws -> CacheEntryID {
    let head = request(requestLines, url: url)
    return try store.store(
        key: CacheKey(request: head)!,
        request: head,
        response: response(responseLines, status: status),
        body: buffer(body),
        requestTime: now,
        responseTime: now
    )
}

/// The body of an entry as bytes.
func bytes(of entry: CacheEntry) throws -> [UInt8] {
    var body = try entry.body.readAll()
    return body.readBytes(length: body.readableBytes) ?? []
}

/// The file names in a store's `bodies/` directory.
func bodyFiles(_ directory: TemporaryDirectory) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: directory.path + "/bodies")) ?? []).sorted()
}

/// Changes the `variants` database of a closed store behind its back (a record corrupted on disk,
/// an index an older build left inconsistent): `change` gets the transaction, the database and
/// its records in id order.
func changeVariants(
    in directory: TemporaryDirectory,
    _ change: (WriteTransaction, Database, [(key: UInt64, value: [UInt8])]) throws -> Void
) throws {
    let environment = try Environment(path: directory.path)
    defer { environment.close() }
    let variants = try environment.openDatabase(named: "variants")
    try environment.write { txn in
        let records: [(key: UInt64, value: [UInt8])] = try txn.entries(in: variants)
        try change(txn, variants, records)
    }
}
