#!/usr/bin/env python3
"""Writes the seed corpora of the fuzzers (Fuzz/Corpus/<fuzzer>/) from valid wire messages.

Run from the project root; the files are committed, so this only needs running when the wire
changes. Broker inputs are multipart messages, each frame as a 2-byte big-endian length and
its bytes (see Fuzz/BrokerFuzz)."""
import hashlib, json, os, struct

def write(fuzzer, data):
    folder = os.path.join("Fuzz", "Corpus", fuzzer)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, hashlib.sha1(data).hexdigest()[:16]), "wb") as f:
        f.write(data)

def frames(*parts):
    return b"".join(struct.pack(">H", len(p)) + p for p in parts)

headers = [
    {"id": "r1"},
    {"id": "r2", "deadline": 1795000000000, "user": "alice", "meta": {"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}, "idem": "k1"},
    {"id": "e1", "source": "store", "instance": "6f1c", "seq": 42, "ts": 1795000000000, "user": "alice"},
    {"id": "r3", "code": 5, "message": "no such card", "details": {"field": "id"}},
]
for header in headers:
    write("HeaderFuzz", json.dumps(header, separators=(",", ":")).encode())

payloads = [
    {"text": "a", "count": 1},
    {"text": "é\u2028\"\\", "count": -3, "big": 9007199254740993, "small": 255, "ratio": -1.5e-3, "flag": False,
     "tags": ["x", ""], "at": "2026-11-22T10:00:00.000Z", "kind": "deck",
     "inner": {"id": "i", "score": 0.1, "flags": [True, False]}, "items": [{"id": "j"}, {"id": "k", "score": 2}],
     "table": {"a": 1, "b": -2}},
    {"text": "", "count": 0, "at": "2026-03-08T02:30:00+05:30", "items": []},
]
for payload in payloads:
    write("PayloadFuzz", json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode())

request = json.dumps(headers[1], separators=(",", ":")).encode()
write("BrokerFuzz", frames(b"", b"MDPC01", b"store", b"cards.get", request, b'{"id":"c1"}'))
write("BrokerFuzz", frames(b"", b"MDPC01", b"mmi.services", b"list", b'{"id":"m1"}', b"{}"))
write("BrokerFuzz", frames(b"", b"MDPW01", b"\x01", b"fuzzed", b"4"))
write("BrokerFuzz", frames(b"", b"MDPW01", b"\x03", b"client-identity", b"", b'{"id":"r1","code":0}', b"{}"))
write("BrokerFuzz", frames(b"", b"MDPW01", b"\x04"))
write("BrokerFuzz", frames(b"", b"MDPW01", b"\x05"))

# Ingest: the first byte picks the format, in DocumentProbe.formats' order; the fixtures follow.
formats = ["txt", "md", "html", "csv", "tsv", "srt", "vtt", "ics", "docx", "eml"]
fixtures = {"txt": ["notes.txt", "anki.txt", "utf16.txt"], "md": ["notes.md"], "html": ["page.html"], "csv": ["cards.csv"],
            "tsv": ["cards.tsv"], "srt": ["lecture.srt"], "vtt": ["lecture.vtt"], "ics": ["calendar.ics"],
            "docx": ["report.docx"], "eml": ["mail.eml"]}
for format, names in fixtures.items():
    for name in names:
        with open(os.path.join("Tests", "IngestTests", "Fixtures", name), "rb") as f:
            write("IngestFuzz", bytes([formats.index(format)]) + f.read())
