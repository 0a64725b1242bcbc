#!/usr/bin/env python3
"""doc_sizes.py BUILDDIR [--write] - the struct sizes the docs quote, kept
equal to what `make size` measures.

A figure in docs/*.md or README.md is marked with the struct it is the
size of: `<!--size:session-->808,800` (the names scripts/sizeof.sh knows:
session, conv, stream, tool_run, jbuf, mcp, serve, serve_conn, loop, ...),
or of mote serve's page (page: its HTML, page_gz: compressed, as in the
binary; BUILDDIR/page/ from scripts/page.sh).
Without --write it fails, naming each figure that differs from
scripts/sizeof.sh's for the default configuration and this compiler (make
test-docs, part of make check); with --write it rewrites them (make
doc-sizes).
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARK = re.compile(r"<!--size:([a-z_]+)-->([0-9][0-9,]*)")


def measured(build):
    env = dict(os.environ, RAW="1", CC=os.environ.get("CC", "gcc"),
               NM=os.environ.get("NM", "nm"),
               FLAGS="-std=c11 -Iinclude -DJSMN_STATIC -DJSMN_STRICT -DJSMN_PARENT_LINKS -Os")
    out = subprocess.run(["sh", "scripts/sizeof.sh", build], cwd=ROOT, env=env, check=True,
                         capture_output=True, text=True).stdout
    sizes = {n: int(v) for n, v in (line.split() for line in out.splitlines() if line.strip())}
    # mote serve's page as scripts/page.sh made it (make builds it first)
    for name, f in (("page", "page.html"), ("page_gz", "page.html.gz")):
        path = os.path.join(ROOT, build, "page", f)
        if os.path.exists(path):
            sizes[name] = os.path.getsize(path)
    return sizes


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    write = "--write" in sys.argv[2:]
    sizes = measured(build)
    docs = [os.path.join(ROOT, "README.md")] + sorted(
        os.path.join(ROOT, "docs", f) for f in os.listdir(os.path.join(ROOT, "docs"))
        if f.endswith(".md"))
    bad, marks = [], 0
    for path in docs:
        with open(path) as f:
            text = f.read()

        def fix(m):
            nonlocal marks
            marks += 1
            name, shown = m.group(1), m.group(2)
            if name not in sizes:
                bad.append("%s: no struct '%s' in scripts/sizeof.sh" % (path, name))
                return m.group(0)
            want = "{:,}".format(sizes[name])
            if shown != want:
                bad.append("%s: %s is %s bytes, the doc says %s" %
                           (os.path.relpath(path, ROOT), name, want, shown))
            return "<!--size:%s-->%s" % (name, want)
        new = MARK.sub(fix, text)
        if write and new != text:
            with open(path, "w") as f:
                f.write(new)
    if write:
        print("doc-sizes: %d figures, %d rewritten" % (marks, len(bad)))
        return 0
    for b in bad:
        print("test-docs: " + b + " (make doc-sizes rewrites them)")
    print("test-docs: %d passed, %d failed" % (marks - len(bad), len(bad)))
    return 1 if bad or marks == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
