#!/usr/bin/env python3
"""doc_sizes.py BUILDDIR [--write | --figure NAME VALUE] - the sizes and
memory figures the docs quote, kept equal to what the build measures.

Two kinds of marked figures in README.md and docs/*.md:

- A struct's size, marked `<!--size:session-->808,800` (the names
  scripts/sizeof.sh knows: session, conv, stream, tool_run, jbuf, mcp,
  serve, serve_conn, loop, ...), measured for the default configuration
  with this compiler; or of mote serve's page (page: its HTML, page_gz:
  compressed, as in the binary; BUILDDIR/page/ from scripts/page.sh).
  `doc_sizes.py BUILDDIR` (make test-docs, in make check) fails naming
  each one that differs.
- A figure of a build that make check does not make (the tiny and
  cross builds, the Cortex-M4 core, a TLS turn's RSS), marked
  `<!--fig:tiny-x86_64-->391,912`. The CI step that makes it records it
  and checks the docs against it: `doc_sizes.py BUILDDIR --figure NAME
  VALUE` writes BUILDDIR/figures/NAME and fails when a mark of NAME
  differs from VALUE by more than its tolerance (FIGURES below: a
  figure quoted in the docs may lag a small change, never a large one).
  make test-docs only checks that each mark names a known figure.

`--write` (make doc-sizes) rewrites both kinds: the structs measured now,
the figures from BUILDDIR/figures/ (make doc-sizes makes them first, with
DOC_FIGURES=record: the steps record without failing on the old text).
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NUM = r"([0-9]{1,3}(?:,[0-9]{3})*)"  # 1,234,567 (a comma after it is the text's)
MARK = re.compile(r"<!--size:([a-z_]+)-->" + NUM)
FIG = re.compile(r"<!--fig:([a-z0-9_-]+)-->" + NUM)
# Each figure: what it is, the step that measures it, and how far a doc's
# figure may be from the measured one (a fraction of it).
FIGURES = {
    "tiny-x86_64": ("bytes, make tiny's stripped mote (x86_64)", "make test-tiny", 0.02),
    "tiny-aarch64": ("bytes, make tiny CROSS_COMPILE=aarch64-linux-gnu-", "make check-cross", 0.02),
    "tiny-armhf": ("bytes, make tiny CROSS_COMPILE=arm-linux-gnueabihf-", "make check-cross", 0.02),
    "serve-adds": ("bytes that make tiny SERVE=1 adds (x86_64)", "make test-tiny", 0.05),
    "mcu-core": ("bytes of text, src/ for a Cortex-M4", "make freestanding", 0.02),
    "rss-tls": ("kB, peak RSS of the tiny mote's streamed TLS turn, the system bundle",
                "make test-tiny", 0.10),
}


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


def doc_files():
    return [os.path.join(ROOT, "README.md")] + sorted(
        os.path.join(ROOT, "docs", f) for f in os.listdir(os.path.join(ROOT, "docs"))
        if f.endswith(".md"))


def recorded(build):
    """The figures the CI steps recorded in BUILDDIR/figures/."""
    d = os.path.join(build, "figures")
    out = {}
    for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
        with open(os.path.join(d, name)) as f:
            out[name] = int(f.read().split()[0])
    return out


def figure(build, name, value):
    """Records one figure and checks every mark of it."""
    if name not in FIGURES:
        print("doc figures: no figure '%s' in scripts/doc_sizes.py" % name)
        return 1
    os.makedirs(os.path.join(build, "figures"), exist_ok=True)
    with open(os.path.join(build, "figures", name), "w") as f:
        f.write("%d\n" % value)
    what, _, tol = FIGURES[name]
    bad, marks = [], 0
    for path in doc_files():
        with open(path) as f:
            for m in FIG.finditer(f.read()):
                if m.group(1) != name:
                    continue
                marks += 1
                shown = int(m.group(2).replace(",", ""))
                if abs(shown - value) > tol * value:
                    bad.append("%s says %s, measured %s (%s): more than %g%% off" %
                               (os.path.relpath(path, ROOT), m.group(2), "{:,}".format(value),
                                what, tol * 100))
    for b in bad:
        print("doc figures: %s: %s (make doc-sizes rewrites them)" % (name, b))
    print("doc figures: %s = %s: %d passed, %d failed" % (name, "{:,}".format(value),
                                                        marks - len(bad), len(bad)))
    # DOC_FIGURES=record: make doc-sizes measures before it rewrites
    return 1 if bad and os.environ.get("DOC_FIGURES") != "record" else 0


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    if sys.argv[2:3] == ["--figure"]:
        return figure(build, sys.argv[3], int(sys.argv[4]))
    write = "--write" in sys.argv[2:]
    sizes = measured(build)
    figs = recorded(build)
    bad, marks = [], 0
    for path in doc_files():
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

        def fix_fig(m):
            nonlocal marks
            marks += 1
            name = m.group(1)
            if name not in FIGURES:
                bad.append("%s: no figure '%s' in scripts/doc_sizes.py" %
                           (os.path.relpath(path, ROOT), name))
                return m.group(0)
            if not write or name not in figs:
                return m.group(0)
            return "<!--fig:%s-->%s" % (name, "{:,}".format(figs[name]))
        new = FIG.sub(fix_fig, MARK.sub(fix, text))
        if write and new != text:
            with open(path, "w") as f:
                f.write(new)
    if write:
        print("doc-sizes: %d figures; structs measured now; %s from %s/figures" %
              (marks, ", ".join(sorted(figs)) or "no build figures", build))
        missing = sorted(set(FIGURES) - set(figs))
        if missing:
            print("doc-sizes: not measured, left as they were: " + ", ".join(missing))
        return 0
    for b in bad:
        print("test-docs: " + b + " (make doc-sizes FIGURES=0 rewrites them)")
    print("test-docs: %d passed, %d failed" % (marks - len(bad), len(bad)))
    return 1 if bad or marks == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
