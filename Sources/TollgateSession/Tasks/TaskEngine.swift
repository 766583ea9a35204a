import Foundation
import NIOCore
import TollgateCache
import TollgateHTTP

/// The working state of a running task; touched only on the task's event loop.
struct TaskEngine {
    /// Where the work is, which exchange's events are the task's, and the delivery gate.
    var machine = TaskMachine<OriginConnection, Scheduled<Void>>()
    var startDate: Date?
    var transactions: [TransactionMetrics] = []
    var request: Request?
    var body: BodySource = .none
    var bodyStream: BodyStream?

    var responseDelivered = false
    /// The body kept whole: for completion handlers and the cache.
    var wholeBody: ByteBuffer?
    var completionHandler: (@Sendable (ByteBuffer?, HTTPResponseHead?, SessionError?) -> Void)?

    /// When the request timeout runs out (moved by every event; nil: not running).
    var idleDeadline: NIODeadline?
    var idleInterval: Duration = .zero
    /// The exchange when the request deadline was last moved.
    var idleGeneration = 0
    /// When the resource timeout runs out (nil: not running, e.g. while suspended).
    var resourceDeadline: NIODeadline?
    /// What is left of the resource timeout; it does not run while the task is suspended.
    var resourceBudget: TimeAmount?
    var runningSince: NIODeadline?
    var reportedWaitingForConnectivity = false
    /// When the current request was sent and its response head arrived (RFC 9111 times).
    var requestDate: Date?
    var responseDate: Date?

    /// The cache's part of the task (see Cache/).
    var cache = TaskCache()
    /// The running exchange's event forwarder.
    var exchange: TaskExchange?
    /// A 101's end arrived: the connection can now be handed to a stream task.
    var upgradeEnded = false
    /// The delegate answered becomeStream before the 101's end arrived.
    var becomeStreamPending = false
    /// Where a download task writes the body.
    var download: DownloadFile?
    /// A download task made from resume data, until its response says whether it resumes.
    var resume: DownloadResumeData?
    /// The completion handler of a download task made with one (file path, response, error).
    var downloadCompletion: (@Sendable (String?, HTTPResponseHead?, SessionError?) -> Void)?
    /// Credentials that failed per protection space (`previousFailureCount`).
    var authenticationFailures: [ProtectionSpace: Int] = [:]
    /// Credentials the session put on requests and what became of them (SessionTask+Challenge).
    var authentication = TaskAuthentication()
    /// A completion handler was told the result already (a download's, with its file).
    var toldByCompletionHandler = false
    /// A `multipart/x-mixed-replace` response being split into parts (SessionTask+Multipart).
    var multipart: MultipartDelivery?
    /// The request on the wire went to the upstream proxy with `Proxy-Authorization`.
    var sentProxyAuthorization = false

    /// The current transaction's metrics, changed in place (no copy of the whole record per field).
    var transaction: TransactionMetrics {
        get { transactions[transactions.count - 1] }
        _modify { yield &transactions[transactions.count - 1] }
    }
}
