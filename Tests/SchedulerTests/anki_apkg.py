"""Anki packages through Anki's own backend (the `anki` package from PyPI).

  anki_apkg.py read FILE   imports the .apkg into a new collection with its scheduling and prints
                           each note (fields as text, tags, deck) with its first card's scheduling
                           as Anki sees it: type, queue, reps, lapses, revlog entries, the UTC date
                           it is due and whether Anki would show it now.
  anki_apkg.py make FILE [legacy|current]
                           builds a deck with Anki: five notes, three of them reviewed now
                           (good; easy; good twice), and exports it with scheduling, in the format
                           older Anki reads (legacy, the default) or current Anki's (zstd).
"""
import datetime
import html
import json
import os
import sys
import tempfile
import time

from anki.collection import Collection, ExportAnkiPackageOptions, ImportAnkiPackageOptions, ImportAnkiPackageRequest


def text(field):
    return html.unescape(field.replace("<br>", "\n"))


def read(path):
    with tempfile.TemporaryDirectory() as folder:
        collection = Collection(os.path.join(folder, "collection.anki2"))
        try:
            collection.import_anki_package(ImportAnkiPackageRequest(
                package_path=path, options=ImportAnkiPackageOptions(with_scheduling=True, with_deck_configs=True)))
            today = collection.sched.today
            now = int(time.time())
            # Anki's day starts at its rollover hour (4 am here, in the machine's zone, UTC in the tests).
            day_start = datetime.datetime.fromtimestamp(collection.sched.day_cutoff, datetime.timezone.utc) - datetime.timedelta(days=1)
            notes = []
            for note_id in sorted(collection.find_notes("")):
                note = collection.get_note(note_id)
                card = sorted(note.cards(), key=lambda c: c.ord)[0]
                if card.queue in (2, 3):
                    due = (day_start + datetime.timedelta(days=card.due - today)).date().isoformat()
                    shown = card.due <= today
                elif card.queue == 1:
                    due = datetime.datetime.fromtimestamp(card.due, datetime.timezone.utc).date().isoformat()
                    shown = card.due <= now + collection.get_config("collapseTime", 1200)
                else:
                    due, shown = None, card.queue == 0
                notes.append({
                    "fields": [text(field) for field in note.fields], "tags": note.tags, "deck": collection.decks.name(card.did),
                    "type": card.type, "queue": card.queue, "reps": card.reps, "lapses": card.lapses, "ivl": card.ivl,
                    "revlog": collection.db.scalar("select count() from revlog where cid = ?", card.id),
                    "due": due, "shownNow": shown,
                })
        finally:
            collection.close()
    json.dump({"notes": notes}, sys.stdout)


def make(path, format):
    with tempfile.TemporaryDirectory() as folder:
        collection = Collection(os.path.join(folder, "collection.anki2"))
        try:
            model = collection.models.by_name("Basic")
            deck = collection.decks.id("Anki deck")
            contents = [("Good once", "<b>bold</b> &amp; more", ["reviewed"]), ("Easy once", "line<br>break", ["reviewed", "easy"]),
                        ("Good twice", "<div>two</div><div>divs</div>", []), ("New one", "never seen", ["new"]),
                        ("New two &lt;3", "[sound:x.mp3]heard", [])]
            for front, back, tags in contents:
                note = collection.new_note(model)
                note["Front"], note["Back"] = front, back
                note.tags = tags
                collection.add_note(note, deck)
            collection.decks.select(deck)
            answers = {"Good once": [3], "Easy once": [4], "Good twice": [3, 3]}
            for note_id in collection.find_notes(""):
                note = collection.get_note(note_id)
                for ease in answers.get(note["Front"], []):
                    card = collection.get_card(note.cards()[0].id)
                    card.start_timer()
                    collection.sched.answerCard(card, ease)
            collection.export_anki_package(
                out_path=path, options=ExportAnkiPackageOptions(
                    with_scheduling=True, with_deck_configs=True, with_media=True, legacy=format == "legacy"), limit=None)
        finally:
            collection.close()


if __name__ == "__main__":
    if sys.argv[1] == "read":
        read(sys.argv[2])
    else:
        make(sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "legacy")
