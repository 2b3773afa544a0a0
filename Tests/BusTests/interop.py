"""Speaks the StudyBus wire protocol with plain pyzmq sockets, written from
../shared/spec/wire-protocol.md alone, to prove the Swift side follows it.

Usage: interop.py RPC PUB SUB, or interop.py curve RPC PUB SUB BROKER_KEY CLIENT_KEY_SECRET
(below). Steps (each prints a line the Swift test waits for):
  1. as a client, calls the Swift service "echo" (reply frames, ids, codes, attachment);
  2. publishes three "py.hello" events with its own seq 1..3;
  3. registers as worker "pyecho" with credit 8 and prints WORKER READY; answers requests
     (upper-cased text; method "boom" -> code 9) until method "quit";
  4. meanwhile subscribes to "swift." and prints GOT <topic> for the first event it sees.
Exits 0 when every check passed, 1 with a message otherwise.

With "curve" first, against a broker and an echo service with CURVE keys (docs/wire-protocol.md,
Additions 9, 10 and 12), with the key files that busctl keys new writes, the key listed as
"service echo": a CURVE client calls echo/_health (SERVING) and echo/echo (0, the broker stamps
the caller); a client without CURVE gets no answer; a CURVE publisher sends "echo.echoed" events
(its contract's topic) and forged "timer.completed" ones (dropped by the broker). Prints
CURVE OK."""
import json
import sys
import time
import uuid

import zmq
import zmq.auth

ctx = zmq.Context()


def check(condition, message):
    if not condition:
        print("FAIL " + message, flush=True)
        sys.exit(1)


def request(socket, service, method, payload=b"{}"):
    header = {"id": uuid.uuid4().hex, "deadline": int(time.time() * 1000) + 20000}
    socket.send_multipart([b"", b"MDPC01", service.encode(), method.encode(), json.dumps(header).encode(), payload])
    reply = socket.recv_multipart()
    reply_header = json.loads(reply[3])
    check(reply_header["id"] == header["id"], "reply id echoes the request id")
    return reply_header, reply[4]


if sys.argv[1] == "curve":
    rpc, pub, sub, broker_key, client_key = sys.argv[2:7]
    broker_public, _ = zmq.auth.load_certificate(broker_key)
    public, secret = zmq.auth.load_certificate(client_key)

    def secure(socket):
        socket.curve_secretkey, socket.curve_publickey, socket.curve_serverkey = secret, public, broker_public
        return socket

    client = secure(ctx.socket(zmq.DEALER))
    client.setsockopt(zmq.RCVTIMEO, 20000)
    client.connect(rpc)
    header, payload = request(client, "echo", "_health")
    health = json.loads(payload)
    check(header["code"] == 0 and health["status"] == "SERVING" and set(health["build"]) == {"version", "commit"},
          "health over CURVE (status, and the build that answers: Addition 17): %r %r" % (header, payload))
    header, payload = request(client, "echo", "echo", b'{"text":"hi"}')
    check(header["code"] == 0 and json.loads(payload)["text"] == "hi", "echo over CURVE: %r %r" % (header, payload))
    plain = ctx.socket(zmq.DEALER)
    plain.setsockopt(zmq.RCVTIMEO, 1000)
    plain.connect(rpc)
    try:
        request(plain, "echo", "_health")
        check(False, "a client without CURVE got an answer")
    except zmq.Again:
        pass
    publisher = secure(ctx.socket(zmq.PUB))
    publisher.connect(pub)
    for seq in range(1, 21):
        time.sleep(0.1)
        event_header = {"id": "py-curve-%d" % seq, "source": "python", "instance": "curve:1", "seq": seq, "ts": int(time.time() * 1000)}
        publisher.send_multipart([b"timer.completed", json.dumps(event_header).encode(), b"{}"])
        publisher.send_multipart([b"echo.echoed", json.dumps(event_header).encode(), b'{"text":"py"}'])
    print("CURVE OK", flush=True)
    sys.exit(0)

rpc, pub, sub = sys.argv[1:4]


# 1. Client: DEALER, so the empty delimiter frame is ours to send.
client = ctx.socket(zmq.DEALER)
client.setsockopt(zmq.RCVTIMEO, 20000)
client.connect(rpc)


def call(service, method, payload, attachment=None, user=None):
    header = {"id": uuid.uuid4().hex, "deadline": int(time.time() * 1000) + 20000}
    if user:
        header["user"] = user
    frames = [b"", b"MDPC01", service.encode(), method.encode(), json.dumps(header).encode(), payload]
    if attachment is not None:
        frames.append(attachment)
    client.send_multipart(frames)
    reply = client.recv_multipart()
    check(reply[0] == b"" and reply[1] == b"MDPC01" and reply[2] == service.encode(), "reply envelope: %r" % reply[:3])
    reply_header = json.loads(reply[3])
    check(reply_header["id"] == header["id"], "reply id echoes the request id")
    return reply_header, reply[4], reply[5:]


header, payload, rest = call("echo", "echo", b'{"text":"from python"}', attachment=b"\x00\x01\x02", user="py-user")
body = json.loads(payload)
check(header["code"] == 0, "echo code 0, got %r" % header)
check(body == {"text": "from python", "user": "py-user", "attachmentBytes": 3}, "echo body %r" % body)
header, payload, _ = call("echo", "nope", b"{}")
check(header["code"] == 12 and payload == b"", "unknown method is 12 with empty payload: %r" % header)
header, _, _ = call("echo", "echo", b'{"text": 5}')
check(header["code"] == 3 and "text" in header["message"], "bad payload is 3 naming the field: %r" % header)
header, _, _ = call("nosuch", "m", b"{}")
check(header["code"] == 14, "no responders is 14: %r" % header)
print("CLIENT OK", flush=True)

# 2. Publisher: a plain PUB socket; wait for the broker's subscription to reach it.
publisher = ctx.socket(zmq.PUB)
publisher.connect(pub)
time.sleep(0.5)
for seq in (1, 2, 3):
    event_header = {"id": "py-%d" % seq, "source": "python", "instance": "interop:1", "seq": seq,
                    "ts": int(time.time() * 1000), "user": "py-user"}
    publisher.send_multipart([b"py.hello", json.dumps(event_header).encode(), json.dumps({"n": seq}).encode()])
print("PUBLISHED", flush=True)

# 3 and 4. Worker and subscriber in one poll loop.
subscriber = ctx.socket(zmq.SUB)
subscriber.setsockopt(zmq.SUBSCRIBE, b"swift.")
subscriber.connect(sub)
worker = ctx.socket(zmq.DEALER)
worker.connect(rpc)
worker.send_multipart([b"", b"MDPW01", b"\x01", b"pyecho", b"8"])
print("WORKER READY", flush=True)

poller = zmq.Poller()
poller.register(worker, zmq.POLLIN)
poller.register(subscriber, zmq.POLLIN)
got_event = False
served = 0
next_heartbeat = time.time() + 1
deadline = time.time() + 30
while time.time() < deadline:
    for sock, _ in poller.poll(100):
        if sock is subscriber:
            topic, event_header, payload = subscriber.recv_multipart()
            fields = json.loads(event_header)
            check(all(k in fields for k in ("id", "source", "instance", "seq", "ts")), "event header fields %r" % fields)
            if not got_event:
                print("GOT " + topic.decode(), flush=True)
                got_event = True
            continue
        frames = worker.recv_multipart()
        check(frames[0] == b"" and frames[1] == b"MDPW01", "worker envelope %r" % frames[:2])
        if frames[2] == b"\x04":
            continue
        check(frames[2] == b"\x02" and len(frames) >= 8, "REQUEST frames %r" % frames[:3])
        client_address, method, request_header = frames[3], frames[5].decode(), json.loads(frames[6])
        if method == "_health":
            # The broker asks every worker (wire protocol, Addition 19); a plain 7/MDP worker answers.
            reply_header = {"id": request_header["id"], "code": 0}
            reply_payload = json.dumps({"status": "SERVING", "build": {"version": "python", "commit": "interop"}}).encode()
            worker.send_multipart([b"", b"MDPW01", b"\x03", client_address, b"", json.dumps(reply_header).encode(), reply_payload])
            continue
        if method == "quit":
            reply_header = {"id": request_header["id"], "code": 0}
            worker.send_multipart([b"", b"MDPW01", b"\x03", client_address, b"", json.dumps(reply_header).encode(), b"{}"])
            time.sleep(0.2)
            check(got_event, "received an event from Swift")
            print("SERVED %d" % served, flush=True)
            sys.exit(0)
        if method == "boom":
            reply_header = {"id": request_header["id"], "code": 9, "message": "python says no", "details": {"why": "test"}}
            reply_payload = b""
        else:
            text = json.loads(frames[7])["text"]
            reply_header = {"id": request_header["id"], "code": 0}
            reply_payload = json.dumps({"text": text.upper(), "user": request_header.get("user")}).encode()
        served += 1
        worker.send_multipart([b"", b"MDPW01", b"\x03", client_address, b"", json.dumps(reply_header).encode(), reply_payload])
    if time.time() > next_heartbeat:
        worker.send_multipart([b"", b"MDPW01", b"\x04"])
        next_heartbeat = time.time() + 1
check(False, "timed out waiting for quit")
