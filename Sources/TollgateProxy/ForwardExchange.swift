import Foundation
import NIOCore
import NIOHTTP1
import TollgateHTTP
import TollgateSession

/// One request of a forward-proxy client, carried out by a session task whose delegate it is,
/// and the response written back to the client.
///
/// The task runs on the client channel's event loop, so its delegate messages and the channel's
/// events arrive on the same thread: all state here is touched only on ``eventLoop`` (hence
/// `@unchecked Sendable`, which `TaskDelegate` requires).
final class ForwardExchange: DataTaskDelegate, @unchecked Sendable {
    private enum ResponseState {
        /// Nothing sent to the client yet.
        case notStarted
        /// The head went out; body parts follow.
        case streaming
    }

    let head: NIOHTTP1.HTTPRequestHead
    let eventLoop: any EventLoop
    private let environment: ClientExchangeHandler.Environment
    private let clientAddress: String
    private let startTime = Int(Date().timeIntervalSince1970)

    /// The client connection; nil once the exchange is finished.
    private var connection: ClientExchangeHandler?
    private var task: DataTask?
    private var bodyStream: BodyStream?
    private var bodyStreamGiven = false
    private var hasBody = false
    private var responseState = ResponseState.notStarted
    /// The answer to give instead of the task's error (set when the exchange itself cancels the task).
    private var ownAnswer: OwnResponse?
    private var closeAfterResponse = false
    private var suspendedForClient = false
    private var status: Int?
    private var bodyBytesSent: Int64 = 0

    /// The whole request (head, body, end) has arrived from the client.
    private(set) var requestEnded = false
    /// The response ended or was abandoned, and the exchange was logged.
    private(set) var isFinished = false

    init(
        head: NIOHTTP1.HTTPRequestHead,
        connection: ClientExchangeHandler,
        eventLoop: any EventLoop,
        environment: ClientExchangeHandler.Environment,
        clientAddress: String
    ) {
        self.head = head
        self.connection = connection
        self.eventLoop = eventLoop
        self.environment = environment
        self.clientAddress = clientAddress
    }

    // MARK: the request

    /// Decides what to do with the request head and, to forward it, creates and resumes the task.
    func start() {
        hasBody =
            head.headers.contains(name: "Transfer-Encoding")
            || (head.headers.first(name: "Content-Length").flatMap { Int64($0) } ?? 0) > 0
        // The decoder stops parsing after an upgrade request, so no request can follow it.
        closeAfterResponse = !head.isKeepAlive || head.headers.contains(name: "Upgrade")
        switch ForwardTarget.classify(head) {
        case .refuse(let answer) where head.method == .CONNECT:
            status = answer.status
            bodyBytesSent = Int64(answer.body.readableBytes)
            let connection = finish()
            connection?.sendRawAndClose(answer.wireBytes(version: head.version))
        case .refuse(let answer):
            respond(answer)
        case .forward(let url):
            startTask(url)
        }
    }

    private func startTask(_ url: HTTPURL) {
        guard let connection else { return }
        let expectsContinue = head.headers.first(name: "Expect")?.lowercased() == "100-continue"
        let request = Request(
            method: TollgateHTTP.HTTPMethod(head.method.rawValue),
            url: url,
            headerFields: forwardedHeaderFields(dropExpect: expectsContinue)
        )
        do {
            let session = environment.session
            let task: DataTask
            if hasBody {
                task = try session.uploadTask(withStreamedRequest: request, on: eventLoop)
                bodyStream = BodyStream()
            } else {
                task = try session.dataTask(with: request, on: eventLoop)
            }
            self.task = task
            task.delegate = self
            if expectsContinue, hasBody, head.version == .http1_1 {
                // The session does not relay interim responses, so the proxy answers the
                // expectation itself rather than leave the client waiting for it.
                connection.send(.head(NIOHTTP1.HTTPResponseHead(version: .http1_1, status: .continue)))
            }
            task.resume()
            if !connection.isWritable { clientWritabilityChanged(false) }
        } catch {
            respond(OwnResponse(ProxyErrorCode(for: error), error.description))
        }
    }

    /// The client's header fields as they go upstream: hop-by-hop fields removed, Host left to
    /// the session (it derives it from the URL, as RFC 9112 §3.2.2 asks of a proxy), Via added.
    private func forwardedHeaderFields(dropExpect: Bool) -> HeaderFields {
        var fields = HeaderFields(head.headers.map { ($0.name, $0.value) })
        let chunked = fields.contains("Transfer-Encoding")
        fields = HopByHopHeaders.removing(from: fields)
        fields.remove("Host")
        if dropExpect { fields.remove("Expect") }
        // A chunked body is re-framed by the session; a stray Content-Length must not contradict it.
        if chunked { fields.remove("Content-Length") }
        fields.add(name: "Via", value: "\(head.version.major).\(head.version.minor) tollgate")
        return fields
    }

    /// A piece of the request body from the client: handed to the session's body stream.
    func clientBodyReceived(_ buffer: ByteBuffer) {
        guard !isFinished, let bodyStream, let connection else { return }
        connection.trackBodyPiece(bodyStream.write(buffer, on: eventLoop))
    }

    /// The request ended.
    func clientRequestEnded() {
        requestEnded = true
        bodyStream?.finish()
    }

    /// The client's request could not be parsed (mid-body): answer 400 if nothing was sent yet.
    func clientRequestInvalid(_ message: String) {
        guard !isFinished else { return }
        closeAfterResponse = true
        let answer = OwnResponse(.badRequest, message)
        if let task {
            ownAnswer = answer
            task.cancel()
        } else {
            respond(answer)
        }
    }

    /// The client closed the connection: the task is cancelled.
    func clientClosed() {
        guard !isFinished else { return }
        if let task {
            task.cancel()
        } else {
            finish()
        }
    }

    /// Back-pressure: a client that does not read suspends the task (nothing more is read from the
    /// origin); when it reads again the task resumes.
    func clientWritabilityChanged(_ writable: Bool) {
        guard let task, !isFinished else { return }
        if !writable, !suspendedForClient {
            suspendedForClient = true
            task.suspend()
        } else if writable, suspendedForClient {
            suspendedForClient = false
            task.resume()
        }
    }

    // MARK: task delegate

    func task(
        _ task: SessionTask,
        needNewBodyStream completionHandler: @escaping @Sendable (BodyStreamDecision) -> Void
    ) {
        // The client's body streams through once; it cannot be given again for a retry.
        if let bodyStream, !bodyStreamGiven {
            bodyStreamGiven = true
            completionHandler(.stream(bodyStream))
        } else {
            completionHandler(.stream(nil))
        }
    }

    func task(
        _ task: SessionTask,
        willPerformHTTPRedirection response: TollgateHTTP.HTTPResponseHead,
        newRequest: Request,
        completionHandler: @escaping @Sendable (RedirectDecision) -> Void
    ) {
        // A proxy passes redirects to its client; following them is the client's business.
        completionHandler(.deliverRedirectResponse)
    }

    func task(
        _ task: SessionTask,
        didReceive challenge: AuthenticationChallenge,
        completionHandler: @escaping @Sendable (ChallengeDisposition) -> Void
    ) {
        // No credentials are configured in this build: a 401 goes to the client as it is.
        completionHandler(.performDefaultHandling)
    }

    func dataTask(
        _ task: DataTask,
        didReceive response: TollgateHTTP.HTTPResponseHead,
        completionHandler: @escaping @Sendable (ResponseDisposition) -> Void
    ) {
        guard !isFinished, let connection, connection.isActive else {
            completionHandler(.cancel)
            return
        }
        guard response.status >= 200 else {
            ownAnswer = OwnResponse(
                .upstreamProtocolError,
                "the upstream answered \(response.status) (switching protocols), which this build does not relay"
            )
            completionHandler(.cancel)
            return
        }
        connection.send(.head(clientResponseHead(for: response)))
        responseState = .streaming
        status = response.status
        completionHandler(.allow)
    }

    func dataTask(_ task: DataTask, didReceive data: ByteBuffer) {
        guard !isFinished, case .streaming = responseState, let connection else { return }
        bodyBytesSent += Int64(data.readableBytes)
        connection.send(.body(.byteBuffer(data)))
    }

    func task(_ task: SessionTask, didCompleteWithError error: SessionError?) {
        self.task = nil
        guard !isFinished else { return }
        switch (responseState, error) {
        case (.streaming, nil):
            let connection = finish()
            if closeAfterResponse {
                connection?.sendEndAndClose()
            } else {
                connection?.send(.end(nil))
            }
        case (.streaming, .some):
            // Part of the response is out: closing is the only way to tell the client it is
            // incomplete (a short body on a kept-alive connection would look whole).
            finish()?.close()
        case (.notStarted, let error):
            let answer =
                ownAnswer
                ?? error.map { OwnResponse(ProxyErrorCode(for: $0), $0.description) }
                ?? OwnResponse(.upstreamProtocolError, "the task ended without a response")
            respond(answer)
        }
    }

    // MARK: the response

    /// The upstream response head as the client gets it.
    private func clientResponseHead(for response: TollgateHTTP.HTTPResponseHead) -> NIOHTTP1.HTTPResponseHead {
        var fields = HopByHopHeaders.removing(from: response.headerFields)
        if response.headerFields.contains("Transfer-Encoding") {
            // Transfer-Encoding overrides Content-Length (RFC 9112 §6.3); NIO frames the body anew.
            fields.remove("Content-Length")
        }
        let originVersion =
            response.version.hasPrefix("HTTP/") ? String(response.version.dropFirst(5)) : response.version
        fields.add(name: "Via", value: "\(originVersion) tollgate")
        let mayHaveBody = head.method != .HEAD && !response.statusForbidsBody
        if head.version == .http1_0, mayHaveBody, !fields.contains("Content-Length") {
            // An HTTP/1.0 client cannot take chunked framing: the end of the body is the close.
            closeAfterResponse = true
        }
        if closeAfterResponse {
            fields.add(name: "Connection", value: "close")
        } else if head.version == .http1_0 {
            fields.add(name: "Connection", value: "keep-alive")
        }
        var headers = HTTPHeaders()
        for field in fields { headers.add(name: field.name, value: field.value) }
        return NIOHTTP1.HTTPResponseHead(
            version: head.version,
            status: HTTPResponseStatus(statusCode: response.status, reasonPhrase: response.reason),
            headers: headers
        )
    }

    /// Answers with a response of the proxy's own.
    private func respond(_ answer: OwnResponse) {
        guard let connection, connection.isActive else {
            finish()
            return
        }
        // Unread body bytes would be taken for the next request: close instead of draining them.
        let close = closeAfterResponse || (hasBody && !requestEnded)
        status = answer.status
        bodyBytesSent = Int64(answer.body.readableBytes)
        connection.send(.head(answer.head(version: head.version, close: close)), flush: false)
        connection.send(.body(.byteBuffer(answer.body)), flush: false)
        finish()
        if close {
            connection.sendEndAndClose()
        } else {
            connection.send(.end(nil))
        }
    }

    /// Marks the exchange finished and logs it, before its last write: writing the end may at once
    /// deliver the client's next request, which starts the next exchange.
    /// Returns the connection for that last write.
    @discardableResult
    private func finish() -> ClientExchangeHandler? {
        guard !isFinished else { return nil }
        isFinished = true
        let connection = self.connection
        self.connection = nil
        environment.accessLog.record(
            AccessLogEntry(
                clientAddress: clientAddress,
                time: startTime,
                method: head.method.rawValue,
                target: head.uri,
                version: "HTTP/\(head.version.major).\(head.version.minor)",
                status: status,
                bodyBytes: bodyBytesSent,
                referer: head.headers.first(name: "Referer"),
                userAgent: head.headers.first(name: "User-Agent")
            )
        )
        return connection
    }
}
