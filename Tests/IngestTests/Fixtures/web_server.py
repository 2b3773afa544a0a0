#!/usr/bin/env python3
"""A small web server for ingest.submitURL's tests: pages, files, redirects, bodies too large,
a server too slow. Prints its port, then serves on 127.0.0.1 until killed.

  /article              an HTML page (text/html; charset=utf-8), no extension in the path
  /notes.txt            plain text
  /transcoded           a UTF-8 page (so its Content-Type says) whose <meta> still says ISO-8859-1
  /greek.txt            Greek text in UTF-16LE without a byte order mark, the charset in Content-Type
  /doc                  the file given as the first argument, as application/pdf
  /hop/N                302 to /hop/N-1; /hop/0 302 to /article
  /loop                 302 to itself
  /to/<host>            302 to http://<host>/latest/meta-data/
  /missing              404
  /big-declared         Content-Length of 60 MiB, then nothing
  /stream.mp3           audio/mpeg without Content-Length, 64 KiB chunks until the client leaves
  /slow                 headers, then one byte a second
  /_sent                bytes written by /stream.mp3 so far
"""
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

ARTICLE = b"""<!doctype html><html><head><title>Photosynthesis explained</title>
<style>body { color: red }</style><script>var secret = "script text";</script></head>
<body><h1>Photosynthesis</h1><p>Plants turn <b>light</b> into chemical energy in their chloroplasts.</p>
<p>The Calvin cycle fixes carbon dioxide into sugars.</p></body></html>"""

TRANSCODED = """<html><head><meta charset="iso-8859-1"><title>Menu</title></head>
<body><p>Café crème and crêpes.</p></body></html>""".encode("utf-8")
GREEK = "Η φωτοσύνθεση μετατρέπει το φως σε χημική ενέργεια.\n".encode("utf-16-le")

NOTES = b"Mitochondria are the powerhouse of the cell.\n\nThey make ATP by oxidative phosphorylation.\n"

sent = 0
sent_lock = threading.Lock()
pdf_path = sys.argv[1] if len(sys.argv) > 1 else None


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"

    def log_message(self, *args):
        pass

    def answer(self, status, body=b"", content_type="text/plain", headers=()):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def redirect(self, location):
        self.answer(302, b"", headers=[("Location", location)])

    def do_GET(self):
        global sent
        path = self.path
        if path == "/article":
            self.answer(200, ARTICLE, "text/html; charset=utf-8")
        elif path == "/notes.txt":
            self.answer(200, NOTES, "text/plain")
        elif path == "/transcoded":
            self.answer(200, TRANSCODED, "text/html; charset=utf-8")
        elif path == "/greek.txt":
            self.answer(200, GREEK, 'text/plain; charset="UTF-16LE"')
        elif path == "/doc":
            with open(pdf_path, "rb") as f:
                self.answer(200, f.read(), "application/pdf")
        elif path.startswith("/hop/"):
            n = int(path[5:])
            self.redirect("/article" if n == 0 else "/hop/%d" % (n - 1))
        elif path == "/loop":
            self.redirect("/loop")
        elif path.startswith("/to/"):
            self.redirect("http://%s/latest/meta-data/" % path[4:])
        elif path == "/big-declared":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(60 * 1024 * 1024))
            self.end_headers()
            time.sleep(5)
        elif path == "/stream.mp3":
            self.send_response(200)
            self.send_header("Content-Type", "audio/mpeg")
            self.end_headers()
            chunk = b"\xff\xfb" + b"\x00" * (64 * 1024 - 2)
            try:
                for _ in range(100 * 16):  # at most 100 MiB
                    self.wfile.write(chunk)
                    with sent_lock:
                        sent += len(chunk)
            except (BrokenPipeError, ConnectionResetError):
                pass
        elif path == "/slow":
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.end_headers()
            try:
                for _ in range(60):
                    self.wfile.write(b"x")
                    self.wfile.flush()
                    time.sleep(1)
            except (BrokenPipeError, ConnectionResetError):
                pass
        elif path == "/_sent":
            with sent_lock:
                self.answer(200, str(sent).encode())
        else:
            self.answer(404, b"not found")


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
