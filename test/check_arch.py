#!/usr/bin/env python3
"""check_arch.py OBJDIR - who calls whom and who includes whom in src/ and port/.

Reads the objects of src/ and port/ (built with -ffunction-sections, so a
static function stays inside its file) and draws an edge A -> B where A's
object needs a symbol B's object defines: a call, or a function or object
taken by address. Draws include edges between the project's own files from
their `#include "..."` lines. Fails when either graph has a circle (two or
more files that reach each other), when a source file in src/ or port/ holds
more than MAX_LINES lines, or when a file in src/ or port/ does not open with
a comment saying its job.

  --graph    print every file's callees too (the map of docs/ARCHITECTURE.md)
"""
import os
import re
import subprocess
import sys

MAX_LINES = 1200
ROOTS = ("src", "port")


def sources():
    out = []
    for root in ROOTS:
        for dirpath, _, files in os.walk(root):
            for f in files:
                if f.endswith((".c", ".h")):
                    out.append(os.path.join(dirpath, f))
    return sorted(out)


def symbols(objs, nm):
    """Each object's defined and needed symbols, from one nm for all of
    them (a process each cost seconds of CPU here)."""
    res = subprocess.run([nm, "-A"] + objs, capture_output=True, text=True, check=True)
    out = {o: (set(), set()) for o in objs}
    for line in res.stdout.splitlines():
        obj, _, rest = line.partition(":")
        if obj not in out:
            continue
        defined, needed = out[obj]
        parts = rest.split()
        if len(parts) == 3 and parts[1] in "TDBRVWCG" and parts[1].isupper():
            defined.add(parts[2])
        elif len(parts) == 2 and parts[0] == "U":
            needed.add(parts[1])
    return out


def circles(graph):
    """Strongly connected components of more than one node (Tarjan)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def include_graph(files):
    names = {}
    for f in files:
        names.setdefault(os.path.basename(f), []).append(f)
    graph = {}
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                m = re.match(r'\s*#\s*include\s*"([^"]+)"', line)
                if not m:
                    continue
                inc = m.group(1)
                here = os.path.normpath(os.path.join(os.path.dirname(f), inc))
                if os.path.exists(here):
                    target = here
                elif os.path.exists(os.path.join("include", inc)):
                    target = os.path.join("include", inc)
                elif len(names.get(os.path.basename(inc), [])) == 1:
                    target = names[os.path.basename(inc)][0]
                else:
                    continue
                graph.setdefault(f, set()).add(target)
    return graph


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    show = "--graph" in sys.argv
    objdir = args[0] if args else "build/obj"
    nm = os.environ.get("NM", "nm")
    files = sources()
    problems = []

    for f in files:
        with open(f, encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        n = text.count("\n")
        if f.endswith(".c") and n > MAX_LINES:
            problems.append(f"{f}: {n} lines (at most {MAX_LINES}: one job per file)")
        if not text.lstrip().startswith(("/*", "//")):
            problems.append(f"{f}: does not open with a comment naming its job")

    owner, needs = {}, {}
    objs = {f: os.path.join(objdir, f[:-2] + ".o") for f in files if f.endswith(".c")}
    objs = {f: o for f, o in objs.items() if os.path.exists(o)}
    syms = symbols(list(objs.values()), nm) if objs else {}
    for f, obj in objs.items():
        d, u = syms[obj]
        for s in d:
            owner.setdefault(s, f)
        needs[f] = u
    calls = {}
    for f, u in needs.items():
        for s in u:
            g = owner.get(s)
            if g and g != f:
                calls.setdefault(f, set()).add(g)

    for comp in circles(calls):
        problems.append("call circle: " + " <-> ".join(comp))
    for comp in circles(include_graph(files)):
        problems.append("include circle: " + " <-> ".join(comp))

    if show:
        for f in sorted(needs):
            print(f"{f} -> {' '.join(sorted(calls.get(f, ()))) or '-'}")
    for p in problems:
        print("arch: " + p)
    print(f"arch: {len(needs)} objects, {sum(len(v) for v in calls.values())} call edges, "
          f"{len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
