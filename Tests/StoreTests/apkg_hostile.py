"""Writes a hostile or broken Anki package to stdout, built byte by byte with Python's zipfile
and sqlite3 (not Anki: these are packages Anki would never write).
Usage: apkg_hostile.py KIND
  bomb      collection.anki2 of 300 MiB of zeros (under 1 MiB zipped), its size declared honestly
  liar      the same, its zip headers declaring 1000 bytes
  entries   2000 empty entries beside a valid collection
  view      a collection whose notes "table" is a view of an endless recursive query
  types     a valid collection whose review log holds a time of 1e300 (a REAL in an integer column)
  ease      a valid collection whose review log holds an ease of 9
  deepdecks a valid collection whose deck list is a million nested JSON arrays
  nocol     a zip with only a media file
  notsqlite collection.anki2 that is not a SQLite file
  valid     a small valid collection: two notes, one with three reviews (a baseline)
"""
import io
import os
import sqlite3
import struct
import sys
import tempfile
import time
import zipfile

SCHEMA = """
CREATE TABLE col (id integer PRIMARY KEY, crt integer, mod integer, scm integer, ver integer, dty integer, usn integer, ls integer,
  conf text, models text, decks text, dconf text, tags text);
CREATE TABLE notes (id integer PRIMARY KEY, guid text, mid integer, mod integer, usn integer, tags text, flds text, sfld integer,
  csum integer, flags integer, data text);
CREATE TABLE cards (id integer PRIMARY KEY, nid integer, did integer, ord integer, mod integer, usn integer, type integer,
  queue integer, due integer, ivl integer, factor integer, reps integer, lapses integer, left integer, odue integer, odid integer,
  flags integer, data text);
CREATE TABLE revlog (id integer PRIMARY KEY, cid integer, usn integer, ease integer, ivl integer, lastIvl integer, factor integer,
  time integer, type integer);
"""


def collection(kind):
    folder = tempfile.mkdtemp()
    path = os.path.join(folder, "c.sqlite")
    db = sqlite3.connect(path)
    db.executescript(SCHEMA)
    if kind == "view":
        db.execute("DROP TABLE notes")
        db.execute("""CREATE VIEW notes AS WITH RECURSIVE n(id) AS (SELECT 1 UNION ALL SELECT id + 1 FROM n)
                      SELECT id, 'g' || id AS guid, 1 AS mid, 0 AS mod, 0 AS usn, '' AS tags, 'a' || char(31) || 'b' AS flds,
                      '' AS sfld, 0 AS csum, 0 AS flags, '' AS data FROM n""")
    decks = '{"1": {"id": 1, "name": "Default"}, "5": {"id": 5, "name": "Hostile deck"}}'
    if kind == "deepdecks":
        decks = "[" * 1_000_000
    db.execute("INSERT INTO col VALUES (1, 0, 0, 0, 11, 0, 0, 0, '{}', '{}', ?, '{}', '{}')", (decks,))
    if kind != "view":
        db.execute("INSERT INTO notes VALUES (10, 'guid-a', 1, 0, 0, ' t1 ', 'Front <i>a</i>' || char(31) || 'Back a', '', 0, 0, '')")
        db.execute("INSERT INTO notes VALUES (11, 'guid-b', 1, 0, 0, '', 'Front b' || char(31) || 'Back b', '', 0, 0, '')")
    db.execute("INSERT INTO cards VALUES (20, 10, 5, 0, 0, 0, 2, 2, 0, 1, 2500, 3, 0, 0, 0, 0, 0, '')")
    db.execute("INSERT INTO cards VALUES (21, 11, 5, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, '')")
    now = int(time.time() * 1000)
    for index, ease in enumerate([3, 3, 3]):
        db.execute("INSERT INTO revlog VALUES (?, 20, 0, ?, 1, 0, 2500, 5000, 1)", (now - (10 - index) * 86_400_000, ease))
    if kind == "types":
        db.execute("INSERT INTO revlog VALUES (?, 20, 0, 3, 1, 0, 2500, 1e300, 1)", (now - 2 * 86_400_000,))
    if kind == "ease":
        db.execute("INSERT INTO revlog VALUES (?, 20, 0, 9, 1, 0, 2500, 5000, 1)", (now - 2 * 86_400_000,))
    db.commit()
    db.close()
    with open(path, "rb") as file:
        return file.read()


def package(entries):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries:
            archive.writestr(name, data)
    return buffer.getvalue()


def lying_bomb():
    """A zip whose one entry inflates to 300 MiB while its headers say 1000 bytes."""
    data = package([("collection.anki2", b"\0" * (300 << 20))])
    # Patch the uncompressed size in the local header (offset 22) and the central directory (offset 24).
    data = bytearray(data)
    data[22:26] = struct.pack("<I", 1000)
    central = data.rfind(b"PK\x01\x02")
    data[central + 24:central + 28] = struct.pack("<I", 1000)
    return bytes(data)


def main(kind):
    if kind == "bomb":
        data = package([("collection.anki2", b"\0" * (300 << 20))])
    elif kind == "liar":
        data = lying_bomb()
    elif kind == "entries":
        data = package([("collection.anki2", collection("valid"))] + [(f"../media/{index}", b"") for index in range(2000)])
    elif kind == "nocol":
        data = package([("media", b"{}")])
    elif kind == "notsqlite":
        data = package([("collection.anki2", b"this is not SQLite" * 100)])
    else:
        data = package([("collection.anki2", collection(kind)), ("media", b"{}")])
    sys.stdout.buffer.write(data)


if __name__ == "__main__":
    main(sys.argv[1])
