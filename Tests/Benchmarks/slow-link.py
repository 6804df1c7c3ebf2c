#!/usr/bin/env python3
"""A phone's link in front of a loopback origin, for the benchmarks (this kernel has no netem).

    slow-link.py LISTEN_PORT ORIGIN_HOST:PORT [--delay-ms 50] [--rate BYTES_PER_S]

Every connection to 127.0.0.1:LISTEN_PORT is relayed to the origin with:
- a one-way delay of --delay-ms on each byte, both directions (a round trip is twice it), and a
  round trip before the origin connection opens (the TCP handshake);
- a downstream rate of --rate bytes per second shared by all connections (0: none), handed out
  in pieces of at most 16 KiB, so that concurrent downloads compete as on one radio link.
Prints the port on its first line once it listens; stops on SIGTERM.
"""
import argparse
import asyncio
import collections
import signal
import time

PIECE = 16 << 10


class SharedRate:
    """A token bucket shared by every downstream: bytes per second, a burst of one piece."""

    def __init__(self, rate):
        self.rate = rate
        self.tokens = float(PIECE)
        self.stamp = time.monotonic()
        self.lock = asyncio.Lock()

    async def take(self, count):
        if self.rate <= 0:
            return
        async with self.lock:  # first come, first served
            while True:
                now = time.monotonic()
                self.tokens = min(float(PIECE), self.tokens + (now - self.stamp) * self.rate)
                self.stamp = now
                if self.tokens >= count:
                    self.tokens -= count
                    return
                await asyncio.sleep((count - self.tokens) / self.rate)


async def delayed_pipe(reader, writer, delay, rate=None):
    """Copies reader to writer, each piece delivered `delay` seconds after it was read."""
    queue = collections.deque()
    arrived = asyncio.Event()
    done = False

    async def deliver():
        while True:
            while not queue:
                if done:
                    return
                arrived.clear()
                await arrived.wait()
            due, data = queue.popleft()
            wait = due - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            if data is None:
                return
            writer.write(data)
            await writer.drain()

    delivering = asyncio.create_task(deliver())
    try:
        while True:
            data = await reader.read(PIECE)
            if not data:
                break
            if rate is not None:
                await rate.take(len(data))
            queue.append((time.monotonic() + delay, data))
            arrived.set()
    except (ConnectionError, asyncio.CancelledError):
        pass
    queue.append((time.monotonic() + delay, None))
    done = True
    arrived.set()
    try:
        await delivering
    except ConnectionError:
        pass
    try:
        writer.close()
    except Exception:
        pass


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("listen", type=int)
    parser.add_argument("origin")
    parser.add_argument("--delay-ms", type=float, default=50)
    parser.add_argument("--rate", type=float, default=0)
    options = parser.parse_args()
    host, port = options.origin.rsplit(":", 1)
    delay = options.delay_ms / 1000
    rate = SharedRate(options.rate)

    async def relay(client_reader, client_writer):
        await asyncio.sleep(2 * delay)  # the handshake's round trip
        try:
            origin_reader, origin_writer = await asyncio.open_connection(host, int(port))
        except OSError:
            client_writer.close()
            return
        try:
            await asyncio.gather(delayed_pipe(client_reader, origin_writer, delay),
                                 delayed_pipe(origin_reader, client_writer, delay, rate),
                                 return_exceptions=True)
        except asyncio.CancelledError:
            pass

    server = await asyncio.start_server(relay, "127.0.0.1", options.listen)
    print(server.sockets[0].getsockname()[1], flush=True)
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    async with server:
        await stop.wait()


if __name__ == "__main__":
    asyncio.run(main())
