import Foundation
import TollgateCache
import TollgateHTTP
import TollgateTesting

/// A Python package index for tests: a PEP 503 simple page per project (PEP 691 JSON when the
/// request's Accept asks for it), PyPI's JSON API for each release, and the files; pages say
/// `Vary: Accept, Accept-Encoding`, as PyPI's do.
struct PythonIndexOrigin {
    /// One file of a project.
    struct File: Sendable {
        var project: String
        var version: String
        var filename: String
        var bytes: [UInt8]
        /// The SHA-256 the pages claim (the bytes' own unless a test says otherwise).
        var claimedSHA256: String?
    }

    let origin: LoopbackOrigin

    /// Starts the index; `files` URLs in the pages are `fileBase + /files/FILENAME` (an absolute
    /// URL, as PyPI gives), or `/files/FILENAME` when `fileBase` is nil.
    static func start(files: [File], tls: TestPKI? = nil, fileBase: String? = nil) async throws -> PythonIndexOrigin {
        @Sendable func digest(_ file: File) -> String { file.claimedSHA256 ?? SHA256.hex(SHA256.hash(file.bytes)) }
        @Sendable func href(_ file: File) -> String { (fileBase ?? "") + "/files/" + file.filename }
        let handler: LoopbackOrigin.Script = { request, respond in
            let path = request.path
            let pageHeaders: HeaderFields = ["Cache-Control": "max-age=600", "Vary": "Accept, Accept-Encoding"]
            if path.hasPrefix("/simple/") {
                let project = path.dropFirst("/simple/".count).split(separator: "/").first.map(String.init) ?? ""
                let listed = files.filter { $0.project == project }
                guard !listed.isEmpty else { return respond.send(status: 404, body: "no project \(project)") }
                var headers = pageHeaders
                if request.headerFields["Accept"]?.contains("application/vnd.pypi.simple.v1+json") == true {
                    headers.add(name: "Content-Type", value: "application/vnd.pypi.simple.v1+json")
                    let entries = listed.map { #"{"filename":"\#($0.filename)","url":"\#(href($0))","hashes":{"sha256":"\#(digest($0))"}}"# }
                    let versions = Set(listed.map { "\"\($0.version)\"" }).sorted().joined(separator: ",")
                    return respond.send(
                        status: 200, headers: headers,
                        body: #"{"meta":{"api-version":"1.1"},"name":"\#(project)","versions":[\#(versions)],"files":[\#(entries.joined(separator: ","))]}"#
                    )
                }
                headers.add(name: "Content-Type", value: "text/html; charset=utf-8")
                let anchors = listed.map { "<a href=\"\(href($0))#sha256=\(digest($0))\">\($0.filename)</a><br/>" }
                return respond.send(status: 200, headers: headers, body: "<!DOCTYPE html><html><body>\(anchors.joined())</body></html>")
            }
            if path.hasPrefix("/pypi/") {
                // /pypi/NAME/VERSION/json
                let parts = path.split(separator: "/").map(String.init)
                let listed = files.filter { parts.count == 4 && $0.project == parts[1] && $0.version == parts[2] }
                guard let first = listed.first else { return respond.send(status: 404, body: "no release") }
                let urls = listed.map {
                    #"{"filename":"\#($0.filename)","url":"\#(href($0))","digests":{"sha256":"\#(digest($0))"},"packagetype":"bdist_wheel","python_version":"py3","requires_python":null,"yanked":false,"yanked_reason":null,"size":\#($0.bytes.count)}"#
                }
                var headers = pageHeaders
                headers.add(name: "Content-Type", value: "application/json")
                return respond.send(
                    status: 200, headers: headers,
                    body: #"{"info":{"name":"\#(first.project)","version":"\#(first.version)","summary":"","requires_dist":null,"requires_python":null,"yanked":false,"yanked_reason":null,"home_page":null,"author":null,"license":null,"platform":null,"classifiers":[],"project_urls":null,"description":"","keywords":null},"urls":[\#(urls.joined(separator: ","))],"last_serial":1}"#
                )
            }
            if path.hasPrefix("/files/"), let file = files.first(where: { "/files/" + $0.filename == path }) {
                return respond.send(status: 200, headers: ["Cache-Control": "max-age=86400", "Content-Type": "application/octet-stream"], bytes: file.bytes)
            }
            respond.send(status: 404, body: "no such file: \(path)")
        }
        let origin = try await LoopbackOrigin.start(tls: tls?.serverConfiguration, script: handler)
        return PythonIndexOrigin(origin: origin)
    }
}

