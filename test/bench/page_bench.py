#!/usr/bin/env python3
"""page_bench.py MOTE PAGEDIR [RUNS] - mote serve's page (GET /) as a browser
sees it: its bytes (raw and as sent), the time to first paint that
headless Chromium measures (the Paint Timing API, on loopback, a fresh
navigation each time, logged in), and the RSS of `mote serve` with 5
pages open (each with a conversation's event stream) against the test
LLM server. MOTE is a tiny SERVE=1 build (make bench-page builds it).
Prints the rows of docs/BENCHMARKS.md's table.
"""
import gzip
import os
import re
import shutil
import statistics
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from harness import SERVERS, TMP, start_server  # noqa: E402
import test_page  # noqa: E402  (its browser: the same flags as the tests)

TOKEN = test_page.TOKEN


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        s = f.read()
    return (int(re.search(r"VmRSS:\s+(\d+)", s).group(1)),
            int(re.search(r"VmHWM:\s+(\d+)", s).group(1)))


def main():
    mote, pagedir = sys.argv[1], sys.argv[2]
    runs = int(sys.argv[3]) if len(sys.argv) > 3 else 21
    test_page.MOTE = os.path.abspath(mote)
    raw = os.path.getsize(os.path.join(pagedir, "page.html"))
    gz = os.path.getsize(os.path.join(pagedir, "page.html.gz"))
    port, _ = start_server([])
    s = test_page.Serve(port)
    req = urllib.request.Request(s.url, headers={"Accept-Encoding": "gzip"})
    with urllib.request.urlopen(req, timeout=10) as r:
        sent = r.read()
    assert gzip.decompress(sent) and len(sent) == gz, (len(sent), gz)
    idle = rss_kib(s.p.pid)
    b = test_page.Browser()
    try:
        b.login(s.url)
        ids = []
        for i in range(5):
            st, j = s.api("POST", "/v1/conversations")
            ids.append(j["id"])
        fcp, fp, got, dcl = [], [], [], []
        b.d.get(s.url + "#c=" + ids[0])
        for i in range(runs):
            b.d.refresh()  # a new document each time (logged in: the session's token)
            v = b.wait("var p = performance.getEntriesByType('paint'); "
                       "var n = performance.getEntriesByType('navigation')[0]; "
                       "var f = p.find(e => e.name === 'first-contentful-paint'); "
                       "var q = p.find(e => e.name === 'first-paint'); "
                       "return f && q && n && n.domContentLoadedEventEnd > 0 && "
                       "[f.startTime, q.startTime, n.responseEnd, n.domContentLoadedEventEnd]",
                       "the paint entries")
            fcp.append(v[0])
            fp.append(v[1])
            got.append(v[2])
            dcl.append(v[3])
        # five pages, each logged in with a conversation's stream open
        handles = []
        for i, cid in enumerate(ids):
            if i > 0:
                b.d.switch_to.new_window("tab")
                b.d.get(s.url)
                b.js("sessionStorage.setItem('mote.token', arguments[0])", TOKEN)
            b.d.get(s.url + "#c=" + cid)
            b.d.refresh()
            b.wait("return !document.getElementById('conv').hidden && "
                   "document.getElementById('conv-state').textContent === 'idle'",
                   "page %d with its conversation" % (i + 1))
            handles.append(b.d.current_window_handle)
        st, h = s.api("GET", "/v1/health")
        time.sleep(1)  # (what the streams hold settles: RSS is read, not timed)
        five = rss_kib(s.p.pid)
        conns = h["connections"]["open"]
    finally:
        b.quit()
        s.stop()
    print("| page's HTML (CSS and JavaScript inside) | %s bytes | `scripts/page.sh` |"
          % format(raw, ","))
    print("| as sent and in the binary (gzip -9) | %s bytes | same |" % format(gz, ","))
    print("| the page received (responseEnd), median of %d loads (min-max) | %.1f ms (%.1f-%.1f) "
          "| Navigation Timing |" % (runs, statistics.median(got), min(got), max(got)))
    print("| its script run (DOMContentLoaded), median (min-max) | %.1f ms (%.1f-%.1f) | same |"
          % (statistics.median(dcl), min(dcl), max(dcl)))
    print("| first paint, median of %d loads (min-max) | %.1f ms (%.1f-%.1f) | Paint Timing API |"
          % (runs, statistics.median(fp), min(fp), max(fp)))
    print("| first contentful paint, median of %d loads (min-max) | %.1f ms (%.1f-%.1f) | same |"
          % (runs, statistics.median(fcp), min(fcp), max(fcp)))
    print("| RSS of mote serve, idle (peak) | %d KiB (%d) | /proc/PID/status |" % idle)
    print("| RSS of mote serve, 5 pages open (%d connections) (peak) | %d KiB (%d) | same |"
          % ((conns,) + five))


if __name__ == "__main__":
    try:
        main()
    finally:
        for p in SERVERS:
            p.kill()
            p.wait()
        shutil.rmtree(TMP, ignore_errors=True)
