"""Writes notes.odt, book.epub and slides.pptx with the libraries people's programs use.

Run in a throwaway venv:  python3 -m venv /tmp/v && /tmp/v/bin/pip install odfpy ebooklib python-pptx
                          /tmp/v/bin/python Tests/IngestTests/Fixtures/make_office_fixtures.py
"""
import os

from ebooklib import epub
from odf.opendocument import OpenDocumentText
from odf.text import H, P
from pptx import Presentation
from pptx.util import Inches

HERE = os.path.dirname(os.path.abspath(__file__))


def odt():
    doc = OpenDocumentText()
    doc.text.addElement(H(outlinelevel=1, text="Photosynthesis"))
    doc.text.addElement(P(text="Plants turn light, water and carbon dioxide into sugar and oxygen."))
    doc.text.addElement(H(outlinelevel=2, text="The light reactions"))
    doc.text.addElement(P(text="Chlorophyll in the thylakoid membranes absorbs red and blue light."))
    doc.text.addElement(H(outlinelevel=2, text="The Calvin cycle"))
    doc.text.addElement(P(text="In the stroma, the enzyme RuBisCO fixes carbon dioxide."))
    doc.save(os.path.join(HERE, "notes.odt"))


def epub_book():
    book = epub.EpubBook()
    book.set_identifier("studybus-fixture-book")
    book.set_title("A Short History of Rome")
    book.set_language("en")
    chapters = []
    for number, (title, body) in enumerate([
        ("The Kingdom", "Rome was founded, the legend says, by Romulus in 753 BC."),
        ("The Republic", "The Republic elected two consuls every year."),
        ("The Empire", "Augustus became the first emperor in 27 BC."),
    ], start=1):
        chapter = epub.EpubHtml(title=title, file_name=f"chapter{number}.xhtml", lang="en")
        chapter.content = f"<html><body><h1>{title}</h1><p>{body}</p></body></html>"
        book.add_item(chapter)
        chapters.append(chapter)
    book.toc = chapters
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = chapters  # the navigation document is left out of the reading order
    epub.write_epub(os.path.join(HERE, "book.epub"), book)


def pptx():
    deck = Presentation()
    for title, body, notes in [
        ("Plate tectonics", "The lithosphere is broken into plates.", "Start with the map of the plates."),
        ("Boundaries", "Plates meet at divergent, convergent and transform boundaries.", "Ask about the San Andreas fault."),
        ("Earthquakes", "Stress released at faults makes earthquakes.", None),
    ]:
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
        if notes:
            slide.notes_slide.notes_text_frame.text = notes
    deck.save(os.path.join(HERE, "slides.pptx"))


if __name__ == "__main__":
    odt()
    epub_book()
    pptx()
