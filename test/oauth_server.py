#!/usr/bin/env python3
"""A small OAuth-protected MCP server over HTTP for mote's tests: the
protected resource (MCP on /mcp), its Protected Resource Metadata, and an
authorization server (metadata, /authorize, /token, /register) on one
port, strict where a real one is strict and able to misbehave. Python
standard library only; 127.0.0.1 only.

    oauth_server.py --port-file F [options]

Routes (BASE is http://127.0.0.1:PORT):
  POST /mcp     JSON-RPC answered as JSON (initialize, tools/list, tools/call of
                echo {text}; notifications 202). Without "Authorization: Bearer T"
                of a token it issued: 401 with WWW-Authenticate: Bearer
                resource_metadata="BASE/.well-known/oauth-protected-resource/mcp".
  GET  /.well-known/oauth-protected-resource/mcp   {"resource": BASE/mcp,
                "authorization_servers": [BASE]}
  GET  /.well-known/oauth-authorization-server     RFC 8414 metadata
  GET  /authorize   checks response_type=code, a known client_id, redirect_uri,
                code_challenge (S256), resource = BASE/mcp; answers 302 to
                redirect_uri?code=...&state=... (no user to ask: auto-approval)
  POST /token   authorization_code: the code once, its redirect_uri, the PKCE
                verifier, resource = BASE/mcp; refresh_token: the refresh token
                it issued. Else 400 {"error": "invalid_grant"}.
  POST /register   dynamic client registration (a public client)

Options:
  --token T           the access token /token issues (default: random)
  --refresh-token R   /token issues this refresh token too
  --refreshed-token T2  the access token a refresh_token grant issues (default T + "-2")
  --expires-in N      the tokens' expires_in (seconds; default 3600)
  --client-id ID --client-secret S   a pre-registered confidential client: its token
                      requests authenticate (client_secret_basic or _post), and it
                      may use the client_credentials grant
  --prm-resource URL  the PRM names this resource (a mismatch)
  --fault KIND        huge: a 1 MiB JSON document; notjson: an HTML page; stall: the
                      headers, then one byte every 2 s, never the whole body
  --fault-at WHERE    prm | as | token: the document the fault replaces (default as)
  --log F             every request as one JSON line: method, path, headers, body
                      (written when the request has been read, before the answer)
  --lifetime S        exit after S seconds (default 300)
  --issuer URL        the metadata's "issuer" (default BASE): another one is a mismatch
  --refresh-fails N   the first N refresh_token grants answer 503 (an outage)
"""
import argparse
import base64
import hashlib
import json
import os
import secrets
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

P = argparse.ArgumentParser()
P.add_argument("--port-file", required=True)
P.add_argument("--token", default="at-" + secrets.token_hex(12))
P.add_argument("--refresh-token")
P.add_argument("--refreshed-token")
P.add_argument("--expires-in", type=int, default=3600)
P.add_argument("--client-id")
P.add_argument("--client-secret")
P.add_argument("--prm-resource")
P.add_argument("--fault", choices=("huge", "notjson", "stall"))
P.add_argument("--fault-at", choices=("prm", "as", "token"), default="as")
P.add_argument("--log")
P.add_argument("--lifetime", type=float, default=300)
P.add_argument("--issuer")  # the metadata names this issuer (not BASE: a mismatch)
P.add_argument("--refresh-fails", type=int, default=0)  # the first N refresh grants: 503
A = P.parse_args()

LOCK = threading.Lock()
CLIENTS = {A.client_id} if A.client_id else set()  # registered client ids
CODES = {}               # code -> {challenge, client_id, redirect_uri}
VALID = {A.token}        # access tokens /mcp accepts
REFRESHED = A.refreshed_token or A.token + "-2"
BASE = ""
PRM_PATH = "/.well-known/oauth-protected-resource/mcp"


def log(entry):
    entry["t"] = time.time()
    if A.log:
        with LOCK, open(A.log, "a") as f:
            f.write(json.dumps(entry) + "\n")


def s256(verifier):
    d = hashlib.sha256(verifier.encode()).digest()
    return base64.urlsafe_b64encode(d).rstrip(b"=").decode()


FAILS = [0]  # refresh grants seen (--refresh-fails)


def prm():
    return {"resource": A.prm_resource or BASE + "/mcp", "authorization_servers": [BASE]}


def as_metadata():
    return {"issuer": A.issuer or BASE, "authorization_endpoint": BASE + "/authorize",
            "token_endpoint": BASE + "/token", "registration_endpoint": BASE + "/register",
            "response_types_supported": ["code"],
            "grant_types_supported": ["authorization_code", "refresh_token"],
            "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported":
                ["client_secret_basic", "client_secret_post", "none"] if A.client_id else ["none"]}


def mcp_answer(msg):
    method, mid, p = msg.get("method"), msg.get("id"), msg.get("params") or {}
    if mid is None:
        return None
    if method == "initialize":
        return {"jsonrpc": "2.0", "id": mid, "result": {
            "protocolVersion": p.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}}, "serverInfo": {"name": "oauth-test", "version": "1"}}}
    if method == "tools/list":
        return {"jsonrpc": "2.0", "id": mid, "result": {"tools": [
            {"name": "echo", "description": "Echo the text back.",
             "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}]}}
    if method == "tools/call" and p.get("name") == "echo":
        text = "echo: %s" % (p.get("arguments") or {}).get("text")
        return {"jsonrpc": "2.0", "id": mid, "result": {"content": [{"type": "text",
                                                                     "text": text}]}}
    if method == "ping":
        return {"jsonrpc": "2.0", "id": mid, "result": {}}
    return {"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": "no method"}}


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def send(self, status, body, ctype="application/json", headers=()):
        if not isinstance(body, (bytes, str)):
            body = json.dumps(body)
        if isinstance(body, str):
            body = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(body)

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        self.body_seen = self.rfile.read(n).decode(errors="replace") if n else ""
        return self.body_seen

    def entry(self, body):
        u = urllib.parse.urlsplit(self.path)
        log({"method": self.command, "path": u.path, "query": u.query,
             "headers": dict(self.headers.items()), "body": body})
        return u

    def faulty(self, where, doc):
        """Answers `doc`, or the fault in its place."""
        if A.fault is None or A.fault_at != where:
            return self.send(200, doc)
        if A.fault == "huge":
            pad = "x" * (1 << 20)
            return self.send(200, json.dumps(dict(doc, pad=pad)))
        if A.fault == "notjson":
            return self.send(200, "<html><body>Sign in</body></html>", "text/html")
        # stall: a body that never ends (a byte every 2 s, as long as the peer reads)
        text = json.dumps(doc).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(text) + 100000))
        self.end_headers()
        self.wfile.flush()
        deadline = time.time() + A.lifetime
        for b in text:
            if time.time() > deadline:
                break
            try:
                self.wfile.write(bytes([b]))
                self.wfile.flush()
            except OSError:
                return None
            time.sleep(2)
        return None

    def do_GET(self):
        u = self.entry("")
        q = dict(urllib.parse.parse_qsl(u.query))
        if u.path == PRM_PATH:
            return self.faulty("prm", prm())
        if u.path == "/.well-known/oauth-authorization-server":
            return self.faulty("as", as_metadata())
        if u.path == "/authorize":
            return self.authorize(q)
        if u.path == "/mcp":  # no server-initiated stream
            return self.send(405, {"error": "method_not_allowed"})
        return self.send(404, {"error": "not_found"})

    def authorize(self, q):
        bad = None
        with LOCK:
            known = q.get("client_id") in CLIENTS
        if q.get("response_type") != "code":
            bad = "response_type"
        elif not known:
            bad = "client_id"
        elif not q.get("redirect_uri"):
            bad = "redirect_uri"
        elif not q.get("code_challenge") or q.get("code_challenge_method") != "S256":
            bad = "code_challenge"
        elif q.get("resource") != BASE + "/mcp":
            bad = "resource"
        if bad:
            return self.send(400, "bad authorization request: %s" % bad, "text/plain")
        code = "code-" + secrets.token_hex(8)
        with LOCK:
            CODES[code] = {"challenge": q["code_challenge"], "client_id": q["client_id"],
                           "redirect_uri": q["redirect_uri"]}
        to = q["redirect_uri"] + ("&" if "?" in q["redirect_uri"] else "?") + \
            urllib.parse.urlencode({"code": code, "state": q.get("state", "")})
        self.send_response(302)
        self.send_header("Location", to)
        self.send_header("Content-Length", "0")
        self.end_headers()
        return None

    def do_POST(self):
        body = self.read_body()
        u = self.entry(body)
        if u.path == "/mcp":
            return self.mcp(body)
        if u.path == "/register":
            cid = "client-" + secrets.token_hex(6)
            with LOCK:
                CLIENTS.add(cid)
            try:
                meta = json.loads(body)
            except ValueError:
                return self.send(400, {"error": "invalid_client_metadata"})
            return self.send(201, {"client_id": cid, "token_endpoint_auth_method": "none",
                                   "redirect_uris": meta.get("redirect_uris", []),
                                   "grant_types": ["authorization_code", "refresh_token"]})
        if u.path == "/token":
            return self.token(dict(urllib.parse.parse_qsl(body)), self.client())
        return self.send(404, {"error": "not_found"})

    def client(self):
        """The client a token request authenticated as: the confidential
        one (HTTP Basic or client_secret in the body), else the body's
        client_id (a public client), else None (bad credentials)."""
        form = dict(urllib.parse.parse_qsl(self.body_seen))
        auth = self.headers.get("Authorization", "")
        if auth.startswith("Basic "):
            try:
                cid, _, sec = base64.b64decode(auth[6:]).decode().partition(":")
            except ValueError:
                return None
            cid, sec = urllib.parse.unquote_plus(cid), urllib.parse.unquote_plus(sec)
            return cid if A.client_id and (cid, sec) == (A.client_id, A.client_secret) else None
        if A.client_id and form.get("client_id") == A.client_id:
            return A.client_id if form.get("client_secret") == A.client_secret else None
        return form.get("client_id")

    def token(self, f, client):
        grant = f.get("grant_type")
        out = None
        if client is None:
            return self.send(401, {"error": "invalid_client"})
        if grant == "client_credentials" and A.client_id and client == A.client_id:
            out = {"access_token": A.token, "token_type": "Bearer", "expires_in": A.expires_in}
        elif grant == "authorization_code":
            with LOCK:
                c = CODES.pop(f.get("code", ""), None)
            if c and c["client_id"] == client and \
                    c["redirect_uri"] == f.get("redirect_uri") and \
                    c["challenge"] == s256(f.get("code_verifier", "")) and \
                    f.get("resource") == BASE + "/mcp":
                out = {"access_token": A.token, "token_type": "Bearer",
                       "expires_in": A.expires_in}
                if A.refresh_token:
                    out["refresh_token"] = A.refresh_token
        elif grant == "refresh_token" and A.refresh_token and \
                f.get("refresh_token") == A.refresh_token:
            with LOCK:
                FAILS[0] += 1
                down = FAILS[0] <= A.refresh_fails
            if down:
                return self.send(503, {"error": "temporarily_unavailable"})
            with LOCK:
                VALID.add(REFRESHED)
            out = {"access_token": REFRESHED, "token_type": "Bearer", "expires_in": 3600,
                   "refresh_token": A.refresh_token}
        if out is None:
            return self.send(400, {"error": "invalid_grant"})
        return self.faulty("token", out)

    def mcp(self, body):
        auth = self.headers.get("Authorization", "")
        with LOCK:
            ok = auth.startswith("Bearer ") and auth[7:] in VALID
        if not ok:
            return self.send(401, {"error": "invalid_token"}, headers=[
                ("WWW-Authenticate", 'Bearer resource_metadata="%s%s"' % (BASE, PRM_PATH))])
        try:
            msg = json.loads(body)
        except ValueError:
            return self.send(400, {"jsonrpc": "2.0", "id": None,
                                   "error": {"code": -32700, "message": "parse error"}})
        ans = mcp_answer(msg)
        if ans is None:
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return None
        return self.send(200, ans)

    def do_DELETE(self):
        self.entry("")
        self.send(405, {"error": "method_not_allowed"})


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # a client that gave up (a reset) is no news here


def main():
    global BASE
    srv = Server(("127.0.0.1", 0), H)
    BASE = "http://127.0.0.1:%d" % srv.server_address[1]
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    tmp = A.port_file + ".tmp"
    with open(tmp, "w") as f:
        f.write(str(srv.server_address[1]))
    os.rename(tmp, A.port_file)
    time.sleep(A.lifetime)


if __name__ == "__main__":
    main()
