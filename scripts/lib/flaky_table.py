"""Reads the JUnit XML files of scripts/flaky (XCTest's and Swift Testing's) and prints each test
that failed at least once, with its failure count; exits 1 when there is one."""
import collections
import pathlib
import sys
import xml.etree.ElementTree as ElementTree

runs, folder = int(sys.argv[1]), pathlib.Path(sys.argv[2])
failures = collections.Counter()
messages = {}
executed = collections.Counter()
for path in sorted(folder.glob("*.xml")):
    try:
        root = ElementTree.parse(path).getroot()
    except ElementTree.ParseError as error:
        print(f"{path.name}: unreadable ({error}): the run crashed before writing it", file=sys.stderr)
        failures[f"(run crashed) {path.stem}"] += 1
        continue
    for case in root.iter("testcase"):
        name = f"{case.get('classname', '')}.{case.get('name', '')}"
        executed[name] += 1
        failed = case.find("failure") if case.find("failure") is not None else case.find("error")
        if failed is not None:
            failures[name] += 1
            messages.setdefault(name, (failed.get("message") or failed.text or "").strip().splitlines()[0:1])

print(f"{len(executed)} tests, {sum(executed.values())} executions in {runs} run(s); "
      f"{len(failures)} test(s) failed at least once")
if failures:
    print(f"{'failures':>8}  test")
    for name, count in failures.most_common():
        first = messages.get(name) or [""]
        print(f"{count:>8}  {name}" + (f"\n          {first[0][:160]}" if first and first[0] else ""))
    sys.exit(1)
