import Foundation
import NIOCore

/// The stored variants of recently looked-up keys, as of one LMDB snapshot.
///
/// A lookup in LMDB is a read transaction and, per variant, three reads (the key's variant ids,
/// the variant's last access, its record) and a decoding. While no write has committed since,
/// the same reads give the same variants, so a lookup answers from here: the memo belongs to
/// the environment's last committed transaction id, which each lookup compares
/// (`mdb_env_info`, no transaction), and any commit — a store, a 304 merge, an eviction,
/// another process's write — leaves it behind (the next lookup starts it anew at the newer
/// snapshot). The store's own access batches, which change only last-access times, move it
/// along instead (``accessBatchCommitted(as:)``). Nothing stale is served: an entry is only ever handed out while the
/// snapshot it was read from is still the newest.
///
/// Inline bodies stay in their entries, so every hit of a small object shares one buffer
/// instead of copying it out of the map. Bounded by keys and by inline body bytes; emptied
/// when either is full.
final class LookupMemo: @unchecked Sendable {
    // @unchecked: every stored property is only touched while holding `lock`.
    private let lock = NSLock()
    /// The transaction id of the snapshot the remembered variants were read from.
    private var snapshot = -1
    private var byKey: [CacheKey: [CacheEntry]] = [:]
    private var bodyBytes = 0

    /// Keys remembered at most.
    static let capacity = 4096
    /// Inline body bytes remembered at most (a key's bodies larger than this are not kept).
    static let bodyByteLimit = 8 << 20

    /// The variants of `key` read at snapshot `current` (the newest committed transaction
    /// id), or nil when the memo does not know them as of that snapshot.
    func variants(of key: CacheKey, at current: Int) -> [CacheEntry]? {
        lock.lock()
        defer { lock.unlock() }
        guard current == snapshot else { return nil }
        return byKey[key]
    }

    /// Remembers the variants of `key` as a read transaction at `snapshot` found them. A read
    /// from a snapshot older than the memo's is not kept; a newer one starts the memo anew.
    func remember(_ variants: [CacheEntry], of key: CacheKey, at snapshot: Int) {
        let bytes = Self.inlineBytes(of: variants)
        guard bytes <= Self.bodyByteLimit else { return }
        lock.lock()
        defer { lock.unlock() }
        if snapshot > self.snapshot {
            forgetAll()
            self.snapshot = snapshot
        }
        guard snapshot == self.snapshot else { return }
        if let replaced = byKey.removeValue(forKey: key) {
            bodyBytes -= Self.inlineBytes(of: replaced)
        }
        if byKey.count >= Self.capacity || bodyBytes + bytes > Self.bodyByteLimit { forgetAll() }
        byKey[key] = variants
        bodyBytes += bytes
    }

    /// An access batch committed as transaction `id`. It wrote last-access times only, which no
    /// lookup serves: variants read at the snapshot just before it are as good at it, so the memo
    /// moves on instead of starting anew once a second (or per 64 variants hit) under load.
    func accessBatchCommitted(as id: Int) {
        lock.lock()
        defer { lock.unlock() }
        if snapshot == id - 1 { snapshot = id }
    }

    /// The snapshot the memo belongs to (tests).
    var currentSnapshot: Int {
        lock.lock()
        defer { lock.unlock() }
        return snapshot
    }

    /// How many keys are remembered (tests).
    var count: Int {
        lock.lock()
        defer { lock.unlock() }
        return byKey.count
    }

    private func forgetAll() {
        byKey.removeAll(keepingCapacity: true)
        bodyBytes = 0
    }

    private static func inlineBytes(of variants: [CacheEntry]) -> Int {
        var bytes = 0
        for variant in variants {
            if case .inline(let body) = variant.body { bytes += body.readableBytes }
        }
        return bytes
    }
}
