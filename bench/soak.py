#!/usr/bin/env python3
"""The load and the measurements of scripts/soak (read that first): users run the five flows of
docs/flows.md through the HTTP edge while services are killed with SIGKILL in turns and brought
back by `scripts/dev up`; every minute each process's RSS (anonymous and file-backed apart),
the memory SQLite holds in it, its open descriptors and every database's size are sampled. Prints `name value unit` lines at the end.

An error is *injected* when it happens while a killed service is down or within FAULT_GRACE
seconds of its return (the fault the soak made); any other error is *unexplained*.
"""
import argparse
import http.client
import json
import os
import random
import statistics
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request

FAULT_GRACE = 15.0
# RSS is measured over the last 20 minutes (of a shorter run, what the warm-up leaves, or at
# least its second half: measured_seconds); no process is
# killed in that window nor in the WARM_UP before it, so every process's growth is of a warm one.
MEASURED_SECONDS = 20 * 60
WARM_UP = 5 * 60
STUDY_TEXT = """# Photosynthesis

Photosynthesis turns light energy into chemical energy stored in glucose. Chlorophyll in the
chloroplasts absorbs light, mostly red and blue. The light-dependent reactions split water and
release oxygen. The Calvin cycle fixes carbon dioxide into glucose in the stroma, using ATP and
NADPH. The enzyme RuBisCO captures carbon dioxide in the first step of the cycle.
"""


class Recorder:
    """Latencies by method and window, and errors by code and kind, shared by the users."""

    def __init__(self, window_seconds):
        self.lock = threading.Lock()
        self.window_seconds = window_seconds
        self.started = time.monotonic()
        self.latencies = {}  # (window, method) -> [ms]
        self.served = 0
        self.errors = {}  # (kind, method, code) -> count
        self.fault_until = 0.0  # monotonic time until which errors are the injected fault's
        self.checks = {"alarm_missed": 0, "alarm_rang": 0, "material_ready": 0,
                       "material_not_ready_injected": 0, "material_not_ready_unexplained": 0}

    def call_done(self, method, milliseconds):
        window = int((time.monotonic() - self.started) // self.window_seconds)
        with self.lock:
            self.served += 1
            self.latencies.setdefault((window, method), []).append(milliseconds)

    def fault_kind(self):
        return "injected" if time.monotonic() <= self.fault_until else "unexplained"

    def call_failed(self, method, code, message=""):
        kind = self.fault_kind()
        with self.lock:
            self.errors[(kind, method, code)] = self.errors.get((kind, method, code), 0) + 1
        if kind == "unexplained":
            print(f"soak: {time.strftime('%H:%M:%S')} unexplained error {code} from {method}: {message}", file=sys.stderr)

    def count(self, check):
        with self.lock:
            self.checks[check] += 1

    def fault(self, until):
        with self.lock:
            self.fault_until = max(self.fault_until, until)


class CallFailed(Exception):
    pass


class Edge:
    """One user's keep-alive connection to the edge."""

    def __init__(self, url, token, recorder):
        parsed = urllib.parse.urlsplit(url)
        self.host, self.port = parsed.hostname, parsed.port or 80
        self.token, self.recorder = token, recorder
        self.connection = None

    def call(self, service, method, request, timeout=60.0):
        return self.send(service, method, {}, json.dumps(request).encode(), "application/json", timeout)

    def upload(self, service, method, request, file_name, content_type, content, timeout=60.0):
        """A call with a file as its attachment: the raw body, the request in the query (docs/services/edge.md)."""
        query = urllib.parse.urlencode({"request": json.dumps(request)})
        headers = {"Content-Disposition": f'attachment; filename="{file_name}"'}
        return self.send(service, f"{method}?{query}", headers, content, content_type, timeout)

    def send(self, service, method, headers, body, content_type, timeout):
        started = time.monotonic()
        method_name = method.split("?", 1)[0]
        try:
            if self.connection is None:
                self.connection = http.client.HTTPConnection(self.host, self.port, timeout=timeout)
            self.connection.timeout = timeout
            self.connection.request("POST", f"/v1/{service}/{method}", body,
                                    {"Authorization": f"Bearer {self.token}", "Content-Type": content_type, **headers})
            response = self.connection.getresponse()
            payload = response.read()
        except (OSError, http.client.HTTPException) as error:
            self.connection = None
            self.recorder.call_failed(method_name, type(error).__name__)
            raise CallFailed(method_name) from error
        if response.status != 200:
            try:
                error = json.loads(payload)
                code, message = error.get("status", str(response.status)), error.get("message", "")
            except ValueError:
                code, message = str(response.status), payload[:200]
            self.recorder.call_failed(method_name, code, message)
            raise CallFailed(method_name)
        self.recorder.call_done(method_name, (time.monotonic() - started) * 1000)
        return json.loads(payload)


def material_flow(edge, recorder):
    """Flow 1 and 5: a text becomes a material with flashcards, cards are reviewed, then it is deleted."""
    submitted = edge.upload("ingest", "ingest.submit", {"wait": True}, "photosynthesis.md", "text/markdown", STUDY_TEXT.encode())
    material, record = submitted["materialId"], submitted.get("material", {})
    if record.get("status") == "ready":
        recorder.count("material_ready")
    else:
        # A job whose worker or ai-gateway was killed fails with a reason; outside a fault that is unexplained.
        kind = recorder.fault_kind()
        recorder.count(f"material_not_ready_{kind}")
        print(f"soak: {time.strftime('%H:%M:%S')} material {material} {record.get('status')} ({kind}): "
              f"{record.get('failureReason', '')}", file=sys.stderr)
    edge.call("store", "materials.get", {"id": material})
    edge.call("store", "flashcards.list", {"materialId": material, "limit": 5})
    due = edge.call("scheduler", "review.due", {"limit": 2})
    for card in due.get("cards", []):
        edge.call("scheduler", "review.record", {"cardId": card["cardId"], "rating": random.choice(["good", "easy", "hard"])})
    edge.call("store", "search", {"query": "chlorophyll"})
    edge.call("store", "materials.delete", {"id": material})


def timer_flow(edge, recorder):
    """Flow 2: a 2-second timer rings through the notifier, and the alarm is acknowledged."""
    timer = edge.call("timer-ticker", "timers.create", {"label": "Soak break", "seconds": 2})["id"]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        time.sleep(1)
        items = edge.call("notifier", "inbox.list", {"limit": 100}).get("items", [])
        if any(item.get("id", "").startswith(f"{timer}_") for item in items):
            recorder.count("alarm_rang")
            edge.call("notifier", "notify.ack", {"timerId": timer})
            return
    recorder.count("alarm_missed")


def habit_flow(edge, recorder):
    """Flow 3: a habit with a daily task is checked in today and its stats read."""
    system = edge.call("scheduler", "habits.systems.create", {"name": "Soak habits"})["id"]
    task = edge.call("scheduler", "habits.tasks.create", {"systemId": system, "name": "Read", "frequency": {"kind": "daily"}})["id"]
    edge.call("scheduler", "habits.checkIn", {"taskId": task, "date": time.strftime("%Y-%m-%d", time.gmtime())})
    edge.call("scheduler", "habits.stats", {"systemId": system})
    edge.call("scheduler", "habits.systems.delete", {"systemId": system})


def tutor_flow(edge, recorder):
    """Flow 4: the tutor answers a question in a stored conversation."""
    conversation = edge.call("store", "conversations.create", {"title": "Soak questions"})["id"]
    edge.call("ai-gateway", "chat", {"conversationId": conversation,
                                     "messages": [{"role": "user", "content": "What does chlorophyll do?"}]})
    edge.call("store", "messages.list", {"conversationId": conversation})
    edge.call("store", "conversations.delete", {"id": conversation})


FLOWS = [material_flow, timer_flow, habit_flow, tutor_flow]


def user_loop(edge, recorder, stop):
    while not stop.is_set():
        flow = random.choice(FLOWS)
        try:
            flow(edge, recorder)
        except CallFailed:
            time.sleep(1)  # the service is down: do not spin
        except (KeyError, TypeError, ValueError) as error:
            recorder.call_failed(flow.__name__, f"bad answer: {error!r}")
        stop.wait(random.uniform(0.1, 0.5))


def processes(run_dir):
    """{instance name: pid} from scripts/dev's pid files."""
    found = {}
    for name in sorted(os.listdir(run_dir)):
        if name.endswith(".pid"):
            try:
                found[name[:-4]] = int(open(os.path.join(run_dir, name)).read().strip())
            except (OSError, ValueError):
                pass
    return found


SELF_METRICS = {"studybus_sqlite_memory_bytes": "sqlite_kib", "studybus_heap_in_use_bytes": "heap_kib",
                "studybus_heap_free_bytes": "heap_free_kib"}


def self_reported_kib(pid):
    """What the process reports of its memory on METRICS_ADDRESS: SQLite's (page caches first; 0
    without a database), the C heap in use and what the allocator holds free, in KiB."""
    found = dict.fromkeys(SELF_METRICS.values(), 0)
    try:
        environment = open(f"/proc/{pid}/environ", "rb").read().split(b"\0")
        address = next(entry[len(b"METRICS_ADDRESS="):].decode() for entry in environment if entry.startswith(b"METRICS_ADDRESS="))
        with urllib.request.urlopen(f"http://{address}/metrics", timeout=5) as response:
            for line in response.read().decode().splitlines():
                name = line.split("{", 1)[0].split(" ", 1)[0]
                if name in SELF_METRICS:
                    found[SELF_METRICS[name]] = float(line.rsplit(" ", 1)[1]) / 1024
    except (OSError, StopIteration, ValueError):
        pass
    return found


def sample(run_dir, data_dir):
    """One sample: RSS (KiB; anonymous and file-backed, e.g. SQLite's memory map, apart), SQLite's
    own memory and open descriptors per process, and every SQLite file's size."""
    rows = {}
    for name, pid in processes(run_dir).items():
        try:
            with open(f"/proc/{pid}/status") as status:
                fields = {line.split(":")[0]: int(line.split()[1]) for line in status if line.startswith(("VmRSS:", "RssAnon:", "RssFile:"))}
            rows[name] = {"pid": pid, "rss_kib": fields["VmRSS"], "anon_kib": fields["RssAnon"], "file_kib": fields["RssFile"],
                          "fds": len(os.listdir(f"/proc/{pid}/fd")), **self_reported_kib(pid)}
        except (OSError, KeyError):
            pass
    files = {}
    for root, _, names in os.walk(data_dir):
        for name in names:
            if name.endswith((".sqlite", ".sqlite-wal", ".db", ".db-wal")):
                path = os.path.join(root, name)
                files[os.path.relpath(path, data_dir)] = os.path.getsize(path)
    return {"t": time.monotonic(), "processes": rows, "files": files}


def kill_and_restore(service, recorder, dev_script):
    """SIGKILL every instance of `service`, start it again through scripts/dev, and wait until healthy."""
    run_dir = os.path.join(os.environ["STUDYBUS_DATA"], "run")
    recorder.fault(time.monotonic() + 3600)  # until it is back
    for name, pid in processes(run_dir).items():
        if name.rsplit("-", 1)[0] == service:
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
    time.sleep(2)
    subprocess.run([dev_script, "up", service], check=True, stdout=subprocess.DEVNULL)
    with recorder.lock:
        recorder.fault_until = time.monotonic() + FAULT_GRACE
    print(f"soak: {time.strftime('%H:%M:%S')} killed and restarted {service}", file=sys.stderr)


def measured_seconds(run_seconds):
    """The last 20 minutes; of a run too short for those and the warm-up, what is left after the
    warm-up, or at least its second half (a 30-minute run: 20, a 10-minute run: 5)."""
    return min(MEASURED_SECONDS, max(run_seconds / 2, run_seconds - WARM_UP))


def heap_without_sqlite_kib(row):
    """Anonymous memory that is not SQLite's: neither a file's pages (a memory map) nor page caches
    bounded by cache_size. A leak shows here."""
    return row["anon_kib"] - row["sqlite_kib"]


def percentile(values, fraction):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def report(recorder, samples, restarts, minutes):
    print(f"soak_minutes {minutes} min")
    print(f"soak_requests_served {recorder.served} requests")
    for service, count in sorted(restarts.items()):
        print(f"soak_kills{{service={service}}} {count} kills")
    for (kind, method, code), count in sorted(recorder.errors.items()):
        print(f"soak_errors_{kind}{{method={method},code={code}}} {count} errors")
    for kind in ("injected", "unexplained"):
        print(f"soak_errors_{kind}_total {sum(c for (k, _, _), c in recorder.errors.items() if k == kind)} errors")
    for check, count in recorder.checks.items():
        print(f"soak_{check} {count} flows")
    windows = sorted({window for window, _ in recorder.latencies})
    methods = sorted({method for _, method in recorder.latencies})
    for method in methods:
        for window in windows:
            values = recorder.latencies.get((window, method))
            if values:
                minute = window * recorder.window_seconds // 60
                print(f"soak_latency_p50{{method={method},minute={minute}}} {statistics.median(values):.1f} ms")
                print(f"soak_latency_p99{{method={method},minute={minute}}} {percentile(values, 0.99):.1f} ms")
    first, last = samples[0], samples[-1]
    # Growth over the measured window, for processes not restarted since (none is, unless a
    # process died by itself: a restarted one starts its warm-up again).
    span = measured_seconds(last["t"] - first["t"])
    reference = next(s for s in samples if s["t"] >= last["t"] - span)
    for name, end in sorted(last["processes"].items()):
        start = first["processes"].get(name)
        if start:
            print(f"soak_rss_start{{process={name}}} {start['rss_kib'] / 1024:.1f} MiB")
            print(f"soak_fds_start{{process={name}}} {start['fds']} fds")
        print(f"soak_rss_end{{process={name}}} {end['rss_kib'] / 1024:.1f} MiB")
        print(f"soak_fds_end{{process={name}}} {end['fds']} fds")
        print(f"soak_rss_anon_end{{process={name}}} {end['anon_kib'] / 1024:.1f} MiB")
        print(f"soak_rss_file_end{{process={name}}} {end['file_kib'] / 1024:.1f} MiB")
        if end["sqlite_kib"]:
            print(f"soak_sqlite_memory_end{{process={name}}} {end['sqlite_kib'] / 1024:.1f} MiB")
        base = reference["processes"].get(name)
        if base and base["pid"] == end["pid"]:
            growths = {"rss": (base["rss_kib"], end["rss_kib"]),
                       "anon_without_sqlite": (heap_without_sqlite_kib(base), heap_without_sqlite_kib(end))}
            if base["heap_kib"]:
                growths["heap_in_use"] = (base["heap_kib"], end["heap_kib"])
            for figure, (before, after) in growths.items():
                print(f"soak_{figure}_growth_last{{process={name},minutes={span / 60:.0f}}} {(after - before) * 100 / before:.1f} percent")
        else:
            print(f"soak_restarted_in_last{{process={name},minutes={span / 60:.0f}}} {restarts.get(name.rsplit('-', 1)[0], 0)} restarts")
    # The series, every window: whether a process levels off or keeps growing, which two ends cannot tell.
    for name in sorted(last["processes"]):
        marks = {}
        for row in samples:
            process = row["processes"].get(name)
            if process:
                marks.setdefault(int((row["t"] - first["t"]) // recorder.window_seconds), process)
        for window, process in sorted(marks.items()):
            minute = window * recorder.window_seconds // 60
            print(f"soak_rss{{process={name},minute={minute:.0f}}} {process['rss_kib'] / 1024:.1f} MiB")
            print(f"soak_anon_without_sqlite{{process={name},minute={minute:.0f}}} {heap_without_sqlite_kib(process) / 1024:.1f} MiB")
            if process["sqlite_kib"]:
                print(f"soak_sqlite_memory{{process={name},minute={minute:.0f}}} {process['sqlite_kib'] / 1024:.1f} MiB")
            if process["heap_kib"]:
                print(f"soak_heap_in_use{{process={name},minute={minute:.0f}}} {process['heap_kib'] / 1024:.1f} MiB")
                print(f"soak_heap_free{{process={name},minute={minute:.0f}}} {process['heap_free_kib'] / 1024:.1f} MiB")
    for path in sorted(set(first["files"]) | set(last["files"])):
        print(f"soak_file_bytes_start{{file={path}}} {first['files'].get(path, 0)} bytes")
        print(f"soak_file_bytes_end{{file={path}}} {last['files'].get(path, 0)} bytes")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--edge", default=os.environ.get("EDGE_URL", "http://127.0.0.1:8080"))
    parser.add_argument("--tokens", required=True, help="file with one user token per line")
    parser.add_argument("--kill", default="ingest scheduler notifier timer-ticker ai-gateway",
                        help="services killed in turns (space separated; empty: none)")
    parser.add_argument("--kill-every", type=float, help="seconds between kills (default: every victim once "
                        "before the settle, at most 300)")
    parser.add_argument("--settle", type=float, help="seconds at the end without kills (default: the measured "
                        "window and the warm-up before it)")
    parser.add_argument("--window", type=int, default=300, help="seconds per latency window")
    parser.add_argument("--dev", required=True, help="path of scripts/dev")
    arguments = parser.parse_args()

    data_dir = os.environ["STUDYBUS_DATA"]
    run_dir = os.path.join(data_dir, "run")
    recorder = Recorder(arguments.window)
    stop = threading.Event()
    tokens = [line.strip() for line in open(arguments.tokens) if line.strip()]
    users = [threading.Thread(target=user_loop, args=(Edge(arguments.edge, token, recorder), recorder, stop), daemon=True)
             for token in tokens]
    samples = [sample(run_dir, data_dir)]
    for user in users:
        user.start()
    victims = arguments.kill.split()
    restarts = {}
    started = time.monotonic()
    end = started + arguments.minutes * 60
    settle = arguments.settle if arguments.settle is not None else measured_seconds(arguments.minutes * 60) + WARM_UP
    last_kill = end - settle
    kill_every = arguments.kill_every or min(300, (last_kill - started) / (len(victims) + 1))
    next_sample, next_kill = started + 60, started + kill_every
    while time.monotonic() < end:
        time.sleep(1)
        now = time.monotonic()
        if now >= next_sample:
            samples.append(sample(run_dir, data_dir))
            next_sample += 60
        if victims and now >= next_kill and now < last_kill:
            victim = victims[sum(restarts.values()) % len(victims)]
            kill_and_restore(victim, recorder, arguments.dev)
            restarts[victim] = restarts.get(victim, 0) + 1
            next_kill += kill_every
    stop.set()
    for user in users:
        user.join(timeout=70)
    samples.append(sample(run_dir, data_dir))
    report(recorder, samples, restarts, arguments.minutes)
    failed = (any(kind == "unexplained" for kind, _, _ in recorder.errors) or recorder.checks["alarm_missed"]
              or recorder.checks["material_not_ready_unexplained"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
