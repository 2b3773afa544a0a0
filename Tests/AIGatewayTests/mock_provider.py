"""A mock model provider for the ai-gateway tests, speaking the real wire formats:

- OpenAI chat completions  POST /v1/chat/completions        JSON, or SSE `data:` lines ending in `data: [DONE]`
- OpenAI transcription     POST /v1/audio/transcriptions    multipart/form-data in, verbose_json out
- OpenAI speech            POST /v1/audio/speech            JSON in; audio out, chunked: raw 24 kHz 16-bit mono
                           PCM for response_format "pcm", else a WAV (as the real API's "wav")
- Gemini                   POST /v1beta/models/M:generateContent and :streamGenerateContent?alt=sse
                           (CRLF-separated events, roles user/model, RetryInfo.retryDelay in errors)

Tests script what comes next with POST /_control/script {"route": "openai"|"gemini"|"whisper"|"speech",
"steps": [...]}; each request on the route takes the next step (default: answer "mock answer").
A step may set file (whisper: only for an upload of that file name), status, text, headers, retryDelay (Gemini), delayMs, chunkDelayMs, breakAfter
(chunks sent before the connection is dropped), malformed (broken JSON), finishReason, usage,
transcript, seconds (of speech). GET /_control/requests lists what arrived; POST /_control/reset forgets everything.
Prints its port, then serves."""
import json
import math
import socket
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
SCRIPTS = {"openai": [], "gemini": [], "whisper": [], "speech": []}
REQUESTS = []


def next_step(route, file_name=None):
    """The route's next step; a step with "file" is only for an upload of that file name."""
    with LOCK:
        queue = SCRIPTS[route]
        for index, step in enumerate(queue):
            if step.get("file") in (None, file_name):
                return queue.pop(index)
        return {}


def words(text):
    """The text cut into word-sized tokens, each with the space after it."""
    pieces, current = [], ""
    for char in text:
        current += char
        if char == " ":
            pieces.append(current)
            current = ""
    if current:
        pieces.append(current)
    return pieces or [""]


def parse_multipart(body, content_type):
    boundary = content_type.split("boundary=")[1].strip().encode()
    fields = {}
    for part in body.split(b"--" + boundary):
        if b"\r\n\r\n" not in part:
            continue
        head, value = part.split(b"\r\n\r\n", 1)
        value = value[:-2] if value.endswith(b"\r\n") else value
        head = head.decode("utf-8", "replace")
        name = head.split('name="')[1].split('"')[0] if 'name="' in head else "?"
        if "filename=" in head:
            fields[name] = {"filename": head.split('filename="')[1].split('"')[0], "bytes": len(value), "head": head}
        else:
            fields[name] = value.decode("utf-8", "replace")
    return fields


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    # -- plumbing ---------------------------------------------------------------------------

    def send_json(self, status, obj, headers=None, raw=None):
        data = raw if raw is not None else json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def start_stream(self):
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()

    def chunk(self, data):
        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
        self.wfile.flush()

    def end_stream(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def drop(self):
        """Cuts the connection mid-response, as a crashed upstream would."""
        self.wfile.flush()
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def error_reply(self, step, gemini):
        status = step["status"]
        message = step.get("text") or "mock error %d" % status
        if gemini:
            body = {"error": {"code": status, "message": message, "status": "RESOURCE_EXHAUSTED" if status == 429 else "UNAVAILABLE"}}
            if "retryDelay" in step:
                body["error"]["details"] = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": step["retryDelay"]}]
        else:
            body = {"error": {"message": message, "type": "mock_error", "code": status}}
        self.send_json(status, body, step.get("headers"))

    # -- routes -----------------------------------------------------------------------------

    def do_GET(self):
        if self.path == "/_control/requests":
            with LOCK:
                self.send_json(200, REQUESTS)
        else:
            self.send_json(404, {"error": {"message": "no such path"}})

    def do_POST(self):
        length = int(self.headers.get("content-length") or 0)
        body = self.rfile.read(length) if length else b""
        if self.path == "/_control/script":
            spec = json.loads(body)
            with LOCK:
                SCRIPTS[spec["route"]].extend(spec["steps"])
            return self.send_json(200, {"ok": True})
        if self.path == "/_control/reset":
            with LOCK:
                for queue in SCRIPTS.values():
                    queue.clear()
                REQUESTS.clear()
            return self.send_json(200, {"ok": True})

        record = {"path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()}}
        content_type = self.headers.get("content-type", "")
        if content_type.startswith("multipart/form-data"):
            record["form"] = parse_multipart(body, content_type)
        else:
            try:
                record["json"] = json.loads(body)
            except ValueError:
                record["raw"] = body.decode("utf-8", "replace")
        with LOCK:
            REQUESTS.append(record)

        if self.path.startswith("/v1/chat/completions"):
            self.openai_chat(record.get("json") or {})
        elif self.path.startswith("/v1/audio/transcriptions"):
            self.whisper(record.get("form") or {})
        elif self.path.startswith("/v1/audio/speech"):
            self.speech(record.get("json") or {})
        elif self.path.startswith("/v1beta/models/"):
            self.gemini(":streamGenerateContent" in self.path)
        else:
            self.send_json(404, {"error": {"message": "no such path"}})

    def openai_chat(self, request):
        step = next_step("openai")
        time.sleep(step.get("delayMs", 0) / 1000)
        if step.get("status", 200) != 200:
            return self.error_reply(step, gemini=False)
        text = step.get("text", "mock answer")
        usage = step.get("usage", {"prompt": 11, "completion": 7})
        usage_json = {"prompt_tokens": usage["prompt"], "completion_tokens": usage["completion"],
                      "total_tokens": usage["prompt"] + usage["completion"]}
        finish = step.get("finishReason", "stop")
        if not request.get("stream"):
            if step.get("malformed"):
                return self.send_json(200, None, raw=b'{"choices": [{"message": {"content": "cut')
            return self.send_json(200, {
                "id": "chatcmpl-mock", "object": "chat.completion", "model": request.get("model"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
                "usage": usage_json})
        self.start_stream()
        for index, token in enumerate(words(text)):
            if step.get("breakAfter") is not None and index >= step["breakAfter"]:
                return self.drop()
            if step.get("malformed") and index == 1:
                self.chunk(b"data: {not json\n\n")
                return self.end_stream()
            event = {"id": "chatcmpl-mock", "object": "chat.completion.chunk",
                     "choices": [{"index": 0, "delta": {"content": token}, "finish_reason": None}]}
            self.chunk(b"data: " + json.dumps(event).encode() + b"\n\n")
            time.sleep(step.get("chunkDelayMs", 0) / 1000)
        self.chunk(b"data: " + json.dumps({"id": "chatcmpl-mock", "object": "chat.completion.chunk",
                                           "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}).encode() + b"\n\n")
        self.chunk(b"data: " + json.dumps({"id": "chatcmpl-mock", "object": "chat.completion.chunk", "choices": [],
                                           "usage": usage_json}).encode() + b"\n\n")
        self.chunk(b"data: [DONE]\n\n")
        self.end_stream()

    def gemini(self, stream):
        step = next_step("gemini")
        time.sleep(step.get("delayMs", 0) / 1000)
        if step.get("status", 200) != 200:
            return self.error_reply(step, gemini=True)
        text = step.get("text", "mock answer")
        usage = step.get("usage", {"prompt": 13, "completion": 5})
        usage_json = {"promptTokenCount": usage["prompt"], "candidatesTokenCount": usage["completion"],
                      "totalTokenCount": usage["prompt"] + usage["completion"]}
        finish = step.get("finishReason", "STOP")
        if not stream:
            if step.get("malformed"):
                return self.send_json(200, None, raw=b'{"candidates": [{"content": ')
            return self.send_json(200, {
                "candidates": [{"content": {"parts": [{"text": text}], "role": "model"}, "finishReason": finish, "index": 0}],
                "usageMetadata": usage_json, "modelVersion": "mock"})
        self.start_stream()
        tokens = words(text)
        for index, token in enumerate(tokens):
            if step.get("breakAfter") is not None and index >= step["breakAfter"]:
                return self.drop()
            if step.get("malformed") and index == 1:
                self.chunk(b"data: {not json\r\n\r\n")
                return self.end_stream()
            candidate = {"content": {"parts": [{"text": token}], "role": "model"}, "index": 0}
            event = {"candidates": [candidate], "modelVersion": "mock"}
            if index == len(tokens) - 1:
                candidate["finishReason"] = finish
                event["usageMetadata"] = usage_json
            self.chunk(b"data: " + json.dumps(event).encode() + b"\r\n\r\n")
            time.sleep(step.get("chunkDelayMs", 0) / 1000)
        self.end_stream()

    def whisper(self, form):
        step = next_step("whisper", (form.get("file") or {}).get("filename"))
        time.sleep(step.get("delayMs", 0) / 1000)
        if step.get("status", 200) != 200:
            return self.error_reply(step, gemini=False)
        transcript = step.get("transcript") or {
            "task": "transcribe", "language": "english", "duration": 4.2, "text": "show math materials",
            "segments": [
                {"id": 0, "seek": 0, "start": 0.0, "end": 1.6, "text": " show math", "avg_logprob": -0.1, "no_speech_prob": 0.01},
                {"id": 1, "seek": 0, "start": 1.6, "end": 4.2, "text": " materials", "avg_logprob": -0.3, "no_speech_prob": 0.02},
            ]}
        self.send_json(200, transcript)

    def speech(self, request):
        step = next_step("speech")
        time.sleep(step.get("delayMs", 0) / 1000)
        if step.get("status", 200) != 200:
            return self.error_reply(step, gemini=False)
        if not request.get("input") or not request.get("voice") or not request.get("model"):
            return self.error_reply({"status": 400, "text": "model, input and voice are required"}, gemini=False)
        rate = 24000
        count = int(step.get("seconds", 1.0) * rate)
        pcm = b"".join(struct.pack("<h", int(8000 * math.sin(2 * math.pi * 220 * i / rate))) for i in range(count))
        if request.get("response_format") == "pcm":
            body, content_type = pcm, "audio/pcm"
        else:  # the real API's WAV has 0xFFFFFFFF sizes: it is streamed
            body = b"RIFF" + struct.pack("<I", 0xFFFFFFFF) + b"WAVEfmt " + struct.pack("<IHHIIHH", 16, 1, 1, rate, rate * 2, 2, 16) \
                + b"data" + struct.pack("<I", 0xFFFFFFFF) + pcm
            content_type = "audio/wav"
        self.send_response(200)
        self.send_header("content-type", content_type)
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for start in range(0, len(body), 8192):
            self.chunk(body[start:start + 8192])
        self.end_stream()


class Server(ThreadingHTTPServer):
    request_queue_size = 128
    daemon_threads = True


server = Server(("127.0.0.1", 0), Handler)
print(server.server_address[1], flush=True)
server.serve_forever()
