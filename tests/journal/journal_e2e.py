#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Description: every dead box as one journal entry, shipped to a collector,
with the real engines: systemd-journald, systemd-journal-upload and
systemd-journal-remote, as bb-reap(8) "JOURNAL" and README "Fleet" describe.

    journal_e2e.py BB_REAP BB_EXTRACT CRASHER LIBBLACKBOX_SO CATALOG

Runs as root (exit 77, skipped with the reason, otherwise) in a private
mount namespace (unshare -m): tmpfs on /run/systemd and /run/log, a scratch
/var/log/journal, and journald started by hand there, so that the host's own
journal (if any) is never touched (tests/helpers/journalns.py).  Then:

  - four boxes die: a crash as uid 65534 inside a unit's cgroup (a sibling of
    the same uid keeps running there), with control characters in its comm;
    a SIGKILLed process; one with a 12 MiB box (over the 8 MiB cap); a box
    of uid 65534 whose header claims a unit no process of that uid runs in;
  - bb-reap --journal=box --journal-content=all runs twice (once keeping
    the boxes, once reaping and archiving them): exactly one entry per box;
  - journalctl --flush; systemd-journal-remote --listen-http on loopback;
    systemd-journal-upload --follow=no to it (under a timeout);
  - on the central journal: one entry per box with its fields, BB_BOX
    byte-identical to the box, `bb-extract --journal-directory CENTRAL PID`
    printing what `bb-extract --path` prints of the box file (text and
    JSON), the box over the cap shipped as a summary (exit 4, its fields
    printed), `journalctl -u UNIT` showing the vouched crash only, and the
    catalog text under `journalctl -x`.

journald also imports /dev/kmsg here: every query filters on our fields.
Every daemon started is killed at the end, every wait is bounded.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))
from journalns import (MESSAGE_ID, REMOTE, UPLOAD, Daemons, Failed, bind_catalog,  # noqa: E402
                       check, enter, free_port, fs_type, ours, parse_export, port_open,
                       private_dirs, rmdir_retry, run, run_suite, wait_for)

NOBODY = 65534
H_CGROUP_HIER, H_CGROUP = 568, 616   # include/blackbox/format.h (2.1)


# ---- the processes that die -------------------------------------------------

def unified_root():
    for p in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
        if fs_type(p) == "cgroup2fs":
            return p
    return None


class Proc:
    """A crasher started with a box in @boxes, as root or uid 65534,
    optionally inside cgroup directory @cg; .pid once it is ready."""

    def __init__(self, t, mode, nobody=False, cg=None, comm=None, inv=None):
        env = dict(os.environ, BLACKBOX_DIR=t.boxes)
        env.pop("INVOCATION_ID", None)
        if comm:
            env["BBX_COMM"] = comm
        if inv:
            env["INVOCATION_ID"] = inv
        exe = t.crasher
        if nobody:
            exe = t.nobody_crasher
            env["LD_LIBRARY_PATH"] = t.bindir

        def pre():
            if cg:
                with open(os.path.join(cg, "cgroup.procs"), "w") as f:
                    f.write(str(os.getpid()))
            if nobody:
                os.setgroups([])
                os.setresgid(NOBODY, NOBODY, NOBODY)
                os.setresuid(NOBODY, NOBODY, NOBODY)

        self.p = subprocess.Popen([exe, mode], stdin=subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  env=env, preexec_fn=pre)
        line = self.p.stdout.readline()
        if not line.strip().isdigit():
            # stderr is read only now: a process that blocks keeps it open
            raise Failed("%s %s: no pid (%r)" % (exe, mode, self.p.stderr.read()[:500]))
        self.pid = int(line)
        t.procs.append(self)

    def box_path(self, t):
        names = [n for n in os.listdir(t.boxes) if n.startswith("blackbox.%d." % self.pid)]
        check(len(names) == 1, "box of pid %d: %r" % (self.pid, names))
        return os.path.join(t.boxes, names[0])

    def wait(self, secs=20):
        return self.p.wait(secs)

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
        return self.p.wait(20)


class Test:
    def __init__(self, argv):
        self.reap, self.extract, self.crasher, self.lib, self.catalog = argv[:5]
        self.procs = []
        self.d = Daemons()
        self.cgroups = []

    # -- setup --
    def setup(self):
        self.work = tempfile.mkdtemp(prefix="bbj.")
        os.chmod(self.work, 0o755)
        self.boxes = os.path.join(self.work, "boxes")
        os.mkdir(self.boxes)
        os.chmod(self.boxes, 0o1777)
        self.central = os.path.join(self.work, "central")
        os.mkdir(self.central)
        self.state = os.path.join(self.work, "reported")
        self.archive = os.path.join(self.work, "archive")
        # what uid 65534 runs, where it can reach it (the build tree may sit
        # in a 0700 directory)
        self.bindir = os.path.join(self.work, "bin")
        os.mkdir(self.bindir, 0o755)
        self.nobody_crasher = os.path.join(self.bindir, "bbx_crasher")
        shutil.copy2(self.crasher, self.nobody_crasher)
        shutil.copy2(self.lib, os.path.join(self.bindir, os.path.basename(self.lib)))
        for n in ("libblackbox.so.0",):
            dst = os.path.join(self.bindir, n)
            if not os.path.exists(dst):
                shutil.copy2(self.lib, dst)
        self.logs = open(os.path.join(self.work, "daemons.log"), "wb")
        private_dirs(self.work)
        self.journald = self.d.journald(self.logs)

    def unit_cgroup(self):
        """A cgroup named like a service, in the hierarchy the box records;
        None (with the reason printed) when this machine gives none."""
        root = unified_root()
        if not root:
            print("journal_e2e: no cgroup2 hierarchy: the unit case is left out")
            return None
        name = "bb-e2e-%d.service" % os.getpid()
        path = os.path.join(root, name)
        try:
            os.mkdir(path)
        except OSError as e:
            print("journal_e2e: cannot create cgroup %s (%s): the unit case is left out"
                  % (path, e))
            return None
        self.cgroups.append(path)
        return name, path

    def cleanup(self):
        for p in self.procs:
            try:
                p.kill()
            except Exception:
                pass
        self.d.stop_all()
        for cg in self.cgroups:
            rmdir_retry(cg)
        if getattr(self, "logs", None):
            self.logs.close()

    # -- the run --
    def main(self):
        self.setup()
        inv = os.urandom(16).hex()
        unit = self.unit_cgroup()

        # A: a crash of uid 65534 in a unit, a sibling of its uid still there
        if unit:
            Proc(self, "sleep", nobody=True, cg=unit[1])
        comm = "ev\x1b]0;x\x07il\x7f"
        a = Proc(self, "crash", nobody=True, cg=unit[1] if unit else None, comm=comm, inv=inv)
        check(a.wait() == -signal.SIGSEGV, "crasher A did not die of SIGSEGV")
        # B: killed without a word; C: a box over the cap
        b = Proc(self, "wait")
        c = Proc(self, "big")
        b.kill()
        c.kill()
        # D: uid 65534's box claiming a unit none of its processes runs in
        d = Proc(self, "wait", nobody=True)
        d.kill()
        forged = "/system.slice/bb-e2e-forged-%d.service" % os.getpid()
        with open(d.box_path(self), "r+b") as f:
            f.seek(H_CGROUP_HIER)
            f.write(b"\x01")
            f.seek(H_CGROUP)
            f.write(forged.encode() + b"\0")
        boxes = {}
        for p in (a, b, c, d):
            with open(p.box_path(self), "rb") as f:
                boxes[p.pid] = f.read()
            shutil.copy2(p.box_path(self), os.path.join(self.work, "copy.%d" % p.pid))

        # the unit recorded at bb_init, in bb-extract --list and --json
        lj = [json.loads(l) for l in run([self.extract, "--list", "--json", "--dir",
                                          self.boxes]).stdout.splitlines()]
        la = [x for x in lj if x["pid"] == a.pid]
        check(len(la) == 1 and la[0].get("invocation_id") == inv and
              (not unit or la[0].get("unit") == unit[0]), "--list --json: %r" % la)
        if unit:
            lt = run([self.extract, "--list", "--dir", self.boxes]).stdout.decode()
            check(re.search(r"^%d .* %s +/" % (a.pid, re.escape(unit[0])), lt, re.M),
                  "--list: no unit %s for pid %d:\n%s" % (unit[0], a.pid, lt))
            sj = json.loads(run([self.extract, "--json", "--any-owner", "--path",
                                 a.box_path(self)]).stdout.splitlines()[-1])["summary"]
            check(sj.get("unit") == unit[0] and sj.get("invocation_id") == inv,
                  "--json summary: %r" % sj)

        # bb-reap twice: reported once each, whatever keeps or removes them
        # the boxes of uid 65534 are another user's private data: their
        # records, state and box go in only with --journal-content=all
        reap = [self.reap, "--dir", self.boxes, "--journal=box", "--journal-content=all",
                "--journal-reported", self.state, "--json"]
        r1 = run(reap + ["--min-age", "1h"])
        dec1 = [json.loads(l) for l in r1.stdout.splitlines()]
        rep1 = sorted(x["pid"] for x in dec1 if x["decision"] == "reported")
        check(rep1 == sorted(boxes), "first run reported %r, expected %r\n%s" % (
            rep1, sorted(boxes), r1.stderr.decode(errors="replace")))
        check(all(os.path.exists(p.box_path(self)) for p in (a, b, c, d)),
              "--min-age 1h removed a box")
        r2 = run(reap + ["--min-age", "0", "--archive", self.archive])
        dec2 = [json.loads(l) for l in r2.stdout.splitlines()]
        check(not [x for x in dec2 if x["decision"] == "reported"],
              "second run reported again: %r" % dec2)
        check(sorted(x["pid"] for x in dec2 if x["decision"] == "reaped") == sorted(boxes),
              "second run did not reap the four boxes: %r" % dec2)
        r3 = run(reap + ["--min-age", "0"])
        check(b"reported" not in r3.stdout, "third run reported: %r" % r3.stdout)

        run(["journalctl", "--flush"], timeout=30)
        local = ours(parse_export(run(["journalctl", "-o", "export", "--no-pager",
                                       "MESSAGE_ID=" + MESSAGE_ID]).stdout))
        check(sorted(int(e["BB_PID"]) for e in local) == sorted(boxes),
              "local journal: %r" % [e.get("BB_PID") for e in local])

        # journalctl -u: the vouched crash, not the forged claim
        if unit:
            u = ours(parse_export(run(["journalctl", "-o", "export", "--no-pager",
                                       "-u", unit[0]]).stdout))
            check([int(e["BB_PID"]) for e in u] == [a.pid],
                  "journalctl -u %s: %r" % (unit[0], [e.get("BB_PID") for e in u]))
        f = ours(parse_export(run(["journalctl", "-o", "export", "--no-pager", "-u",
                                   os.path.basename(forged)]).stdout))
        check(not f, "journalctl -u shows the forged unit's entry")

        self.ship()
        self.check_central(a, b, c, d, boxes, unit, inv, forged)
        self.check_rate()
        self.check_budget()
        self.check_crash_loop()
        self.check_catalog(a)
        print("journal_e2e: ok (%s)" % ("with the unit case" if unit else "no unit case"))

    def ship(self):
        port = free_port()
        remote = self.d.start([REMOTE, "--listen-http=127.0.0.1:%d" % port,
                               "--output=" + self.central + "/"], self.logs)
        wait_for(lambda: port_open(port) or remote.poll() is not None, "journal-remote")
        check(remote.poll() is None, "systemd-journal-remote exited (daemons.log)")
        # --follow=no: upload what is there and stop; it can spin on an
        # empty directory, hence the timeout
        run([UPLOAD, "--url=http://127.0.0.1:%d" % port, "--directory=/var/log/journal",
             "--follow=no"], timeout=120)
        self.d.stop(remote)
        check(any(n.endswith(".journal") for n in os.listdir(self.central)),
              "no journal file in the central directory")

    def check_central(self, a, b, c, d, boxes, unit, inv, forged):
        def box_of(e):
            """BB_BOX as the box's bytes: bb-reap sends a zstd frame
            (BB_BOX_ENCODING=zstd) unless --compress=none."""
            if e.get("BB_BOX_ENCODING") != b"zstd":
                return e["BB_BOX"]
            check(e["BB_BOX"][:4] == b"\x28\xb5\x2f\xfd", "BB_BOX_ENCODING=zstd, no frame")
            return run(["zstd", "-d", "-c"], input=e["BB_BOX"], stdin=None).stdout

        ents = ours(parse_export(run(["journalctl", "-D", self.central, "-o", "export",
                                      "--no-pager", "MESSAGE_ID=" + MESSAGE_ID]).stdout))
        by = {}
        for e in ents:
            by.setdefault(int(e["BB_PID"]), []).append(e)
        for p in boxes:
            check(len(by.get(p, [])) == 1, "pid %d: %d central entries" % (p, len(by.get(p, []))))
        ea, eb, ec, ed = (by[p.pid][0] for p in (a, b, c, d))

        # A: the crash, box and all
        check(ea["BB_SIGNAL"] == b"11" and ea["BB_SIGNAL_NAME"] == b"SIGSEGV", "A signal")
        check(ea["PRIORITY"] == b"2" and ea["BB_LIVENESS"] == b"crashed", "A priority, liveness")
        check(box_of(ea) == boxes[a.pid], "A: BB_BOX differs from the box (%d vs %d bytes)"
              % (len(box_of(ea)), len(boxes[a.pid])))
        check(ea["BB_UID"] == str(NOBODY).encode(), "A: BB_UID")
        msg = ea["MESSAGE"].decode()
        check(re.fullmatch(r"\"ev\\x1b\]0;x\\x07il\\x7f\"\[%d\] \(uid %d\) crashed: SIGSEGV at "
                           r"bbx_crasher\+0x[0-9a-f]+ \(6 records\)" % (a.pid, NOBODY), msg),
              "A: MESSAGE %r" % msg)
        check(re.fullmatch(rb"[0-9a-f]{16}", ea["BB_STACK_HASH"]), "A: BB_STACK_HASH")
        stack = ea["BB_STACK"].decode().split("\n")
        check(re.match(r"#0 0x[0-9a-f]{16} \S*bbx_crasher\+0x[0-9a-f]+ [0-9a-f]{40}$",
                       stack[0]), "A: BB_STACK %r" % stack[:2])
        recs = [json.loads(l) for l in ea["BB_RECORDS"].split(b"\n") if l]
        check(recs[-1].get("key") == "phase" and recs[-1].get("value") == "about to crash",
              "A: last record %r" % recs[-1:])
        st = {s["key"]: s["value"] for s in
              (json.loads(l) for l in ea["BB_STATE_JSON"].split(b"\n") if l)}
        check(st == {"request": "GET /index", "inflight": 3}, "A: state %r" % st)
        check(ea["BB_INVOCATION_ID"] == inv.encode(), "A: invocation id")
        if unit:
            check(ea.get("OBJECT_SYSTEMD_UNIT") == unit[0].encode() and
                  ea.get("OBJECT_SYSTEMD_INVOCATION_ID") == inv.encode() and
                  ea.get("BB_UNIT_VOUCHED") == b"1", "A: unit fields %r" % {
                      k: v for k, v in ea.items() if "UNIT" in k})
        check("OBJECT_PID" not in ea, "A: OBJECT_PID set")

        # B: killed: no signal, priority 4, box attached
        check("BB_SIGNAL" not in eb and eb["PRIORITY"] == b"4" and
              eb["BB_LIVENESS"] == b"orphaned", "B: %r" % eb.get("MESSAGE"))
        check(box_of(eb) == boxes[b.pid], "B: BB_BOX differs from the box")
        check(re.fullmatch(rb"[0-9a-f]{40}", eb.get("BB_BUILD_ID", b"")) and
              eb["BB_BUILD_ID"] == ea["BB_BUILD_ID"], "B: BB_BUILD_ID %r" % eb.get("BB_BUILD_ID"))
        # C: over the cap: the summary, and it says so
        check("BB_BOX" not in ec and b"--journal-box-max" in ec.get("BB_BOX_OMITTED", b"") and
              b"not attached" in ec["MESSAGE"], "C: %r" % ec.get("MESSAGE"))
        check(int(ec["BB_BOX_SIZE"]) == len(boxes[c.pid]) > 8 << 20, "C: BB_BOX_SIZE")
        # D: the forged unit stays a claim
        check(ed.get("BB_UNIT") == os.path.basename(forged).encode() and
              ed.get("BB_UNIT_VOUCHED") == b"0" and "OBJECT_SYSTEMD_UNIT" not in ed,
              "D: unit fields %r" % {k: v for k, v in ed.items() if "UNIT" in k})

        # bb-extract on the central journal: what it prints of the file
        jd = [self.extract, "--journal-directory", self.central]
        for fmt in ([], ["--json"], ["--perfetto"]):
            for p in (a, b):
                fromj = run(jd + fmt + ["--no-symbols", str(p.pid)], ok=None)
                fromf = run([self.extract, "--any-owner", "--no-symbols"] + fmt +
                            ["--path", os.path.join(self.work, "copy.%d" % p.pid)], ok=None)
                check(fromj.returncode == fromf.returncode,
                      "pid %d %r: exit %d from the journal, %d from the file\n%r" % (
                          p.pid, fmt, fromj.returncode, fromf.returncode, fromj.stderr))
                if fmt == ["--perfetto"]:
                    # the trace of the box alone (no entry fields before it),
                    # the file's byte for byte: a Trace's first packet
                    check(fromj.stdout == fromf.stdout and fromj.stdout[:1] == b"\x0a",
                          "pid %d: --perfetto from the journal differs from the file's"
                          % p.pid)
                elif fmt:
                    jl, fl = fromj.stdout.splitlines(), fromf.stdout.splitlines()
                    check(jl[:-1] == fl[:-1], "pid %d: JSON records differ" % p.pid)
                    js, fs = json.loads(jl[-1])["summary"], json.loads(fl[-1])["summary"]
                    check(js.pop("owner_proof") == "as uploaded by remote-127.0.0.1: not "
                          "proven; symbols as uid %d" % NOBODY and "file_uid" not in js,
                          "pid %d: the owner of a collector's box: %r" % (p.pid, js))
                    js.pop("path"), fs.pop("path"), fs.pop("file_uid")
                    check(js == fs, "pid %d: summaries differ\n%r\n%r" % (p.pid, js, fs))
                else:
                    check(fromj.stdout == fromf.stdout, "pid %d: text differs" % p.pid)
        t = run(jd + [str(a.pid)], ok=(0,)).stdout.decode()
        check(re.search(r"^\*\*\* crashed: SIGSEGV \(11\)", t, re.M) and
              re.search(r" step=4$", t, re.M) and "phase=\"about to crash\"" in t,
              "bb-extract --journal-directory %d: %r" % (a.pid, t[:800]))
        sc = run(jd + [str(c.pid)], ok=(4,))
        check(b"BB_BOX_OMITTED=" in sc.stdout and b"not shipped" in sc.stderr,
              "C from the journal: %r %r" % (sc.stdout[:300], sc.stderr))
        ls = run(jd + ["--list"]).stdout.decode().splitlines()
        check(len(ls) == 5 and all(any(" %d " % p.pid in l for l in ls) for p in (a, b, c, d)),
              "--list: %r" % ls)
        # every state word whole (A crashed by SIGSEGV, B killed: orphaned)
        check(any(" %d " % a.pid in l and " crashed (SIGSEGV) " in l for l in ls) and
              any(" %d " % b.pid in l and " orphaned " in l for l in ls),
              "--list states: %r" % ls)
        machine = ea["_MACHINE_ID"].decode()
        run(jd + ["--machine", machine, str(a.pid)])
        run(jd + ["--machine", "0" * 32, str(a.pid)], ok=(4,))
        run(jd + ["--boot", ea["BB_BOOT_ID"].decode(), str(a.pid)])
        # the local journal too
        run([self.extract, "--journal", "--no-symbols", str(b.pid)])

    def check_rate(self):
        """--journal-rate: root has two entries this hour (B, C); at rate 2
        a new root box waits, kept by --min-age, and a later run with
        room reports it, once."""
        e = Proc(self, "wait")
        e.kill()
        reap = [self.reap, "--dir", self.boxes, "--journal", "--journal-reported", self.state,
                "--json", "--min-age", "1h"]
        dec = [json.loads(l) for l in run(reap + ["--journal-rate", "2"]).stdout.splitlines()]
        de = [x for x in dec if x.get("pid") == e.pid]
        check(not [x for x in de if x["decision"] == "reported"] and
              [x for x in de if "--journal-rate" in x.get("reason", "")],
              "rate 2: %r" % de)
        for want in ([e.pid], []):   # reported by the next run with room, once
            dec = [json.loads(l) for l in run(reap + ["--journal-rate", "3"]).stdout.splitlines()]
            rep = [x["pid"] for x in dec if x["decision"] == "reported"]
            check(rep == want, "rate 3: reported %r, expected %r" % (rep, want))
        local = ours(parse_export(run(["journalctl", "-o", "export", "--no-pager",
                                       "MESSAGE_ID=" + MESSAGE_ID,
                                       "BB_PID=%d" % e.pid]).stdout))
        check(len(local) == 1, "rate: %d local entries of pid %d" % (len(local), e.pid))

    def check_crash_loop(self):
        """libblackbox's crash-loop budget: 12 restarts of a program that
        crashes at start, a budget of two boxes; the boxes the budget
        removed are counted in the entries of the boxes left
        (BB_BUDGET_REMOVED): entries plus counts are the 12 deaths.  As
        root, with the copy of the crasher made for uid 65534: another
        file, so another program than the crasher whose boxes root still
        has (they would be deaths of the same program, counted too)."""
        env = dict(os.environ, BLACKBOX_DIR=self.boxes, BLACKBOX_SIZE="128k",
                   BLACKBOX_BUDGET="384k", LD_LIBRARY_PATH=self.bindir)
        env.pop("INVOCATION_ID", None)
        pids = []
        for _ in range(12):
            p = subprocess.Popen([self.nobody_crasher, "crash"], stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
            line = p.stdout.readline()
            check(line.strip().isdigit(), "crash loop: no pid (%r)" % line)
            pids.append(int(line))
            check(p.wait(20) == -signal.SIGSEGV, "crash loop: no SIGSEGV")
            p.stdout.close()
        run([self.reap, "--dir", self.boxes, "--journal", "--journal-reported", self.state,
             "--json", "--min-age", "0", "--journal-rate", "1000"])
        run(["journalctl", "--flush"], timeout=30)
        local = [e for e in ours(parse_export(run(["journalctl", "-o", "export", "--no-pager",
                                                   "MESSAGE_ID=" + MESSAGE_ID]).stdout))
                 if int(e["BB_PID"]) in pids]
        removed = sum(int(e.get("BB_BUDGET_REMOVED", b"0")) for e in local)
        check(len(local) < 12 and removed > 0, "crash loop: %d entries, %d removed counted" % (
            len(local), removed))
        check(len(local) + removed == 12, "crash loop: %d entries + %d removed, not 12 deaths"
              % (len(local), removed))

    def check_budget(self):
        """--journal-box-budget: root's boxes sent today are B's (C was over
        the cap): another box of that size does not fit 1 MiB, so its entry
        is the summary, and says why."""
        f = Proc(self, "wait")
        f.kill()
        r = run([self.reap, "--dir", self.boxes, "--journal=box", "--journal-reported",
                 self.state, "--json", "--min-age", "1h", "--journal-box-budget", "1M"])
        dec = [json.loads(l) for l in r.stdout.splitlines()]
        df = [x for x in dec if x.get("pid") == f.pid and x["decision"] == "reported"]
        check(len(df) == 1 and "--journal-box-budget" in df[0].get("journal", ""),
              "budget: %r" % dec)
        local = ours(parse_export(run(["journalctl", "-o", "export", "--no-pager",
                                       "MESSAGE_ID=" + MESSAGE_ID,
                                       "BB_PID=%d" % f.pid]).stdout))
        check(len(local) == 1 and "BB_BOX" not in local[0] and
              b"--journal-box-budget" in local[0].get("BB_BOX_OMITTED", b""),
              "budget: local entry %r" % [sorted(e) for e in local])

    def check_catalog(self, a):
        """The catalog parses, and journalctl -x shows its text, which
        quotes no field of the entry (bind_catalog: the index is built in
        a scratch root, the host's never touched)."""
        bind_catalog(self.work, self.catalog)
        out = run(["journalctl", "-D", self.central, "-x", "--no-pager",
                   "MESSAGE_ID=" + MESSAGE_ID, "BB_PID=%d" % a.pid]).stdout.decode()
        check("Subject: A process died and left its flight recorder behind" in out and
              "bb-extract --journal PID" in out and "Only entries whose _UID is 0" in out,
              "journalctl -x: %r" % out[:1500])


def inside(argv):
    return run_suite(Test(argv), "journal_e2e")


def main():
    argv = sys.argv[1:]
    if len(argv) < 5:
        print("usage: journal_e2e.py BB_REAP BB_EXTRACT CRASHER LIBBLACKBOX_SO CATALOG")
        return 2
    enter(sys.argv, "journal_e2e", timeout=600)
    return inside(argv)


if __name__ == "__main__":
    sys.exit(main())
