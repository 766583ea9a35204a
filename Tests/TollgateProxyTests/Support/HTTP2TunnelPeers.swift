import TollgateTesting

/// Python `h2` clients that send CONNECT on HTTP/2 streams (RFC 9113 §8.5).
extension HTTP2Peers {
    /// `PORT CA PLAN`: one HTTP/2 connection (TLS with ALPN h2 verified against CA, or plain with
    /// CA `-`) opening one stream per step of the JSON PLAN at once: `{"connect": "HOST:PORT",
    /// "send": [TEXT...], "close": BOOL}` (a tunnel: once answered 200 it sends each TEXT as DATA,
    /// then END_STREAM unless `close` is false) or `{"authority": A, "path": P}` (a GET). Prints
    /// `alpn PROTOCOL` for TLS, then per stream `stream ID status S ended|reset CODE data TEXT`.
    static let connectTunnels = #"""
        import json, socket, ssl, sys, time
        import h2.connection, h2.config, h2.events
        port, ca, plan = int(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3])
        raw = socket.create_connection(("127.0.0.1", port))
        if ca != "-":
            ctx = ssl.create_default_context(cafile=ca)
            ctx.set_alpn_protocols(["h2"])
            s = ctx.wrap_socket(raw, server_hostname="127.0.0.1")
            print("alpn", s.selected_alpn_protocol(), flush=True)
        else:
            s = raw
        c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        c.initiate_connection()
        s.sendall(c.data_to_send())
        streams = {}
        for step in plan:
            sid = c.get_next_available_stream_id()
            if "connect" in step:
                c.send_headers(sid, [(":method", "CONNECT"), (":authority", step["connect"])])
            else:
                c.send_headers(sid, [(":method", "GET"), (":scheme", "http"), (":authority", step["authority"]), (":path", step["path"])], end_stream=True)
            streams[sid] = {"step": step, "status": None, "data": b"", "end": None, "sent": False}
        s.sendall(c.data_to_send())
        s.settimeout(0.2)
        deadline = time.time() + 15
        while time.time() < deadline and any(st["end"] is None for st in streams.values()):
            try:
                data = s.recv(1 << 16)
            except socket.timeout:
                data = None
            except (ConnectionResetError, ssl.SSLError):
                break
            if data == b"":
                break
            if data:
                for e in c.receive_data(data):
                    st = streams.get(getattr(e, "stream_id", None))
                    if isinstance(e, h2.events.ResponseReceived) and st:
                        st["status"] = dict(e.headers)[b":status"].decode()
                    elif isinstance(e, h2.events.DataReceived) and st:
                        st["data"] += e.data
                        c.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
                    elif isinstance(e, h2.events.StreamEnded) and st:
                        st["end"] = "ended"
                    elif isinstance(e, h2.events.StreamReset) and st:
                        st["end"] = st["end"] or "reset %d" % int(e.error_code)
            for sid, st in streams.items():
                step = st["step"]
                if "connect" in step and st["status"] == "200" and not st["sent"] and st["end"] is None:
                    st["sent"] = True
                    for piece in step.get("send", []):
                        c.send_data(sid, piece.encode())
                    if step.get("close", True):
                        c.end_stream(sid)
            s.sendall(c.data_to_send())
        for sid in sorted(streams):
            st = streams[sid]
            print("stream", sid, "status", st["status"], st["end"], "data", st["data"].decode(errors="replace").replace("\n", "|"), flush=True)
        """#

    /// `PORT PROXY_CA AUTHORITY SNI INNER_CA PATH [ALPN]`: CONNECT AUTHORITY on stream 1 of an
    /// HTTP/2 connection to an HTTPS proxy, then TLS inside the stream (SNI, verified against
    /// INNER_CA, offering ALPN, `http/1.1` by default) and `GET PATH` inside it, over HTTP/2 when
    /// `h2` was negotiated. Prints `connect status S`, `inner tls VERSION alpn P`, `inner status
    /// LINE` (`HTTP/2 S` for h2), `inner body TEXT`.
    static let tlsInsideTunnel = #"""
        import socket, ssl, sys, time
        import h2.connection, h2.config, h2.events
        port, proxy_ca, authority, sni, inner_ca, path = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
        inner_alpn = sys.argv[7] if len(sys.argv) > 7 else "http/1.1"
        ctx = ssl.create_default_context(cafile=proxy_ca)
        ctx.set_alpn_protocols(["h2"])
        s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port)), server_hostname="127.0.0.1")
        c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        c.initiate_connection()
        sid = 1
        c.send_headers(sid, [(":method", "CONNECT"), (":authority", authority)])
        s.sendall(c.data_to_send())
        inner = ssl.create_default_context(cafile=inner_ca)
        inner.set_alpn_protocols([inner_alpn])
        incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        tls = inner.wrap_bio(incoming, outgoing, server_hostname=sni)
        state = {"status": None, "handshake": False, "sent": False, "response": b"", "end": None, "h2": None, "h2status": None, "h2done": False}
        s.settimeout(0.2)
        deadline = time.time() + 15
        def pump_tls():
            if state["status"] != "200":
                return
            if not state["handshake"]:
                try:
                    tls.do_handshake()
                    state["handshake"] = True
                    print("inner tls", tls.version(), "alpn", tls.selected_alpn_protocol(), flush=True)
                except ssl.SSLWantReadError:
                    pass
            if state["handshake"] and not state["sent"]:
                state["sent"] = True
                if tls.selected_alpn_protocol() == "h2":
                    h = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
                    h.initiate_connection()
                    h.send_headers(1, [(":method", "GET"), (":scheme", "https"), (":authority", authority), (":path", path)], end_stream=True)
                    state["h2"] = h
                    tls.write(h.data_to_send())
                else:
                    tls.write(("GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % (path, sni)).encode())
            if state["handshake"]:
                while True:
                    try:
                        chunk = tls.read(1 << 16)
                    except (ssl.SSLWantReadError, ssl.SSLZeroReturnError):
                        break
                    if not chunk:
                        break
                    h = state["h2"]
                    if h is None:
                        state["response"] += chunk
                        continue
                    for e in h.receive_data(chunk):
                        if isinstance(e, h2.events.ResponseReceived):
                            state["h2status"] = dict(e.headers)[b":status"].decode()
                        elif isinstance(e, h2.events.DataReceived):
                            state["response"] += e.data
                            h.acknowledge_received_data(e.flow_controlled_length, e.stream_id)
                        elif isinstance(e, h2.events.StreamEnded):
                            state["h2done"] = True
                    tls.write(h.data_to_send())
            pending = outgoing.read()
            if pending:
                c.send_data(sid, pending)
        while time.time() < deadline and state["end"] is None and not state["h2done"]:
            try:
                data = s.recv(1 << 16)
            except socket.timeout:
                data = None
            if data == b"":
                break
            if data:
                for e in c.receive_data(data):
                    if isinstance(e, h2.events.ResponseReceived):
                        state["status"] = dict(e.headers)[b":status"].decode()
                        print("connect status", state["status"], flush=True)
                    elif isinstance(e, h2.events.DataReceived):
                        incoming.write(e.data)
                        c.acknowledge_received_data(e.flow_controlled_length, sid)
                    elif isinstance(e, h2.events.StreamEnded):
                        state["end"] = "ended"
                    elif isinstance(e, h2.events.StreamReset):
                        state["end"] = "reset %d" % int(e.error_code)
            pump_tls()
            s.sendall(c.data_to_send())
            if b"\r\n\r\n" in state["response"] and state["end"] is None and time.time() > deadline - 14 and len(state["response"]) > 0:
                head, _, body = state["response"].partition(b"\r\n\r\n")
                length = [l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")]
                if length and len(body) >= int(length[0].split(b":")[1]):
                    break
        if state["h2"] is not None:
            print("inner status HTTP/2", state["h2status"], flush=True)
            print("inner body", state["response"].decode(errors="replace"), flush=True)
            sys.exit(0)
        head, _, body = state["response"].partition(b"\r\n\r\n")
        print("inner status", head.split(b"\r\n")[0].decode() if head else None, flush=True)
        print("inner body", body.decode(errors="replace"), flush=True)
        """#
}
