/// The console's page, script and style sheet: plain HTML, CSS and JavaScript, no build step and
/// nothing fetched from elsewhere. The script builds every element with the DOM and writes what
/// it shows as text (`textContent`, text nodes), never as markup, so a topic, user or payload
/// cannot inject any; the content security policy allows no inline script besides.
enum ConsolePage {
    static let html = #"""
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>StudyBus console</title>
        <link rel="stylesheet" href="/console/style.css">
        <script src="/console/app.js" defer></script>
        </head>
        <body>
        <header>
          <h1>StudyBus console</h1>
          <span id="broker">broker</span>
          <span id="status" class="status">connecting…</span>
        </header>
        <form id="login" hidden>
          <p id="login-reason">This console needs the operator token.</p>
          <label>Operator token <input id="token" type="password" autocomplete="off" size="40"></label>
          <button type="submit">Use token</button>
        </form>
        <main>
          <section>
            <h2>Services</h2>
            <table id="services">
              <thead><tr><th>service</th><th>instance</th><th>version</th><th>commit</th><th>health</th><th>credit</th><th>in flight</th><th>queued</th><th>requests</th><th>since</th></tr></thead>
              <tbody></tbody>
            </table>
          </section>
          <section>
            <h2>Methods <select id="window"><option value="60">last minute</option><option value="300" selected>last 5 minutes</option></select></h2>
            <table id="methods">
              <thead><tr><th>service</th><th>method</th><th>requests</th><th>per s</th><th>not OK</th><th>errors</th><th>p50 ms</th><th>p99 ms</th></tr></thead>
              <tbody></tbody>
            </table>
          </section>
          <section>
            <h2>Live tail <span id="tail-state" class="status">off</span></h2>
            <div class="controls">
              <label>Topic <input id="topic" placeholder="e.g. store.*, bus.rpc.>, > (everything)" size="36" spellcheck="false"></label>
              <label><input id="show-events" type="checkbox" checked> events</label>
              <label><input id="show-calls" type="checkbox" checked> calls</label>
              <button id="pause" type="button">Pause</button>
              <button id="clear" type="button">Clear</button>
              <span id="topic-error" class="error"></span>
            </div>
            <table id="tail">
              <thead><tr><th>time</th><th>kind</th><th>subject</th><th>who</th><th>detail</th></tr></thead>
              <tbody></tbody>
            </table>
          </section>
        </main>
        </body>
        </html>

        """#

    static let style = #"""
        :root { font-family: system-ui, sans-serif; font-size: 14px; color: #1d2330; background: #f6f7f9; }
        header { display: flex; gap: 1.5em; align-items: baseline; padding: .6em 1em; background: #1d2330; color: #fff; }
        header h1 { font-size: 1.2em; margin: 0; }
        main { padding: 0 1em 2em; }
        h2 { font-size: 1.05em; margin: 1.4em 0 .4em; }
        table { border-collapse: collapse; width: 100%; background: #fff; }
        th, td { text-align: left; padding: .25em .6em; border-bottom: 1px solid #e3e6eb; white-space: nowrap; }
        th { background: #eceff3; font-weight: 600; }
        td.number { text-align: right; font-variant-numeric: tabular-nums; }
        tr.service td { font-weight: 600; background: #f0f3f8; }
        td.detail { white-space: normal; word-break: break-all; font-family: ui-monospace, monospace; font-size: .92em; }
        .status { font-size: .9em; }
        .ok { color: #137333; }
        .bad { color: #b3261e; font-weight: 600; }
        .warn { color: #a15c00; }
        .error { color: #b3261e; }
        .controls { display: flex; gap: 1em; align-items: center; margin-bottom: .4em; flex-wrap: wrap; }
        form#login { margin: 1em; padding: 1em; background: #fff3cd; border: 1px solid #e0c36a; }
        #tail tbody tr.call td:nth-child(2) { color: #3451b2; }
        #tail tbody tr.event td:nth-child(2) { color: #137333; }

        """#

    static let script = #"""
        "use strict";
        // Everything shown is written as text (text nodes, textContent), never as markup.
        const CODES = ["OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS",
          "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL",
          "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"];
        const MAX_TAIL_ROWS = 500;
        const MAX_METHOD_ROWS = 200;
        const TOKEN_KEY = "studybus-console-token";
        let token = sessionStorage.getItem(TOKEN_KEY) || "";
        let tailAfter = 0;
        let paused = false;
        let tailAbort = null;

        function $(id) { return document.getElementById(id); }

        function el(tag, className, ...children) {
          const element = document.createElement(tag);
          if (className) element.className = className;
          for (const child of children) element.append(child instanceof Node ? child : String(child ?? ""));
          return element;
        }

        function cell(value, className) { return el("td", className, value); }
        function number(value) { return cell(value ?? "–", "number"); }
        function fixed(value, digits) { return value == null ? "–" : Number(value).toFixed(digits); }
        function percent(part, whole) { return whole ? (100 * part / whole).toFixed(1) + " %" : "–"; }

        class Unauthorized extends Error {}

        async function api(path, signal) {
          const headers = token ? { "Authorization": "Bearer " + token } : {};
          const response = await fetch(path, { headers, cache: "no-store", signal });
          if (response.status === 401) {
            showLogin(await response.text());
            throw new Unauthorized("the console needs the operator token");
          }
          if (!response.ok) throw new Error("HTTP " + response.status + ": " + (await response.text()).slice(0, 300));
          return response.json();
        }

        function showLogin(reason) {
          $("login-reason").textContent = reason;
          $("login").hidden = false;
        }

        function setStatus(id, text, className) {
          const status = $(id);
          status.textContent = text;
          status.className = "status " + (className || "");
        }

        function healthClass(health) {
          if (health === "SERVING") return "ok";
          return health ? "bad" : "warn";
        }

        function renderServices(services) {
          const body = $("services").tBodies[0];
          const rows = [];
          for (const service of services) {
            const summary = el("tr", "service");
            summary.dataset.service = service.name;
            const instances = service.instances || [];
            const versions = [...new Set(instances.map(i => i.build ? i.build.version : "?"))];
            const serving = instances.filter(i => i.health === "SERVING").length;
            summary.append(cell(service.name), cell(service.workers + (service.workers === 1 ? " worker" : " workers")),
              cell(versions.join(", ")), cell(""),
              cell(service.workers === 0 ? "no workers" : serving + "/" + instances.length + " serving",
                   service.workers === 0 || serving < instances.length ? "bad" : "ok"),
              number(service.credit), number(service.inFlight), number(service.queued), number(service.requests), cell(""));
            rows.push(summary);
            for (const instance of instances) {
              const row = el("tr", "instance");
              row.dataset.instance = instance.id;
              row.append(cell(""), cell(instance.id), cell(instance.build ? instance.build.version : "?"),
                cell(instance.build ? instance.build.commit : "?"), cell(instance.health || "asking…", healthClass(instance.health)),
                number(instance.credit), number(instance.inFlight), cell(""), cell(""), cell(new Date(instance.since).toLocaleString()));
              rows.push(row);
            }
          }
          if (rows.length === 0) rows.push(el("tr", "", el("td", "", "no service has registered with the broker yet")));
          body.replaceChildren(...rows);
        }

        function renderMethods(methods) {
          const body = $("methods").tBodies[0];
          const rows = methods.slice(0, MAX_METHOD_ROWS).map(m => {
            const row = el("tr");
            row.dataset.method = m.service + "/" + m.method;
            row.append(cell(m.service), cell(m.method), number(m.requests), number(fixed(m.perSecond, 2)),
              cell(percent(m.notOK, m.requests), "number" + (m.notOK ? " warn" : "")),
              cell(percent(m.errors, m.requests), "number" + (m.errors ? " bad" : "")),
              number(fixed(m.p50Ms, 2)), number(fixed(m.p99Ms, 2)));
            return row;
          });
          if (rows.length === 0) rows.push(el("tr", "", el("td", "", "no requests in this window")));
          body.replaceChildren(...rows);
        }

        async function pollOverview() {
          for (;;) {
            try {
              const overview = await api("/console/api/overview?window=" + encodeURIComponent($("window").value));
              $("broker").textContent = "broker " + overview.broker.build.version + " (" + overview.broker.build.commit + "), up since " +
                new Date(overview.broker.startedAt).toLocaleString();
              renderServices(overview.services);
              renderMethods(overview.methods);
              setStatus("status", "updated " + new Date().toLocaleTimeString(), "ok");
            } catch (error) {
              setStatus("status", error.message, "bad");
            }
            await new Promise(resolve => setTimeout(resolve, 2000));
          }
        }

        function tailRow(entry) {
          const row = el("tr", entry.kind);
          row.dataset.subject = entry.subject;
          const time = new Date(entry.ts);
          const cells = [cell(time.toLocaleTimeString() + "." + String(time.getMilliseconds()).padStart(3, "0")), cell(entry.kind),
            cell(entry.subject)];
          if (entry.kind === "call" && entry.call) {
            const call = entry.call;
            const code = CODES[call.code] || String(call.code);
            cells.push(cell(call.user || ""));
            cells.push(cell(code + "  " + (call.latencyUs / 1000).toFixed(2) + " ms  " + call.requestBytes + " → " + call.replyBytes + " bytes" +
              (call.fromBroker ? "  (answered by the broker)" : ""), "detail" + (call.code === 0 ? "" : " warn")));
          } else {
            let header = {};
            try { header = JSON.parse(entry.header || "{}"); } catch (_) { header = {}; }
            cells.push(cell(header.user || ""));
            const origin = (header.source || "?") + " #" + (header.seq ?? "?");
            cells.push(cell(origin + "  " + (entry.payload || "") + (entry.truncated ? " …" : ""), "detail"));
          }
          row.append(...cells);
          return row;
        }

        function showsKind(kind) {
          return kind === "call" ? $("show-calls").checked : $("show-events").checked;
        }

        async function pollTail() {
          for (;;) {
            if (paused) { await new Promise(resolve => setTimeout(resolve, 500)); continue; }
            tailAbort = new AbortController();
            const topic = $("topic").value.trim();
            try {
              const tail = await api("/console/api/tail?wait=1&after=" + tailAfter + (topic ? "&topic=" + encodeURIComponent(topic) : ""),
                tailAbort.signal);
              $("topic-error").textContent = "";
              if (paused) continue;
              tailAfter = tail.next;
              const body = $("tail").tBodies[0];
              if (tail.missed) body.prepend(el("tr", "missed", el("td", "warn", "… some entries were dropped (the console keeps the last 1000)")));
              for (const entry of tail.entries) {
                if (showsKind(entry.kind)) body.prepend(tailRow(entry));
              }
              while (body.rows.length > MAX_TAIL_ROWS) body.deleteRow(-1);
              setStatus("tail-state", "live", "ok");
            } catch (error) {
              if (error.name === "AbortError") continue;
              setStatus("tail-state", "stopped", "bad");
              if (!(error instanceof Unauthorized) && error.message.startsWith("HTTP 400")) $("topic-error").textContent = error.message;
              await new Promise(resolve => setTimeout(resolve, 2000));
            }
          }
        }

        function restartTail() {
          tailAfter = 0;
          $("tail").tBodies[0].replaceChildren();
          if (tailAbort) tailAbort.abort();
        }

        document.addEventListener("DOMContentLoaded", () => {
          $("login").addEventListener("submit", event => {
            event.preventDefault();
            token = $("token").value.trim();
            sessionStorage.setItem(TOKEN_KEY, token);
            $("login").hidden = true;
            restartTail();
          });
          $("topic").addEventListener("change", restartTail);
          $("show-events").addEventListener("change", restartTail);
          $("show-calls").addEventListener("change", restartTail);
          $("clear").addEventListener("click", () => $("tail").tBodies[0].replaceChildren());
          $("pause").addEventListener("click", () => {
            paused = !paused;
            $("pause").textContent = paused ? "Resume" : "Pause";
            setStatus("tail-state", paused ? "paused" : "live", paused ? "warn" : "ok");
          });
          pollOverview();
          pollTail();
        });

        """#
}
