"""Imports an Anki text export into a new collection with Anki's own backend (the `anki`
package from PyPI) and prints the notes it made as JSON: each note's fields as text (Anki stores
an import with `#html:false` as escaped HTML, a line break as <br>), tags and deck.
Usage: anki_import.py FILE
"""
import html
import json
import os
import sys
import tempfile

from anki.collection import Collection, ImportCsvRequest


def main(path):
    with tempfile.TemporaryDirectory() as folder:
        collection = Collection(os.path.join(folder, "collection.anki2"))
        try:
            # The file's own header lines (#separator, #deck, #tags column, ...) set the import up,
            # as in Anki's File > Import.
            metadata = collection.get_csv_metadata(path=path, delimiter=None)
            collection.import_csv(ImportCsvRequest(path=path, metadata=metadata))
            notes = []
            for note_id in sorted(collection.find_notes("")):
                note = collection.get_note(note_id)
                fields = [html.unescape(field.replace("<br>", "\n")) for field in note.fields]
                notes.append({"fields": fields, "tags": note.tags,
                              "deck": collection.decks.name(note.cards()[0].did)})
        finally:
            collection.close()
    json.dump({"notes": notes}, sys.stdout)


if __name__ == "__main__":
    main(sys.argv[1])
