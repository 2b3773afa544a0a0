"""A local APNs provider endpoint for the notifier's tests: HTTP/2 over TLS (h2, ALPN) with a
self-signed certificate made at start, checking ES256 provider tokens like Apple does.

Usage: apns_receiver.py <public-key.pem> <ca-out.pem>. Prints its port, then serves.
POST /3/device/<token> answers by the token's last four hex digits:
  ...0410  410 Unregistered          ...0400  400 BadDeviceToken     ...0413  413 PayloadTooLarge
  ...0429  429 TooManyRequests once, then 200                        ...0500  500 InternalServerError once, then 200
  ...0403  403 ExpiredProviderToken for the first provider token seen, then 200 for newer ones
  anything else 200 (with apns-id echoed). A token that does not verify: 403 InvalidProviderToken.
GET /_received: every request so far (headers, body, JWT header and claims).
"""
import asyncio
import base64
import datetime
import json
import ssl
import sys
import tempfile
import time

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature
from cryptography.x509.oid import NameOID
import ipaddress
import h2.config
import h2.connection
import h2.events
sys.dont_write_bytecode = True  # no __pycache__ inside the Swift test target
from receiver_support import exit_with_parent  # noqa: E402

public_key = serialization.load_pem_public_key(open(sys.argv[1], "rb").read())
records = []
seen = {}
first_iat = {}


def b64url(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def check_jwt(token):
    try:
        head, claims, signature = token.split(".")
        raw = b64url(signature)
        der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
        public_key.verify(der, f"{head}.{claims}".encode(), ec.ECDSA(hashes.SHA256()))
        return json.loads(b64url(head)), json.loads(b64url(claims))
    except Exception:
        return None, None


def respond(path, headers, body):
    if path == "/_received":
        return 200, {}, json.dumps(records).encode()
    auth = headers.get("authorization", "")
    jwt_head, claims = check_jwt(auth[7:]) if auth.startswith("bearer ") else (None, None)
    records.append({"path": path, "headers": headers, "body": body.decode(), "jwtHeader": jwt_head, "claims": claims,
                    "t_ns": time.time_ns()})
    if claims is None:
        return 403, {}, b'{"reason":"InvalidProviderToken"}'
    token = path.rsplit("/", 1)[-1]
    count = seen.get(token, 0)
    seen[token] = count + 1
    suffix = token[-4:]
    if suffix == "0410":
        return 410, {}, json.dumps({"reason": "Unregistered", "timestamp": int(time.time() * 1000)}).encode()
    if suffix == "0400":
        return 400, {}, b'{"reason":"BadDeviceToken"}'
    if suffix == "0413":
        return 413, {}, b'{"reason":"PayloadTooLarge"}'
    if suffix == "0429" and count == 0:
        return 429, {}, b'{"reason":"TooManyRequests"}'
    if suffix == "0500" and count == 0:
        return 500, {}, b'{"reason":"InternalServerError"}'
    if suffix == "0403":
        first = first_iat.setdefault(token, claims["iat"])
        if claims["iat"] <= first:
            return 403, {}, b'{"reason":"ExpiredProviderToken"}'
    return 200, {"apns-id": headers.get("apns-id", "")}, b""


class Protocol(asyncio.Protocol):
    def connection_made(self, transport):
        self.transport = transport
        self.conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
        self.conn.initiate_connection()
        self.transport.write(self.conn.data_to_send())
        self.streams = {}

    def data_received(self, data):
        for event in self.conn.receive_data(data):
            if isinstance(event, h2.events.RequestReceived):
                self.streams[event.stream_id] = ({k.lower(): v for k, v in event.headers}, bytearray())
            elif isinstance(event, h2.events.DataReceived):
                self.streams[event.stream_id][1].extend(event.data)
                self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.StreamEnded):
                headers, body = self.streams.pop(event.stream_id)
                status, extra, payload = respond(headers.get(":path", ""), headers, bytes(body))
                out = [(":status", str(status)), ("content-length", str(len(payload)))] + list(extra.items())
                self.conn.send_headers(event.stream_id, out, end_stream=not payload)
                if payload:
                    self.conn.send_data(event.stream_id, payload, end_stream=True)
        self.transport.write(self.conn.data_to_send())


def certificate(ca_out):
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
            .sign(key, hashes.SHA256()))
    pem = cert.public_bytes(serialization.Encoding.PEM)
    open(ca_out, "wb").write(pem)
    key_file = tempfile.NamedTemporaryFile(suffix=".pem", delete=False)
    key_file.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    key_file.close()
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(ca_out, key_file.name)
    context.set_alpn_protocols(["h2"])
    return context



async def main():
    context = certificate(sys.argv[2])
    loop = asyncio.get_running_loop()
    server = await loop.create_server(Protocol, "127.0.0.1", 0, ssl=context)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


exit_with_parent()
asyncio.run(main())
