import Foundation

/// A WebSocket server or client that is not Tollgate's: Python's `websockets` package (`make
/// test` installs it), run as a child process. Tests that need it are skipped when python3 cannot
/// import it (``python``).
public enum WebSocketPeer {
    /// python3 when it can import `websockets`, else nil.
    public static let python: String? = {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/python3"
            guard FileManager.default.isExecutableFile(atPath: candidate) else { continue }
            guard let probe = try? ChildProcess.runBlocking(candidate, ["-c", "import websockets.asyncio.server"]) else { continue }
            return probe.status == 0 ? candidate : nil
        }
        return nil
    }()

    /// A running `websockets` server on 127.0.0.1 and the port it listens on.
    public struct Server: Sendable {
        public let process: ChildProcess
        public let port: Int

        /// What the server printed about the connections it saw close, one line each:
        /// `closed CODE REASON` (the close frame it received; `None` when there was none).
        public var closes: [String] {
            process.standardOutput.split(separator: "\n").filter { $0.hasPrefix("closed ") }.map(String.init)
        }

        public func stop() { process.kill() }
    }

    /// How the server answers a permessage-deflate offer (RFC 7692).
    public enum Compression: String, Sendable {
        /// It accepts no extension.
        case off = ""
        /// It accepts permessage-deflate as `websockets` does by default.
        case deflate
        /// It accepts it with every parameter that constrains the client: `server_no_context_takeover`,
        /// `client_no_context_takeover`, `server_max_window_bits=10`, `client_max_window_bits=9`.
        case strict
    }

    /// Starts the server (``serverScript``); with `certificate` and `key` (PEM files) it speaks TLS.
    public static func startServer(certificate: String? = nil, key: String? = nil, compression: Compression = .off) async throws -> Server {
        guard let python else { throw PeerUnavailable() }
        let process = try ChildProcess(python, ["-u", "-c", serverScript, certificate ?? "", key ?? "", compression.rawValue])
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline {
            if let line = process.standardOutput.split(separator: "\n").first(where: { $0.hasPrefix("port ") }),
                let port = Int(line.dropFirst(5))
            {
                return Server(process: process, port: port)
            }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(20))
        }
        process.kill()
        throw PeerUnavailable(detail: "the websockets server did not start: \(process.standardError)")
    }

    /// Runs the client script (``clientScript``) to its end: it connects to `uri` (through
    /// `proxy`, an `http://` URL, when given; trusting the CA in the PEM file `caFile` for wss),
    /// sends each of `messages` ("ping" sends a ping; "close:CODE:REASON" closes; "bytes:N" sends N
    /// bytes; "say:TEXT" sends TEXT, so "say:close:…" asks the server to close), prints one line
    /// per reply and one `closed CODE REASON` line (the close frame it received), and exits.
    public static func runClient(
        uri: String,
        messages: [String],
        proxy: String? = nil,
        caFile: String? = nil
    ) async throws -> (status: Int32, stdout: String, stderr: String) {
        guard let python else { throw PeerUnavailable() }
        return try await ChildProcess.run(python, ["-u", "-c", clientScript, uri, proxy ?? "", caFile ?? ""] + messages)
    }

    /// python3 or its `websockets` package is missing.
    public struct PeerUnavailable: Error {
        public var detail = "python3 with the websockets package is not installed"
    }

    /// The server: echoes text and binary messages, and obeys a few text commands:
    /// `close:CODE:REASON` closes with that code and reason; `fragments` sends the text message
    /// "fragmented" in three frames; `big:N` sends N bytes; `cookie?` answers the handshake's
    /// Cookie field; `extensions?` answers the extensions agreed (`-`: none), with their parameters;
    /// `drop` aborts the TCP connection without a close frame. `/redirect` answers
    /// the handshake with a 302 to `/echo` that sets a cookie; `/refuse` with a 403.
    public static let serverScript = #"""
        import asyncio, http, ssl, sys
        from websockets.asyncio.server import serve
        from websockets.extensions.permessage_deflate import ServerPerMessageDeflateFactory

        def process_request(connection, request):
            if request.path == "/redirect":
                response = connection.respond(http.HTTPStatus.FOUND, "moved\n")
                response.headers["Location"] = "/echo"
                response.headers["Set-Cookie"] = "visited=yes; Path=/"
                return response
            if request.path == "/refuse":
                return connection.respond(http.HTTPStatus.FORBIDDEN, "no\n")
            return None

        async def handler(ws):
            try:
                async for message in ws:
                    if isinstance(message, bytes):
                        await ws.send(message)
                    elif message.startswith("close:"):
                        _, code, reason = message.split(":", 2)
                        await ws.close(int(code), reason)
                    elif message == "fragments":
                        await ws.send(["frag", "ment", "ed"])
                    elif message.startswith("big:"):
                        await ws.send(b"x" * int(message[4:]))
                    elif message == "cookie?":
                        await ws.send(ws.request.headers.get("Cookie", "-"))
                    elif message == "extensions?":
                        await ws.send(ws.response.headers.get("Sec-WebSocket-Extensions", "-"))
                    elif message == "drop":
                        ws.transport.abort()
                        return
                    else:
                        await ws.send(message)
            except Exception:
                pass
            finally:
                await ws.wait_closed()
                rcvd = ws.protocol.close_rcvd
                print(f"closed {rcvd.code if rcvd else None} {rcvd.reason if rcvd else ''}", flush=True)

        async def main():
            context = None
            if len(sys.argv) > 2 and sys.argv[1]:
                context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
                context.load_cert_chain(sys.argv[1], sys.argv[2])
            mode = sys.argv[3] if len(sys.argv) > 3 else ""
            compression = {"compression": "deflate"} if mode == "deflate" else {"compression": None}
            if mode == "strict":
                compression["extensions"] = [ServerPerMessageDeflateFactory(
                    server_no_context_takeover=True, client_no_context_takeover=True,
                    server_max_window_bits=10, client_max_window_bits=9)]
            async with serve(handler, "127.0.0.1", 0, ssl=context, process_request=process_request,
                             max_size=None, ping_interval=None, **compression) as server:
                print(f"port {server.sockets[0].getsockname()[1]}", flush=True)
                await asyncio.Future()

        asyncio.run(main())
        """#

    /// The client (see ``runClient(uri:messages:proxy:caFile:)``).
    public static let clientScript = #"""
        import asyncio, ssl, sys
        from websockets.asyncio.client import connect
        from websockets.exceptions import ConnectionClosed

        async def main():
            uri, proxy, ca = sys.argv[1], sys.argv[2] or None, sys.argv[3]
            context = ssl.create_default_context(cafile=ca) if ca else None
            options = {"ssl": context} if uri.startswith("wss:") else {}
            async with connect(uri, proxy=proxy, compression=None, max_size=None, open_timeout=10,
                               ping_interval=None, **options) as ws:
                try:
                    for message in sys.argv[4:]:
                        if message == "ping":
                            await asyncio.wait_for(await ws.ping(), 5)
                            print("pong", flush=True)
                        elif message.startswith("close:"):
                            _, code, reason = message.split(":", 2)
                            await ws.close(int(code), reason)
                        elif message.startswith("say:"):
                            await ws.send(message[4:])
                            print(f"reply {await ws.recv()}", flush=True)
                        elif message.startswith("bytes:"):
                            await ws.send(b"y" * int(message[6:]))
                            reply = await ws.recv()
                            print(f"reply {len(reply)} bytes", flush=True)
                        else:
                            await ws.send(message)
                            print(f"reply {await ws.recv()}", flush=True)
                    await ws.close()
                except ConnectionClosed:
                    pass
            rcvd = ws.protocol.close_rcvd
            print(f"closed {rcvd.code if rcvd else None} {rcvd.reason if rcvd else ''}", flush=True)

        asyncio.run(main())
        """#
}
