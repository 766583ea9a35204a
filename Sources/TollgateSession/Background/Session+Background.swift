import Foundation
import NIOCore
import Synchronization
import TollgateHTTP

/// Background sessions (seeds 000, 001, 002, 004): upload and download tasks that outlive the
/// process that started them. Each task is recorded in the session's ``BackgroundTaskStore``;
/// a session created again with the same identifier re-creates the tasks it finds there,
/// downloads going on from their partial files, and its delegate receives their events.
extension Session {
    /// Refuses what a background session cannot carry across a restart: data, stream and
    /// WebSocket tasks, and uploads whose body is not a file; and every task when the session's
    /// store could not be attached.
    func checkBackgroundAllows<T: SessionTask>(_ type: T.Type, request: Request) throws(SessionError) {
        guard isBackground else { return }
        if let backgroundError { throw backgroundError }
        if type is DownloadTask.Type { return }
        if type is UploadTask.Type {
            if case .file = request.body { return }
            throw SessionError(
                .backgroundTaskNotSupported, request.url,
                "a background session uploads from a file only (uploadTask(with:fromFile:)): a body in memory or a stream does not outlive the process"
            )
        }
        let kind = type is StreamTask.Type ? "stream" : type is WebSocketTask.Type ? "WebSocket" : "data"
        throw SessionError(
            .backgroundTaskNotSupported, request.url, "a background session runs upload and download tasks only, not \(kind) tasks"
        )
    }

    /// An upload's file, copied into the background session's own storage (the seeds: the
    /// system copies it when the task is created), so the task does not depend on the caller's file.
    func backgroundCopyOfUpload(_ request: Request) throws(SessionError) -> Request {
        guard let background, case .file(let path) = request.body else { return request }
        let copy = background.newFilePath("upload", task: 0)
        do {
            try FileManager.default.copyItem(atPath: path, toPath: copy)
        } catch {
            throw SessionError(.cannotWriteToFile, request.url, "cannot copy the upload's file \(path) into the background session: \(error.localizedDescription)")
        }
        var copied = request
        copied.body = .file(path: copy)
        return copied
    }

    /// Writes the record of a task just created in a background session.
    func recordBackgroundTask(_ task: SessionTask) {
        guard let background, let request = task.originalRequest else { return }
        let kind: BackgroundTaskRecord.Kind
        switch task {
        case is DownloadTask: kind = .download
        case is UploadTask: kind = .upload
        default: return
        }
        var record = BackgroundTaskRecord(identifier: task.taskIdentifier, kind: kind, request: request.head)
        if case .file(let path) = request.body { record.uploadFile = path }
        record.taskDescription = task.taskDescription
        record.earliestBeginDate = task.earliestBeginDate
        background.put(record)
    }

    /// Re-creates the tasks a background session's store holds, under their identifiers and
    /// descriptions; those that were running are resumed — a download from its partial file
    /// (`Range`/`If-Range`, `didResumeAtOffset`) when its response can be resumed, else from the
    /// start; an upload from the start, from its copied file. Called once, when the session is made.
    func reattachBackgroundTasks() {
        guard let background else { return }
        var running: [SessionTask] = []
        for record in background.records {
            guard let head = record.request.head else {
                background.remove(record.identifier)
                continue
            }
            let loop = eventLoopGroup.next()
            let task: SessionTask
            switch record.kind {
            case .download:
                let length = record.partialFile.flatMap(FileSize.of) ?? 0
                if let resume = record.resumeData(fileLength: length), let request = resume.resumingRequest() {
                    let download = DownloadTask(session: self, identifier: record.identifier, request: request, eventLoop: loop, delegate: nil)
                    download.engine.resume = resume
                    task = download
                } else {
                    if let partial = record.partialFile { try? FileManager.default.removeItem(atPath: partial) }
                    let request = Request(method: head.method, url: head.url, headerFields: head.headerFields)
                    task = DownloadTask(session: self, identifier: record.identifier, request: request, eventLoop: loop, delegate: nil)
                }
            case .upload:
                var request = Request(method: head.method, url: head.url, headerFields: head.headerFields)
                if let file = record.uploadFile { request.body = .file(path: file) }
                task = UploadTask(session: self, identifier: record.identifier, request: request, eventLoop: loop, delegate: nil)
            }
            task.observed.withLock {
                $0.taskDescription = record.taskDescription
                $0.earliestBeginDate = record.earliestBeginDate
            }
            registerReattached(task)
            if record.state == .running { running.append(task) }
        }
        for task in running { task.resume() }
    }

    /// Stops a background session where it is, as the end of the process would: every task stops
    /// without completing (no delegate messages), a download keeping its partial file and its record
    /// with the bytes so far; the session is invalidated and its identifier released, so a session
    /// created again with it — in this process or another — picks the tasks up. `completion` runs
    /// once the store is written out. For other kinds of session this is `invalidateAndCancel()`.
    public func detachBackgroundTasks(completion: @escaping @Sendable () -> Void) {
        guard isBackground, background != nil else {
            invalidateAndCancel()
            completion()
            return
        }
        guard let tasks = beginDetaching() else {
            completion()
            return
        }
        let group = DispatchGroup()
        for task in tasks {
            group.enter()
            task.detachFromBackgroundSession { group.leave() }
        }
        group.notify(queue: .global()) { [self] in
            if hasNoTasks { becomeInvalid(error: nil) }
            // becomeInvalid closes the store on a queue of its own; this returns once it is closed.
            background?.close()
            completion()
        }
    }

    /// ``detachBackgroundTasks(completion:)`` for async code.
    public func detachBackgroundTasks() async {
        await withCheckedContinuation { continuation in
            detachBackgroundTasks { continuation.resume() }
        }
    }
}
