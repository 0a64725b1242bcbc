#!/usr/bin/env python3
"""mote serve's page (GET /) in a real browser: Debian's headless Chromium
driven through python3-selenium against a real `mote serve` on loopback
TCP (with its token) and the local test LLM server. Logging in, a
streamed answer, approving (and "always"), denying, cancelling, a reload
in the middle of an answer, HTML and scripts in answers and tool output
shown as text with nothing run (the console and the DOM say so), a
phone's width, the status line; and without a browser: the page's
headers and hashes, the token, the Origin check, and a build without
the page (BUILDDIR/nopage/mote, linked as make PAGE=0 links it).

Skipped (with the reason) only where Chromium cannot run; never when
MOTE_CI=1 (.ci/run sets it): there a missing browser fails.

    test_page.py BUILDDIR
"""
import gzip
import hashlib
import base64
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from harness import ROOT, TMP, Skip, check, requests_in, run_all, start_server, wait_for
from harness import fake_mcp, mcp_config

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
MOTE = os.path.join(BUILD, "mote")
KEY = "sk-ant-TEST-SECRET-page"
TOKEN = "page-test-token-0123456789abcdef"
CI = os.environ.get("MOTE_CI") == "1"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
DRIVER = shutil.which("chromedriver") or "/usr/bin/chromedriver"
_webdriver = None


def cannot(why):
    """Chromium cannot run here: skipped, but a failure on CI."""
    if CI:
        raise AssertionError(why + " (MOTE_CI=1: the browser tests must run; make deps)")
    raise Skip(why)


def webdriver():
    global _webdriver
    if _webdriver is None:
        try:
            import selenium.webdriver  # noqa: F401
        except ImportError:
            # Debian's python3-selenium, for a python3 that is not Debian's
            sys.path.append("/usr/lib/python3/dist-packages")
            try:
                import selenium.webdriver  # noqa: F401
            except ImportError:
                cannot("no python3-selenium (make deps installs it)")
        import selenium.webdriver
        _webdriver = selenium.webdriver
    if not (os.access(CHROMIUM, os.X_OK) and os.access(DRIVER, os.X_OK)):
        cannot("no chromium or chromedriver (make deps installs them)")
    return _webdriver


class Serve:
    """`mote serve` on the Unix socket and loopback TCP (port 0) with TOKEN."""

    def __init__(self, llm_port, args=(), mote=None):
        self.state = tempfile.mkdtemp(prefix="serve-", dir=TMP)
        self.errpath = os.path.join(self.state, "serve.err")
        e = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        e.update(ANTHROPIC_API_KEY=KEY, MOTE_BACKOFF_MS="50", MOTE_SERVE_TOKEN=TOKEN)
        self.err = open(self.errpath, "w")
        self.p = subprocess.Popen([mote or MOTE, "serve", "--state-dir", self.state, "--base-url",
                                   "http://127.0.0.1:%d" % llm_port, "--listen", "127.0.0.1:0"] +
                                  list(args), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=self.err, env=e)
        m = wait_for(lambda: re.search(r"listening on .* 127\.0\.0\.1:(\d+)", self.log()) or
                     self.p.poll() is not None, "mote serve to listen", 20)
        check(self.p.poll() is None, "mote serve exited: %s" % self.log())
        self.port = int(m.group(1))
        self.url = "http://127.0.0.1:%d/" % self.port

    def log(self):
        with open(self.errpath) as f:
            return f.read()

    def req(self, method, path, body=None, headers=None, token=TOKEN):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        h = dict(headers or {})
        if token:
            h["Authorization"] = "Bearer " + token
        c.request(method, path, body=json.dumps(body) if isinstance(body, dict) else body,
                  headers=h)
        r = c.getresponse()
        data = r.read()
        c.close()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, data

    def api(self, method, path, body=None):
        st, _, data = self.req(method, path, body)
        return st, json.loads(data) if data else None

    def journal(self, cid):
        with open(os.path.join(self.state, "conversations", cid + ".jsonl")) as f:
            return [json.loads(l) for l in f if l.strip()]

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        try:
            rc = self.p.wait(40)
        finally:
            self.err.close()
        check(rc == 0, "mote serve exited %s: %s" % (rc, self.log()[-2000:]))


class Browser:
    """Headless Chromium (a fresh profile each time) on one page."""

    def __init__(self, width=1100, height=800):
        wd = webdriver()
        o = wd.ChromeOptions()
        self.profile = tempfile.mkdtemp(prefix="chromium-", dir=TMP)
        for a in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                  "--no-first-run", "--disable-background-networking",
                  "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
                  "--user-data-dir=" + self.profile, "--window-size=%d,%d" % (width, height)):
            o.add_argument(a)
        o.binary_location = CHROMIUM
        o.set_capability("goog:loggingPrefs", {"browser": "ALL"})
        try:
            self.d = wd.Chrome(service=wd.chrome.service.Service(DRIVER), options=o)
        except Exception as e:  # noqa: BLE001 - the browser cannot start here
            cannot("headless Chromium does not start here: %s" % str(e).splitlines()[0])
        self.d.set_script_timeout(30)
        if width < 500:  # narrower than a desktop window goes: a phone's screen
            self.d.execute_cdp_cmd("Emulation.setDeviceMetricsOverride", {
                "width": width, "height": height, "deviceScaleFactor": 2, "mobile": True})
        self.logs = []

    def js(self, script, *args):
        return self.d.execute_script(script, *args)

    def text(self, sel):
        return self.js("var e = document.querySelector(arguments[0]); return e ? e.innerText : null",
                       sel)

    def wait(self, script, what, timeout=30, *args):
        return wait_for(lambda: self.js(script, *args), what, timeout)

    def console(self):
        self.logs += self.d.get_log("browser")
        return self.logs

    def login(self, url, token=TOKEN):
        self.d.get(url)
        self.wait("return !document.getElementById('login').hidden", "the login form")
        self.d.find_element("id", "token").send_keys(token + "\n")
        self.wait("return !document.getElementById('app').hidden", "the page after logging in")

    def new_conversation(self):
        before = self.js("return location.hash")
        self.d.find_element("id", "new").click()
        self.wait("return location.hash.startsWith('#c=') && location.hash !== arguments[0]",
                  "a new conversation", 30, before)
        return self.js("return location.hash.slice(3)")

    def say(self, text):
        self.wait("return !document.getElementById('send').disabled", "Send to be enabled")
        box = self.d.find_element("id", "msg")
        box.clear()
        box.send_keys(text)
        self.d.find_element("id", "send").click()

    def shot(self, path):
        check(self.d.save_screenshot(path), "the screenshot was written")

    def quit(self):
        self.d.quit()


# One browser of the usual size serves the tests one after another (a
# Chromium's start is most of a test's CPU): each test's mote serve has a
# port of its own, so its page is another origin, with a storage of its
# own; between tests the browser shows a blank page and its console is
# emptied. A browser in another state (a failed test) is replaced.
_shared = None


def shared_browser():
    global _shared
    if _shared is not None:
        try:
            _shared.d.get("about:blank")
            _shared.d.get_log("browser")
            _shared.logs = []
            return _shared
        except Exception:  # noqa: BLE001 - not usable: a new one
            quit_shared()
    _shared = Browser()
    return _shared


def quit_shared():
    global _shared
    if _shared is not None:
        try:
            _shared.quit()
        except Exception:  # noqa: BLE001 - it is gone already
            pass
        _shared = None


def session(script, args=(), width=1100, height=800):
    port, log = start_server(script)
    s = Serve(port, args)
    try:
        b = shared_browser() if (width, height) == (1100, 800) else Browser(width, height)
    except BaseException:
        s.stop()
        raise
    return s, b, log


def end(s, b):
    try:
        if b is _shared:
            try:
                b.d.get("about:blank")  # the page lets go of mote serve
            except Exception:  # noqa: BLE001 - replaced at the next test
                quit_shared()
        else:
            b.quit()
    finally:
        s.stop()


def severe(b):
    """Console errors, but the 401 of the first look without a token."""
    return [e for e in b.console() if e["level"] == "SEVERE" and
            not (e.get("source") == "network" and "/v1/health" in e["message"] and
                 "401" in e["message"])]


# ---- without a browser: what the page is and what guards the API ----------------

def test_the_page_is_served_whole_with_strict_headers_and_no_token():
    port, _ = start_server([])
    s = Serve(port)
    try:
        st, h, body = s.req("GET", "/", headers={"Accept-Encoding": "gzip, deflate"}, token=None)
        check(st == 200 and h["content-encoding"] == "gzip" and
              h["content-type"].startswith("text/html"), (st, h))
        html = gzip.decompress(body).decode()
        csp = h["content-security-policy"]
        for want in ("default-src 'none'", "frame-ancestors 'none'", "connect-src 'self'",
                     "base-uri 'none'", "form-action 'none'", "require-trusted-types-for 'script'"):
            check(want in csp, (want, csp))
        check("unsafe" not in csp, csp)
        check(h["x-content-type-options"] == "nosniff" and h["referrer-policy"] == "no-referrer" and
              h["x-frame-options"] == "DENY" and h["cache-control"] == "no-store", h)
        # the one inline script and style are allowed by their hashes, nothing else
        for tag, src in (("script", "script-src"), ("style", "style-src")):
            blocks = re.findall(r"<%s>(.*?)</%s>" % (tag, tag), html, re.S)
            check(len(blocks) == 1, "one <%s>: %d" % (tag, len(blocks)))
            digest = base64.b64encode(hashlib.sha256(blocks[0].encode()).digest()).decode()
            check("%s 'sha256-%s'" % (src, digest) in csp, (tag, digest, csp))
        # self-contained: nothing from elsewhere, no handler attributes
        check(not re.search(r"(src|href)=\"(?!data:)", html), "no outside asset")
        check(not re.search(r"\son[a-z]+=", html), "no inline handler")
        js = re.findall(r"<script>(.*?)</script>", html, re.S)[0]
        for bad in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(",
                    "new Function"):
            check(bad not in js, "the page's script never uses %s" % bad)
        check(TOKEN not in html, "no token in the page")
        st, h, body = s.req("HEAD", "/", headers={"Accept-Encoding": "gzip"}, token=None)
        check(st == 200 and body == b"" and "content-security-policy" in h, (st, h))
        st, h, body = s.req("GET", "/", token=None)  # no gzip: said, not garbled
        check(st == 406 and json.loads(body)["error"] == "not_acceptable", (st, body))
        st, h, body = s.req("POST", "/", body="{}", token=None)
        check(st == 405 and "GET" in h["allow"], (st, h))
        # every API call needs the token, the page's too; one guess per connection
        st, h, body = s.req("GET", "/v1/health", token=None)
        check(st == 401 and h.get("connection") == "close", (st, h))
        st, h, body = s.req("GET", "/v1/conversations", token="x" * 32)
        check(st == 401, (st, body))
        st, h, body = s.req("GET", "/v1/health", headers={"Origin": s.url.rstrip("/")})
        check(st == 200 and json.loads(body)["model"], (st, body))
        check(h["x-content-type-options"] == "nosniff", h)
        # a page of another site is refused, whatever token it holds
        for origin in ("http://evil.example", "null", "http://127.0.0.1:1",
                       "http://127.0.0.1:%d.evil" % s.port, "file://"):
            st, h, body = s.req("POST", "/v1/conversations", body="{}",
                                headers={"Origin": origin, "Content-Type": "application/json"})
            check(st == 403 and json.loads(body)["error"] == "cross_origin", (origin, st, body))
        st, h, body = s.req("GET", "/v1/conversations", headers={"Origin": "http://evil.example"},
                            token=None)
        check(st == 403, (st, body))
        check(not os.listdir(os.path.join(s.state, "conversations")) if
              os.path.isdir(os.path.join(s.state, "conversations")) else True,
              "nothing was created by the refused requests")
    finally:
        s.stop()


def test_a_build_without_the_page_answers_404_and_keeps_the_api():
    # BUILD/nopage/mote is linked as make PAGE=0 links it (page_none.o)
    nopage = os.path.join(BUILD, "nopage", "mote")
    check(os.access(nopage, os.X_OK), "%s: make test-page links it" % nopage)
    port, _ = start_server([])
    s = Serve(port, mote=nopage)
    try:
        st, h, body = s.req("GET", "/", headers={"Accept-Encoding": "gzip"}, token=None)
        check(st == 404 and b"<html" not in body.lower(), (st, body[:200]))
        check("content-security-policy" not in h, h)
        st, h, body = s.req("GET", "/v1/health")
        check(st == 200 and json.loads(body)["model"], (st, body))
        st, h, body = s.req("GET", "/v1/health", token=None)
        check(st == 401, (st, body))
    finally:
        s.stop()
    check(os.path.getsize(nopage) < os.path.getsize(MOTE), "the page's bytes are left out")


# ---- in the browser -------------------------------------------------------------

def test_login_keeps_the_token_in_the_session_never_in_a_url():
    s, b, _ = session([])
    try:
        b.d.get(s.url)
        b.wait("return !document.getElementById('login').hidden", "the login form")
        check(b.js("return document.getElementById('app').hidden"), "nothing shown before")
        b.d.find_element("id", "token").send_keys("not-the-token-0123456789\n")
        b.wait("return document.getElementById('login-err').textContent.length > 0",
               "the refusal")
        check(b.js("return sessionStorage.length") == 0, "a wrong token is not kept")
        b.d.find_element("id", "token").send_keys(TOKEN + "\n")
        b.wait("return !document.getElementById('app').hidden", "the page after logging in")
        b.wait("return sessionStorage.getItem('mote.token') === arguments[0]", "kept for the tab",
               30, TOKEN)
        check(b.js("return localStorage.length") == 0 and b.js("return document.cookie") == "",
              "nowhere else")
        cid = b.new_conversation()
        b.say("hello")
        b.wait("return document.querySelectorAll('#log .b.mote').length === 1", "the answer")
        # a reload keeps the session; the URL never holds the token
        b.d.refresh()
        b.wait("return !document.getElementById('app').hidden && "
               "document.querySelectorAll('#log .b.user').length === 1", "the page again")
        urls = b.js("return [location.href].concat(performance.getEntriesByType('resource')"
                    ".map(e => e.name))")
        check(all(TOKEN not in u for u in urls) and cid in urls[0], urls)
        b.d.find_element("id", "logout").click()
        b.wait("return !document.getElementById('login').hidden", "logged out")
        check(b.js("return sessionStorage.length") == 0, "the token is gone")
        check(severe(b) == [], severe(b))
        # another browser starts logged out
        b2 = Browser()
        try:
            b2.d.get(s.url)
            b2.wait("return !document.getElementById('login').hidden", "the login form")
        finally:
            b2.quit()
    finally:
        end(s, b)


def test_a_message_streams_its_answer():
    words = " ".join("word%02d" % i for i in range(40))
    s, b, _ = session([{"text": words, "delay_ms": 100}])
    try:
        b.login(s.url)
        b.new_conversation()
        b.say("tell me forty words")
        # seen while it streams (a preview), then the answer whole
        part = b.wait("var l = document.querySelector('#log .b.live'); "
                      "return l && l.textContent.includes('word05') && "
                      "!l.textContent.includes('word39') && l.textContent",
                      "the answer while it streams")
        check("word00" in part, part)
        check(not b.js("return document.getElementById('stop').hidden"), "Stop while it runs")
        b.wait("var m = document.querySelectorAll('#log .b.mote:not(.live)'); "
               "return m.length === 1 && m[0].textContent === arguments[0]",
               "the whole answer", 30, words)
        b.wait("return document.getElementById('stop').hidden", "Stop gone after the turn")
        check(b.text("#log .b.user") == "tell me forty words", b.text("#log .b.user"))
        check(b.js("return document.querySelectorAll('#log .b.live').length") == 0, "no preview")
        check(severe(b) == [], severe(b))
    finally:
        end(s, b)


def ask_shown(b):
    b.wait("var a = document.getElementById('ask'); return !a.hidden && "
           "document.querySelector('#ask-display .k-tool')", "the approval", 30)
    return b.text("#ask-display")


def test_approving_a_call_shows_its_result_and_always_asks_no_more():
    d = tempfile.mkdtemp(dir=TMP)
    flag = os.path.join(d, "ran")
    s, b, log = session([{"tool": "shell", "input": {"command": "echo APPROVED-$((6*7)) && touch " +
                                                                 flag}},
                         {"tool": "shell", "input": {"command": "echo AGAIN-$((7*7))"}},
                         {"text": "both ran"}], args=["--approval", "ask"])
    try:
        b.login(s.url)
        cid = b.new_conversation()
        b.say("run it")
        shown = ask_shown(b)
        # exactly as the library draws it (the CLI's text)
        st, _, text = s.req("GET", "/v1/conversations/%s/approval?format=text" % cid)
        check(st == 200 and shown.strip() == text.decode().strip(), (shown, text))
        check("* shell" in shown and "| echo APPROVED-$((6*7)) && touch" in shown, shown)
        check(not os.path.exists(flag), "nothing runs before the answer")
        # the default deadline (10 min), told in minutes
        timer = b.text("#ask-timer")
        check(re.fullmatch(r"\(denied by itself in (9|10) min\)", timer), timer)
        b.d.find_element("id", "ask-always").click()
        b.wait("return [...document.querySelectorAll('#log .card pre.out')]"
               ".some(p => p.textContent.includes('APPROVED-42'))", "the call's result")
        b.wait("return [...document.querySelectorAll('#log .card pre.out')]"
               ".some(p => p.textContent.includes('AGAIN-49'))", "the second call's result")
        b.wait("return [...document.querySelectorAll('#log .b.mote')]"
               ".some(e => e.textContent === 'both ran')", "the answer after the calls")
        check(os.path.exists(flag), "the approved call ran")
        check(b.js("return document.getElementById('ask').hidden"), "no question left")
        recs = s.journal(cid)
        check([r["tool"] for r in recs if r["t"] == "allow"] == ["shell"], "always journaled")
        check(sum(1 for r in recs if r["t"] == "tool_result") == 2, recs)
        check(severe(b) == [], severe(b))
    finally:
        end(s, b)


def test_an_mcp_servers_question_is_asked_and_answered_on_the_page():
    cfg = mcp_config({"f": fake_mcp("--features")})
    s, b, log = session([{"tool": "f__ask", "input": {"mode": "flat"}}, {"text": "asked"}],
                        args=["--mcp-config", cfg, "--allow", "f__ask"])
    try:
        wait_for(lambda: "mcp f: ready" in s.log(), "the MCP server ready")
        b.login(s.url)
        cid = b.new_conversation()
        b.say("ask me")
        b.wait("return !document.getElementById('q').hidden && "
               "document.querySelectorAll('#q-fields .q-f').length === 4", "the question's form")
        check(b.text("#q-title") == "The MCP server f asks:" and
              b.text("#q-msg") == "Tell me about you (flat)", b.text("#q"))
        timer = b.text("#q-timer")
        check(re.fullmatch(r"\(declined by itself in (9|10) min\)", timer), timer)
        # a required field left empty: the browser does not send it
        b.d.find_element("id", "q-send").click()
        check(not b.js("return document.getElementById('q').hidden"), "still asked")
        b.d.find_element("id", "q-in-0").send_keys("Bo <b>x</b>")
        b.js("var s = document.getElementById('q-in-3'); s.value = 'green';")
        b.d.find_element("id", "q-send").click()
        b.wait("return document.getElementById('q').hidden", "the form closed after the answer")
        b.wait("return [...document.querySelectorAll('#log .b.mote')]"
               ".some(e => e.textContent === 'asked')", "the answer after the question")
        res = [r["text"] for r in s.journal(cid) if r["t"] == "tool_result"]
        check(res == ['elicited: {"action": "accept", "content": {"color": "green", "name": '
                      '"Bo <b>x</b>"}}'], res)
        check(severe(b) == [], severe(b))
    finally:
        end(s, b)


def test_denying_a_call_runs_nothing_and_the_model_reads_why():
    d = tempfile.mkdtemp(dir=TMP)
    target = os.path.join(d, "never.txt")
    s, b, log = session([{"tool": "write_file", "input": {"path": target, "content": "x\n"}},
                         {"text": "understood"}],
                        args=["--approval", "ask", "--approval-timeout", "100s"])
    try:
        b.login(s.url)
        b.new_conversation()
        b.say("write it")
        shown = ask_shown(b)
        # under two minutes the deadline is told in seconds, and counts down
        first = b.text("#ask-timer")
        m = re.fullmatch(r"\(denied by itself in (\d+) s\)", first)
        check(m and 0 < int(m.group(1)) <= 100, first)
        b.wait("var t = document.getElementById('ask-timer').textContent; "
               "return t !== arguments[0] && /^\\(denied by itself in \\d+ s\\)$/.test(t)",
               "the countdown's next second", 30, first)
        check("path: %s (a new file)" % target in shown and "content: 2 bytes, 1 line" in shown,
              shown)
        b.d.find_element("id", "ask-reason").send_keys("not on this device")
        b.d.find_element("id", "ask-no").click()
        b.wait("return [...document.querySelectorAll('#log .b.mote')]"
               ".some(e => e.textContent === 'understood')", "the answer after the refusal")
        b.wait("return [...document.querySelectorAll('#log .card pre.bad')].length === 1",
               "the refusal as the call's result")
        check(not os.path.exists(target), "a denied call never runs")
        body = json.dumps(requests_in(log)[-1]["body"])
        check("not on this device" in body, "the model reads why")
        check(severe(b) == [], severe(b))
    finally:
        end(s, b)


def test_stop_cancels_the_turn():
    words = " ".join("slow%03d" % i for i in range(200))
    s, b, _ = session([{"text": words, "delay_ms": 150}])
    try:
        b.login(s.url)
        cid = b.new_conversation()
        b.say("go slowly")
        b.wait("var l = document.querySelector('#log .b.live'); "
               "return l && l.textContent.includes('slow003')", "the answer streaming")
        b.d.find_element("id", "stop").click()
        b.wait("return document.getElementById('stop').hidden && "
               "document.getElementById('conv-state').textContent === 'idle'", "the turn ended")
        b.wait("return document.querySelector('#log .b.mote .dim') && "
               "document.querySelector('#log .b.mote .dim').textContent.includes('interrupted')",
               "the answer marked interrupted")
        recs = s.journal(cid)
        check(any(r["t"] == "assistant" and r.get("interrupted") for r in recs), recs[-3:])
        check(not b.js("return document.getElementById('send').disabled"), "Send again")
        check(severe(b) == [], severe(b))
    finally:
        end(s, b)


def test_a_reload_in_the_middle_of_an_answer_goes_on():
    words = " ".join("long%02d" % i for i in range(60))
    s, b, _ = session([{"text": words, "delay_ms": 100}])
    try:
        b.login(s.url)
        b.new_conversation()
        b.say("a long one")
        b.wait("var l = document.querySelector('#log .b.live'); "
               "return l && l.textContent.includes('long05')", "the answer streaming")
        b.d.refresh()
        b.wait("return !document.getElementById('app').hidden", "the page again")
        # the conversation is open again, its history there, the answer goes on
        b.wait("return document.querySelectorAll('#log .b.user').length === 1", "the history")
        b.wait("var m = document.querySelectorAll('#log .b.mote:not(.live)'); "
               "return m.length === 1 && m[0].textContent === arguments[0]",
               "the whole answer after the reload", 30, words)
        check(b.js("return document.querySelectorAll('#log .b.user').length") == 1, "once")
        check(severe(b) == [], severe(b))
    finally:
        end(s, b)


HOSTILE = ('<script>document.title="PWNED";console.error("PWNED-script")</script>'
           '<img src=x onerror="document.title=\'PWNED\';console.error(\'PWNED-img\')">'
           '<b id="injected">bold?</b>')


def test_html_from_the_model_and_tools_is_shown_as_text_and_nothing_runs():
    s, b, _ = session([{"tool": "shell", "input": {"command": "printf '%s' '" +
                                                   HOSTILE.replace("'", "") + "'"}},
                       {"text": "Here: " + HOSTILE}], args=["--approval", "ask"])
    try:
        b.login(s.url)
        b.new_conversation()
        b.say(HOSTILE)
        shown = ask_shown(b)
        check("<script>" in shown and "<img src=x" in shown, shown)
        b.d.find_element("id", "ask-yes").click()
        b.wait("return [...document.querySelectorAll('#log .b.mote')]"
               ".some(e => e.textContent === arguments[0])", "the answer as text", 30,
               "Here: " + HOSTILE)
        check(b.js("return [...document.querySelectorAll('#log .card pre.out')]"
                   ".some(p => p.textContent.includes('<img src=x onerror='))"),
              "the tool's output as text")
        check(b.js("return document.querySelectorAll('#log .b.user')[0].textContent") == HOSTILE,
              "the user's message as text")
        # nothing of it became an element, nothing ran
        check(b.js("return document.querySelectorAll('img, #injected, b#injected').length") == 0,
              "no element from the text")
        check(b.js("return document.scripts.length") == 1, "the page's one script")
        check(b.js("return document.title") == "mote", b.js("return document.title"))
        logs = b.console()
        check(not [e for e in logs if "PWNED" in e["message"]], logs)
        check(not [e for e in logs if "Content Security Policy" in e["message"] or
                   "Refused" in e["message"]], logs)
        check(severe(b) == [], severe(b))
        # and the page could not be made to: HTML assignment is refused (Trusted Types)
        err = b.js("try { document.body.insertAdjacentHTML('beforeend', '<i>x</i>'); "
                   "return 'allowed' } catch (e) { return e.name }")
        check(err == "TypeError", "innerHTML-like calls throw under the page's CSP: %r" % err)
    finally:
        end(s, b)


def test_a_phone_width_shows_one_column():
    s, b, _ = session([{"tool": "shell", "input": {"command": "echo " + "x" * 300}},
                       {"text": "ok"}], args=["--approval", "ask"], width=390, height=844)
    try:
        b.login(s.url)
        wide = "return document.documentElement.scrollWidth <= window.innerWidth"
        check(b.js("return window.innerWidth") <= 400, b.js("return window.innerWidth"))
        check(b.js(wide), "no sideways scrolling")
        check(b.js("return getComputedStyle(document.getElementById('side')).display") != "none",
              "the list first")
        b.new_conversation()
        check(b.js("return getComputedStyle(document.getElementById('side')).display") == "none",
              "the conversation alone")
        check(b.js("return getComputedStyle(document.getElementById('back')).display") != "none",
              "a way back")
        b.say("go")
        ask_shown(b)
        check(b.js(wide), "no sideways scrolling with the question")
        check(b.js("var r = document.getElementById('ask-yes').getBoundingClientRect(); "
                   "return r.width > 0 && r.right <= window.innerWidth"), "Approve on screen")
        b.d.find_element("id", "back").click()
        b.wait("return getComputedStyle(document.getElementById('side')).display !== 'none'",
               "the list again")
    finally:
        end(s, b)


def test_the_status_shows_the_model_and_the_budget():
    s, b, _ = session([{"text": "one"}], args=["--budget-requests-day", "100"])
    try:
        b.login(s.url)
        status = b.text("#status")
        check("claude" in status and "mote " in status and "limits: requests_day 100" in status,
              status)
        b.new_conversation()
        b.say("count this")
        b.wait("return document.getElementById('status').textContent.includes('today 1 request')",
               "the request counted")
        b.wait("return document.querySelectorAll('#convs li').length === 1 && "
               "document.querySelector('#convs li small').textContent === 'count this'",
               "the conversation listed")
    finally:
        end(s, b)


def test_the_schedules_and_what_they_did_are_shown():
    # what ran while nobody watched: a single time a few seconds ahead, its
    # conversation in the list with its answer; a daily one with its next run
    import datetime
    s, b, _ = session([{"text": "the disk is fine"}])
    try:
        at = (datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=4))
        st, j = s.api("PUT", "/v1/schedules/check", {
            "prompt": "check the disk", "at": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "conversation": "ops"})
        check(st == 201, (st, j))
        st, j = s.api("PUT", "/v1/schedules/morning", {"prompt": "good morning",
                                                        "cron": "0 6 * * *"})
        check(st == 201, (st, j))
        b.login(s.url)
        b.wait("return [...document.querySelectorAll('#sched-list li')]"
               ".some(l => l.textContent.startsWith('morning') && l.textContent.includes('next'))",
               "the daily schedule with its next run")
        # the single time runs by itself; the page's refresh shows it
        wait_for(lambda: (s.api("GET", "/v1/schedules/check")[1] or {}).get("last"),
                 "the schedule to run", 60)
        b.d.refresh()
        b.wait("return [...document.querySelectorAll('#sched-list li')]"
               ".some(l => l.textContent.startsWith('check') && l.textContent.includes('last'))",
               "the run in the list")
        b.wait("return [...document.querySelectorAll('#convs li')]"
               ".some(l => l.dataset.id === 'ops')", "its conversation")
        b.d.find_element("css selector", "#convs li[data-id='ops']").click()
        b.wait("return [...document.querySelectorAll('#log .b.user')]"
               ".some(e => e.textContent === 'check the disk') && "
               "[...document.querySelectorAll('#log .b.mote')]"
               ".some(e => e.textContent === 'the disk is fine')", "what it said and answered")
        check(severe(b) == [], severe(b))
    finally:
        end(s, b)


def test_screenshot_of_a_pending_approval():
    # make page-shot writes docs/page.png (MOTE_PAGE_SHOT); make check writes
    # it where the test's files go
    path = os.environ.get("MOTE_PAGE_SHOT") or os.path.join(TMP, "page.png")
    content = "".join("line %d of the new motd\n" % i for i in range(1, 8))
    s, b, _ = session([{"text": "I will put the new greeting in place."},
                       {"tool": "write_file", "input": {"path": "/tmp/motd.new",
                                                         "content": content}},
                       {"text": "done"}], args=["--approval", "ask"], width=900, height=720)
    try:
        b.login(s.url)
        b.new_conversation()
        b.say("Greet me")
        b.wait("return [...document.querySelectorAll('#log .b.mote')].length === 1",
               "the first answer")
        b.say("Now write /tmp/motd.new with a greeting")
        ask_shown(b)
        b.js("document.getElementById('msg').blur()")
        b.shot(path)
        with open(path, "rb") as f:
            png = f.read()
        check(png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10000, "a PNG of the page")
    finally:
        end(s, b)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    try:
        rc = run_all("page", globals())
    finally:
        quit_shared()
    sys.exit(rc)
