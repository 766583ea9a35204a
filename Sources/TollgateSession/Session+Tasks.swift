import Foundation
public import NIOCore
import NIOPosix
public import TollgateHTTP

/// Upload tasks with completion handlers (`uploadTaskWithRequest:fromData:completionHandler:`,
/// `…fromFile:completionHandler:`): the body and response go to the handler, not to the
/// delegate's response, data and completion methods; challenges, redirects and
/// `didSendBodyData` still go to the delegate.
extension Session {
    /// An upload task sending `body`, its result given to `completionHandler`.
    public func uploadTask(
        with request: Request,
        from body: ByteBuffer,
        on eventLoop: (any EventLoop)? = nil,
        completionHandler: @escaping @Sendable (ByteBuffer?, HTTPResponseHead?, SessionError?) -> Void
    ) throws(SessionError) -> UploadTask {
        let task = try uploadTask(with: request, from: body, on: eventLoop)
        task.engine.completionHandler = completionHandler
        return task
    }

    /// An upload task sending the file at `path`, its result given to `completionHandler`.
    public func uploadTask(
        with request: Request,
        fromFile path: String,
        on eventLoop: (any EventLoop)? = nil,
        completionHandler: @escaping @Sendable (ByteBuffer?, HTTPResponseHead?, SessionError?) -> Void
    ) throws(SessionError) -> UploadTask {
        let task = try uploadTask(with: request, fromFile: path, on: eventLoop)
        task.engine.completionHandler = completionHandler
        return task
    }
}

/// The seeds' task lists, and `flush`/`reset` with completion handlers.
extension Session {
    /// Hands the session's unfinished data, upload and download tasks (in creation order) to
    /// `completionHandler`, on one of the session's event loops (`getTasksWithCompletionHandler:`).
    /// Upload tasks are in the second list only; stream and WebSocket tasks are in none (see
    /// ``getAllTasks(completionHandler:)``).
    public func getTasks(
        completionHandler: @escaping @Sendable (_ data: [DataTask], _ uploads: [UploadTask], _ downloads: [DownloadTask]) -> Void
    ) {
        let tasks = allTasks
        let uploads = tasks.compactMap { $0 as? UploadTask }
        let data = tasks.compactMap { $0 as? DataTask }.filter { !($0 is UploadTask) }
        let downloads = tasks.compactMap { $0 as? DownloadTask }
        eventLoopGroup.next().execute { completionHandler(data, uploads, downloads) }
    }

    /// Hands every unfinished task, of every kind, to `completionHandler`, on one of the
    /// session's event loops (`getAllTasksWithCompletionHandler:`).
    public func getAllTasks(completionHandler: @escaping @Sendable ([SessionTask]) -> Void) {
        let tasks = allTasks
        eventLoopGroup.next().execute { completionHandler(tasks) }
    }

    /// ``flush()``, then waits until credentials kept permanently are on disk (the cookie and
    /// cache stores write through), and calls `completionHandler` on one of the session's loops.
    public func flush(completionHandler: @escaping @Sendable () -> Void) {
        flush()
        let storage = configuration.credentialStorage
        let loop = eventLoopGroup.next()
        // Waiting for the disk must not block an event loop.
        NIOThreadPool.singleton.submit { _ in
            storage?.flush()
            loop.execute(completionHandler)
        }
    }

    /// ``reset()`` (cookies, cache and credentials emptied; new connections), then
    /// `completionHandler` on one of the session's loops.
    public func reset(completionHandler: @escaping @Sendable () -> Void) {
        let loop = eventLoopGroup.next()
        NIOThreadPool.singleton.submit { [self] _ in
            reset()
            loop.execute(completionHandler)
        }
    }

    /// The unfinished data, upload and download tasks, as ``getTasks(completionHandler:)`` hands them over.
    public var tasks: (data: [DataTask], uploads: [UploadTask], downloads: [DownloadTask]) {
        get async {
            await withCheckedContinuation { continuation in
                getTasks { continuation.resume(returning: ($0, $1, $2)) }
            }
        }
    }
}
