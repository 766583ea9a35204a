import TollgateHTTP
import TollgatePolicy
import TollgateSession

/// The live tasks of every session as `GET /tasks` lists them: a JSON array of objects with
/// `session`, `identifier`, `kind` (`data`, `upload`, `download`, `stream`), `state` (`running`,
/// `suspended`, `canceling`, `completed`), `url`, `bytes` (received), `bytes_sent` and
/// `bytes_expected` (−1 when unknown). Sessions a reload replaced that still finish tasks are
/// listed under their description.
enum TaskListing {
    static func json(runtime: PolicyRuntime) -> String {
        var sessions = runtime.sessions.sorted { $0.key < $1.key }.map { (name: $0.key, session: $0.value) }
        for retired in runtime.retiringSessions {
            sessions.append((retired.sessionDescription ?? "retired", retired))
        }
        var entries: [String] = []
        for (name, session) in sessions {
            for task in session.allTasks {
                entries.append(json(task, session: name))
            }
        }
        return "[" + entries.joined(separator: ",") + "]"
    }

    static func json(_ task: SessionTask, session: String) -> String {
        let url: String
        if let stream = task as? StreamTask, let host = stream.hostName, let port = stream.port {
            url = "tcp://\(host.contains(":") ? "[\(host)]" : host):\(port)"
        } else {
            url = task.currentRequest?.url.absoluteString ?? ""
        }
        let fields = [
            "\"session\":\"\(AccessLogEntry.jsonEscape(session))\"",
            "\"identifier\":\(task.taskIdentifier)",
            "\"kind\":\"\(kind(of: task))\"",
            "\"state\":\"\(state(of: task))\"",
            "\"url\":\"\(AccessLogEntry.jsonEscape(url))\"",
            "\"bytes\":\(task.countOfBytesReceived)",
            "\"bytes_sent\":\(task.countOfBytesSent)",
            "\"bytes_expected\":\(task.countOfBytesExpectedToReceive)",
        ]
        return "{" + fields.joined(separator: ",") + "}"
    }

    private static func kind(of task: SessionTask) -> String {
        switch task {
        case is UploadTask: "upload"
        case is DataTask: "data"
        case is DownloadTask: "download"
        case is StreamTask: "stream"
        case is WebSocketTask: "websocket"
        default: "task"
        }
    }

    private static func state(of task: SessionTask) -> String {
        switch task.state {
        case .running: "running"
        case .suspended: "suspended"
        case .canceling: "canceling"
        case .completed: "completed"
        }
    }
}
