#!/usr/bin/env python3
"""Integration tests of OAuth for MCP servers over HTTP (`mote mcp login`,
`mote mcp logout`, the bearer token at run time): the MCP conformance
suite's auth/* client scenarios (its servers, mote logged in by a
simulated user: conformance_oauth.py), and a small hostile authorization
server (test/oauth_server.py) for what the suite does not check: where the
token is kept and where it never goes, a forged state, hostile metadata.

    test_mcp_oauth.py BUILDDIR
"""
import json
import os
import stat
import subprocess
import sys
import tempfile
import time
import uuid

from conformance_oauth import login
from harness import (ROOT, TMP, check, requests_in, run_all, start_server, wait_for,
                     NOTES)
from harness import mcp_config as config
import harness
from test_mcp_http import conformance_checks
from test_serve import Serve

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
MOTE = os.path.join(BUILD, "mote")
OAUTH = os.path.join(ROOT, "test", "oauth_server.py")
PROCS = []
SECRET = "at-s3cr3t-%s" % uuid.uuid4().hex[:12]
REFRESH = "rt-s3cr3t-%s" % uuid.uuid4().hex[:12]


def env(**extra):
    return harness.mote_env("sk-ant-mcp-oauth", **extra)


def oauth_server(*flags):
    """Starts test/oauth_server.py; returns (its MCP URL, request log path)."""
    tag = uuid.uuid4().hex[:8]
    pf = os.path.join(TMP, "oport-" + tag)
    log = os.path.join(TMP, "olog-" + tag)
    PROCS.append(subprocess.Popen([sys.executable, OAUTH, "--port-file", pf, "--log", log] +
                                  list(flags)))
    port = int(wait_for(lambda: os.path.exists(pf) and open(pf).read(), "the oauth server"))
    return "http://127.0.0.1:%d/mcp" % port, log


def olog(path):
    if not os.path.exists(path):
        return []
    return [json.loads(line) for line in open(path) if line.strip()]


def auth_of(entry):
    for k, v in entry["headers"].items():
        if k.lower() == "authorization":
            return v
    return None


def do_login(st, cfg, *extra, paste=None, timeout=60, step_ms=None):
    e = env(MOTE_OAUTH_STEP_MS=str(step_ms)) if step_ms else env()
    return login([MOTE, "mcp", "login", "c", "--state-dir", st, "--mcp-config", cfg] +
                 list(extra), e, timeout=timeout, paste=paste)


def run(port, cfg, st, *extra):
    return subprocess.run([MOTE, "--state-dir", st, "--base-url", "http://127.0.0.1:%d" % port,
                           "--mcp-config", cfg] + list(extra), capture_output=True, text=True,
                          timeout=90, env=env())


def token_file(st):
    return os.path.join(st, "mcp-auth", "c.json")


def state_text(st):
    """Every file under the state directory but the token store, as text."""
    out = {}
    for d, _, files in os.walk(st):
        if os.path.abspath(d) == os.path.abspath(os.path.join(st, "mcp-auth")):
            continue
        for f in files:
            if not stat.S_ISREG(os.lstat(os.path.join(d, f)).st_mode):
                continue  # (mote serve's socket)
            with open(os.path.join(d, f), errors="replace") as fh:
                out[os.path.relpath(os.path.join(d, f), st)] = fh.read()
    return out


def one_line_error(lg):
    """A login refused: exit 1 (not killed), one line on stderr (besides the
    prompt, when it came that far); returns that line."""
    check(not lg.timed_out and lg.rc == 1, (lg.rc, lg.timed_out, lg.err[-600:]))
    lines = [x for x in lg.err.strip().splitlines()
             if "open this address in a browser" not in x]
    check(len(lines) == 1 and len(lines[0]) < 400, "one short line: %r" % lg.err[-600:])
    return lines[0]


# ---- the hostile authorization server --------------------------------------

def test_login_then_run_the_token_stays_private():
    # A login (dynamic registration, PKCE, resource; the server refuses any
    # of them wrong), then a run: the token goes to the MCP server as a
    # bearer header on every request, and nowhere else: not on stdout or
    # stderr, not in the journal or any other file of the state directory
    # but STATE/mcp-auth/c.json (mode 0600), not to the model.
    url, slog = oauth_server("--token", SECRET, "--refresh-token", REFRESH)
    st = tempfile.mkdtemp(dir=TMP)
    cfg = config({"c": {"type": "http", "url": url}})
    lg = do_login(st, cfg)
    check(lg.rc == 0 and "mcp c: logged in" in lg.err, (lg.rc, lg.err[-600:]))
    base = url[:-len("/mcp")]
    check(lg.url.startswith(base + "/authorize?"), lg.url)
    check(lg.out.strip() == lg.url, "the address alone on stdout: %r" % lg.out)
    reqs = olog(slog)
    check([r["path"] for r in reqs if r["path"] == "/token"] == ["/token"], "one token request")
    f = token_file(st)
    check(os.path.exists(f), "no %s" % f)
    mode = stat.S_IMODE(os.stat(f).st_mode)
    check(mode == 0o600, "the token file's mode is %o" % mode)
    check(SECRET in open(f).read(), "the token file holds the token")
    for what, text in (("login's stdout", lg.out), ("login's stderr", lg.err)):
        check(SECRET not in text and REFRESH not in text, "a token in " + what)
    seen = len(reqs)
    port, llog = start_server([{"tool": "c__echo", "input": {"text": "hi"}}, {"text": "done"}])
    p = run(port, cfg, st, "-p", "x", "--yes")
    check(p.returncode == 0 and "done" in p.stdout, (p.returncode, p.stderr[-600:]))
    texts = [harness.result_text(b) for r in requests_in(llog)
             for b in harness.tool_results(r["body"])]
    check(texts == ["echo: hi"], texts)
    posts = [r for r in olog(slog)[seen:] if r["path"] == "/mcp" and r["method"] == "POST"]
    check(posts and all(auth_of(r) == "Bearer " + SECRET for r in posts),
          [auth_of(r) for r in posts])
    check(SECRET not in p.stdout + p.stderr and REFRESH not in p.stdout + p.stderr,
          "a token on mote's output")
    check(SECRET not in json.dumps(requests_in(llog)), "the token went to the model")
    files = state_text(st)
    check(any(k.startswith("conversations") for k in files), sorted(files))
    leaks = [k for k, v in files.items() if SECRET in v or REFRESH in v]
    check(not leaks, "a token in %s" % leaks)


def test_a_forged_state_is_refused():
    # The pasted redirect's state is not the one mote sent: refused, exit 1,
    # and the code is never taken to the token endpoint.
    url, slog = oauth_server("--token", SECRET)
    st = tempfile.mkdtemp(dir=TMP)
    lg = do_login(st, config({"c": {"type": "http", "url": url}}),
                  paste=lambda loc: loc.replace("state=", "state=forged"))
    check(lg.url is not None and lg.pasted is not None and "state=forged" in lg.pasted,
          (lg.url, lg.pasted, lg.err[-400:]))
    one_line_error(lg)
    check(not [r for r in olog(slog) if r["path"] == "/token"], "the code went to /token")
    check(not os.path.exists(token_file(st)), "a token file")


def metadata_fault(fault, at, timeout=60, step_ms=None):
    url, slog = oauth_server("--token", SECRET, "--fault", fault, "--fault-at", at)
    st = tempfile.mkdtemp(dir=TMP)
    t0 = time.monotonic()
    lg = do_login(st, config({"c": {"type": "http", "url": url}}), timeout=timeout,
                  step_ms=step_ms)
    took = time.monotonic() - t0
    line = one_line_error(lg)
    check(lg.url is None, "an authorization address was printed: %s" % lg.url)
    check(not [r for r in olog(slog) if r["path"] in ("/register", "/token")],
          "registered or asked for a token after bad metadata")
    check(not os.path.exists(token_file(st)), "a token file")
    return line, took


def test_huge_authorization_server_metadata():
    line, _ = metadata_fault("huge", "as")
    check("x" * 40 not in line, line)


def test_authorization_server_metadata_not_json():
    line, _ = metadata_fault("notjson", "as")
    check("<html" not in line.lower(), line)


def test_huge_protected_resource_metadata():
    metadata_fault("huge", "prm")


def test_protected_resource_metadata_not_json():
    metadata_fault("notjson", "prm")


def test_stalled_metadata_has_a_deadline():
    # The metadata's body comes a byte every 2 s for 5 minutes: mote gives up
    # at its deadline for the whole exchange (15 s; MOTE_OAUTH_STEP_MS, 3 s
    # here, so the test is short: the bound asserted is generous, the test
    # is killed at 90 s), though bytes keep coming.
    line, took = metadata_fault("stall", "as", timeout=90, step_ms=3000)
    check(2.5 < took < 60, "gave up after %.1f s" % took)
    check("timed out" in line, line)
    NOTES.append("oauth: a stalled metadata document refused after %.1f s: %s" % (took, line))


def test_huge_token_answer():
    url, slog = oauth_server("--token", SECRET, "--fault", "huge", "--fault-at", "token")
    st = tempfile.mkdtemp(dir=TMP)
    lg = do_login(st, config({"c": {"type": "http", "url": url}}))
    one_line_error(lg)
    check(not os.path.exists(token_file(st)), "a token file")


def test_a_mismatched_resource_is_refused():
    # The PRM names another resource than the server's URL: refused before
    # anything goes to the authorization server.
    url, slog = oauth_server("--token", SECRET, "--prm-resource", "https://evil.example.com/mcp")
    st = tempfile.mkdtemp(dir=TMP)
    lg = do_login(st, config({"c": {"type": "http", "url": url}}))
    one_line_error(lg)
    check(lg.url is None, "an authorization address was printed: %s" % lg.url)
    check(not [r for r in olog(slog) if r["path"] in ("/register", "/authorize", "/token")],
          [r["path"] for r in olog(slog)])


def test_401_names_the_login_and_logout_removes_the_token():
    # Before a login, and after a logout, the server's 401 makes mote name
    # `mote mcp login c`; the logout removes the token file.
    url, slog = oauth_server("--token", SECRET)
    st = tempfile.mkdtemp(dir=TMP)
    cfg = config({"c": {"type": "http", "url": url}})
    port, _ = start_server([{"text": "done"}])
    p = run(port, cfg, st, "-p", "x", "--yes")
    check("mote mcp login c" in p.stderr, p.stderr[-600:])
    lg = do_login(st, cfg)
    check(lg.rc == 0 and os.path.exists(token_file(st)), (lg.rc, lg.err[-600:]))
    q = subprocess.run([MOTE, "mcp", "logout", "c", "--state-dir", st, "--mcp-config", cfg],
                       capture_output=True, text=True, timeout=30, env=env())
    check(q.returncode == 0, (q.returncode, q.stderr))
    check(not os.path.exists(token_file(st)), "the token file is still there")
    seen = len(olog(slog))
    port, _ = start_server([{"text": "done"}])
    p = run(port, cfg, st, "-p", "x", "--yes")
    check("mote mcp login c" in p.stderr, p.stderr[-600:])
    check(all(auth_of(r) is None for r in olog(slog)[seen:]), "a token went after the logout")


def test_a_token_goes_only_to_its_server():
    # The token was issued for one server's URL; the configuration now names
    # another URL for the same name: the token does not go there.
    url, _ = oauth_server("--token", SECRET)
    st = tempfile.mkdtemp(dir=TMP)
    lg = do_login(st, config({"c": {"type": "http", "url": url}}))
    check(lg.rc == 0, (lg.rc, lg.err[-600:]))
    other, olog2 = oauth_server("--token", "at-other-%s" % uuid.uuid4().hex[:8])
    port, llog = start_server([{"text": "done"}])
    p = run(port, config({"c": {"type": "http", "url": other}}), st, "-p", "x", "--yes")
    sent = [auth_of(r) for r in olog(olog2)]
    check(sent and not any(a and SECRET in a for a in sent), sent)
    check(SECRET not in p.stderr and SECRET not in json.dumps(requests_in(llog)), "leaked")


def test_an_expired_token_is_refreshed_at_start():
    # The token expires in 1 s; the next run refreshes it (the refresh_token
    # grant) before it connects, uses the new token, and keeps it (0600).
    fresh = SECRET + "-fresh"
    url, slog = oauth_server("--token", SECRET, "--refresh-token", REFRESH, "--expires-in", "1",
                             "--refreshed-token", fresh)
    st = tempfile.mkdtemp(dir=TMP)
    cfg = config({"c": {"type": "http", "url": url}})
    lg = do_login(st, cfg)
    check(lg.rc == 0, (lg.rc, lg.err[-600:]))
    issued = [r["t"] for r in olog(slog) if r["path"] == "/token"][-1]
    wait_for(lambda: time.time() > issued + 2, "the token to expire")
    seen = len(olog(slog))
    port, llog = start_server([{"tool": "c__echo", "input": {"text": "again"}}, {"text": "done"}])
    p = run(port, cfg, st, "-p", "x", "--yes")
    check(p.returncode == 0 and "done" in p.stdout, (p.returncode, p.stderr[-600:]))
    later = olog(slog)[seen:]
    grants = [r["body"] for r in later if r["path"] == "/token"]
    check(len(grants) == 1 and "grant_type=refresh_token" in grants[0], grants)
    first_mcp = [i for i, r in enumerate(later) if r["path"] == "/mcp"][:1] or [len(later)]
    check(any(r["path"] == "/token" for r in later[:first_mcp[0]]), "refreshed before connecting")
    posts = [r for r in later if r["path"] == "/mcp" and r["method"] == "POST"]
    check(posts and all(auth_of(r) == "Bearer " + fresh for r in posts),
          [auth_of(r) for r in posts])
    f = token_file(st)
    check(fresh in open(f).read() and stat.S_IMODE(os.stat(f).st_mode) == 0o600,
          "the refreshed token kept, 0600")
    for text in (p.stdout + p.stderr, json.dumps(requests_in(llog))):
        check(fresh not in text and REFRESH not in text, "a token leaked")


def test_a_token_is_renewed_while_the_run_goes_on():
    # A token that expires in 100 s is not renewed at the start (over the
    # 30 s margin) but by the run's own check (MOTE_OAUTH_TICK_MS, here
    # 300 ms; 30 s by default) once it is within 120 s of expiry; the
    # next call of the same run carries the new token. The model's second
    # answer waits for the refresh grant (a file the test makes then).
    fresh = SECRET + "-renewed"
    url, slog = oauth_server("--token", SECRET, "--refresh-token", REFRESH, "--expires-in", "100",
                             "--refreshed-token", fresh)
    st = tempfile.mkdtemp(dir=TMP)
    cfg = config({"c": {"type": "http", "url": url}})
    lg = do_login(st, cfg)
    check(lg.rc == 0, (lg.rc, lg.err[-600:]))
    go = os.path.join(TMP, "renewed-" + uuid.uuid4().hex[:6])
    port, llog = start_server([{"tool": "c__echo", "input": {"text": "one"}},
                               {"wait_file": go, "tool": "c__echo", "input": {"text": "two"}},
                               {"text": "done"}])
    p = subprocess.Popen([MOTE, "--state-dir", st, "--base-url", "http://127.0.0.1:%d" % port,
                          "--mcp-config", cfg, "-p", "x", "--yes"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env(MOTE_OAUTH_TICK_MS="300"))
    PROCS.append(p)
    try:
        wait_for(lambda: any(r["path"] == "/token" and "grant_type=refresh_token" in r["body"]
                             for r in olog(slog)), "the token renewed during the run")
        open(go, "w").close()
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    check(p.returncode == 0 and "done" in out, (p.returncode, err[-600:]))
    calls = [r for r in olog(slog) if r["path"] == "/mcp" and '"tools/call"' in r["body"]]
    check(len(calls) == 2 and '"two"' in calls[1]["body"] and
          auth_of(calls[1]) == "Bearer " + fresh, [(r["body"][:80], auth_of(r)) for r in calls])
    check(fresh in open(token_file(st)).read(), "the renewed token kept")
    for text in (out + err, json.dumps(requests_in(llog))):
        check(fresh not in text and REFRESH not in text and SECRET not in text, "a token leaked")


def test_mote_serve_sends_the_token_kept():
    # mote serve reads the tokens of its MCP servers' logins when it loads
    # them: a conversation's call carries the bearer; the token shows in
    # neither its log nor the conversation's journal.
    url, slog = oauth_server("--token", SECRET)
    st = tempfile.mkdtemp(dir=TMP)
    cfg = config({"c": {"type": "http", "url": url}})
    lg = do_login(st, cfg)
    check(lg.rc == 0, (lg.rc, lg.err[-600:]))
    port, llog = start_server([{"tool": "c__echo", "input": {"text": "hi"}}, {"text": "done"}])
    s = Serve(port, st, args=["--mcp-config", cfg, "--approval", "allow"])
    try:
        wait_for(lambda: "mcp c: ready" in s.log(), "the MCP server ready", 30)
        cid, ev = s.start_turn("call it")
        s.wait_state(cid, "idle")
        ev.close()
        calls = [r for r in olog(slog) if r["path"] == "/mcp" and '"tools/call"' in r["body"]]
        check(len(calls) == 1 and auth_of(calls[0]) == "Bearer " + SECRET,
              [auth_of(r) for r in calls])
        text = json.dumps(state_text(st)) + s.log() + json.dumps(requests_in(llog))
        check(SECRET not in text, "the token leaked")
    finally:
        check(s.stop() == 0, s.log()[-2000:])


def test_a_client_key_that_cannot_sign_is_refused():
    # private_key_jwt with a key that is not EC P-256 (RSA), or not a key:
    # the login ends with one line naming the key; no token request goes out.
    url, slog = oauth_server("--token", SECRET, "--client-id", "cc-client",
                             "--client-secret", "unused")
    st = tempfile.mkdtemp(dir=TMP)
    rsa = os.path.join(st, "rsa.pem")
    subprocess.run(["openssl", "genrsa", "-out", rsa, "2048"], check=True, capture_output=True)
    junk = os.path.join(st, "junk.pem")
    with open(junk, "w") as f:
        f.write("-----BEGIN PRIVATE KEY-----\nnot base64 at all\n-----END PRIVATE KEY-----\n")
    for key, why in ((rsa, "not an EC P-256 key"), (junk, "not an unencrypted PEM or DER key"),
                     (os.path.join(st, "absent.pem"), "cannot read the private key")):
        cfg = config({"c": {"type": "http", "url": url, "oauth": {
            "grant": "client_credentials", "client_id": "cc-client", "private_key_file": key}}})
        lg = do_login(st, cfg)
        line = one_line_error(lg)
        check(why in line, line)
    check(not any(r["path"] == "/token" for r in olog(slog)), "a token request went out")


def test_an_issuer_that_is_not_the_one_asked_for_is_refused():
    # RFC 8414 3.3: the metadata's "issuer" must be the issuer it was
    # fetched for; another one (here a host the user never saw) ends the
    # login before any registration, code or secret goes anywhere.
    url, slog = oauth_server("--token", SECRET, "--issuer", "https://as.elsewhere.example")
    st = tempfile.mkdtemp(dir=TMP)
    lg = do_login(st, config({"c": {"type": "http", "url": url}}))
    line = one_line_error(lg)
    check("names the issuer https://as.elsewhere.example" in line, line)
    check(not any(r["path"] in ("/register", "/authorize", "/token") for r in olog(slog)),
          [r["path"] for r in olog(slog)])


def test_a_failed_renewal_is_tried_again():
    # The authorization server is down for the first renewal (503): the
    # run says so once, tries again at its next check and carries the new
    # token after (before, one failure stopped renewal for the whole run).
    fresh = SECRET + "-later"
    url, slog = oauth_server("--token", SECRET, "--refresh-token", REFRESH, "--expires-in", "100",
                             "--refreshed-token", fresh, "--refresh-fails", "1")
    st = tempfile.mkdtemp(dir=TMP)
    cfg = config({"c": {"type": "http", "url": url}})
    lg = do_login(st, cfg)
    check(lg.rc == 0, (lg.rc, lg.err[-600:]))
    go = os.path.join(TMP, "again-" + uuid.uuid4().hex[:6])
    port, _ = start_server([{"tool": "c__echo", "input": {"text": "one"}},
                            {"wait_file": go, "tool": "c__echo", "input": {"text": "two"}},
                            {"text": "done"}])
    p = subprocess.Popen([MOTE, "--state-dir", st, "--base-url", "http://127.0.0.1:%d" % port,
                          "--mcp-config", cfg, "-p", "x", "--yes"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, env=env(MOTE_OAUTH_TICK_MS="300"))
    PROCS.append(p)
    try:
        wait_for(lambda: sum(1 for r in olog(slog) if r["path"] == "/token" and
                             "grant_type=refresh_token" in r["body"]) >= 2,
                 "a second renewal after the first failed")
        open(go, "w").close()
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    check(p.returncode == 0 and "done" in out, (p.returncode, err[-600:]))
    calls = [r for r in olog(slog) if r["path"] == "/mcp" and '"tools/call"' in r["body"]]
    check(len(calls) == 2 and auth_of(calls[1]) == "Bearer " + fresh,
          [auth_of(r) for r in calls])
    check(err.count("could not be renewed") == 1, err[-800:])


def test_two_logins_at_once_both_keep_a_whole_file():
    # Two logins of one server at the same moment (client credentials: no
    # person): each writes its own temporary file, so neither renames the
    # other's half-written one; the file left is always a whole one.
    sec = "cs-%s" % uuid.uuid4().hex[:12]
    url, _ = oauth_server("--token", SECRET, "--client-id", "cc-client", "--client-secret", sec)
    st = tempfile.mkdtemp(dir=TMP)
    cfg = config({"c": {"type": "http", "url": url, "oauth": {
        "client_id": "cc-client", "client_secret": sec, "grant": "client_credentials"}}})
    cmd = [MOTE, "mcp", "login", "c", "--state-dir", st, "--mcp-config", cfg]
    for _ in range(6):
        ps = [subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, env=env()) for _ in range(2)]
        outs = [q.communicate(timeout=60) for q in ps]
        check(all(q.returncode == 0 for q in ps), [(q.returncode, o[1][-300:])
                                                    for q, o in zip(ps, outs)])
        check(json.load(open(token_file(st)))["access_token"] == SECRET, "a whole token file")
    check(not [f for f in os.listdir(os.path.join(st, "mcp-auth")) if f.endswith(".tmp")],
          os.listdir(os.path.join(st, "mcp-auth")))


def test_a_server_name_with_a_path_is_refused():
    st = tempfile.mkdtemp(dir=TMP)
    victim = os.path.join(st, "victim.json")
    open(victim, "w").close()
    os.makedirs(os.path.join(st, "state", "mcp-auth"))
    for verb in ("logout", "login"):
        p = subprocess.run([MOTE, "mcp", verb, "../../victim", "--state-dir",
                            os.path.join(st, "state")], capture_output=True, text=True,
                           timeout=30, env=env())
        check(p.returncode == 2 and "bad server name" in p.stderr, (p.returncode, p.stderr))
    check(os.path.exists(victim), "a file outside the state directory was removed")


def client_credentials(login_first):
    """"grant": "client_credentials" with a pre-registered client whose
    secret comes from the environment, with or without a login first: the
    run has a token (client_secret_basic or _post); neither the secret nor
    the token shows anywhere but where it must."""
    sec = "cs-s3cr3t-%s" % uuid.uuid4().hex[:12]
    url, slog = oauth_server("--token", SECRET, "--client-id", "cc-client",
                             "--client-secret", sec)
    st = tempfile.mkdtemp(dir=TMP)
    cfg = config({"c": {"type": "http", "url": url, "oauth": {
        "client_id": "cc-client", "client_secret": "${MT_CC_SECRET}",
        "grant": "client_credentials"}}})
    if login_first:
        lg = login([MOTE, "mcp", "login", "c", "--state-dir", st, "--mcp-config", cfg],
                   env(MT_CC_SECRET=sec), timeout=60)
        check(lg.rc == 0 and lg.url is None and not lg.out.strip(), (lg.rc, lg.out, lg.err))
        check(stat.S_IMODE(os.stat(token_file(st)).st_mode) == 0o600, "the token file's mode")
        check(sec not in lg.out + lg.err and SECRET not in lg.out + lg.err, "a secret shown")
    # (the shell tool prints its environment: the secret's variable must
    # be gone from it, with a token kept as without)
    port, llog = start_server([{"tool": "c__echo", "input": {"text": "cc"}},
                               {"tool": "shell", "input": {"command": "env"}}, {"text": "done"}])
    p = subprocess.run([MOTE, "--state-dir", st, "--base-url", "http://127.0.0.1:%d" % port,
                        "--mcp-config", cfg, "-p", "x", "--yes"], capture_output=True, text=True,
                       timeout=90, env=env(MT_CC_SECRET=sec))
    check(p.returncode == 0 and "done" in p.stdout, (p.returncode, p.stderr[-600:]))
    reqs = olog(slog)
    grants = [r["body"] for r in reqs if r["path"] == "/token"]
    check(len(grants) == 1 and "grant_type=client_credentials" in grants[0], grants)
    posts = [r for r in reqs if r["path"] == "/mcp" and r["method"] == "POST"]
    check(posts and auth_of(posts[-1]) == "Bearer " + SECRET, [auth_of(r) for r in posts])
    texts = [harness.result_text(b) for b in harness.tool_results(requests_in(llog)[-1]["body"])]
    check(len(texts) == 2 and texts[0] == "echo: cc" and "PATH=" in texts[1], texts)
    check("MT_CC_SECRET" not in texts[1], "the secret's variable in a tool's environment")
    for what, text in [("mote's output", p.stdout + p.stderr),
                       ("the model's requests", json.dumps(requests_in(llog)))] + \
            list(state_text(st).items()):
        check(SECRET not in text and sec not in text, "a secret in " + what)


def test_client_credentials_login_then_run():
    # The login takes the token at once (no address, no prompt).
    client_credentials(True)


def test_client_credentials_token_at_start_without_login():
    # No login: the run gets the token at start (the spec: "a fresh token at
    # start when theirs expired or is missing").
    client_credentials(False)


def test_a_confidential_client_keeps_its_secret_off_the_address():
    # A pre-registered confidential client (authorization_code): the secret
    # goes to the token endpoint only, never into the authorization address
    # the user is shown, nor on stderr.
    sec = "cs-s3cr3t-%s" % uuid.uuid4().hex[:12]
    url, slog = oauth_server("--token", SECRET, "--client-id", "pre-client",
                             "--client-secret", sec)
    st = tempfile.mkdtemp(dir=TMP)
    cfg = config({"c": {"type": "http", "url": url, "oauth": {
        "client_id": "pre-client", "client_secret": "${MT_PRE_SECRET}"}}})
    lg = login([MOTE, "mcp", "login", "c", "--state-dir", st, "--mcp-config", cfg],
               env(MT_PRE_SECRET=sec), timeout=60)
    check(lg.rc == 0 and lg.url and "client_id=pre-client" in lg.url, (lg.rc, lg.url,
                                                                        lg.err[-600:]))
    check(sec not in lg.out + lg.err, "the client secret shown")
    check(not [r for r in olog(slog) if r["path"] == "/register"], "registered though configured")


def test_a_server_without_auth_needs_no_login():
    # A server that answers without a token: nothing to do (said on one
    # line), exit 0, no token file, nothing but MCP requests sent.
    url, slog = harness_hostile()
    st = tempfile.mkdtemp(dir=TMP)
    lg = do_login(st, config({"c": {"type": "http", "url": url}}))
    check(lg.rc == 0 and lg.url is None and len(lg.err.strip().splitlines()) == 1 and
          "logged in" not in lg.err, (lg.rc, lg.url, lg.err[-600:]))
    check(not os.path.exists(token_file(st)), "a token file")
    check(all(r["path"].startswith("/mcp") for r in olog(slog)),
          [r["path"] for r in olog(slog)])


def harness_hostile():
    """test/mcp_http_server.py (no auth; JSON answers); (URL, log)."""
    tag = uuid.uuid4().hex[:8]
    pf, log = os.path.join(TMP, "hport-" + tag), os.path.join(TMP, "hlog-" + tag)
    PROCS.append(subprocess.Popen([sys.executable, os.path.join(ROOT, "test", "mcp_http_server.py"),
                                   "--port-file", pf, "--json", "--log", log]))
    port = int(wait_for(lambda: os.path.exists(pf) and open(pf).read(), "the MCP server"))
    return "http://127.0.0.1:%d/mcp" % port, log


def test_login_usage_and_unknown_server():
    # No server name: usage, exit 2. A name the configuration does not have,
    # or a stdio server: one line, exit 1 or 2, nothing written.
    st = tempfile.mkdtemp(dir=TMP)
    cfg = config({"s": {"command": "true"}})
    p = subprocess.run([MOTE, "mcp", "login", "--state-dir", st, "--mcp-config", cfg],
                       capture_output=True, text=True, timeout=30, env=env(), stdin=subprocess.DEVNULL)
    check(p.returncode == 2 and p.stderr.strip(), (p.returncode, p.stderr))
    for name in ("nosuch", "s"):
        p = subprocess.run([MOTE, "mcp", "login", name, "--state-dir", st, "--mcp-config", cfg],
                           capture_output=True, text=True, timeout=30, env=env(),
                           stdin=subprocess.DEVNULL)
        check(p.returncode in (1, 2) and len(p.stderr.strip().splitlines()) == 1 and
              name in p.stderr, (name, p.returncode, p.stderr))
    check(not os.path.exists(os.path.join(st, "mcp-auth")) or
          not os.listdir(os.path.join(st, "mcp-auth")), "something written")


# ---- the MCP conformance suite's auth scenarios ------------------------------

PKCE = {"pkce-code-challenge-sent", "pkce-s256-method-used", "pkce-code-verifier-sent",
        "pkce-verifier-matches-challenge"}
FLOW = {"authorization-server-metadata", "authorization-request", "token-request",
        "valid-bearer-token"} | PKCE
PRM = {"prm-pathbased-requested"}
DCR = {"client-registration"}
RESOURCE = {"resource-parameter-in-authorization", "resource-parameter-in-token",
            "resource-parameter-valid-uri", "resource-parameter-consistency"}


def auth_scenario(name, expected, optional=()):
    """Runs auth/NAME; every check it wrote (INFO left out) is SUCCESS, and
    their ids are `expected` (and any of `optional`)."""
    got = {}
    for c in conformance_checks("auth/" + name, "test-tool", client_timeout=150):
        got.setdefault(c["id"], set()).add(c["status"])
    bad = {k: v for k, v in got.items() if v != {"SUCCESS"}}
    check(not bad, "not SUCCESS: %s (all: %s)" % (bad, sorted(got)))
    check(expected <= set(got) <= expected | set(optional),
          "missing %s, unexpected %s" % (sorted(expected - set(got)),
                                         sorted(set(got) - expected - set(optional))))


def test_conformance_auth_metadata_default():
    # PRM at the path-based well-known address (named in WWW-Authenticate;
    # the root one is a trap), RFC 8414 AS metadata, DCR, PKCE.
    auth_scenario("metadata-default", PRM | FLOW | DCR)


def test_conformance_auth_metadata_var1():
    # PRM not named in WWW-Authenticate (the path-based address found by
    # itself); OpenID configuration.
    auth_scenario("metadata-var1", PRM | FLOW | DCR)


def test_conformance_auth_metadata_var2():
    # PRM at the root address only (its resource the server's origin, a
    # prefix of the server's URL); the AS at a path (/tenant1, its metadata
    # by RFC 8414 path insertion; the root address is a trap).
    auth_scenario("metadata-var2", PRM | FLOW | DCR)


def test_conformance_auth_metadata_var3():
    # PRM at a custom address named in WWW-Authenticate; the AS at a path,
    # its OpenID configuration by path appending.
    auth_scenario("metadata-var3", PRM | FLOW | DCR)


def test_conformance_auth_backcompat_metadata():
    # 2025-03-26: no PRM; AS metadata at the server's origin.
    auth_scenario("2025-03-26-oauth-metadata-backcompat", FLOW | DCR)


def test_conformance_auth_backcompat_endpoints():
    # 2025-03-26: no metadata at all; /authorize, /token, /register at the
    # server's origin.
    auth_scenario("2025-03-26-oauth-endpoint-fallback",
                  {"client-registration", "authorization-request", "token-request",
                   "valid-bearer-token"})


def test_conformance_auth_basic_cimd():
    # The AS takes Client ID Metadata Documents: the configured document's
    # URL is the client_id (no registration).
    auth_scenario("basic-cimd", PRM | FLOW | {"cimd-client-id-used"})


def test_conformance_auth_client_credentials_basic():
    # "grant": "client_credentials" with the suite's client id and secret
    # (client_secret_basic): no browser, a token at once.
    auth_scenario("client-credentials-basic",
                  PRM | {"authorization-server-metadata", "token-request",
                         "client-credentials-basic-auth", "valid-bearer-token"})


def test_conformance_auth_client_credentials_jwt():
    # "grant": "client_credentials" with "private_key_file" (the suite's
    # ES256 key): the client authenticates with a signed assertion
    # (private_key_jwt, RFC 7523) the suite verifies (iss, sub, aud, the
    # signature).
    auth_scenario("client-credentials-jwt",
                  PRM | {"authorization-server-metadata", "token-request",
                         "client-credentials-jwt-verified", "valid-bearer-token"})


def test_conformance_auth_cross_app_access():
    # "grant": "id_jag" (SEP-990, enterprise-managed authorization): the
    # user's ID token (from the environment) exchanged at the identity
    # provider for an ID-JAG (RFC 8693), taken by the authorization server
    # as a JWT bearer grant with the client's secret (client_secret_basic).
    auth_scenario("cross-app-access-complete-flow",
                  PRM | {"authorization-server-metadata", "token-request",
                         "complete-flow-token-exchange", "complete-flow-jwt-bearer",
                         "valid-bearer-token"})


def test_conformance_auth_pre_registration():
    # A pre-registered client (no DCR at the AS), client_secret_basic.
    auth_scenario("pre-registration", PRM | FLOW | {"pre-registration-auth"})


def test_conformance_auth_resource_mismatch():
    # The PRM names another resource: mote refuses before the authorization
    # request (the scenario allows the client's error exit).
    auth_scenario("resource-mismatch", PRM | {"resource-mismatch-rejected"},
                  optional={"authorization-server-metadata"})


def test_conformance_auth_scope_from_www_authenticate():
    auth_scenario("scope-from-www-authenticate", PRM | FLOW | DCR |
                  {"scope-from-www-authenticate"})


def test_conformance_auth_scope_from_scopes_supported():
    auth_scenario("scope-from-scopes-supported", PRM | FLOW | DCR |
                  {"scope-from-scopes-supported"})


def test_conformance_auth_scope_omitted_when_undefined():
    auth_scenario("scope-omitted-when-undefined", PRM | FLOW | DCR |
                  {"scope-omitted-when-undefined"})


def test_conformance_auth_scope_step_up():
    # tools/call needs more scope than tools/list: the 403's message names
    # `mote mcp login c --scope "..."`, the user logs in again with it
    # (conformance_oauth.py) and runs again.
    auth_scenario("scope-step-up", PRM | FLOW | DCR |
                  {"scope-step-up-initial", "scope-step-up-escalation"})


def test_conformance_auth_scope_retry_limit():
    # Every authorized request gets 403 insufficient_scope: mote never loops
    # on its own (step-up is the user's new login); the bound of 3
    # authorizations the check counts is the simulated user's
    # (conformance_oauth.py: the first login and at most 2 more). The 403s
    # never verify the token: no valid-bearer-token check.
    auth_scenario("scope-retry-limit", PRM | (FLOW - {"valid-bearer-token"}) | DCR |
                  {"scope-retry-limit"})


def test_conformance_auth_token_endpoint_auth_basic():
    auth_scenario("token-endpoint-auth-basic", PRM | FLOW | DCR | RESOURCE |
                  {"token-endpoint-auth-method"})


def test_conformance_auth_token_endpoint_auth_post():
    auth_scenario("token-endpoint-auth-post", PRM | FLOW | DCR | RESOURCE |
                  {"token-endpoint-auth-method"})


def test_conformance_auth_token_endpoint_auth_none():
    auth_scenario("token-endpoint-auth-none", PRM | FLOW | DCR | RESOURCE |
                  {"token-endpoint-auth-method"})


def test_conformance_auth_offline_access_scope():
    # The AS lists offline_access: registration asks for the refresh_token
    # grant. Asking for offline_access itself is a MAY (INFO when not done,
    # SUCCESS when done).
    auth_scenario("offline-access-scope", PRM | FLOW | DCR |
                  {"sep-2207-client-metadata-grant-types"},
                  optional={"sep-2207-offline-access-requested"})


def test_conformance_auth_offline_access_not_supported():
    auth_scenario("offline-access-not-supported", PRM | FLOW | DCR |
                  {"sep-2207-offline-access-not-requested"})


def main():
    try:
        return run_all("mcp-oauth", globals())
    finally:
        for p in PROCS:
            p.kill()
            p.wait()


if __name__ == "__main__":
    sys.exit(main())
