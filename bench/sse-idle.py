#!/usr/bin/env python3
"""Opens idle Server-Sent Events streams on the edge and holds them, for scripts/bench-edge.

Usage: sse-idle.py HOST PORT TOKENS_FILE COUNT
Each stream is `GET /v1/events` with one of the tokens (round robin) and counts as open once its
first bytes (the `retry:` hint) have arrived. Prints `READY opened failed` when every stream has
opened or failed, then holds them until standard input closes.
"""
import asyncio
import resource
import sys


async def open_stream(host, port, token, gate):
    async with gate:
        try:
            reader, writer = await asyncio.open_connection(host, port)
            writer.write(
                f"GET /v1/events HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
                "Accept: text/event-stream\r\n\r\n".encode())
            await writer.drain()
            received = b""
            while b"retry:" not in received:
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
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    tokens = [line.strip() for line in open(tokens_file) if line.strip()]
    gate = asyncio.Semaphore(200)  # connections being opened at once
    writers = await asyncio.gather(*(open_stream(host, port, tokens[i % len(tokens)], gate) for i in range(count)))
    opened = [w for w in writers if w is not None]
    print(f"READY {len(opened)} {count - len(opened)}", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)
    for writer in opened:
        writer.close()


asyncio.run(main())
