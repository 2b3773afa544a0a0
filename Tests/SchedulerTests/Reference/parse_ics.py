"""Parses an iCalendar file from stdin with the `icalendar` package (RFC 5545) and prints
what the scheduler's test checks, as JSON. Fails (non-zero exit) on a file it cannot parse."""

import json
import sys

import icalendar

calendar = icalendar.Calendar.from_ical(sys.stdin.buffer.read())
events = []
for event in calendar.walk("VEVENT"):
    events.append({
        "uid": str(event["UID"]),
        "start": event.decoded("DTSTART").isoformat(),
        "end": event.decoded("DTEND").isoformat(),
        "summary": str(event["SUMMARY"]),
        "description": str(event["DESCRIPTION"]),
    })
json.dump({
    "version": str(calendar["VERSION"]),
    "prodid": str(calendar["PRODID"]),
    "name": str(calendar.get("X-WR-CALNAME", "")),  # an X- property: icalendar keeps it escaped
    "events": events,
}, sys.stdout)
