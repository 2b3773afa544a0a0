"""A local stand-in for Google's OAuth token endpoint and the Calendar, Gmail and Drive REST APIs,
speaking their wire format (JSON bodies, error objects, page and sync tokens), for the connectors
tests. Prints its port on the first line, then serves until killed.

State is driven by the tests over /_control (POST JSON), and read back from /_log (every request
seen, with its time) so a test can check what the service asked for and when.

Google's formats reproduced here:
  POST /token                                   grant_type=authorization_code|refresh_token; errors
                                                {"error": "invalid_grant", "error_description": ...} (400)
  POST /revoke                                  token=...
  GET  /calendar/v3/calendars/{id}/events       maxResults, pageToken, syncToken -> items, nextPageToken,
                                                nextSyncToken; an unknown or reset syncToken -> 410 (fullSyncRequired)
  GET  /gmail/v1/users/me/profile               historyId
  GET  /gmail/v1/users/me/messages              q, labelIds, maxResults, pageToken -> messages[{id, threadId}]
  GET  /gmail/v1/users/me/messages/{id}         format=raw -> raw (base64url)
  GET  /gmail/v1/users/me/history               startHistoryId, labelId, historyTypes -> history[{messagesAdded}],
                                                historyId; a startHistoryId older than kept -> 404
  GET  /drive/v3/files                          q "'F' in parents and trashed = false", pageToken
  GET  /drive/v3/files/{id}?alt=media           the bytes
  GET  /drive/v3/files/{id}/export?mimeType=    a Google Doc as text
Errors are Google's: {"error": {"code", "message", "errors": [{"domain", "reason", "message"}], "status"}}.
"""

import base64
import json
import re
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

LOCK = threading.Lock()
STATE = {}


def reset():
    STATE.clear()
    STATE.update({
        "codes": {},            # code -> {"refresh": token, "sub", "email"}
        "refresh": {},          # refresh token -> True (valid)
        "access": {},           # access token -> expiry (epoch s)
        "expires_in": 3600,
        "events": {},           # calendar -> {id: event}
        "calendar_version": 0,  # bumps on each change; a sync token is "v<version>"
        "calendar_changes": [], # (version, calendar, event id)
        "calendar_min_token": 0,
        "page_size": None,      # force small pages
        "messages": {},         # id -> {"raw": bytes, "labels": [...], "history": n}
        "history_id": 1000,
        "history_floor": 0,     # startHistoryId below this -> 404
        "files": {},            # id -> {"name", "mimeType", "parents", "modifiedTime", "content": bytes, "trashed"}
        "fail": [],             # queued failures: {"path": regex, "status", "reason", "retry_after", "count"}
        "hostile": {},          # path regex -> "huge" | "garbage" | "absurd"
        "log": [],
        "revoked": [],
    })


reset()


def error_body(status, reason, message):
    names = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 410: "GONE",
             429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}
    return {"error": {"code": status, "message": message,
                      "errors": [{"domain": "global", "reason": reason, "message": message}],
                      "status": names.get(status, "UNKNOWN")}}


def id_token(sub, email):
    def part(obj):
        return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()
    return part({"alg": "RS256", "typ": "JWT"}) + "." + part({"sub": sub, "email": email, "iss": "https://accounts.google.com"}) + ".c2ln"


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send_json(self, status, obj, headers=None):
        body = json.dumps(obj).encode()
        self.send_bytes(status, body, "application/json; charset=UTF-8", headers)

    def send_bytes(self, status, body, content_type, headers=None):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)

    def read_body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def do_POST(self):
        self.handle_request("POST")

    def do_GET(self):
        self.handle_request("GET")

    def handle_request(self, method):
        url = urllib.parse.urlsplit(self.path)
        path = url.path
        query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        body = self.read_body() if method == "POST" else b""
        if path == "/_control":
            return self.control(json.loads(body or b"{}"))
        if path == "/_log":
            with LOCK:
                return self.send_json(200, {"log": STATE["log"], "revoked": STATE["revoked"]})
        with LOCK:
            STATE["log"].append({"method": method, "path": path, "query": query, "t": time.time(),
                                 "auth": self.headers.get("Authorization", "")})
            # queued failures first
            for failure in STATE["fail"]:
                if failure["count"] > 0 and re.search(failure["path"], path):
                    failure["count"] -= 1
                    headers = {"Retry-After": str(failure["retry_after"])} if failure.get("retry_after") is not None else {}
                    return self.send_json(failure["status"], error_body(failure["status"], failure["reason"], "Rate Limit Exceeded"), headers)
            for pattern, kind in STATE["hostile"].items():
                if re.search(pattern, path):
                    return self.hostile(kind)
            if path == "/token":
                return self.token(urllib.parse.parse_qs(body.decode()))
            if path == "/revoke":
                token = urllib.parse.parse_qs(body.decode()).get("token", [""])[0]
                STATE["revoked"].append(token)
                STATE["refresh"].pop(token, None)
                return self.send_json(200, {})
            auth = self.headers.get("Authorization", "")
            expiry = STATE["access"].get(auth[len("Bearer "):]) if auth.startswith("Bearer ") else None
            if expiry is None or expiry < time.time():
                return self.send_json(401, error_body(401, "authError", "Invalid Credentials"))
            match = re.fullmatch(r"/calendar/v3/calendars/([^/]+)/events", path)
            if match:
                return self.calendar(urllib.parse.unquote(match.group(1)), query)
            if path == "/gmail/v1/users/me/profile":
                return self.send_json(200, {"emailAddress": "student@example.org", "messagesTotal": len(STATE["messages"]),
                                            "historyId": str(STATE["history_id"])})
            if path == "/gmail/v1/users/me/messages":
                return self.gmail_list(query)
            match = re.fullmatch(r"/gmail/v1/users/me/messages/([^/]+)", path)
            if match:
                return self.gmail_get(match.group(1), query)
            if path == "/gmail/v1/users/me/history":
                return self.gmail_history(query)
            if path == "/drive/v3/files":
                return self.drive_list(query)
            match = re.fullmatch(r"/drive/v3/files/([^/]+)(/export)?", path)
            if match:
                return self.drive_get(match.group(1), bool(match.group(2)), query)
            return self.send_json(404, error_body(404, "notFound", "Not Found"))

    def hostile(self, kind):
        if kind == "huge":
            body = b'{"items": [' + b'{"id": "x"},' * 2_000_000 + b'{"id": "y"}]}'
            return self.send_bytes(200, body, "application/json")
        if kind == "garbage":
            return self.send_bytes(200, b'{"items": [{"id": "a", "summary": ', "application/json")
        if kind == "absurd":
            return self.send_json(200, {"access_token": "x", "expires_in": 10 ** 30, "token_type": "Bearer"})
        if kind == "badtoken":
            return self.send_json(200, {"items": [], "nextSyncToken": 12345})
        return self.send_bytes(500, b"?", "text/plain")

    def control(self, command):
        with LOCK:
            action = command["action"]
            if action == "reset":
                reset()
            elif action == "code":
                STATE["codes"][command["code"]] = {"refresh": command["refresh"], "sub": command.get("sub"), "email": command.get("email")}
            elif action == "revoke_refresh":
                STATE["refresh"].pop(command["refresh"], None)
            elif action == "expires_in":
                STATE["expires_in"] = command["seconds"]
            elif action == "event":
                calendar = command.get("calendar", "primary")
                event = command["event"]
                STATE["calendar_version"] += 1
                event["updated"] = "2026-12-01T00:00:%02d.%03dZ" % (STATE["calendar_version"] % 60, STATE["calendar_version"])
                event.setdefault("status", "confirmed")
                event["etag"] = '"%d"' % STATE["calendar_version"]
                STATE["events"].setdefault(calendar, {})[event["id"]] = event
                STATE["calendar_changes"].append((STATE["calendar_version"], calendar, event["id"]))
            elif action == "events_bulk":
                calendar = command.get("calendar", "primary")
                for index in range(command["count"]):
                    STATE["calendar_version"] += 1
                    event_id = "bulk%06d" % index
                    STATE["events"].setdefault(calendar, {})[event_id] = {
                        "id": event_id, "status": "confirmed", "summary": "Lecture %d" % index, "etag": '"%d"' % STATE["calendar_version"],
                        "updated": "2026-12-01T00:00:00.%03dZ" % (index % 1000),
                        "start": {"dateTime": "2026-12-%02dT%02d:00:00Z" % (1 + index % 28, index % 24)}}
                    STATE["calendar_changes"].append((STATE["calendar_version"], calendar, event_id))
            elif action == "reset_sync_tokens":
                STATE["calendar_min_token"] = STATE["calendar_version"] + 1
            elif action == "page_size":
                STATE["page_size"] = command["size"]
            elif action == "message":
                STATE["history_id"] += 1
                STATE["messages"][command["id"]] = {"raw": command["raw"].encode(), "labels": command.get("labels", ["INBOX"]),
                                                    "history": STATE["history_id"]}
            elif action == "history_floor":
                STATE["history_floor"] = STATE["history_id"] + 1
            elif action == "file":
                file = command["file"]
                file["content"] = file.get("content", "").encode()
                STATE["files"][file["id"]] = file
            elif action == "remove_file":
                STATE["files"].pop(command["id"], None)
            elif action == "fail":
                STATE["fail"].append({"path": command["path"], "status": command["status"], "reason": command.get("reason", "rateLimitExceeded"),
                                      "retry_after": command.get("retry_after"), "count": command.get("count", 1)})
            elif action == "hostile":
                STATE["hostile"][command["path"]] = command["kind"]
            elif action == "clear_hostile":
                STATE["hostile"].clear()
            elif action == "clear_log":
                STATE["log"].clear()
        return self.send_json(200, {"ok": True})

    def token(self, form):
        grant = form.get("grant_type", [""])[0]
        if form.get("client_id", [""])[0] != "test-client.apps.googleusercontent.com":
            return self.send_json(401, {"error": "invalid_client", "error_description": "The OAuth client was not found."})
        if grant == "authorization_code":
            code = form.get("code", [""])[0]
            info = STATE["codes"].pop(code, None)
            if info is None:
                return self.send_json(400, {"error": "invalid_grant", "error_description": "Malformed auth code."})
            STATE["refresh"][info["refresh"]] = True
            access = "ya29.access-%d" % (len(STATE["access"]) + 1)
            STATE["access"][access] = time.time() + STATE["expires_in"]
            answer = {"access_token": access, "expires_in": STATE["expires_in"], "refresh_token": info["refresh"],
                      "scope": "https://www.googleapis.com/auth/calendar.readonly https://www.googleapis.com/auth/gmail.readonly openid email",
                      "token_type": "Bearer"}
            if info.get("sub"):
                answer["id_token"] = id_token(info["sub"], info.get("email"))
            return self.send_json(200, answer)
        if grant == "refresh_token":
            refresh = form.get("refresh_token", [""])[0]
            if refresh not in STATE["refresh"]:
                return self.send_json(400, {"error": "invalid_grant", "error_description": "Token has been expired or revoked."})
            access = "ya29.access-%d" % (len(STATE["access"]) + 1)
            STATE["access"][access] = time.time() + STATE["expires_in"]
            return self.send_json(200, {"access_token": access, "expires_in": STATE["expires_in"], "token_type": "Bearer",
                                        "scope": "https://www.googleapis.com/auth/calendar.readonly"})
        return self.send_json(400, {"error": "unsupported_grant_type", "error_description": "Invalid grant_type: " + grant})

    def calendar(self, calendar, query):
        size = min(int(query.get("maxResults", ["250"])[0]), STATE["page_size"] or 2500)
        sync_token = query.get("syncToken", [None])[0]
        page_token = query.get("pageToken", [None])[0]
        events = STATE["events"].get(calendar, {})
        if page_token:
            kind, since, offset = page_token.split(":")
            since, offset = int(since), int(offset)
        elif sync_token:
            if not sync_token.startswith("v") or not sync_token[1:].isdigit() or int(sync_token[1:]) < STATE["calendar_min_token"]:
                return self.send_json(410, error_body(410, "fullSyncRequired", "Sync token is no longer valid, a full sync is required."))
            kind, since, offset = "inc", int(sync_token[1:]), 0
        else:
            kind, since, offset = "full", 0, 0
        if kind == "full":
            ids = sorted(i for i, e in events.items() if e["status"] != "cancelled")
        else:
            changed = []
            for version, cal, event_id in STATE["calendar_changes"]:
                if cal == calendar and version > since and event_id not in changed:
                    changed.append(event_id)
            ids = changed
        page = ids[offset:offset + size]
        answer = {"kind": "calendar#events", "summary": calendar, "items": [events[i] for i in page]}
        if offset + size < len(ids):
            answer["nextPageToken"] = "%s:%d:%d" % (kind, since, offset + size)
        else:
            answer["nextSyncToken"] = "v%d" % STATE["calendar_version"]
        return self.send_json(200, answer)

    def gmail_matches(self, message, query, labels):
        if labels and not set(labels) & set(message["labels"]):
            return False
        if query:
            raw = message["raw"].decode(errors="replace").lower()
            return all(word.lower() in raw for word in query.split())
        return True

    def gmail_list(self, query):
        labels = query.get("labelIds", [])
        q = query.get("q", [""])[0]
        ids = sorted((m for m in STATE["messages"] if self.gmail_matches(STATE["messages"][m], q, labels)),
                     key=lambda m: -STATE["messages"][m]["history"])
        size = min(int(query.get("maxResults", ["100"])[0]), STATE["page_size"] or 500)
        offset = int(query.get("pageToken", ["0"])[0])
        answer = {"messages": [{"id": m, "threadId": "t" + m} for m in ids[offset:offset + size]], "resultSizeEstimate": len(ids)}
        if offset + size < len(ids):
            answer["nextPageToken"] = str(offset + size)
        return self.send_json(200, answer)

    def gmail_get(self, message_id, query):
        message = STATE["messages"].get(message_id)
        if message is None:
            return self.send_json(404, error_body(404, "notFound", "Requested entity was not found."))
        if query.get("format", [""])[0] != "raw":
            return self.send_json(400, error_body(400, "invalidArgument", "tests only serve format=raw"))
        return self.send_json(200, {"id": message_id, "threadId": "t" + message_id, "labelIds": message["labels"],
                                    "historyId": str(message["history"]), "sizeEstimate": len(message["raw"]),
                                    "raw": base64.urlsafe_b64encode(message["raw"]).decode()})

    def gmail_history(self, query):
        start = int(query.get("startHistoryId", ["0"])[0])
        if start < STATE["history_floor"]:
            return self.send_json(404, error_body(404, "notFound", "Requested entity was not found."))
        label = query.get("labelId", [None])[0]
        records = []
        for message_id, message in sorted(STATE["messages"].items(), key=lambda item: item[1]["history"]):
            if message["history"] > start and (label is None or label in message["labels"]):
                records.append({"id": str(message["history"]),
                                "messages": [{"id": message_id, "threadId": "t" + message_id}],
                                "messagesAdded": [{"message": {"id": message_id, "threadId": "t" + message_id, "labelIds": message["labels"]}}]})
        return self.send_json(200, {"history": records, "historyId": str(STATE["history_id"])})

    def drive_list(self, query):
        q = query.get("q", [""])[0]
        match = re.fullmatch(r"'((?:[^'\\]|\\.)*)' in parents and trashed = false", q)
        if not match:
            return self.send_json(400, error_body(400, "invalid", "Invalid Value"))
        folder = match.group(1)
        files = sorted((f for f in STATE["files"].values() if folder in f["parents"] and not f.get("trashed")), key=lambda f: f["id"])
        size = min(int(query.get("pageSize", ["100"])[0]), STATE["page_size"] or 1000)
        offset = int(query.get("pageToken", ["0"])[0])
        answer = {"kind": "drive#fileList", "files": [
            {"id": f["id"], "name": f["name"], "mimeType": f["mimeType"], "modifiedTime": f["modifiedTime"],
             **({"size": str(len(f["content"]))} if not f["mimeType"].startswith("application/vnd.google-apps.") else {})}
            for f in files[offset:offset + size]]}
        if offset + size < len(files):
            answer["nextPageToken"] = str(offset + size)
        return self.send_json(200, answer)

    def drive_get(self, file_id, export, query):
        file = STATE["files"].get(file_id)
        if file is None:
            return self.send_json(404, error_body(404, "notFound", "File not found: " + file_id))
        google_type = file["mimeType"].startswith("application/vnd.google-apps.")
        if export:
            if not google_type:
                return self.send_json(403, error_body(403, "fileNotExportable", "Export only supports Docs Editors files."))
            return self.send_bytes(200, file["content"], query.get("mimeType", ["text/plain"])[0])
        if query.get("alt", [""])[0] != "media":
            return self.send_json(200, {"id": file_id, "name": file["name"], "mimeType": file["mimeType"]})
        if google_type:
            return self.send_json(403, error_body(403, "fileNotDownloadable", "Only files with binary content can be downloaded. Use Export with Docs Editors files."))
        return self.send_bytes(200, file["content"], file["mimeType"])


class Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128


def main():
    server = Server(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
