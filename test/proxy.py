#!/usr/bin/env python3
"""A local HTTP proxy for tests: CONNECT tunnels and absolute-form
requests, every target host mapped to 127.0.0.1 (so a test can name a host
that has no DNS entry, as a device behind a proxy does).

    proxy.py --port-file F --log L [--auth USER:PASS] [--refuse STATUS]

Each request is logged as one JSON line: method, target, the
Proxy-Authorization header (or null) and the status answered.
"""
import argparse
import base64
import json
import os
import select
import socket
import socketserver
import threading
import time

ARGS = None
LOCK = threading.Lock()


def log(entry):
    with LOCK, open(ARGS.log, "a") as f:
        f.write(json.dumps(entry) + "\n")


def relay(a, b, deadline=60):
    """Copies both ways until one side closes (bounded in time)."""
    end = time.time() + deadline
    socks = [a, b]
    while time.time() < end:
        r, _, _ = select.select(socks, [], [], 1)
        for s in r:
            try:
                data = s.recv(65536)
            except OSError:
                data = b""
            if not data:
                return
            (b if s is a else a).sendall(data)


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        c = self.request
        c.settimeout(30)
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = c.recv(4096)
            if not chunk or len(head) > 65536:
                return
            head += chunk
        head, rest = head.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        method, target, _ = lines[0].split(" ", 2)
        hdrs = {}
        for l in lines[1:]:
            k, _, v = l.partition(":")
            hdrs[k.strip().lower()] = v.strip()
        auth = hdrs.get("proxy-authorization")
        status = 200
        if ARGS.refuse:
            status = ARGS.refuse
        elif ARGS.auth and auth != "Basic " + base64.b64encode(ARGS.auth.encode()).decode():
            status = 407
        log({"method": method, "target": target, "auth": auth, "status": status})
        if status != 200:
            reason = {407: "Proxy Authentication Required", 403: "Forbidden"}.get(status, "No")
            extra = 'Proxy-Authenticate: Basic realm="test"\r\n' if status == 407 else ""
            c.sendall(("HTTP/1.1 %d %s\r\n%sContent-Length: 0\r\nConnection: close\r\n\r\n"
                       % (status, reason, extra)).encode())
            return
        if method == "CONNECT":
            port = int(target.rsplit(":", 1)[1])
            up = socket.create_connection(("127.0.0.1", port), timeout=10)
            c.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            if rest:
                up.sendall(rest)
            relay(c, up)
            up.close()
            return
        # absolute form: http://host:port/path
        hostport, _, path = target[len("http://"):].partition("/")
        port = int(hostport.rsplit(":", 1)[1]) if ":" in hostport else 80
        up = socket.create_connection(("127.0.0.1", port), timeout=10)
        out = ["%s /%s HTTP/1.1" % (method, path)]
        out += [l for l in lines[1:] if not l.lower().startswith("proxy-authorization:")]
        up.sendall(("\r\n".join(out) + "\r\n\r\n").encode("latin-1") + rest)
        relay(c, up)
        up.close()


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--port-file", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--auth")
    ap.add_argument("--refuse", type=int)
    ap.add_argument("--lifetime", type=float, default=300)
    ARGS = ap.parse_args()
    srv = Server(("127.0.0.1", 0), Handler)
    tmp = ARGS.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(tmp, ARGS.port_file)
    threading.Timer(ARGS.lifetime, srv.shutdown).start()
    srv.serve_forever()


if __name__ == "__main__":
    main()
