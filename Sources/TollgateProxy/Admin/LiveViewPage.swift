/// The live view (`GET /` on the admin listener): one self-contained page — its CSS and script
/// inline, nothing fetched from anywhere but the admin listener itself — that reads `/tasks`,
/// `/har?limit=100`, `/cache/stats`, `/offline/misses`, `/upstreams` and `/listeners` every two seconds and shows
/// the live tasks with their state and progress, the recent exchanges with their cache result, why
/// a response was not stored and a timing waterfall, the cache's figures, whether the proxy is
/// offline and its cache read-only, — offline — what it could not serve, the `connect-to`
/// backends with the ones passed over, and the TLS listeners' certificates with their expiry,
/// the OCSP response each staples and how session tickets are sealed.
///
/// Everything the proxy saw (URLs, reasons) is put in the page as text nodes, never as markup:
/// a URL cannot inject script into the admin origin.
enum LiveViewPage {
    /// The page.
    static let html = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>Tollgate — live</title>
        <style>
        :root { --bg:#f6f7f9; --fg:#1d232b; --muted:#6b7480; --line:#dde1e6; --hit:#1f8a4c; --miss:#b5541c;
          --reval:#2d6cc0; --stale:#8a6d1f; --bypass:#6b7480; --dns:#7fb3d5; --connect:#f0b27a; --ssl:#c39bd3;
          --wait:#82e0aa; --receive:#5dade2; }
        * { box-sizing: border-box; }
        body { margin:0; font:14px/1.4 system-ui, sans-serif; background:var(--bg); color:var(--fg); }
        header { display:flex; align-items:baseline; gap:1em; padding:.8em 1.2em; background:#1d232b; color:#fff; }
        header h1 { font-size:1.2em; margin:0; }
        header span { color:#aab3bd; font-size:.9em; }
        main { padding:1em 1.2em; display:grid; gap:1.2em; }
        section { background:#fff; border:1px solid var(--line); border-radius:6px; padding:.8em 1em; }
        h2 { font-size:1em; margin:0 0 .6em; }
        .figures { display:flex; flex-wrap:wrap; gap:1.6em; }
        .figure b { display:block; font-size:1.3em; }
        .figure small { color:var(--muted); }
        table { width:100%; border-collapse:collapse; table-layout:fixed; }
        th, td { text-align:left; padding:.25em .4em; border-bottom:1px solid var(--line); vertical-align:middle;
          overflow:hidden; text-overflow:ellipsis; white-space:nowrap; }
        th { color:var(--muted); font-weight:600; font-size:.85em; }
        td.url { font-family:ui-monospace, monospace; font-size:.85em; }
        .badge { display:inline-block; padding:0 .5em; border-radius:9px; color:#fff; font-size:.8em; }
        .hit { background:var(--hit); } .miss { background:var(--miss); } .revalidated { background:var(--reval); }
        .stale { background:var(--stale); } .bypass { background:var(--bypass); }
        .bar { position:relative; height:10px; background:#eef0f3; border-radius:3px; overflow:hidden; }
        .bar > i { position:absolute; top:0; bottom:0; }
        .progress > i { left:0; background:var(--reval); }
        .empty { color:var(--muted); font-style:italic; }
        .legend i { display:inline-block; width:.8em; height:.8em; margin:0 .2em 0 .8em; vertical-align:middle; }
        .error { color:#b00020; }
        .mode { padding:0 .6em; border-radius:9px; font-size:.8em; background:#b5541c; color:#fff; }
        #offline[hidden], #backends[hidden], #listeners[hidden] { display:none; }
        .down { color:#b00020; font-weight:600; }
        </style>
        </head>
        <body>
        <header><h1>Tollgate</h1><span id="modes"></span><span id="updated">loading…</span></header>
        <main>
        <section><h2>Cache</h2><div class="figures" id="cache"><span class="empty">no cache</span></div></section>
        <section id="offline" hidden><h2>Missed offline</h2>
        <table><colgroup><col style="width:5em"><col><col style="width:11em"><col style="width:4em">
        <col style="width:7em"></colgroup>
        <thead><tr><th>method</th><th>URL</th><th>reason</th><th>count</th><th>last</th></tr></thead>
        <tbody id="misses"></tbody></table></section>
        <section id="backends" hidden><h2>Backends (connect-to)</h2>
        <table><colgroup><col><col style="width:10em"><col style="width:8em"><col></colgroup>
        <thead><tr><th>target</th><th>state</th><th>failures</th><th>last check</th></tr></thead>
        <tbody id="upstreams"></tbody></table></section>
        <section id="listeners" hidden><h2>TLS listeners</h2>
        <table><colgroup><col style="width:10em"><col><col style="width:8em"><col><col style="width:12em"></colgroup>
        <thead><tr><th>listener</th><th>certificate</th><th>expires</th><th>OCSP staple</th><th>session tickets</th></tr></thead>
        <tbody id="certificates"></tbody></table></section>
        <section><h2>Live tasks</h2>
        <table><colgroup><col style="width:9em"><col style="width:4em"><col style="width:7em"><col style="width:7em">
        <col><col style="width:14em"></colgroup>
        <thead><tr><th>session</th><th>id</th><th>kind</th><th>state</th><th>URL</th><th>progress</th></tr></thead>
        <tbody id="tasks"></tbody></table></section>
        <section><h2>Recent exchanges <span class="legend"><i style="background:var(--dns)"></i>dns
        <i style="background:var(--connect)"></i>connect<i style="background:var(--ssl)"></i>tls
        <i style="background:var(--wait)"></i>wait<i style="background:var(--receive)"></i>receive</span></h2>
        <table><colgroup><col style="width:6.5em"><col style="width:4.5em"><col style="width:3.5em"><col>
        <col style="width:7.5em"><col style="width:10em"><col style="width:5em"><col style="width:16em"></colgroup>
        <thead><tr><th>time</th><th>method</th><th>status</th><th>URL</th><th>cache</th><th>stored</th>
        <th>ms</th><th>waterfall</th></tr></thead>
        <tbody id="exchanges"></tbody></table></section>
        </main>
        <script>
        "use strict";
        const $ = (id) => document.getElementById(id);
        function el(tag, text, cls) {
          const node = document.createElement(tag);
          if (text !== undefined && text !== null) node.textContent = String(text);
          if (cls) node.className = cls;
          return node;
        }
        function bytes(n) {
          const units = ["B", "KiB", "MiB", "GiB", "TiB"]; let i = 0; n = Number(n) || 0;
          while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
          return (i ? n.toFixed(1) : n) + " " + units[i];
        }
        function row(cells) { const tr = el("tr"); for (const c of cells) tr.appendChild(c); return tr; }
        function cell(text, cls) { const td = el("td", text, cls); if (text) td.title = String(text); return td; }
        function replace(tbody, rows, columns, emptyText) {
          tbody.replaceChildren(...rows);
          if (!rows.length) { const td = el("td", emptyText, "empty"); td.colSpan = columns; tbody.appendChild(row([td])); }
        }
        async function json(path) {
          const response = await fetch(path, { cache: "no-store" });
          if (!response.ok) throw new Error(path + ": " + response.status);
          return response.json();
        }
        function showCache(stats) {
          const box = $("cache"); box.replaceChildren();
          const used = stats.capacity ? Math.round(100 * stats.bytes / stats.capacity) : 0;
          const lookups = (stats.hits || 0) + (stats.misses || 0);
          const figures = [["entries", stats.entries], ["stored", bytes(stats.bytes)],
            ["capacity", bytes(stats.capacity) + " (" + used + " % used)"], ["hits", stats.hits],
            ["misses", stats.misses], ["hit ratio", lookups ? Math.round(100 * stats.hits / lookups) + " %" : "–"],
            ["evictions", stats.evictions ?? 0]];
          for (const [name, value] of figures) {
            const f = el("div", null, "figure"); f.appendChild(el("b", value)); f.appendChild(el("small", name));
            box.appendChild(f);
          }
          const modes = [];
          if (stats.offline) modes.push(el("span", "offline", "mode"));
          if (stats.read_only) modes.push(el("span", "read-only cache", "mode"));
          $("modes").replaceChildren(...modes);
          $("offline").hidden = !stats.offline;
        }
        function showMisses(misses) {
          const rows = misses.map((m) => row([cell(m.method), cell(m.url, "url"), cell(m.reason), cell(m.count),
            cell(new Date(m.last).toLocaleTimeString())]));
          replace($("misses"), rows, 5, "nothing missed");
        }
        function showUpstreams(upstreams) {
          $("backends").hidden = !upstreams.length;
          const rows = upstreams.map((u) => row([cell(u.target + (u.weight !== 1 ? " weight=" + u.weight : "") + (u.backup ? " backup" : ""), "url"),
            cell(u.down ? "passed over" : "in turn", u.down ? "down" : ""), cell(u.failures),
            cell(u.last_check || "not checked", u.last_check && u.last_check !== "ok" ? "down" : "")]));
          replace($("upstreams"), rows, 4, "no backends");
        }
        function showListeners(listeners) {
          $("listeners").hidden = !listeners.length;
          const rows = [];
          for (const l of listeners) {
            const tickets = l.session_tickets + (l.ticket_keys ? " (" + l.ticket_keys.join(", ") + ")" : "");
            for (const c of l.certificates) {
              const o = c.ocsp;
              const staple = !o ? "not stapled" : o.error ? o.source + ": " + o.error
                : o.source + ": " + o.status + (o.next_update ? " until " + new Date(o.next_update).toLocaleString() : "");
              rows.push(row([cell(l.address, "url"), cell(c.subject || c.error || c.file, c.error ? "down" : ""),
                cell(c.not_after ? new Date(c.not_after).toLocaleDateString() : "–"),
                cell(staple, o && (o.error || o.status !== "good") ? "down" : ""), cell(tickets)]));
            }
          }
          replace($("certificates"), rows, 5, "no TLS listeners");
        }
        function showTasks(tasks) {
          const rows = tasks.map((t) => {
            const progress = el("td"); const bar = el("div", null, "bar progress"); const fill = el("i");
            const expected = t.bytes_expected > 0 ? t.bytes_expected : 0;
            fill.style.width = expected ? Math.min(100, 100 * t.bytes / expected) + "%" : "100%";
            if (!expected) fill.style.opacity = ".25";
            bar.appendChild(fill); progress.appendChild(bar);
            progress.title = bytes(t.bytes) + (expected ? " of " + bytes(expected) : "");
            return row([cell(t.session), cell(t.identifier), cell(t.kind), cell(t.state), cell(t.url, "url"), progress]);
          });
          replace($("tasks"), rows, 6, "no live tasks");
        }
        const phases = [["dns", "--dns"], ["connect", "--connect"], ["ssl", "--ssl"], ["wait", "--wait"],
          ["receive", "--receive"]];
        function waterfall(timings, scale) {
          const td = el("td"); const bar = el("div", null, "bar"); let at = 0; const parts = [];
          for (const [name, color] of phases) {
            let ms = Number(timings[name]); if (!(ms > 0)) continue;
            if (name === "connect" && timings.ssl > 0) ms -= timings.ssl;
            const seg = el("i"); seg.style.left = (100 * at / scale) + "%";
            seg.style.width = Math.max(0.5, 100 * ms / scale) + "%"; seg.style.background = "var(" + color + ")";
            bar.appendChild(seg); at += ms; parts.push(name + " " + ms.toFixed(1) + " ms");
          }
          td.title = parts.join(", ") || "no network phases";
          td.appendChild(bar); return td;
        }
        function showExchanges(har) {
          const entries = (har.log && har.log.entries) || [];
          const scale = Math.max(1, ...entries.map((e) => e.time || 0));
          const rows = entries.slice().reverse().map((e) => {
            const cache = el("td"); cache.appendChild(el("span", e._cache, "badge " + e._cache));
            const stored = e._stored ? "stored" : (e._notStoredReason || "–");
            const status = cell(e.response.status || "–", e._error ? "error" : "");
            if (e._error) status.title = e._error;
            return row([cell(new Date(e.startedDateTime).toLocaleTimeString()), cell(e.request.method), status,
              cell(e.request.url, "url"), cache, cell(stored), cell(Math.round(e.time)), waterfall(e.timings, scale)]);
          });
          replace($("exchanges"), rows, 8, "no exchanges yet");
        }
        async function refresh() {
          const results = await Promise.allSettled([json("/tasks"), json("/har?limit=100"), json("/cache/stats"),
            json("/offline/misses"), json("/upstreams"), json("/listeners")]);
          if (results[0].status === "fulfilled") showTasks(results[0].value);
          if (results[1].status === "fulfilled") showExchanges(results[1].value);
          if (results[2].status === "fulfilled") showCache(results[2].value);
          if (results[3].status === "fulfilled") showMisses(results[3].value);
          if (results[4].status === "fulfilled") showUpstreams(results[4].value);
          if (results[5].status === "fulfilled") showListeners(results[5].value);
          const failed = results.filter((r) => r.status === "rejected").map((r) => r.reason.message);
          $("updated").textContent = "updated " + new Date().toLocaleTimeString()
            + (failed.length ? " — " + failed.join("; ") : "");
        }
        refresh();
        setInterval(refresh, 2000);
        </script>
        </body>
        </html>

        """
}
