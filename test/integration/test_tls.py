#!/usr/bin/env python3
"""Trust stores (issue 12.1): a mote binary verifies servers against the
system's whole CA bundle without loading it, as strictly as against one
root, in whatever build it is (the default one, the tiny musl one, a cross
one under qemu).

    test_tls.py MOTE [RUNNER] [--rss-max=KB --rss-exec=PATH [--rss-figure=FILE]]
                [--certs=DIR --builtin]

The bundle used is Debian's /etc/ssl/certs/ca-certificates.crt with the
test CA appended at its end. --rss-max checks the peak RSS of mote itself
for a streamed 500-word turn with that bundle, as test/bench/rss_exec.c
(PATH) reports it (not under a RUNNER). --builtin: MOTE was built with
DIR/ca.crt as its roots (make CA_BUNDLE=DIR/ca.crt, DIR made by
test/make_certs.sh): with no CA file named it trusts that CA alone.
Prints one line per test and "tls: N passed, M failed".
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

from harness import NOTES, TMP, Skip, check, pump, requests_in, run_all
from harness import start_server as _start_server

ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
MOTE = os.path.abspath(ARGS[0])
RUNNER = ARGS[1].split() if len(ARGS) > 1 and ARGS[1] else []
OPTS = dict((a[2:] + "=").split("=")[:2] for a in sys.argv[1:] if a.startswith("--"))
RSS_MAX = int(OPTS.get("rss-max", 0))
RSS_EXEC = os.path.abspath(OPTS["rss-exec"]) if "rss-exec" in OPTS else None
CERTS = os.path.abspath(OPTS["certs"]) if OPTS.get("certs") else os.path.join(TMP, "certs")
BUILTIN = "builtin" in OPTS
SYSTEM = "/etc/ssl/certs/ca-certificates.crt"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def start_server(script, cert):
    return _start_server(script, cert, "127.0.0.1", CERTS)


def setup():
    subprocess.run(["sh", os.path.join(ROOT, "test", "make_certs.sh"), CERTS], check=True)
    if not os.path.exists(SYSTEM):
        raise RuntimeError("no system bundle at " + SYSTEM + " (install ca-certificates)")
    with open(SYSTEM, "rb") as f:
        system = f.read()
    with open(os.path.join(CERTS, "ca.crt"), "rb") as f:
        ca = f.read()
    if os.path.exists(os.path.join(CERTS, "rchain.crt")):
        return  # made by an earlier run (--certs)
    with open(os.path.join(CERTS, "bundle.crt"), "wb") as f:  # the test CA last
        f.write(system + b"\n" + ca)
    half = system.find(b"-----BEGIN CERTIFICATE-----", len(system) // 2)
    with open(os.path.join(CERTS, "middle.crt"), "wb") as f:  # the test CA in the middle
        f.write(system[:half] + ca + system[half:])
    for name in ("ca", "other"):
        subprocess.run(["openssl", "x509", "-in", os.path.join(CERTS, name + ".crt"), "-outform",
                        "der", "-out", os.path.join(CERTS, name + ".der")], check=True)
    with open(os.path.join(CERTS, "empty.crt"), "w") as f:
        f.write("no certificate here\n")
    rsa_chain()


def rsa_chain():
    """An RSA root, an intermediate CA and a leaf sent with it (the shape of
    public servers' chains): the bundle has the root, never the
    intermediate, so verification looks up two issuers."""
    d = CERTS

    def ossl(*a):
        subprocess.run(["openssl"] + list(a), check=True, capture_output=True)

    def ext(name, text):
        path = os.path.join(d, name + ".ext")
        with open(path, "w") as f:
            f.write(text)
        return path

    p = lambda n: os.path.join(d, n)  # noqa: E731
    ossl("req", "-x509", "-newkey", "rsa:3072", "-nodes", "-days", "30", "-subj",
         "/O=mote tests/CN=mote test RSA root", "-keyout", p("rroot.key"), "-out", p("rroot.crt"),
         "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    ossl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/O=mote tests/CN=mote test issuing CA",
         "-keyout", p("rint.key"), "-out", p("rint.csr"))
    ossl("x509", "-req", "-in", p("rint.csr"), "-CA", p("rroot.crt"), "-CAkey", p("rroot.key"),
         "-CAcreateserial", "-days", "30", "-out", p("rint.crt"), "-extfile",
         ext("rint", "basicConstraints=critical,CA:TRUE,pathlen:0\n"
                     "keyUsage=critical,keyCertSign,cRLSign\n"))
    ossl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-keyout",
         p("rleaf.key"), "-out", p("rleaf.csr"))
    ossl("x509", "-req", "-in", p("rleaf.csr"), "-CA", p("rint.crt"), "-CAkey", p("rint.key"),
         "-CAcreateserial", "-days", "30", "-out", p("rleaf.crt"), "-extfile",
         ext("rleaf", "subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\n"
                      "extendedKeyUsage=serverAuth\n"))
    with open(p("rchain.crt"), "w") as out:  # what the server sends: leaf, then intermediate
        out.write(open(p("rleaf.crt")).read() + open(p("rint.crt")).read())
    os.link(p("rleaf.key"), p("rchain.key"))
    with open(SYSTEM, "rb") as f, open(p("rbundle.crt"), "wb") as out:
        out.write(f.read() + b"\n" + open(p("rroot.crt"), "rb").read())
    # A root that signed itself with SHA-1 (as 24 of Debian's do), and a
    # leaf it signs with SHA-256.
    ossl("req", "-x509", "-sha1", "-newkey", "rsa:2048", "-nodes", "-days", "30", "-subj",
         "/O=mote tests/CN=mote test SHA-1 root", "-keyout", p("sroot.key"), "-out",
         p("sroot.crt"), "-addext", "basicConstraints=critical,CA:TRUE",
         "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    ossl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-keyout",
         p("sleaf.key"), "-out", p("sleaf.csr"))
    ossl("x509", "-req", "-sha256", "-in", p("sleaf.csr"), "-CA", p("sroot.crt"), "-CAkey",
         p("sroot.key"), "-CAcreateserial", "-days", "30", "-out", p("sleaf.crt"), "-extfile",
         p("rleaf.ext"))
    with open(SYSTEM, "rb") as f, open(p("sbundle.crt"), "wb") as out:
        out.write(f.read() + b"\n" + open(p("sroot.crt"), "rb").read())


def run(port, ca_file=None, env=None, state=None):
    """One turn of mote against the server (its state in `state`, else a
    directory shared by the tests); returns (rc, stdout, stderr, maxrss kB)."""
    e = {k: v for k, v in os.environ.items() if k != "SSL_CERT_FILE"}
    e["ANTHROPIC_API_KEY"] = "sk-TLS-SECRET"
    e.setdefault("ASAN_OPTIONS", "detect_leaks=1")
    if env:
        e.update(env)
    args = RUNNER + [MOTE, "-p", "hello", "--no-tools", "--state-dir",
                     state or os.path.join(TMP, "st"), "--base-url", "https://localhost:%d" % port]
    if ca_file:
        args += ["--ca-file", ca_file]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e)
    try:
        out, err = p.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        raise
    return p.returncode, out.decode(), err.decode(), 0


def run_rss(port, ca_file):
    """A turn under rss_exec: (exit code, stdout, peak RSS of mote in kB)."""
    e = {k: v for k, v in os.environ.items() if k != "SSL_CERT_FILE"}
    e["ANTHROPIC_API_KEY"] = "sk-TLS-SECRET"
    p = subprocess.run([RSS_EXEC, MOTE, "-p", "hello", "--no-tools", "--state-dir",
                        os.path.join(TMP, "st"), "--base-url", "https://localhost:%d" % port,
                        "--ca-file", ca_file], capture_output=True, text=True, env=e, timeout=120)
    # VmHWM at exit (exact), else wait4's approximate ru_maxrss
    kb = [max(int(f[11]), int(f[2])) if len(f) > 11 else int(f[2])
          for f in (line.split() for line in p.stderr.splitlines())
          if f[:2] == ["rss_exec:", "maxrss"]]
    check(kb, p.stderr)
    return p.returncode, p.stdout, kb[0]


TEXT = "Trusted through the whole bundle. " * 8


def test_turn_with_the_system_bundle():
    port, log = start_server([{"text": TEXT}], "server")
    rc, out, err, _ = run(port, os.path.join(CERTS, "bundle.crt"))
    check(rc == 0, (rc, err))
    check(out == TEXT + "\n", repr(out[:200]))
    check(len(requests_in(log)) == 1, "one request")


def test_the_ca_in_the_middle_of_the_bundle():
    port, _ = start_server([{"text": "middle"}], "server")
    rc, out, err, _ = run(port, os.path.join(CERTS, "middle.crt"))
    check(rc == 0 and out == "middle\n", (rc, out, err))


def refused(cert, ca_file, words):
    port, log = start_server([{"text": "must not be seen"}], cert)
    rc, out, err, _ = run(port, ca_file)
    check(rc == 1, (rc, err))
    check(words in err, err)
    check("must not be seen" not in out, out)
    # Nothing reached the server: no request, so no API key either.
    check(requests_in(log) == [], "a request was sent before verification")
    check("SECRET" not in err, "the key was printed")


def test_unknown_ca_refused_with_the_bundle():
    refused("stranger", os.path.join(CERTS, "bundle.crt"), "not correctly signed")


def test_wrong_host_refused_with_the_bundle():
    refused("wronghost", os.path.join(CERTS, "bundle.crt"), "does not match")


def test_expired_refused_with_the_bundle():
    refused("expired", os.path.join(CERTS, "bundle.crt"), "expired")


def test_the_same_with_one_root():
    refused("stranger", os.path.join(CERTS, "ca.crt"), "not correctly signed")
    refused("wronghost", os.path.join(CERTS, "ca.crt"), "does not match")
    refused("expired", os.path.join(CERTS, "ca.crt"), "expired")
    port, _ = start_server([{"text": "one root"}], "server")
    rc, out, err, _ = run(port, os.path.join(CERTS, "ca.crt"))
    check(rc == 0 and out == "one root\n", (rc, out, err))


def test_a_chain_through_an_intermediate():
    port, _ = start_server([{"text": "two levels"}], "rchain")
    rc, out, err, _ = run(port, os.path.join(CERTS, "rbundle.crt"))
    check(rc == 0 and out == "two levels\n", (rc, out, err))
    # a bundle without this chain's root refuses it; a trusted
    # intermediate is an anchor of its own (as mbedTLS always had it)
    refused("rchain", os.path.join(CERTS, "bundle.crt"), "not correctly signed")
    port, _ = start_server([{"text": "anchored"}], "rchain")
    rc, out, err, _ = run(port, os.path.join(CERTS, "rint.crt"))
    check(rc == 0 and out == "anchored\n", (rc, out, err))


def test_a_root_signed_with_sha1():
    # The tiny build has no SHA-1: such a root is still an anchor (its own
    # signature is never checked), and the chain below it is checked.
    port, _ = start_server([{"text": "old root"}], "sleaf")
    rc, out, err, _ = run(port, os.path.join(CERTS, "sbundle.crt"))
    check(rc == 0 and out == "old root\n", (rc, out, err))
    refused("sleaf", os.path.join(CERTS, "bundle.crt"), "not correctly signed")


def test_a_certificate_without_subject_alt_name():
    # A CA of its own and a leaf for CN=localhost with no subjectAltName:
    # the name is only in the Common Name, which browsers (and RFC 6125's
    # clients) no longer read. Refused, the reason said, nothing sent.
    d = os.path.join(TMP, "nosan")
    if not os.path.isdir(d):
        os.makedirs(d)
        p = lambda n: os.path.join(d, n)  # noqa: E731

        def ossl(*a):
            subprocess.run(["openssl"] + list(a), check=True, capture_output=True)
        ossl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", p("ca.key"))
        ossl("req", "-x509", "-new", "-key", p("ca.key"), "-days", "30", "-subj",
             "/O=mote tests/CN=mote test CN-only CA", "-out", p("ca.crt"),
             "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign")
        ossl("ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out", p("nosan.key"))
        ossl("req", "-new", "-key", p("nosan.key"), "-subj", "/CN=localhost", "-out",
             p("nosan.csr"))
        with open(p("nosan.ext"), "w") as f:  # a v3 leaf, every extension but the SAN
            f.write("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"
                    "extendedKeyUsage=serverAuth\n")
        ossl("x509", "-req", "-in", p("nosan.csr"), "-CA", p("ca.crt"), "-CAkey", p("ca.key"),
             "-CAcreateserial", "-days", "30", "-out", p("nosan.crt"), "-extfile",
             p("nosan.ext"))
        text = subprocess.run(["openssl", "x509", "-in", p("nosan.crt"), "-noout", "-text"],
                              capture_output=True, text=True, check=True).stdout
        check("Subject Alternative Name" not in text and "CN = localhost" in text, text)
    port, log = _start_server([{"text": "must not be seen"}], "nosan", "127.0.0.1", d)
    rc, out, err, _ = run(port, os.path.join(d, "ca.crt"))
    check(rc == 1, "a certificate naming its host only in its CN was accepted: %s" % ((rc, out,
                                                                                       err),))
    check("subjectAltName" in err, err)
    check("must not be seen" not in out and requests_in(log) == [], "a request was sent")


def test_system_bundle_by_default():
    # No --ca-file, no SSL_CERT_FILE: the system bundle, which does not
    # hold the test CA.
    if BUILTIN:
        raise Skip("built with its own roots")
    port, log = start_server([{"text": "must not be seen"}], "server")
    rc, out, err, _ = run(port)
    check(rc == 1 and "not correctly signed" in err, (rc, err))
    check(requests_in(log) == [], "a request was sent before verification")


def test_roots_built_in():
    # make CA_BUNDLE=ca.crt (issue 12.2): trusted with no CA file named,
    # strict all the same; a CA file named still wins.
    if not BUILTIN:
        raise Skip("not built with CA_BUNDLE (--builtin)")
    port, log = start_server([{"text": "built in"}], "server")
    rc, out, err, _ = run(port)
    check(rc == 0 and out == "built in\n", (rc, out, err))
    refused("stranger", None, "not correctly signed")
    refused("expired", None, "expired")
    refused("server", os.path.join(CERTS, "other.der"), "not correctly signed")


def test_ssl_cert_file_names_the_bundle():
    port, _ = start_server([{"text": "from the environment"}], "server")
    rc, out, err, _ = run(port, env={"SSL_CERT_FILE": os.path.join(CERTS, "bundle.crt")})
    check(rc == 0 and out == "from the environment\n", (rc, out, err))


def test_der_ca_file():
    port, _ = start_server([{"text": "DER"}], "server")
    rc, out, err, _ = run(port, os.path.join(CERTS, "ca.der"))
    check(rc == 0 and out == "DER\n", (rc, out, err))
    refused("server", os.path.join(CERTS, "other.der"), "not correctly signed")


def test_ca_file_without_certificates():
    refused("server", os.path.join(CERTS, "empty.crt"), "holds no certificate")


class Relay:
    """A TCP forwarder on a port of its own to a server that can change:
    mote sees one origin (localhost:PORT), another server may answer
    behind it, as an attacker on the path or a replaced host would."""

    def __init__(self, target):
        self.target = target
        self.lsock = socket.socket()
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(8)
        self.lsock.settimeout(0.2)
        self.port = self.lsock.getsockname()[1]
        self.stop = False
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def serve(self):
        end = time.time() + 300
        while not self.stop and time.time() < end:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                continue
            try:
                u = socket.create_connection(("127.0.0.1", self.target), timeout=10)
            except OSError:
                c.close()
                continue
            for a, b in ((c, u), (u, c)):
                a.settimeout(60)
                threading.Thread(target=pump, args=(a, b), daemon=True).start()

    def close(self):
        self.stop = True
        self.thread.join(5)
        self.lsock.close()


def session_files(state):
    d = os.path.join(state, "tls")
    return sorted(os.listdir(d)) if os.path.isdir(d) else []


def test_a_kept_session_never_skips_verification():
    # A session kept from a verified server is offered to whatever answers
    # at that origin next: a server whose certificate the roots do not
    # vouch for (another CA, expired) is refused all the same, before a
    # byte of the request (the API key) reaches it. ("Resumed" is what
    # mbedTLS's handshake did, never inferred from secrets that TLS 1.3
    # leaves zero on both sides.)
    state = tempfile.mkdtemp(dir=TMP)
    good, good_log = start_server([{"text": "verified"}] * 2, "server")
    relay = Relay(good)
    try:
        rc, out, err, _ = run(relay.port, os.path.join(CERTS, "ca.crt"), state=state)
        check(rc == 0 and out == "verified\n", (rc, out, err))
        check(len(session_files(state)) == 1, "a session kept: %s" % session_files(state))
        for cert, words in (("stranger", "not correctly signed"), ("expired", "expired")):
            other, other_log = start_server([{"text": "must not be seen"}], cert)
            relay.target = other
            rc, out, err, _ = run(relay.port, os.path.join(CERTS, "ca.crt"), state=state)
            check(rc == 1 and words in err,
                  "%s behind the kept session's origin was accepted: %s" % (cert, (rc, out, err)))
            check(requests_in(other_log) == [] and "must not be seen" not in out,
                  "%s: a request (the API key) reached it" % cert)
        relay.target = good
        rc, out, err, _ = run(relay.port, os.path.join(CERTS, "ca.crt"), state=state)
        check(rc == 0 and out == "verified\n", (rc, out, err))
    finally:
        relay.close()


def padded(src, dst, size):
    """`src`'s certificate(s) and a comment line padding the file to `size`."""
    with open(src, "rb") as f:
        data = f.read()
    pad = size - len(data) - 1
    check(pad >= 0, "pad %s to %d" % (src, size))
    with open(dst, "wb") as f:
        f.write(data + b"#" * pad + b"\n")


def test_a_session_is_bound_to_the_roots_content():
    # The CA file swapped for other roots of the same size at the same
    # path: the session the old roots verified is not offered (it would
    # skip the certificate), and the server the new roots do not vouch for
    # is refused. The same roots again resume it.
    state = tempfile.mkdtemp(dir=TMP)
    roots = os.path.join(state, "roots.crt")
    size = max(os.path.getsize(os.path.join(CERTS, n)) for n in ("ca.crt", "other.crt")) + 64
    padded(os.path.join(CERTS, "ca.crt"), roots, size)
    port, log = start_server([{"text": "first"}, {"text": "again"}, {"text": "resumed"}],
                             "server")
    rc, out, err, _ = run(port, roots, state=state)
    check(rc == 0 and out == "first\n", (rc, out, err))
    padded(os.path.join(CERTS, "other.crt"), roots, size)
    check(os.path.getsize(roots) == size, "the same size")
    rc, out, err, _ = run(port, roots, state=state)
    check(rc == 1 and "not correctly signed" in err,
          "other roots of the same size: the old session skipped verification: %s"
          % ((rc, out, err),))
    check(len(requests_in(log)) == 1, "a request reached the server under the other roots")
    padded(os.path.join(CERTS, "ca.crt"), roots, size)
    for text in ("again", "resumed"):
        rc, out, err, _ = run(port, roots, state=state)
        check(rc == 0 and out == text + "\n", (rc, out, err))
    reused = [q["tls_reused"] for q in requests_in(log)]
    check(reused[-1] is True, "the same roots resume their session: %s" % reused)


def test_the_session_file_is_written_off_the_loop():
    # The file's sync and rename run on a helper thread (the port's
    # st_write_behind), never on the thread that runs the loop; the file is
    # there, whole, once mote has exited (its end waits for the commit).
    if RUNNER or not shutil.which("strace"):
        raise Skip("no strace, or under " + " ".join(RUNNER))
    state = tempfile.mkdtemp(dir=TMP)
    port, _ = start_server([{"text": "kept"}], "server")
    log = os.path.join(state, "strace")
    e = {k: v for k, v in os.environ.items() if k != "SSL_CERT_FILE"}
    e["ANTHROPIC_API_KEY"] = "sk-TLS-SECRET"
    e["ASAN_OPTIONS"] = "detect_leaks=0"  # LeakSanitizer cannot run under ptrace
    p = subprocess.run(["strace", "-f", "-o", log, "-e", "trace=fsync,fdatasync,rename,renameat,"
                        "renameat2", MOTE, "-p", "hello", "--no-tools", "--state-dir", state,
                        "--base-url", "https://localhost:%d" % port, "--ca-file",
                        os.path.join(CERTS, "ca.crt")], capture_output=True, text=True, env=e,
                       timeout=120)
    check(p.returncode == 0 and p.stdout == "kept\n", (p.returncode, p.stderr[-300:]))
    lines = open(log).read().splitlines()
    main = lines[0].split()[0]
    names = session_files(state)
    check(len(names) == 1, "one session file: %s" % names)
    # strace -f splits a call another thread interrupts ("<unfinished ...>"
    # now, "<... resumed> = 0" later, without the name): the call's first
    # line names the thread and the file; the file under its final name
    # says it succeeded.
    renames = [l for l in lines if "rename" in l and names[0] in l]
    check(len(renames) >= 1, "the session file's rename: %s" % lines[-20:])
    check(all(l.split()[0] != main for l in renames),
          "the session file was committed on the loop's thread: %s" % renames)


def test_session_files_are_swept_by_age_and_count():
    # Twenty origins (a relay each in front of one server) leave at most
    # MOTE_TLS_SESSION_FILES (8) files, the most recent ones; a file older
    # than the sessions' age cap and a temporary a crash left go; a file
    # that is not mote's stays.
    state = tempfile.mkdtemp(dir=TMP)
    port, log = start_server(None, "server")
    os.makedirs(os.path.join(state, "tls"), mode=0o700)
    old = os.path.join(state, "tls", "0123456789abcdef")
    temp = os.path.join(state, "tls", ".mote-00112233aabbccdd.tmp")
    other = os.path.join(state, "tls", "notes.txt")
    for path in (old, temp, other):
        with open(path, "w") as f:
            f.write("x")
        os.chmod(path, 0o600)
    os.utime(old, (time.time() - 2 * 86400, time.time() - 2 * 86400))
    os.utime(temp, (time.time() - 600, time.time() - 600))
    relays = [Relay(port) for _ in range(20)]
    try:
        for r in relays:
            rc, out, err, _ = run(r.port, os.path.join(CERTS, "ca.crt"), state=state)
            check(rc == 0, (rc, err))
        names = session_files(state)
        kept = [n for n in names if n != "notes.txt"]
        check(len(kept) <= 8, "%d session files after 20 origins: %s" % (len(kept), names))
        check(not os.path.exists(old) and not os.path.exists(temp), "stale files stayed: %s" % names)
        check(os.path.exists(other), "a file that is not a session was removed")
        before = len(requests_in(log))
        rc, out, err, _ = run(relays[-1].port, os.path.join(CERTS, "ca.crt"), state=state)
        check(rc == 0 and requests_in(log)[before]["tls_reused"] is True,
              "the last origin's session is one of those kept")
    finally:
        for r in relays:
            r.close()


def io_calls(scheme, cert, n):
    """poll, receive, read and write calls of a turn of n streamed chunks."""
    text = " ".join("c%d" % i for i in range(n))
    port, _ = start_server([{"text": text, "delay_ms": 3}], cert)
    host = "localhost" if cert else "127.0.0.1"
    log = os.path.join(TMP, "strace.%s.%d" % (scheme, n))
    e = {k: v for k, v in os.environ.items() if k != "SSL_CERT_FILE"}
    e["ANTHROPIC_API_KEY"] = "sk-TLS-SECRET"
    e["ASAN_OPTIONS"] = "detect_leaks=0"  # LeakSanitizer cannot run under ptrace
    p = subprocess.run(["strace", "-f", "-c", "-o", log, MOTE, "-p", "hello", "--no-tools",
                        "--state-dir", os.path.join(TMP, "st"), "--base-url",
                        "%s://%s:%d" % (scheme, host, port), "--ca-file",
                        os.path.join(CERTS, "ca.crt")],
                       capture_output=True, text=True, env=e, timeout=120)
    check(p.returncode == 0 and p.stdout == text + "\n", (p.returncode, p.stderr[-300:]))
    calls = {}
    for line in open(log):
        f = line.split()
        if len(f) >= 5 and f[3].isdigit():
            calls[f[-1]] = int(f[3])
    return sum(calls.get(k, 0) for k in ("poll", "ppoll", "recvfrom", "recv", "read", "readv",
                                         "write", "writev")), calls


def test_three_system_calls_per_chunk():
    # Issue 12: a streamed chunk costs poll, one receive and the write of
    # the text; no read of a descriptor poll did not report (the signal
    # pipe), no second receive only to hear "would block" (TLS or not).
    # Two turns, 100 and 400 chunks: the difference is what chunks cost.
    if RUNNER or not shutil.which("strace"):
        raise Skip("no strace, or under " + " ".join(RUNNER))
    for cert, scheme in (("server", "https"), (None, "http")):
        short, _ = io_calls(scheme, cert, 100)
        long_, calls = io_calls(scheme, cert, 400)
        per = (long_ - short) / 300.0
        NOTES.append("%s: %.2f poll/receive/read/write calls per chunk (%s for 400 chunks)" % (
            scheme, per, ", ".join("%s %d" % (k, calls[k]) for k in
                                   ("poll", "recvfrom", "read", "write", "writev") if k in calls)))
        # A defect costs a whole call per chunk (4.0); a loaded machine
        # splits a few chunks between two wakes (3.12 seen at load 17).
        check(per <= 3.5, "%s: %.2f calls per chunk (%s)" % (scheme, per, calls))


def test_peak_rss_with_the_system_bundle():
    if RUNNER or not RSS_MAX or not RSS_EXEC:
        raise Skip("no --rss-max and --rss-exec, or under " + " ".join(RUNNER))
    figures = {}
    long_text = " ".join("word%d" % i for i in range(500))  # 500 events
    for name in ("ca.crt", "bundle.crt"):
        port, _ = start_server([{"text": long_text}], "server")
        rc, out, kb = run_rss(port, os.path.join(CERTS, name))
        check(rc == 0 and out == long_text + "\n", (rc, out[:100]))
        figures[name] = kb
    NOTES.append("peak RSS of %s, a streamed turn: %d kB with one root, %d kB with the "
                 "system bundle" % (os.path.basename(MOTE), figures["ca.crt"],
                                    figures["bundle.crt"]))
    if OPTS.get("rss-figure"):  # for the docs' figure (scripts/doc_sizes.py)
        with open(OPTS["rss-figure"], "w") as f:
            f.write("%d\n" % figures["bundle.crt"])
    check(figures["bundle.crt"] <= RSS_MAX, "%d kB with the system bundle, over %d kB"
          % (figures["bundle.crt"], RSS_MAX))


if __name__ == "__main__":
    sys.exit(run_all("tls", dict(globals()), setup))
