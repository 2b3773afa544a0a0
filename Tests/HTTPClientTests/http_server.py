"""A small HTTP/1.1 server for the HTTP client's tests: echo, status codes, slow answers, a
server-sent-event stream cut into awkward chunks, a body that never ends, a gzip bomb and a
redirect. GET /_count answers how many other requests arrived. Prints its port, then serves."""
import gzip
import json
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


BOMB = gzip.compress(bytes(8 << 20))  # 8 MiB of zeros in about 8 KiB
count = 0
count_lock = threading.Lock()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _send(self, status, body, content_type="application/json", extra=None):
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(data)))
        for name, value in (extra or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _body(self):
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def _route(self):
        global count
        body = self._body()
        if self.path == "/_count":
            self._send(200, {"count": count})
            return
        with count_lock:
            count += 1
        if self.path.startswith("/echo"):
            self._send(200, {
                "method": self.command,
                "path": self.path,
                "headers": {k.lower(): v for k, v in self.headers.items()},
                "body": body.decode("utf-8", "replace"),
                "bodyBytes": len(body),
            })
        elif self.path.startswith("/status/"):
            code = int(self.path.split("/")[2])
            self._send(code, {"status": code}, extra={"retry-after": "7"} if code == 429 else None)
        elif self.path.startswith("/slow/"):
            time.sleep(int(self.path.split("/")[2]) / 1000)
            self._send(200, {"slow": True})
        elif self.path == "/sse":
            self.send_response(200)
            self.send_header("content-type", "text/event-stream")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            stream = b"data: one\r\n\r\nevent: custom\r\ndata: two\r\ndata: lines\r\n\r\n: comment\n\ndata: three\r"
            stream += b"\r\n"
            for i in range(0, len(stream), 5):
                piece = stream[i:i + 5]
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
                time.sleep(0.002)
            self.wfile.write(b"0\r\n\r\n")
        elif self.path == "/endless":
            self.send_response(200)
            self.send_header("content-type", "application/octet-stream")
            self.send_header("transfer-encoding", "chunked")
            self.end_headers()
            chunk = b"%x\r\n%s\r\n" % (16384, b"x" * 16384)
            deadline = time.monotonic() + 60
            try:
                while time.monotonic() < deadline:
                    self.wfile.write(chunk)
            except OSError:
                pass
            self.close_connection = True
        elif self.path == "/gzip":
            self._send(200, BOMB, "application/octet-stream", {"content-encoding": "gzip"})
        elif self.path == "/redirect":
            self._send(302, {"moved": True}, extra={"location": "/echo/redirected"})
        else:
            self._send(404, {"error": "no such path"})

    do_GET = do_POST = do_PUT = do_DELETE = _route


class Server(ThreadingHTTPServer):
    request_queue_size = 128
    daemon_threads = True


server = Server(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
