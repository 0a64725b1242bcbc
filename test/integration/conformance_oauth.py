"""The user of a headless device logging mote in to an OAuth-protected MCP
server (`login`), and the MCP conformance suite's auth/* client scenarios
run through it (`run_auth`, called by conformance_client.py).

The user: mote prints the authorization address alone on a stdout line;
the user's "browser" GETs it without following redirects (the suite's and
test/oauth_server.py's authorization endpoints approve at once, answering
302 to the redirect URI with ?code=...&state=...) and pastes the address
it was sent to on mote's stdin."""
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):
        return None


def browse(url, timeout=20):
    """What a browser is sent to when it opens `url`: the Location of its
    redirect (None when it answers anything else)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())
    try:
        with opener.open(url, timeout=timeout) as r:
            r.read()
            return None
    except urllib.error.HTTPError as e:
        if e.code in (301, 302, 303, 307, 308):
            return e.headers.get("Location")
        return None


class Login:
    """What a login did: rc (None: killed at the deadline), out, err, the
    authorization address mote printed (url), the redirect the user was
    sent to (location) and what was pasted."""
    rc = out = err = url = location = pasted = None
    timed_out = False


def login(cmd, env, timeout=60, paste=None):
    """Runs `cmd` (`mote mcp login NAME ...`) as the user: when a line of
    stdout is an http(s) address alone, it is opened (browse) and the
    redirect's address is written to stdin, or paste(location) when given
    (a test's altered answer). Bounded by `timeout` seconds: past it mote
    is killed (Login.timed_out)."""
    res = Login()
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env)
    out, err = [], []
    got_url = threading.Event()

    def pump(stream, into, watch):
        for raw in iter(stream.readline, b""):
            line = raw.decode(errors="replace")
            into.append(line)
            if watch and res.url is None and re.fullmatch(r"https?://\S+", line.strip()):
                res.url = line.strip()
                got_url.set()
        stream.close()

    threads = [threading.Thread(target=pump, args=(p.stdout, out, True), daemon=True),
               threading.Thread(target=pump, args=(p.stderr, err, False), daemon=True)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + timeout
    while p.poll() is None and not got_url.is_set() and time.monotonic() < deadline:
        got_url.wait(0.05)
    try:
        if got_url.is_set() and p.poll() is None:
            res.location = browse(res.url)
            res.pasted = paste(res.location) if paste else res.location
            if res.pasted is not None:
                p.stdin.write((res.pasted + "\n").encode())
                p.stdin.flush()
        p.stdin.close()
    except OSError:  # mote gave up meanwhile (its stdin closed)
        pass
    try:
        res.rc = p.wait(timeout=max(0.1, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        res.timed_out = True
        p.kill()
        p.wait()
    for t in threads:
        t.join(5)
    res.out, res.err = "".join(out), "".join(err)
    return res


SCOPE_AGAIN = re.compile(r'mote mcp login c(?: --scope "([^"]*)")?')
# The conformance suite's Client ID Metadata Document address (auth/basic-cimd
# checks that the authorization request's client_id is exactly this).
CIMD_URL = "https://conformance-test.local/client-metadata.json"


def run_auth(mote, state, start_model, url, env):
    """An auth/* scenario: the mcp.json of server "c" at `url` with an
    "oauth" object from the suite's context, the login, then `mote -p` with
    a fresh scripted model (start_model() gives its port) until it succeeds.
    A run whose error names `mote mcp login c [--scope "..."]` (a 401, a 403
    insufficient_scope: step-up is a new login by the user) is followed by
    that login and another run, at most twice: the bound is this user's,
    not mote's (mote never loops on its own). Returns the last exit code."""
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    ctx = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    oauth = {}
    if "client_id" in ctx:
        oauth["client_id"] = ctx["client_id"]
    if "client_secret" in ctx:  # (from the environment, as a user keeps it)
        oauth["client_secret"] = "${MT_CLIENT_SECRET}"
        env = dict(env, MT_CLIENT_SECRET=ctx["client_secret"])
    if scenario in ("auth/client-credentials-basic", "auth/client-credentials-jwt"):
        oauth["grant"] = "client_credentials"
    if "idp_id_token" in ctx:  # (SEP-990: the user's ID token, from the environment)
        oauth.update(grant="id_jag", idp_token_endpoint=ctx["idp_token_endpoint"],
                     idp_client_id=ctx["idp_client_id"], id_token="${MT_ID_TOKEN}")
        env = dict(env, MT_ID_TOKEN=ctx["idp_id_token"])
    if "private_key_pem" in ctx:  # (private_key_jwt: the key in a file of its own, 0600)
        key = os.path.join(state, "client-key.pem")
        with open(os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as f:
            f.write(ctx["private_key_pem"])
        oauth["private_key_file"] = key
    if scenario == "auth/basic-cimd":
        oauth["client_metadata_url"] = CIMD_URL
    server = {"type": "http", "url": url}
    if oauth:
        server["oauth"] = oauth
    cfg = os.path.join(state, "mcp.json")
    with open(cfg, "w") as f:
        json.dump({"mcpServers": {"c": server}}, f)
    base = [mote, "--state-dir", state, "--mcp-config", cfg]
    scope, rc = None, 1
    for _ in range(3):
        cmd = [mote, "mcp", "login", "c", "--state-dir", state, "--mcp-config", cfg]
        if scope:
            cmd += ["--scope", scope]
        lg = login(cmd, env, timeout=40)
        sys.stderr.write("[login%s] rc=%s%s\n%s" % (
            " --scope " + scope if scope else "", lg.rc, " (timed out)" if lg.timed_out else "",
            lg.err))
        if lg.rc != 0:
            return 1 if lg.rc is None else lg.rc
        port = start_model()
        p = subprocess.run(base + ["--base-url", "http://127.0.0.1:%d" % port, "-p", "x",
                                   "--yes"], capture_output=True, text=True, timeout=60, env=env)
        sys.stderr.write("[run] rc=%d\n%s" % (p.returncode, p.stderr))
        sys.stdout.write(p.stdout)
        rc = p.returncode
        m = SCOPE_AGAIN.search(p.stderr)
        if m is None:
            return rc
        scope = m.group(1) or scope
    return rc
