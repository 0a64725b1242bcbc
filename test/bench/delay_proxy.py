#!/usr/bin/env python3
"""A user-space TCP forwarder that adds a round trip: each chunk read from
one side is written to the other half the round trip later, in order,
each way (as netem's delay would, which this kernel lacks). Bandwidth is
not limited: only latency is added, so a TLS handshake costs its round
trips and a kept connection saves them.

    delay_proxy.py --target HOST:PORT --rtt-ms N --port-file F [--lifetime S]

Listens on 127.0.0.1 (a port the system picks, written to --port-file)
and opens one connection to the target per connection it accepts (the
connect itself is delayed by a round trip, as a SYN and its answer would
be). A side's end (FIN) is passed on after the same delay; a reset ends
both sides. Standard library only.
"""
import argparse
import os
import socket
import threading
import time
from collections import deque


def nodelay(s):
    try:
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except OSError:
        pass


class Pipe:
    """One direction: chunks with the time they may leave."""

    def __init__(self, src, dst, delay):
        self.src, self.dst, self.delay = src, dst, delay
        self.q = deque()
        self.cv = threading.Condition()
        self.broken = False

    def reader(self):
        while True:
            try:
                data = self.src.recv(65536)
            except OSError:
                data = None  # a reset
            with self.cv:
                self.q.append((time.monotonic() + self.delay, data))
                self.cv.notify()
            if not data:
                return

    def writer(self):
        while True:
            with self.cv:
                while not self.q:
                    self.cv.wait()
                due, data = self.q.popleft()
            left = due - time.monotonic()
            if left > 0:
                time.sleep(left)
            try:
                if data is None:  # reset: end both ways at once
                    self.dst.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER,
                                        b"\x01\x00\x00\x00\x00\x00\x00\x00")
                    self.dst.close()
                    return
                if data == b"":
                    self.dst.shutdown(socket.SHUT_WR)
                    return
                self.dst.sendall(data)
            except OSError:
                return


def serve(client, target, delay):
    time.sleep(2 * delay)  # the SYN there and its answer back
    try:
        up = socket.create_connection(target, timeout=10)
    except OSError:
        client.close()
        return
    up.settimeout(None)
    nodelay(up)
    nodelay(client)
    pipes = [Pipe(client, up, delay), Pipe(up, client, delay)]
    threads = []
    for p in pipes:
        for fn in (p.reader, p.writer):
            t = threading.Thread(target=fn, daemon=True)
            t.start()
            threads.append(t)
    for t in threads:
        t.join()
    for s in (client, up):
        try:
            s.close()
        except OSError:
            pass


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", required=True, help="HOST:PORT")
    ap.add_argument("--rtt-ms", type=float, required=True)
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--lifetime", type=float, default=600)
    a = ap.parse_args()
    host, _, port = a.target.rpartition(":")
    target = (host, int(port))
    delay = a.rtt_ms / 2000.0
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", 0))
    ls.listen(64)
    tmp = a.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(ls.getsockname()[1]))
    os.rename(tmp, a.port_file)
    threading.Timer(a.lifetime, lambda: os._exit(0)).start()
    while True:
        c, _ = ls.accept()
        threading.Thread(target=serve, args=(c, target, delay), daemon=True).start()


if __name__ == "__main__":
    main()
