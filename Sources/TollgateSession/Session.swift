public import Foundation
public import NIOCore
import NIOConcurrencyHelpers
import Synchronization
public import NIOPosix
public import TollgateHTTP
import TollgateTLS

/// Creates and runs tasks that load HTTP requests, in the model of `URLSession`.
///
/// A session keeps its own copy of its ``SessionConfiguration``, a pool of keep-alive
/// connections, and every task it created until that task completes. Delegate messages are
/// delivered on each task's event loop (the session's "delegate queue"). After
/// ``finishTasksAndInvalidate()`` or ``invalidateAndCancel()`` no task can be created.
///
/// ```swift
/// let session = Session(configuration: .ephemeral)
/// let (body, response) = try await session.data(for: Request(string: "http://127.0.0.1:8080/")!)
/// ```
public final class Session: @unchecked Sendable {
    /// The session's configuration (a copy; changing the original changes nothing here).
    public let configuration: SessionConfiguration
    /// The event loops tasks run on.
    public let eventLoopGroup: any EventLoopGroup
    /// A description for logs and the admin API.
    public var sessionDescription: String? {
        get { state.withLock { $0.description } }
        set { state.withLock { $0.description = newValue } }
    }

    private struct State {
        var delegate: (any SessionDelegate)?
        /// The delegate as a task delegate, cast once (tasks ask for it on every message).
        var taskDelegate: (any TaskDelegate)?
        var description: String?
        var tasks: [Int: SessionTask] = [:]
        var nextIdentifier = 0
        var invalidation: Invalidation = .valid
        /// ``detachBackgroundTasks(completion:)`` is under way: no didFinishEvents.
        var detaching = false
        /// Tasks stopped by detaching: they keep their background records. (A task that completed
        /// meanwhile — its delegate was told — loses its record as usual.)
        var detached: Set<Int> = []
        /// What invalidates the session, when an error does (`didBecomeInvalidWithError`).
        var invalidationError: SessionError?
    }

    private enum Invalidation {
        case valid
        /// `finishTasksAndInvalidate`: no new tasks; invalid once the last one completes.
        case finishing
        case invalidated
    }

    /// A `Mutex` stored in the session (not a lock box of its own): taken twice per task, to
    /// register it and to let it go, and an uncontended `Mutex` is an atomic exchange.
    private let state: Mutex<State>
    let pool: ConnectionPool
    /// How many upstream connections the session has started to make (lookup included).
    package var connectionsStarted: Int { pool.connectionsStarted }
    let fileIO: NonBlockingFileIO
    /// A background session's task store (nil for other kinds, or when it could not be attached).
    let background: BackgroundTaskStore?
    /// Why a background session could not attach its task store — another live session has
    /// the identifier (`backgroundSessionInUse`), or the directory cannot be written. Every task
    /// creation then throws it. Nil for other kinds of session.
    public let backgroundError: SessionError?
    /// Answers the upstream proxy's 407 (``SessionConfiguration/upstreamProxyCredential``).
    let upstreamProxyAuthentication: UpstreamProxyAuthentication?
    /// Identities the delegate gave in answer to client-certificate challenges.
    let clientIdentities = ClientIdentityChoices()
    /// The clock the tasks' timeouts go by when not the loop's (tests; see ``TaskClock``).
    package let taskClock: (any TaskClock)?

    /// Creates a session.
    /// - Parameters:
    ///   - configuration: copied; later changes to it do not affect the session.
    ///   - delegate: receives session messages, and task messages of tasks without their own delegate.
    ///     The session holds it strongly until it is invalidated.
    ///   - eventLoopGroup: where tasks run; the shared NIO group by default.
    public convenience init(
        configuration: SessionConfiguration,
        delegate: (any SessionDelegate)? = nil,
        eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton
    ) {
        self.init(configuration: configuration, delegate: delegate, eventLoopGroup: eventLoopGroup, taskClock: nil)
    }

    /// Creates a session whose tasks judge their timeouts by `taskClock` (nil: the loop's tick).
    package init(
        configuration: SessionConfiguration,
        delegate: (any SessionDelegate)?,
        eventLoopGroup: any EventLoopGroup,
        taskClock: (any TaskClock)?
    ) {
        self.taskClock = taskClock
        self.configuration = configuration
        self.eventLoopGroup = eventLoopGroup
        self.state = Mutex(State(delegate: delegate, taskDelegate: delegate as? any TaskDelegate))
        let proxyAuthentication = configuration.upstreamProxyCredential.map(UpstreamProxyAuthentication.init)
        self.upstreamProxyAuthentication = proxyAuthentication
        let contexts = TLSContextCache()
        let minimumVersion = configuration.tlsMinimumSupportedProtocolVersion
        let perHost = configuration.tlsConfiguration
        let identities = clientIdentities
        let pool = ConnectionPool(
            configuration: .init(
                maximumConnectionsPerHost: configuration.httpMaximumConnectionsPerHost,
                idleTimeout: TimeAmount(configuration.connectionIdleTimeout),
                tlsContext: { key in
                    var defaults = TLSConfiguration.makeClientConfiguration()
                    defaults.minimumVersion = minimumVersion
                    // h2 first where a task can use it (a host's rules may take it out again).
                    if key.offersHTTP2 { defaults.applicationProtocols = ["h2", "http/1.1"] }
                    var chosen = perHost?(key.host, key.port, defaults) ?? defaults
                    if chosen.identity == nil { chosen.identity = identities.identity(host: key.host, port: key.port) }
                    // The session decides trust itself, through the server-trust challenge.
                    chosen.deferTrustDecision = true
                    return try contexts.context(for: chosen)
                },
                connectionAddressCheck: configuration.connectionAddressCheck,
                connectionTargets: configuration.connectionTargets,
                connectionTargetChecks: configuration.connectionTargetChecks,
                upstreamProxyFallbacks: configuration.upstreamProxyFallbacks,
                proxyAuthentication: proxyAuthentication,
                connectHeaderFields: configuration.upstreamProxyConnectHeaderFields
            ),
            threadPool: NameLookupThreads.pool
        )
        self.pool = pool
        self.fileIO = NonBlockingFileIO(threadPool: .singleton)
        if let identifier = configuration.kind.backgroundIdentifier {
            do throws(SessionError) {
                background = try BackgroundTaskStore(
                    root: configuration.backgroundDirectory ?? BackgroundTaskStore.defaultRoot(), identifier: identifier
                )
                backgroundError = nil
            } catch {
                background = nil
                backgroundError = error
            }
        } else {
            background = nil
            backgroundError = nil
        }
        // The checks' TLS handshakes are judged by the session's delegate (held by the checker).
        pool.startTargetChecks(on: eventLoopGroup.next()) { evaluation, host, port, decided in
            Session.decideServerTrustForCheck(evaluation, host: host, port: port, delegate: delegate, then: decided)
        }
        reattachBackgroundTasks()
    }

    /// Whether this is a background session (its tasks outlive the process: see docs/session.md).
    public var isBackground: Bool { configuration.kind.backgroundIdentifier != nil }

    /// The session's delegate (nil after invalidation).
    public var delegate: (any SessionDelegate)? { state.withLock { $0.delegate } }

    /// The delegate when it is also a `TaskDelegate` (nil after invalidation).
    var taskDelegate: (any TaskDelegate)? { state.withLock { $0.taskDelegate } }

    // MARK: creating tasks

    /// A data task for `request`; its body, if any, is sent as an upload.
    public func dataTask(with request: Request, on eventLoop: (any EventLoop)? = nil) throws(SessionError) -> DataTask {
        try makeTask(request: request, eventLoop: eventLoop) { DataTask(session: self, identifier: $0, request: request, eventLoop: $1, delegate: nil) }
    }

    /// A data task whose result goes to `completionHandler` (body, response, error) instead of the
    /// data-delivery delegate methods; challenges and redirects still go to the delegate.
    public func dataTask(
        with request: Request,
        on eventLoop: (any EventLoop)? = nil,
        completionHandler: @escaping @Sendable (ByteBuffer?, HTTPResponseHead?, SessionError?) -> Void
    ) throws(SessionError) -> DataTask {
        let task = try dataTask(with: request, on: eventLoop)
        task.engine.completionHandler = completionHandler
        return task
    }

    /// An upload task sending `body` (replacing any body of `request`).
    public func uploadTask(with request: Request, from body: ByteBuffer, on eventLoop: (any EventLoop)? = nil) throws(SessionError) -> UploadTask {
        var request = request
        request.body = .bytes(body)
        return try makeUpload(request, eventLoop)
    }

    /// An upload task sending the file at `path`.
    public func uploadTask(with request: Request, fromFile path: String, on eventLoop: (any EventLoop)? = nil) throws(SessionError) -> UploadTask {
        var request = request
        request.body = .file(path: path)
        return try makeUpload(request, eventLoop)
    }

    /// An upload task whose body the delegate supplies through `needNewBodyStream`.
    public func uploadTask(withStreamedRequest request: Request, on eventLoop: (any EventLoop)? = nil) throws(SessionError) -> UploadTask {
        var request = request
        request.body = .stream
        return try makeUpload(request, eventLoop)
    }

    /// A download task: the body goes to a temporary file handed to `didFinishDownloadingTo`.
    public func downloadTask(with request: Request, on eventLoop: (any EventLoop)? = nil) throws(SessionError) -> DownloadTask {
        try makeTask(request: request, eventLoop: eventLoop) {
            DownloadTask(session: self, identifier: $0, request: request, eventLoop: $1, delegate: nil)
        }
    }

    /// A download task whose result goes to `completionHandler` (the file's path, valid only
    /// during the call; the response; the error, carrying resume data when it can be resumed)
    /// instead of `didFinishDownloadingTo`.
    public func downloadTask(
        with request: Request,
        on eventLoop: (any EventLoop)? = nil,
        completionHandler: @escaping @Sendable (String?, HTTPResponseHead?, SessionError?) -> Void
    ) throws(SessionError) -> DownloadTask {
        let task = try downloadTask(with: request, on: eventLoop)
        task.engine.downloadCompletion = completionHandler
        return task
    }

    /// A download task that goes on where the one that produced `resumeData` stopped: it asks
    /// for the rest (`Range: bytes=N-` with `If-Range`); a 206 is appended to the partial file
    /// (`didResumeAtOffset(N, …)`), a 200 starts it over (`didResumeAtOffset(0, …)`).
    ///
    /// - Throws: `cannotResumeDownload` for data that is not Tollgate resume data, of another
    ///   version, or whose partial file is gone; `sessionInvalidated`.
    public func downloadTask(withResumeData resumeData: Data, on eventLoop: (any EventLoop)? = nil) throws(SessionError) -> DownloadTask {
        let resume = try DownloadResumeData.decode(resumeData)
        guard let request = resume.resumingRequest() else {
            throw SessionError(.cannotResumeDownload, nil, "the resume data's request does not decode")
        }
        let task = try downloadTask(with: request, on: eventLoop)
        task.engine.resume = resume
        return task
    }

    /// ``downloadTask(withResumeData:on:)`` with a completion handler (see
    /// ``downloadTask(with:on:completionHandler:)``).
    public func downloadTask(
        withResumeData resumeData: Data,
        on eventLoop: (any EventLoop)? = nil,
        completionHandler: @escaping @Sendable (String?, HTTPResponseHead?, SessionError?) -> Void
    ) throws(SessionError) -> DownloadTask {
        let task = try downloadTask(withResumeData: resumeData, on: eventLoop)
        task.engine.downloadCompletion = completionHandler
        return task
    }

    /// A stream task: a TCP connection to `host:port`, made on `resume()`.
    public func streamTask(withHostName host: String, port: Int, on eventLoop: (any EventLoop)? = nil) throws(SessionError) -> StreamTask {
        let url = HTTPURL(scheme: "tcp", host: host, port: port)
        return try makeTask(request: Request(url: url), eventLoop: eventLoop) {
            StreamTask(session: self, identifier: $0, host: host, port: port, eventLoop: $1, delegate: nil)
        }
    }

    /// Registers the download task a data task becomes (same request, same loop, same delegate).
    func adoptDownload(from task: SessionTask) -> DownloadTask {
        state.withLock { state in
            state.nextIdentifier += 1
            let download = DownloadTask(
                session: self, identifier: state.nextIdentifier, request: task.originalRequest,
                eventLoop: task.eventLoop, delegate: task.delegate
            )
            state.tasks[download.taskIdentifier] = download
            return download
        }
    }

    /// Registers the stream task an upgraded data task becomes.
    func adoptStream(from task: SessionTask) -> StreamTask {
        state.withLock { state in
            state.nextIdentifier += 1
            let stream = StreamTask(
                session: self, identifier: state.nextIdentifier, host: nil, port: nil,
                request: task.originalRequest, eventLoop: task.eventLoop, delegate: task.delegate
            )
            state.tasks[stream.taskIdentifier] = stream
            return stream
        }
    }

    /// Distinguishes sessions in temporary file names.
    var identity: String { String(UInt(bitPattern: ObjectIdentifier(self).hashValue), radix: 36) }

    private func makeUpload(_ request: Request, _ eventLoop: (any EventLoop)?) throws(SessionError) -> UploadTask {
        try checkBackgroundAllows(UploadTask.self, request: request)
        let request = try backgroundCopyOfUpload(request)
        return try makeTask(request: request, eventLoop: eventLoop) {
            UploadTask(session: self, identifier: $0, request: request, eventLoop: $1, delegate: nil)
        }
    }

    func makeTask<T: SessionTask>(
        request: Request,
        eventLoop: (any EventLoop)?,
        _ make: (Int, any EventLoop) -> T
    ) throws(SessionError) -> T {
        try checkBackgroundAllows(T.self, request: request)
        let loop = eventLoop ?? eventLoopGroup.next()
        let task: T? = state.withLock { state in
            guard case .valid = state.invalidation else { return nil }
            state.nextIdentifier += 1
            let task = make(state.nextIdentifier, loop)
            state.tasks[task.taskIdentifier] = task
            return task
        }
        guard let task else {
            throw SessionError(.sessionInvalidated, request.url, "the session was invalidated; no task can be created")
        }
        recordBackgroundTask(task)
        if task.eventLoop.inEventLoop {
            // Told before the task is returned: nobody else can have set its delegate yet, so
            // the loop's copies (which its later messages use too) are the current ones.
            DelegateDispatch.notify(task.taskDelegates) { $0.taskDidCreate(task) }
        } else {
            // Read under the locks when the message is sent, so a delegate set from another
            // thread right after creation is told too when it was set before the loop got to
            // this (the loop's own copy of the delegate may not be updated yet).
            task.eventLoop.execute { DelegateDispatch.notify(task.currentTaskDelegates) { $0.taskDidCreate(task) } }
        }
        return task
    }

    // MARK: tasks and life

    /// Every task that has not completed, in creation order.
    public var allTasks: [SessionTask] {
        state.withLock { $0.tasks.values.sorted { $0.taskIdentifier < $1.taskIdentifier } }
    }

    /// Lets running tasks finish, refuses new ones, and invalidates the session when the last
    /// task completes (`didBecomeInvalidWithError(nil)`).
    public func finishTasksAndInvalidate() {
        guard !isShared else { return }
        let invalidateNow = state.withLock { state -> Bool in
            guard case .valid = state.invalidation else { return false }
            state.invalidation = .finishing
            return state.tasks.isEmpty
        }
        if invalidateNow { becomeInvalid(error: nil) }
    }

    /// Cancels every task, refuses new ones, and invalidates the session.
    public func invalidateAndCancel() {
        guard !isShared else { return }
        invalidateAndCancel(dueTo: nil)
    }

    /// ``invalidateAndCancel()`` because of `error`, which `didBecomeInvalidWithError` carries
    /// (for the session's owner: a background session whose identifier is taken, a store gone).
    package func invalidateAndCancel(dueTo error: SessionError?) {
        let tasks = state.withLock { state -> [SessionTask]? in
            if case .invalidated = state.invalidation { return nil }
            state.invalidation = .finishing
            if state.invalidationError == nil { state.invalidationError = error }
            return Array(state.tasks.values)
        }
        guard let tasks else { return }
        for task in tasks { task.cancel() }
        if state.withLock({ $0.tasks.isEmpty }) { becomeInvalid(error: nil) }
    }

    /// Makes later requests use new connections: idle keep-alive connections close now, busy ones
    /// when their exchange ends. (The stores write through, so there is nothing else to flush.)
    public func flush() {
        pool.retireConnections()
    }

    /// Empties the cache, cookie and credential stores and makes later requests use new
    /// connections.
    public func reset() {
        configuration.responseCache?.removeAll()
        configuration.cookieStorage?.removeAll()
        configuration.credentialStorage?.removeAll()
        pool.retireConnections()
    }

    func taskDidComplete(_ task: SessionTask) {
        let (invalidateNow, detaching, empty, detached) = state.withLock { state -> (Bool, Bool, Bool, Bool) in
            state.tasks[task.taskIdentifier] = nil
            let detached = state.detached.remove(task.taskIdentifier) != nil
            if case .finishing = state.invalidation, state.tasks.isEmpty { return (true, state.detaching, true, detached) }
            return (false, state.detaching, state.tasks.isEmpty, detached)
        }
        // A detached task goes on in the next session with this identifier: its record stays.
        if !detached { background?.remove(task.taskIdentifier) }
        let finishedEvents = background != nil && empty && !detaching
        if invalidateNow {
            becomeInvalid(error: nil, finishedEvents: finishedEvents)
        } else if finishedEvents, let delegate {
            task.eventLoop.execute { delegate.sessionDidFinishEvents(forBackgroundSession: self) }
        }
    }

    /// Invalidates the session: the pool closes, a background session's store is written out
    /// and its identifier released (off the event loops: it waits for the last commit), then the
    /// delegate hears `didFinishEvents` (when `finishedEvents`) and `didBecomeInvalidWithError`.
    func becomeInvalid(error: (any Error)?, finishedEvents: Bool = false) {
        let (delegate, cause) = state.withLock { state -> ((any SessionDelegate)?, (any Error)?) in
            guard case .finishing = state.invalidation else { return (nil, nil) }
            state.invalidation = .invalidated
            defer {
                state.delegate = nil
                state.taskDelegate = nil
            }
            return (state.delegate, error ?? state.invalidationError)
        }
        pool.shutdown()
        let loop = eventLoopGroup.next()
        let tellDelegate = { @Sendable in
            guard let delegate else { return }
            loop.execute {
                if finishedEvents { delegate.sessionDidFinishEvents(forBackgroundSession: self) }
                delegate.session(self, didBecomeInvalidWithError: cause)
            }
        }
        guard let background else {
            tellDelegate()
            return
        }
        // Closing waits for the store's last commit: not on an event loop.
        DispatchQueue.global().async {
            background.close()
            tellDelegate()
        }
    }

    /// Starts detaching: no new tasks, and no didFinishEvents (the tasks the detach stops keep
    /// their records: ``markDetached(_:)``). Returns the tasks to stop, nil when the session is
    /// already invalid.
    func beginDetaching() -> [SessionTask]? {
        state.withLock { state -> [SessionTask]? in
            if case .invalidated = state.invalidation { return nil }
            state.invalidation = .finishing
            state.detaching = true
            return Array(state.tasks.values)
        }
    }

    /// Notes that `task` is stopped by detaching (it keeps its record when it leaves).
    func markDetached(_ task: SessionTask) {
        _ = state.withLock { $0.detached.insert(task.taskIdentifier) }
    }

    /// Registers a task re-created from a background record, under its recorded identifier.
    func registerReattached(_ task: SessionTask) {
        state.withLock { state in
            state.nextIdentifier = max(state.nextIdentifier, task.taskIdentifier)
            state.tasks[task.taskIdentifier] = task
        }
    }

    /// Whether no task is left (detaching waits for this).
    var hasNoTasks: Bool { state.withLock { $0.tasks.isEmpty } }
}
