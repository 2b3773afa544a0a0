#!/usr/bin/env python3
"""Writes the ingest test fixtures into this folder, byte for byte the same on every run.

Python's standard library only, plus poppler's pdftoppm (Debian poppler-utils, already an ingest
requirement) to render the OCR images from a PDF written here. Run it from anywhere:

    python3 Tests/IngestTests/Fixtures/make_fixtures.py

Every fixture is small (a few KB); the tests read them from this folder.
"""
import base64
import hashlib
import io
import os
import struct
import subprocess
import tempfile
import wave
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))


def write(name, data):
    if isinstance(data, str):
        data = data.encode("utf-8")
    with open(os.path.join(HERE, name), "wb") as file:
        file.write(data)


# -- Text formats ------------------------------------------------------------------------------

MARKDOWN = """---
author: Test Author
---
# Cell Biology

Cells are the basic unit of life. Every living organism is made of one or more cells.

## Mitochondria

The mitochondria is the powerhouse of the cell. It produces ATP through cellular respiration,
which releases energy stored in glucose.

Mitochondria have their own DNA. They are inherited from the mother.

## Chloroplasts

Photosynthesis converts light energy into chemical energy. Chlorophyll absorbs light most
strongly in the blue and red wavelengths, which is why leaves look green.

```
# not a heading: code
glucose + oxygen -> carbon dioxide + water
```

Read more in the [textbook](https://example.org/biology) or see **Figure 3**.
"""

PLAIN = """Lecture notes: the French Revolution

The French Revolution began in 1789. It ended the absolute monarchy of Louis XVI.

The Estates-General met in May 1789. The Third Estate declared itself the National Assembly.
The storming of the Bastille followed on 14 July.
"""

ACCENTED = "Perché la città è così bella? Perché è antica.\n\nL'università di Bologna è la più antica d'Europa."

HTML = """<!DOCTYPE html>
<html><head><meta charset="utf-8"><title>Plant Cells &amp; Tissues</title>
<style>body { color: red; } .hidden { display: none }</style>
<script>var secret = "do not index this script";</script>
</head>
<body>
<nav>Home</nav>
<h1>Plant cells</h1>
<p>Plant cells have a <b>cell wall</b> made of cellulose. The wall gives the cell its shape &mdash; and protects it.</p>
<h2>Vacuoles</h2>
<p>The central vacuole stores water &amp; nutrients.<br>It keeps the cell firm.</p>
<ul><li>Turgor pressure</li><li>Storage of ions</li></ul>
<!-- a comment that is not text -->
</body></html>
"""

CSV = """front,back,tags
What is the powerhouse of the cell?,The mitochondria,biology;cells
"What does ATP store?","Energy, for the cell's work",biology
"Define osmosis","The movement of water
across a membrane",biology;transport
"""

TSV = "What is H2O?\tWater\tchemistry\nWhat is NaCl?\tTable salt\tchemistry\n"

ANKI = """#separator:tab
#html:true
#tags column:3
Capital of <b>Italy</b>?\tRome\tgeography europe
Capital of France?\t<i>Paris</i>\tgeography
"""

SRT = """1
00:00:01,000 --> 00:00:04,500
Welcome to the lecture on <i>thermodynamics</i>.

2
00:00:04,500 --> 00:00:09,000
The first law says energy is conserved.

3
00:00:09,000 --> 00:00:15,250
The second law says entropy never decreases
in an isolated system.
"""

VTT = """WEBVTT

NOTE This is a comment, not a cue.

intro
00:00.000 --> 00:03.000 align:start
<v Professor>Today we study plate tectonics.

00:03.000 --> 00:07.500
The crust is broken into plates.

00:01:07.500 --> 00:01:12.000
Plates move a few centimetres a year.
"""

ICS = "\r\n".join([
    "BEGIN:VCALENDAR",
    "VERSION:2.0",
    "PRODID:-//StudyBus//fixtures//EN",
    "X-WR-CALNAME:Autumn term",
    "BEGIN:VEVENT",
    "UID:exam-1@studybus",
    "DTSTART;TZID=Europe/Rome:20261123T090000",
    "DTEND;TZID=Europe/Rome:20261123T110000",
    "SUMMARY:Biology exam",
    "LOCATION:Room 4",
    "DESCRIPTION:Chapters 1 to 5\\, bring a calculator.",
    "BEGIN:VALARM",
    "TRIGGER:-PT30M",
    "DESCRIPTION:Reminder",
    "END:VALARM",
    "END:VEVENT",
    "BEGIN:VEVENT",
    "UID:study-1@studybus",
    "DTSTART:20261120T160000Z",
    "DURATION:PT1H30M",
    "SUMMARY:Study: cell biology",
    "CATEGORIES:Study",
    "END:VEVENT",
    "BEGIN:VTODO",
    "UID:todo-1@studybus",
    "DUE;VALUE=DATE:20261121",
    "SUMMARY:Read chapter 3 on mitochondria and the electron transport chain before the seminar on ",
    " Friday",
    "STATUS:NEEDS-ACTION",
    "END:VTODO",
    "END:VCALENDAR",
    "",
])

# -- PDF (hand-written PDF syntax, Helvetica) ----------------------------------------------------


# The standard security handler, revision 2 (PDF 1.7 §7.6.3): 40-bit RC4, MD5 key derivation.
PDF_PASSWORD_PADDING = bytes.fromhex("28BF4E5E4E758A4164004E56FFFA01082E2E00B6D0683E802F0CA9FE6453697A")
PDF_FILE_ID = bytes(range(16))
PDF_PERMISSIONS = -4


def rc4(key, data):
    state = list(range(256))
    j = 0
    for i in range(256):
        j = (j + state[i] + key[i % len(key)]) % 256
        state[i], state[j] = state[j], state[i]
    out, i, j = bytearray(), 0, 0
    for byte in data:
        i = (i + 1) % 256
        j = (j + state[i]) % 256
        state[i], state[j] = state[j], state[i]
        out.append(byte ^ state[(state[i] + state[j]) % 256])
    return bytes(out)


def pdf_security(user_password, owner_password):
    """The /Encrypt dictionary's O and U entries and the file key (algorithms 2, 3 and 4)."""
    def padded(password):
        return (password.encode("latin-1") + PDF_PASSWORD_PADDING)[:32]
    owner = rc4(hashlib.md5(padded(owner_password)).digest()[:5], padded(user_password))
    key = hashlib.md5(padded(user_password) + owner + struct.pack("<i", PDF_PERMISSIONS) + PDF_FILE_ID).digest()[:5]
    return owner, rc4(key, PDF_PASSWORD_PADDING), key


def pdf(pages, size=(612, 792), font_size=12, top=720, user_password=None):
    """A PDF with one text object per page; `pages` is a list of lists of lines. With
    `user_password`, its streams are encrypted and a reader must be given that password."""
    objects = []
    security = pdf_security(user_password, "owner") if user_password else None

    def add(body):
        objects.append(body)
        return len(objects)

    font = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    page_ids, content_ids = [], []
    for lines in pages:
        stream = b"BT /F1 %d Tf 72 %d Td %d TL\n" % (font_size, top, int(font_size * 1.5))
        for line in lines:
            escaped = line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
            stream += b"(" + escaped.encode("latin-1") + b") Tj T*\n"
        stream += b"ET"
        if security:
            number = len(objects) + 1
            stream = rc4(hashlib.md5(security[2] + struct.pack("<I", number)[:3] + b"\0\0").digest()[:10], stream)
        content_ids.append(add(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream"))
        page_ids.append(add(None))
    pages_id = add(None)
    for page_id, content_id in zip(page_ids, content_ids):
        objects[page_id - 1] = (b"<< /Type /Page /Parent %d 0 R /MediaBox [0 0 %d %d] /Resources << /Font << /F1 %d 0 R >> >> "
                                b"/Contents %d 0 R >>" % (pages_id, size[0], size[1], font, content_id))
    objects[pages_id - 1] = b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b" ".join(b"%d 0 R" % p for p in page_ids), len(page_ids))
    catalog = add(b"<< /Type /Catalog /Pages %d 0 R >>" % pages_id)
    encryption = b""
    if security:
        owner, user, _ = security
        encrypt = add(b"<< /Filter /Standard /V 1 /R 2 /O <%s> /U <%s> /P %d >>" % (owner.hex().encode(), user.hex().encode(), PDF_PERMISSIONS))
        encryption = b" /Encrypt %d 0 R /ID [<%s> <%s>]" % (encrypt, PDF_FILE_ID.hex().encode(), PDF_FILE_ID.hex().encode())
    out = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n"
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for offset in offsets:
        out += b"%010d 00000 n \n" % offset
    out += b"trailer\n<< /Size %d /Root %d 0 R%s >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, catalog, encryption, xref)
    return out


LECTURE_PDF = pdf([
    ["Photosynthesis", "", "Plants convert light energy into chemical energy.", "This happens in the chloroplasts of leaf cells."],
    ["Cellular respiration", "", "The mitochondria releases the energy stored in glucose.", "It produces ATP for the work of the cell."],
    ["Summary", "", "Photosynthesis stores energy; respiration releases it."],
])

OCR_PDF = pdf([["The mitochondria is the", "powerhouse of the cell."]], size=(480, 120), font_size=26, top=75)


def image_pdf(jpeg, dpi=150):
    """A PDF whose only page is the JPEG `jpeg` (a scan: pictures of text, no text layer)."""
    index = 2
    while index < len(jpeg):
        marker, length = jpeg[index + 1], struct.unpack(">H", jpeg[index + 2:index + 4])[0]
        if marker in (0xC0, 0xC1, 0xC2):
            height, width = struct.unpack(">HH", jpeg[index + 5:index + 9])
            components = jpeg[index + 9]
            break
        index += 2 + length
    size = (width * 72 // dpi, height * 72 // dpi)
    content = b"q %d 0 0 %d 0 0 cm /Scan Do Q" % size
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d %d] /Resources << /XObject << /Scan 4 0 R >> >> /Contents 5 0 R >>" % size,
        b"<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /%s /BitsPerComponent 8 /Filter /DCTDecode "
        b"/Length %d >>\nstream\n" % (width, height, b"DeviceGray" if components == 1 else b"DeviceRGB", len(jpeg)) + jpeg + b"\nendstream",
        b"<< /Length %d >>\nstream\n" % len(content) + content + b"\nendstream",
    ]
    out = b"%PDF-1.4\n"
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % number + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1) + b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return out


def render(pdf_bytes, device):
    """The PDF's single page as an image, through pdftoppm."""
    with tempfile.TemporaryDirectory() as folder:
        source = os.path.join(folder, "page.pdf")
        with open(source, "wb") as file:
            file.write(pdf_bytes)
        subprocess.run(["pdftoppm", "-r", "150", "-singlefile", "-" + device, source, os.path.join(folder, "page")], check=True)
        with open(os.path.join(folder, "page." + ("jpg" if device == "jpeg" else device)), "rb") as file:
            return file.read()


# -- DOCX (a zip of WordprocessingML parts) ------------------------------------------------------

W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'


def paragraph(text, style=None):
    properties = '<w:pPr><w:pStyle w:val="%s"/></w:pPr>' % style if style else ""
    runs = "".join('<w:r><w:t xml:space="preserve">%s</w:t></w:r>' % part for part in text.split("|"))
    return "<w:p>%s%s</w:p>" % (properties, runs)


DOCUMENT_XML = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
                '<w:document %s><w:body>' % W
                + paragraph("The Water Cycle", "Title")
                + paragraph("Evaporation", "Heading1")
                + paragraph("The sun heats water in oceans and lakes. |Water vapour rises into the air.")
                + paragraph("Condensation", "Titolo2")
                + paragraph("Vapour cools and forms clouds of tiny droplets.")
                + '<w:tbl><w:tr><w:tc>' + paragraph("Stage") + '</w:tc><w:tc>' + paragraph("Where") + '</w:tc></w:tr>'
                + '<w:tr><w:tc>' + paragraph("Precipitation") + '</w:tc><w:tc>' + paragraph("Clouds to ground") + '</w:tc></w:tr></w:tbl>'
                + '<w:p><w:r><w:t>Rain, snow &amp; hail</w:t></w:r><w:r><w:tab/><w:t>fall back to Earth.</w:t></w:r></w:p>'
                + '</w:body></w:document>')

STYLES_XML = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?><w:styles %s>'
              '<w:style w:type="paragraph" w:styleId="Title"><w:name w:val="Title"/></w:style>'
              '<w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/></w:style>'
              '<w:style w:type="paragraph" w:styleId="Titolo2"><w:name w:val="heading 2"/></w:style>'
              '</w:styles>' % W)

CONTENT_TYPES = ('<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
                 '<Default Extension="xml" ContentType="application/xml"/>'
                 '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/>'
                 '</Types>')


def zip_bytes(entries):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in entries:
            info = zipfile.ZipInfo(name, date_time=(2026, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, content)
    return buffer.getvalue()


DOCX = zip_bytes([("[Content_Types].xml", CONTENT_TYPES), ("word/document.xml", DOCUMENT_XML), ("word/styles.xml", STYLES_XML)])
NOT_WORD = zip_bytes([("readme.txt", "just a zip")])

# -- Audio (the mock Whisper server answers with its transcript; only the containers matter) ----


def wav_silence(seconds=0.5, rate=16000):
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as audio:
        audio.setnchannels(1)
        audio.setsampwidth(2)
        audio.setframerate(rate)
        audio.writeframes(b"\x00\x00" * int(seconds * rate))
    return buffer.getvalue()


def mp3_silence(frames=8):
    """MPEG-1 Layer III frames at 128 kbit/s, 44.1 kHz: a header and a silent body each."""
    header = bytes([0xFF, 0xFB, 0x90, 0x64])
    return (header + bytes(417 - len(header))) * frames


def m4a_silence(seconds=0.5):
    """Half a second of silence as AAC in an M4A container, encoded by ffmpeg (ingest decodes
    recordings with it to find their length and silences, so the container must be whole)."""
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "silence.m4a")
        subprocess.run(["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "anullsrc=r=16000:cl=mono",
                        "-t", str(seconds), "-c:a", "aac", "-b:a", "32k", "-fflags", "+bitexact", "-map_metadata", "-1", path], check=True)
        with open(path, "rb") as audio:
            return audio.read()


# -- E-mail: alternatives (plain + HTML), a PDF and a calendar attached -------------------------


def wrap76(data):
    text = base64.b64encode(data).decode()
    return "\r\n".join(text[i:i + 76] for i in range(0, len(text), 76))


EML = "\r\n".join([
    "From: Professor Rossi <rossi@example.org>",
    "To: student@example.org",
    "Subject: =?utf-8?B?Q29tcGl0aTogbGEgY2l0dMOg?= and the exam",
    "Date: Mon, 16 Nov 2026 08:00:00 +0100",
    "MIME-Version: 1.0",
    'Content-Type: multipart/mixed; boundary="outer"',
    "",
    "This is a multi-part message in MIME format.",
    "--outer",
    'Content-Type: multipart/alternative; boundary="inner"',
    "",
    "--inner",
    "Content-Type: text/plain; charset=utf-8",
    "Content-Transfer-Encoding: quoted-printable",
    "",
    "Dear students,",
    "",
    "please read the attached notes on energy in cells before Monday. The exam co=",
    "vers photosynthesis and respiration. Perch=C3=A9 no? Good luck!",
    "--inner",
    "Content-Type: text/html; charset=utf-8",
    "",
    "<p>Dear students, <b>HTML ONLY VERSION</b></p>",
    "--inner--",
    "--outer",
    'Content-Type: application/pdf; name="energy.pdf"',
    "Content-Transfer-Encoding: base64",
    'Content-Disposition: attachment; filename="energy.pdf"',
    "",
    wrap76(LECTURE_PDF),
    "--outer",
    "Content-Type: text/calendar; charset=utf-8",
    "Content-Transfer-Encoding: base64",
    'Content-Disposition: attachment; filename="exam.ics"',
    "",
    wrap76(ICS.encode()),
    "--outer",
    'Content-Type: application/x-unknown; name="tool.bin"',
    "Content-Transfer-Encoding: base64",
    'Content-Disposition: attachment; filename="tool.bin"',
    "",
    wrap76(b"\x00\x01\x02binary"),
    "--outer--",
    "",
])


def main():
    write("notes.md", MARKDOWN)
    write("notes.txt", PLAIN)
    write("utf16.txt", b"\xff\xfe" + ACCENTED.encode("utf-16-le"))
    write("latin1.txt", ACCENTED.encode("latin-1"))
    write("page.html", HTML)
    write("cards.csv", CSV)
    write("cards.tsv", TSV)
    write("anki.txt", ANKI)
    write("lecture.srt", SRT)
    write("lecture.vtt", VTT)
    write("calendar.ics", ICS)
    write("lecture.pdf", LECTURE_PDF)
    write("truncated.pdf", LECTURE_PDF[: len(LECTURE_PDF) // 2])
    write("locked.pdf", pdf([["The answers to the exam."]], user_password="secret"))
    write("report.docx", DOCX)
    write("notword.docx", NOT_WORD)
    write("damaged.docx", DOCX[: len(DOCX) // 2])
    write("scan.png", render(OCR_PDF, "png"))
    write("photo.jpg", render(OCR_PDF, "jpeg"))
    write("truncated.png", render(OCR_PDF, "png")[:400])
    write("scan.pdf", image_pdf(render(OCR_PDF, "jpeg")))
    write("speech.wav", wav_silence())
    write("speech.mp3", mp3_silence())
    write("speech.m4a", m4a_silence())
    write("mail.eml", EML)
    write("unknown.xyz", b"\x13\x37 not a format ingest knows")


if __name__ == "__main__":
    main()
