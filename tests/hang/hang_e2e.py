#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Description: hangs and snapshots seen from outside (bb-reap --watch with
the packaged watch unit's command line, a real journald in a private mount
namespace, real processes that deadlock, spin, block in read() and take
snapshots under load).

argv: bb-reap bb-extract bbh_service libblackbox.so bb-reap-watch.service.in

Bounds.  The service declares a 500 ms deadline.  The watcher reads the
heartbeats every 250 ms (REAP_HB_TICK_MS) and names a thread once its beat
is older than the deadline: at most deadline + 250 ms after it stopped,
then asks for the stacks (the owner answers in at most 100 ms: the crash
stacks' wait), copies the box and sends the entry.  That is within
deadline + 1 s on an idle machine; the test allows 4 s more because it
runs on a shared 2-CPU machine where journald, the copy and the process
start compete, and it measures from the service's "ready" (after
bb_watchdog) rather than from the moment the beat stopped.
"""

import os
import errno
import re
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))
from journalns import (Daemons, Failed, check, enter, entries, private_dirs,  # noqa: E402
                       run, run_suite, wait_for)

NAME = "hang_e2e"
DEADLINE_S = 0.5
SLACK_S = 1.0 + 4.0     # see the module comment
NOBODY = 65534
H_DUMP_SIGNAL = 1292    # include/blackbox/format.h (3.3)


class Test:
    def __init__(self, argv):
        self.reap, self.extract, self.svc, self.lib, self.unit = argv[:5]
        self.procs = []
        self.d = Daemons()

    def setup(self):
        self.work = tempfile.mkdtemp(prefix="bbh.")
        os.chmod(self.work, 0o755)
        self.boxes = os.path.join(self.work, "boxes")
        os.mkdir(self.boxes)
        os.chmod(self.boxes, 0o1777)
        self.archive = os.path.join(self.work, "archive")
        self.bindir = os.path.join(self.work, "bin")
        os.mkdir(self.bindir, 0o755)
        for src, dst in ((self.svc, "bbh_service"), (self.lib, os.path.basename(self.lib)),
                         (self.lib, "libblackbox.so.0"), (self.extract, "bb-extract")):
            if not os.path.exists(os.path.join(self.bindir, dst)):
                shutil.copy2(src, os.path.join(self.bindir, dst))
        self.logs = open(os.path.join(self.work, "daemons.log"), "wb")
        private_dirs(self.work)
        self.d.journald(self.logs)
        self.watcher = self.d.start(self.watch_argv(), self.logs)

    def watch_argv(self):
        """The packaged unit's ExecStart=, with this test's directories."""
        with open(self.unit) as f:
            line = [x for x in f if x.startswith("ExecStart=")][0]
        argv = shlex.split(line[len("ExecStart="):])
        argv[0] = self.reap
        for opt, val in (("--dir", self.boxes), ("--archive", self.archive),
                         ("--min-age", "0")):
            argv[argv.index(opt) + 1] = val
        return argv + ["--journal-reported", os.path.join(self.work, "reported")]

    def cleanup(self):
        for p in self.procs:
            try:
                p.kill()
                p.wait(10)
            except Exception:
                pass
        self.d.stop_all()
        if getattr(self, "logs", None):
            self.logs.close()

    def service(self, *args, crash_handler=True, user=None):
        env = {"BLACKBOX_DIR": self.boxes, "LD_LIBRARY_PATH": self.bindir, "PATH": "/usr/bin:/bin"}
        if crash_handler:
            env["BLACKBOX_CRASH_HANDLER"] = "1"
        argv = [os.path.join(self.bindir, "bbh_service")] + list(args)
        p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                             user=user, cwd=self.bindir)
        self.procs.append(p)
        line = p.stdout.readline()
        check(line == b"ready\n", "%r: no ready line (%r)" % (args, line))
        return p, time.monotonic()

    def entries_of(self, pid, event):
        run(["journalctl", "--flush"], ok=None)
        return [e for e in entries("BB_PID=%d" % pid) if e.get("BB_EVENT") == event.encode()]

    def wait_entry(self, pid, event, secs):
        got = []

        def have():
            got[:] = self.entries_of(pid, event)
            return bool(got)
        wait_for(have, "a %s entry of pid %d" % (event, pid), secs)
        return got[0]

    def archive_text(self, e):
        path = e["BB_ARCHIVE"].decode()
        check(os.path.exists(path), "no archive %s" % path)
        p = run([self.extract, "--path", path], ok=None)
        return p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")

    def stacks(self, text):
        """{tid: frames text} of the hang dump's threads."""
        out, cur = {}, None
        for line in text.splitlines():
            m = re.match(r"\*\*\* thread (\d+) ", line)
            if m:
                cur = int(m.group(1))
                out[cur] = ""
            elif line.startswith("***"):
                cur = None
            elif cur is not None and line.startswith("  "):
                out[cur] += line + "\n"
        return out

    # -- the cases --
    def deadlock(self):
        p, t0 = self.service("deadlock")
        e = self.wait_entry(p.pid, "hang", DEADLINE_S + SLACK_S)
        took = time.monotonic() - t0
        check(p.poll() is None, "the deadlocked service did not survive its hang dump")
        text, _ = self.archive_text(e)
        st = self.stacks(text)
        locked = [t for t, f in st.items() if "locker" in f and "lock" in f.replace("locker", "")]
        check(len(locked) == 2, "both stuck threads in lock frames: %r" % st)
        check(int(e["BB_HANG_TID"]) in locked, "BB_HANG_TID %r is not a stuck thread" %
              e["BB_HANG_TID"])
        check(int(e["BB_HANG_AGE_MS"]) >= 500, "age %r below the deadline" % e["BB_HANG_AGE_MS"])
        check("BB_STACK_HASH" in e, "no group key")
        print("%s: deadlock: entry %.2f s after ready, stacks of %r" % (NAME, took, locked))

    def spin(self):
        p, t0 = self.service("spin")
        e = self.wait_entry(p.pid, "hang", DEADLINE_S + SLACK_S)
        text, _ = self.archive_text(e)
        st = self.stacks(text)
        check(any("spinner" in f for f in st.values()), "no spinner frame: %r" % st)
        check(p.poll() is None, "the spinning service died")
        print("%s: spin: entry %.2f s after ready" % (NAME, time.monotonic() - t0))

    def blocked_read(self):
        p, t0 = self.service("read")
        e = self.wait_entry(p.pid, "hang", DEADLINE_S + SLACK_S)
        text, _ = self.archive_text(e)
        st = self.stacks(text)
        check(any("read" in f for f in st.values()), "no read frame: %r" % st)
        # without the crash handler nobody answers: the kernel's view
        q, _ = self.service("read", crash_handler=False)
        e = self.wait_entry(q.pid, "hang", DEADLINE_S + SLACK_S)
        k = e.get("BB_HANG_KERNEL", b"").decode()
        check("wchan" in k and ("pipe" in k or "read" in k),
              "the kernel's view of a thread in read(): %r" % k)
        check(p.poll() is None and q.poll() is None, "a reading service died")
        print("%s: read: %s" % (NAME, k[:120]))

    def snapshot(self):
        p, _ = self.service("snapshot", "1000")
        e = self.wait_entry(p.pid, "snapshot", 10)
        check(e.get("BB_SNAPSHOT_REASON") == b"under load", "reason %r" % e.get("BB_SNAPSHOT_REASON"))
        check("BB_SNAPSHOT_MISSED" in e, "no missed count")
        text, err = self.archive_text(e)
        m = re.search(r"(\d+) torn by the owner's death, \d+ overwritten while reading, "
                      r"(\d+) corrupt", err)
        check(m and m.group(2) == "0", "the copy is not consistent: %r" % err[-600:])
        p.wait(30)
        n = len(self.entries_of(p.pid, "snapshot"))
        check(n == 1, "3,000 snapshots in 3 s gave %d entries (one per group allowed)" % n)
        print("%s: snapshot: 1 entry for 3,000 calls, missed %s" %
              (NAME, e["BB_SNAPSHOT_MISSED"].decode()))

    def hostile(self):
        # root's service; nobody asks it for a snapshot: the kernel says no
        p, _ = self.service("beat")
        r = run([os.path.join(self.bindir, "bb-extract"), "--dir", self.boxes, "--snapshot",
                 str(p.pid)], ok=None, user=NOBODY)
        check(r.returncode != 0, "nobody's --snapshot of root's service succeeded")
        # and the request itself, queued by hand with the box's dump signal
        box = [n for n in os.listdir(self.boxes) if n.startswith("blackbox.%d." % p.pid)][0]
        with open(os.path.join(self.boxes, box), "rb") as f:
            hdr = f.read(4096)
        sig = struct.unpack_from("<i", hdr, H_DUMP_SIGNAL)[0]
        check(sig > 0, "no dump signal in the header")
        value = 0x40000000 | 2 << 24 | 1   # BB_DUMP_REQUEST(BB_DUMP_SNAPSHOT, 1)
        code = ("import ctypes,sys;l=ctypes.CDLL(None,use_errno=True);"
                "r=l.sigqueue(%d,%d,ctypes.c_long(%d));"
                "sys.exit(ctypes.get_errno() if r else 0)" % (p.pid, sig, value))
        r = run([sys.executable, "-c", code], ok=None, user=NOBODY)
        check(r.returncode == errno.EPERM, "nobody's sigqueue to root's service: exit %d"
              % r.returncode)
        time.sleep(1)
        check(not self.entries_of(p.pid, "snapshot"), "a snapshot entry nobody could ask for")
        check(not self.entries_of(p.pid, "hang"), "a healthy service named stuck")
        # nobody's own hang is reported as nobody's, never root's
        q, _ = self.service("deadlock", user=NOBODY)
        e = self.wait_entry(q.pid, "hang", DEADLINE_S + SLACK_S)
        check(e["BB_UID"] == str(NOBODY).encode(), "nobody's hang entry says uid %r" % e["BB_UID"])
        check(b"(uid %d)" % NOBODY in e["MESSAGE"], "message %r" % e["MESSAGE"])
        check("BB_RECORDS" not in e, "nobody's records in the journal without opt-in")
        # the owner may ask: root's service, root's request
        r = run([self.extract, "--dir", self.boxes, "--snapshot", str(p.pid)], ok=None)
        check(r.returncode == 0, "the owner's --snapshot: %r" % r.stderr)
        self.wait_entry(p.pid, "snapshot", 10)
        print("%s: hostile: refused for nobody, allowed for the owner" % NAME)

    def reading(self):
        """--list and --groups show hangs and snapshots beside crashes."""
        ls = run([self.extract, "--journal", "--list"]).stdout.decode(errors="replace")
        check(re.search(r"\bhang\b", ls) and re.search(r"\bsnapshot\b", ls),
              "--journal --list shows no hang or snapshot:\n" + ls[-1500:])
        gr = run([self.extract, "--journal", "--groups"]).stdout.decode(errors="replace")
        hang = [x for x in gr.splitlines() if re.search(r" hang +bbh_service", x)]
        check(hang, "--journal --groups has no hang group:\n" + gr[-1500:])
        gid = hang[0].split()[0]
        one = run([self.extract, "--journal", "--group", gid], ok=None)
        # the entry without a box (no box is attached to a live owner's):
        # its fields and its stack, symbolised
        check(b"BB_HANG_TID" in one.stdout and b"locker" in one.stdout,
              "--group %s: %r %r" % (gid, one.stdout[-800:], one.stderr[-500:]))
        print("%s: reading: %d hang group(s) listed, --group %s extracts" % (NAME, len(hang), gid))

    def main(self):
        self.setup()
        self.deadlock()
        self.spin()
        self.blocked_read()
        self.snapshot()
        self.hostile()
        self.reading()
        check(self.watcher.poll() is None, "the watcher ended")


if __name__ == "__main__":
    enter(sys.argv, NAME)
    t = Test(sys.argv[1:])
    sys.exit(run_suite(t, NAME))
