#!/usr/bin/env python3
"""Opens idle Server-Sent Events streams on the edge and holds them, for scripts/bench-edge.

Usage: sse-idle.py HOST PORT TOKENS_FILE COUNT [PATH]
Each stream is `GET /v1/events` with one of the tokens (round robin) and counts as open once its
first bytes (the `retry:` hint) have arrived. With another PATH (`/healthz`), each connection
makes that one request and is held open, idle, once the answer's head has come: what a
connection costs the edge without a stream. Prints `READY opened failed` when every stream has
opened or failed, then holds them until standard input closes.
"""
import asyncio
import resource
import sys


async def open_stream(host, port, token, gate, path):
    async with gate:
        try:
            reader, writer = await asyncio.open_connection(host, port)
            writer.write(
                f"GET {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
                "Accept: text/event-stream\r\n\r\n".encode())
            await writer.drain()
            received = b""
            opened = b"retry:" if path == "/v1/events" else b"\r\n\r\n"
            while opened not in received:
                chunk = await asyncio.wait_for(reader.read(4096), timeout=30)
                if not chunk or len(received) > 65536:
                    writer.close()
                    return None
                received += chunk
            if not received.startswith(b"HTTP/1.1 200"):
                writer.close()
                return None
            return writer
        except (OSError, asyncio.TimeoutError):
            return None


async def main():
    host, port, tokens_file, count = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    path = sys.argv[5] if len(sys.argv) > 5 else "/v1/events"
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    tokens = [line.strip() for line in open(tokens_file) if line.strip()]
    gate = asyncio.Semaphore(200)  # connections being opened at once
    writers = await asyncio.gather(*(open_stream(host, port, tokens[i % len(tokens)], gate, path) for i in range(count)))
    opened = [w for w in writers if w is not None]
    print(f"READY {len(opened)} {count - len(opened)}", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    for writer in opened:
        writer.close()


asyncio.run(main())
