/// How a stored body file goes to a client: as a file region (`sendfile`, no copy through the
/// proxy) or read in pieces and written.
///
/// To a remote client `sendfile` is best: the kernel hands page-cache pages to the network
/// without a copy. To a client on the same machine (loopback: a developer's tools, a CI
/// build, the users the default configuration admits) it is not, for large bodies: the client
/// then copies every byte straight from page-cache pages that are cold in the CPU's caches,
/// and its core becomes the limit while the proxy's idles. Read and written by the proxy, the
/// body crosses the proxy's core once more but reaches the client hot, and the two cores work
/// in parallel: on the bench machine 8 MiB hits went from 1.9 GB/s (sendfile) to 3.1 GB/s
/// (docs/performance.md). At 256 KiB the two ways measured the same, so below
/// ``loopbackSendfileLimit`` `sendfile` stays (less CPU).
enum StoredBodyTransfer {
    /// Stored bodies longer than this go to a loopback client through the read path.
    static let loopbackSendfileLimit: Int64 = 1 << 20

    /// Whether a stored body of `length` bytes goes to the client as a file region.
    static func usesSendfile(length: Int64, clientIsLoopback: Bool) -> Bool {
        !(clientIsLoopback && length > loopbackSendfileLimit)
    }
}
