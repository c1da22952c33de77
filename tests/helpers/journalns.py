# SPDX-License-Identifier: MIT
"""The journal in a private mount namespace, for the suites that run the
real engines (tests/journal, tests/hostile's journal cases): journald,
systemd-journal-remote and systemd-journal-upload started by hand, with
tmpfs on /run/systemd and /run/log and a scratch /var/log/journal, so that
the host's own journal (if any) is never touched.

A suite calls enter(argv, name) first: as root, where the engines are
installed and a private mount namespace can be made, it runs the suite
again inside `unshare -m` and exits with its status; otherwise it exits 77
(skipped) with the reason.  Inside, private_dirs() and Daemons start the
rest.  Every wait is bounded.
"""

import os
import shutil
import socket
import struct
import subprocess
import sys
import time
import traceback

from adversary import Failed, check

MESSAGE_ID = "541b7f4a9be94cee9da4b63740198349"
JOURNALD = "/lib/systemd/systemd-journald"
REMOTE = "/lib/systemd/systemd-journal-remote"
UPLOAD = "/lib/systemd/systemd-journal-upload"
INSIDE = "BBJ_INSIDE"


def run(argv, timeout=60, ok=(0,), env=None, **kw):
    kw.setdefault("stdin", subprocess.DEVNULL)
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=timeout, env=env, **kw)
    if ok is not None and p.returncode not in ok:
        raise Failed("%r: exit %d\nstdout %r\nstderr %r" % (
            argv, p.returncode, p.stdout[-2000:], p.stderr[-2000:]))
    return p


def enter(argv, name, timeout=900):
    """Run this script again in a private mount namespace (or skip)."""
    if os.environ.get(INSIDE):
        return
    if os.geteuid() != 0:
        skip(name, "needs root (a private mount namespace, journald started by hand)")
    for exe in (JOURNALD, REMOTE, UPLOAD, shutil.which("journalctl") or "journalctl",
                shutil.which("unshare") or "unshare"):
        if not os.access(exe, os.X_OK):
            skip(name, "%s is not installed (packages systemd, systemd-journal-remote)" % exe)
    if not os.path.exists("/etc/machine-id"):
        skip(name, "no /etc/machine-id: journald would not start")
    probe = subprocess.run(["unshare", "-m", "--propagation", "private", "true"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=30)
    if probe.returncode:
        skip(name, "cannot make a private mount namespace here: %s"
             % probe.stderr.decode(errors="replace").strip())
    env = dict(os.environ)
    env[INSIDE] = "1"
    try:
        p = subprocess.run(["unshare", "-m", "--propagation", "private", sys.executable,
                            os.path.abspath(argv[0])] + argv[1:], env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        print("%s: FAILED: timed out" % name)
        sys.exit(1)
    sys.exit(p.returncode)


def skip(name, why):
    print("%s: skipped: %s" % (name, why))
    sys.exit(77)


# ---- the journal's export format (journalctl -o export) ------------------

def parse_export(data):
    """Entries of `journalctl -o export` as dicts of bytes: text fields are
    NAME=value lines, binary ones NAME, a little-endian u64 size, the bytes."""
    entries, cur, i = [], {}, 0
    while i < len(data):
        nl = data.index(b"\n", i)
        line = data[i:nl]
        if not line:
            if cur:
                entries.append(cur)
            cur, i = {}, nl + 1
            continue
        if b"=" in line:
            k, v = line.split(b"=", 1)
            cur[k.decode()] = v
            i = nl + 1
        else:
            n = struct.unpack("<Q", data[nl + 1:nl + 9])[0]
            cur[line.decode()] = data[nl + 9:nl + 9 + n]
            i = nl + 9 + n + 1
    if cur:
        entries.append(cur)
    return entries


def export_entry(fields):
    """One entry in the export format, from (name, bytes) pairs: what a
    host uploads to systemd-journal-remote, every field its own word."""
    out = b""
    for k, v in fields:
        if isinstance(v, str):
            v = v.encode()
        if b"\n" in v or any(c < 0x20 and c != 0x09 for c in v):
            out += k.encode() + b"\n" + struct.pack("<Q", len(v)) + v + b"\n"
        else:
            out += k.encode() + b"=" + v + b"\n"
    return out + b"\n"


def ours(entries):
    return [e for e in entries if e.get("MESSAGE_ID") == MESSAGE_ID.encode()]


def entries(*args):
    """Our entries in the local journal (or with -D DIR, a directory's)."""
    return ours(parse_export(run(["journalctl", "-o", "export", "--no-pager"] + list(args) +
                                 ["MESSAGE_ID=" + MESSAGE_ID]).stdout))


# ---- the namespace --------------------------------------------------------

def fs_type(path):
    return subprocess.run(["stat", "-f", "-c", "%T", path], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL, text=True).stdout.strip()


def mount(*args):
    run(["mount"] + list(args), timeout=20)


def private_dirs(work):
    """tmpfs on /run/systemd and /run/log (on /run itself where they do not
    exist: no directory is ever created on the host), a scratch
    /var/log/journal bound from @work."""
    if not (os.path.isdir("/run/systemd") and os.path.isdir("/run/log")):
        mount("-t", "tmpfs", "tmpfs", "/run")
        os.makedirs("/run/systemd")
        os.makedirs("/run/log")
    else:
        mount("-t", "tmpfs", "tmpfs", "/run/systemd")
        mount("-t", "tmpfs", "tmpfs", "/run/log")
    local = os.path.join(work, "local-journal")
    os.mkdir(local, 0o755)
    if not os.path.isdir("/var/log/journal"):
        mount("-t", "tmpfs", "tmpfs", "/var/log")
        os.mkdir("/var/log/journal")
    mount("--bind", local, "/var/log/journal")


def bind_catalog(work, catalog):
    """Build the catalog index of @catalog in a scratch root and bind it
    where journalctl -x reads it (its fixed path, not under --root), in
    this mount namespace only: the host's index is never touched."""
    root = os.path.join(work, "catalog-root")
    cat = os.path.join(root, "usr/lib/systemd/catalog")
    os.makedirs(cat)
    shutil.copy2(catalog, cat)
    run(["journalctl", "--root=" + root, "--update-catalog"])
    index = os.path.join(root, "var/lib/systemd/catalog")
    check(os.path.exists(os.path.join(index, "database")), "no catalog index built")
    if not os.path.isdir("/var/lib/systemd/catalog"):
        mount("-t", "tmpfs", "tmpfs", "/var/lib")
        os.makedirs("/var/lib/systemd/catalog")
    mount("--bind", index, "/var/lib/systemd/catalog")


class Daemons:
    def __init__(self):
        self.procs = []

    def start(self, argv, log):
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                             start_new_session=True)
        self.procs.append(p)
        return p

    def stop(self, p, timeout=10):
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(timeout)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)

    def stop_all(self):
        for p in reversed(self.procs):
            try:
                self.stop(p)
            except Exception:
                pass

    def journald(self, log):
        p = self.start([JOURNALD], log)
        wait_for(lambda: os.path.exists("/run/systemd/journal/socket"), "journald's socket")
        return p


def remote_import(export, output):
    """systemd-journal-remote writing @export (the export format, what a
    host uploads) into the journal file @output: what it writes for one
    sending host."""
    run([REMOTE, "--split-mode=none", "--output=" + output, "-"], input=export,
        stdin=None, timeout=60)


def wait_for(cond, what, secs=10):
    t = time.monotonic() + secs
    while not cond():
        if time.monotonic() > t:
            raise Failed("timed out waiting for " + what)
        time.sleep(0.05)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def port_open(port):
    try:
        socket.create_connection(("127.0.0.1", port), 0.2).close()
        return True
    except OSError:
        return False


def run_suite(t, name):
    """t.main(), then t.cleanup() whatever happened, and t.work removed
    (unless BBJ_KEEP is set): the exit status of a suite, 0 or 1."""
    try:
        t.main()
        return 0
    except Failed as e:
        print("%s: FAILED: %s" % (name, e))
        return 1
    except Exception:
        traceback.print_exc()
        return 1
    finally:
        t.cleanup()
        if getattr(t, "work", None) and not os.environ.get("BBJ_KEEP"):
            shutil.rmtree(t.work, ignore_errors=True)


def rmdir_retry(path, secs=5):
    """Remove the (cgroup) directory @path once its last process is gone."""
    t = time.monotonic() + secs
    while True:
        try:
            os.rmdir(path)
            return
        except OSError:
            if time.monotonic() > t:
                return
            time.sleep(0.05)
