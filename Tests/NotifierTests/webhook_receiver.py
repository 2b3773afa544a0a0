"""A local HTTP/1.1 receiver for the notifier's tests and benchmark, speaking what webhook
endpoints and an ntfy server speak. Prints its port, then serves (asyncio, keep-alive).

POST paths choose the answer, so a test needs no set-up call:
  /ok/<name>                      200
  /seq/<s1>,<s2>,.../<name>       the n-th request to this path gets s_n (the last repeats);
                                  a status may carry a Retry-After: 429:2 answers 429 with "Retry-After: 2"
                                  (percent-encoded, so an HTTP date fits: 503:Fri%2C%2031%20Dec...)
  /leak/<status>/<name>           answers <status> with a body a user must never read back
                                  (and, for a 3xx, a Location to /ok/redirected)
  /endless/<name>                 answers 200 with a chunked body that does not end
  /slow/<ms>/<name>               answers 200 after <ms> milliseconds
  /                               ntfy JSON publishing (200 with an ntfy-like message)
GET /_received?path=<prefix>      the requests recorded so far (headers lower-cased, body text, t_ns)
GET /_stats                       {"total": n, "unique": distinct webhook-id or x-message-id}
With --lean, bodies are kept only for paths starting with /lat/ (benchmark).
"""
import asyncio
import json
import sys
import time
from urllib.parse import parse_qs, unquote, urlsplit
sys.dont_write_bytecode = True  # no __pycache__ inside the Swift test target
from receiver_support import exit_with_parent  # noqa: E402

LEAN = "--lean" in sys.argv
LEAK = b"internal-only: db password hunter2, 10.0.0.7:5432"
records = []
counters = {}
total = 0
unique = set()


def answer(status, body=b"", extra=None):
    reason = {200: "OK", 404: "Not Found", 410: "Gone", 429: "Too Many Requests", 500: "Internal Server Error",
              503: "Service Unavailable"}.get(status, "Status")
    head = [f"HTTP/1.1 {status} {reason}", f"content-length: {len(body)}", "content-type: application/json"]
    for name, value in (extra or {}).items():
        head.append(f"{name}: {value}")
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


async def route(method, target, headers, body):
    global total
    parts = urlsplit(target)
    path = parts.path
    if method == "GET" and path == "/_received":
        prefix = parse_qs(parts.query).get("path", [""])[0]
        chosen = [r for r in records if r["path"].startswith(prefix)]
        return answer(200, json.dumps(chosen).encode())
    if method == "GET" and path == "/_stats":
        return answer(200, json.dumps({"total": total, "unique": len(unique)}).encode())
    total += 1
    message_id = headers.get("webhook-id") or headers.get("x-message-id")
    if message_id:
        unique.add(message_id)
    if not LEAN or path.startswith("/lat/"):
        records.append({"path": path, "headers": headers, "body": body.decode("utf-8", "replace"), "t_ns": time.time_ns()})
    segments = path.strip("/").split("/")
    if segments[0] == "seq" and len(segments) >= 2:
        n = counters.get(path, 0)
        counters[path] = n + 1
        steps = segments[1].split(",")
        step = steps[min(n, len(steps) - 1)]
        status, _, retry_after = step.partition(":")
        extra = {"retry-after": unquote(retry_after)} if retry_after else None
        return answer(int(status), json.dumps({"attempt": n + 1}).encode(), extra)
    if segments[0] == "leak" and len(segments) >= 2:
        status = int(segments[1])
        return answer(status, LEAK, {"location": "/ok/redirected"} if 300 <= status < 400 else None)
    if segments[0] == "slow" and len(segments) >= 2:
        await asyncio.sleep(int(segments[1]) / 1000)
    if path == "/":
        try:
            topic = json.loads(body).get("topic", "")
        except ValueError:
            return answer(400, b'{"code":40001,"http":400,"error":"invalid request: body must be JSON"}')
        return answer(200, json.dumps({"id": "x", "time": int(time.time()), "event": "message", "topic": topic}).encode())
    return answer(200, b'{"ok":true}')


async def endless(writer, recorded):
    """A 200 whose chunked body goes on until the client stops reading (or 60 s pass)."""
    del recorded  # the request is recorded; its usual answer is not sent
    writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\n\r\n")
    chunk = b"%x\r\n%s\r\n" % (16384, LEAK.ljust(16384, b"."))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        writer.write(chunk)
        await writer.drain()


async def serve(reader, writer):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method, target, _ = lines[0].split(" ", 2)
            headers = {}
            for line in lines[1:]:
                if ":" in line:
                    name, value = line.split(":", 1)
                    headers[name.strip().lower()] = value.strip()
            length = int(headers.get("content-length", "0"))
            body = await reader.readexactly(length) if length else b""
            if target.startswith("/endless/"):
                await endless(writer, await route(method, target, headers, body))
                break
            writer.write(await route(method, target, headers, body))
            if headers.get("connection", "").lower() == "close":
                break
    except (asyncio.IncompleteReadError, ConnectionError, ValueError):
        pass
    finally:
        writer.close()



async def main():
    server = await asyncio.start_server(serve, "127.0.0.1", 0, backlog=1024)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


exit_with_parent()
asyncio.run(main())
