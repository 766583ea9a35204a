public import Foundation
public import TollgateHTTP

/// The error a task completes with, in the model of `URLError`.
///
/// A struct with a private code enum (not a public enum) so that codes can be added
/// without breaking callers; compare with the static members (`error.code == .timedOut`).
public struct SessionError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The kind of failure.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case cancelled
            case timedOut
            case cannotFindHost
            case cannotConnectToHost
            case networkConnectionLost
            case badServerResponse
            case httpTooManyRedirects
            case badURL
            case unsupportedURL
            case serverCertificateUntrusted
            case pinMismatch
            case clientCertificateRequired
            case secureConnectionFailed
            case userAuthenticationRequired
            case userCancelledAuthentication
            case requestBodyStreamExhausted
            case resourceUnavailable
            case cannotWriteToFile
            case sessionInvalidated
            case notConnectedToInternet
            case cannotResumeDownload
            case dataLengthExceedsMaximum
            case backgroundSessionInUse
            case backgroundTaskNotSupported
            case unsupportedOperation
        }

        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The task was cancelled (`cancel()`, or a delegate answered cancel).
        public static let cancelled = Code(.cancelled)
        /// A request or resource timeout fired.
        public static let timedOut = Code(.timedOut)
        /// Name resolution failed.
        public static let cannotFindHost = Code(.cannotFindHost)
        /// Every address of the host refused or failed the connection.
        public static let cannotConnectToHost = Code(.cannotConnectToHost)
        /// The connection closed or failed while a request was in flight.
        public static let networkConnectionLost = Code(.networkConnectionLost)
        /// The server's response could not be parsed as HTTP/1.1.
        public static let badServerResponse = Code(.badServerResponse)
        /// More redirects than the session allows (16).
        public static let httpTooManyRedirects = Code(.httpTooManyRedirects)
        /// The URL could not be parsed.
        public static let badURL = Code(.badURL)
        /// The URL's scheme is not http or https.
        public static let unsupportedURL = Code(.unsupportedURL)
        /// The server's certificate chain was not trusted.
        public static let serverCertificateUntrusted = Code(.serverCertificateUntrusted)
        /// The server's chain was trusted but matched none of the configured pins.
        public static let pinMismatch = Code(.pinMismatch)
        /// The server asked for a client certificate and none was given.
        public static let clientCertificateRequired = Code(.clientCertificateRequired)
        /// The TLS handshake failed for another reason.
        public static let secureConnectionFailed = Code(.secureConnectionFailed)
        /// The origin required authentication that could not be given.
        public static let userAuthenticationRequired = Code(.userAuthenticationRequired)
        /// A challenge was answered with cancel.
        public static let userCancelledAuthentication = Code(.userCancelledAuthentication)
        /// The body stream could not be provided again (for a redirect or a retry).
        public static let requestBodyStreamExhausted = Code(.requestBodyStreamExhausted)
        /// The cache policy forbade the network and nothing usable was stored.
        public static let resourceUnavailable = Code(.resourceUnavailable)
        /// A download could not be written to its file.
        public static let cannotWriteToFile = Code(.cannotWriteToFile)
        /// The session was invalidated before the task could run.
        public static let sessionInvalidated = Code(.sessionInvalidated)
        /// Waiting for connectivity timed out (only with `waitsForConnectivity`).
        public static let notConnectedToInternet = Code(.notConnectedToInternet)
        /// Resume data that does not decode, is of another version, or whose partial file is gone.
        public static let cannotResumeDownload = Code(.cannotResumeDownload)
        /// A WebSocket message was larger than the task's `maximumMessageSize` (closed with 1009).
        public static let dataLengthExceedsMaximum = Code(.dataLengthExceedsMaximum)
        /// Another live session (in this process or another) has the background identifier
        /// (`URLError.backgroundSessionInUseByAnotherProcess`).
        public static let backgroundSessionInUse = Code(.backgroundSessionInUse)
        /// A background session only runs upload tasks from a file and download tasks.
        public static let backgroundTaskNotSupported = Code(.backgroundTaskNotSupported)
        /// A call this implementation does not support (``StreamTask/stopSecureConnection()``).
        public static let unsupportedOperation = Code(.unsupportedOperation)

        /// A stable short name, suitable for a metric label.
        public var description: String { base.rawValue }
    }

    /// The kind of failure.
    public var code: Code
    /// The URL the task was loading when it failed.
    public var failingURL: HTTPURL?
    /// What exactly happened, in one line (no secrets).
    public var detail: String
    /// A failed or cancelled download's resume data, when it can be resumed
    /// (`NSURLSessionDownloadTaskResumeData`): pass it to ``Session/downloadTask(withResumeData:on:)``.
    public var resumeData: Data?
    /// The server provably did not process the request (RFC 9113 §8.7: its stream was refused
    /// with REFUSED_STREAM, was above a GOAWAY's last stream id, or never opened): the task may
    /// send it again, whatever its method. Set by the HTTP/2 connection; not part of equality.
    var notProcessed = false
    /// An upstream proxy answered the CONNECT, and not with a tunnel (a refusal, a 407 it would
    /// not take, something that is not HTTP): the proxy is up, so another of the session's
    /// proxies is not tried for it. Not part of equality.
    var answeredByProxy: Bool { proxyAnswer != .none }
    /// Whether an upstream proxy refused the `CONNECT` with `508 Loop Detected` (RFC 8586): a
    /// proxy in front relays it as one, so that a forwarding loop reads as a loop all the way
    /// back. Not part of equality.
    public var upstreamProxyDetectedLoop: Bool { proxyAnswer == .loopDetected }
    /// How an upstream proxy answered the CONNECT, in one byte (the size of the `Bool` it
    /// replaced: an error is copied through every task's completion, and a larger one cost a
    /// cache hit 1 % more instructions in its value witnesses).
    var proxyAnswer = ProxyAnswer.none

    /// ``proxyAnswer``'s values.
    enum ProxyAnswer: UInt8 {
        /// No proxy answered (or none was asked).
        case none
        /// A proxy answered, and not with a tunnel.
        case answered
        /// A proxy answered `508 Loop Detected`.
        case loopDetected
    }

    /// Creates an error.
    public init(_ code: Code, _ url: HTTPURL? = nil, _ detail: String = "") {
        self.code = code
        self.failingURL = url
        self.detail = detail
    }

    /// Errors are equal when their codes are (the URL and detail describe, they do not identify).
    public static func == (lhs: SessionError, rhs: SessionError) -> Bool { lhs.code == rhs.code }

    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    public var description: String {
        var text = code.description
        if let failingURL { text += " (\(failingURL.absoluteString))" }
        if !detail.isEmpty { text += ": \(detail)" }
        return text
    }
}
