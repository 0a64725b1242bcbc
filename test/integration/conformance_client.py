#!/usr/bin/env python3
"""The client the MCP conformance suite runs (`conformance client --command
"conformance_client.py BUILDDIR TOOL [INPUT]" --scenario S`; the suite
appends its server's URL): mote against that server, with a scripted model
(the test LLM server) that calls the server's tool TOOL once, with INPUT
(a JSON object; none: {}) as its arguments, then answers "done". Exits with
mote's status; mote's stderr is passed on. An auth/* scenario (the suite
names it in MCP_CONFORMANCE_SCENARIO) logs in first, as a user would
(conformance_oauth.py).

    conformance_client.py BUILDDIR TOOL [INPUT] URL
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

from conformance_oauth import run_auth
from harness import SERVERS, TMP, mote_env, start_server


def main():
    build, tool, url = sys.argv[1], sys.argv[2], sys.argv[-1]
    arguments = json.loads(sys.argv[3]) if len(sys.argv) == 5 else {}
    script = [{"tool": "c__" + tool, "input": arguments}, {"text": "done"}]
    try:
        st = tempfile.mkdtemp(dir=TMP)
        if os.environ.get("MCP_CONFORMANCE_SCENARIO", "").startswith("auth/"):
            return run_auth(os.path.join(build, "mote"), st, lambda: start_server(script)[0],
                            url, mote_env("sk-ant-conformance"))
        port, _ = start_server(script)
        cfg = os.path.join(st, "mcp.json")
        with open(cfg, "w") as f:
            json.dump({"mcpServers": {"c": {"type": "http", "url": url}}}, f)
        p = subprocess.run([os.path.join(build, "mote"), "--state-dir", st, "--base-url",
                            "http://127.0.0.1:%d" % port, "--mcp-config", cfg, "-p", "x", "--yes"],
                           capture_output=True, text=True, timeout=60,
                           env=mote_env("sk-ant-conformance"))
        sys.stderr.write(p.stderr)
        sys.stdout.write(p.stdout)
        return p.returncode
    finally:
        for s in SERVERS:  # (the suite waits for the client's output to close)
            s.kill()
            s.wait()
        shutil.rmtree(TMP, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
