#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Description: the fleet view.  Three hosts, each with its own machine id,
hostname and journald, run services that die; `bb-reap --journal` reports
them and systemd-journal-upload carries each host's journal to its own
systemd-journal-remote output on one collector, as README "Fleet" says.
The collector has none of the programs, only a build-id store of their
debug files.  Then, on the collector:

  - frames named from the store alone: a shipped box's crash block, and
    an entry whose box was not shipped (its BB_STACK);
  - one group for the same bug in two builds of a program (every offset
    moved), on three hosts, with both builds and their releases
    (BB_RELEASE) listed; without symbols
    (--no-symbols) it splits by build, as bb-extract(1) GROUPS says;
  - two groups for the same assert() in two programs, no frame of the C
    library in any group;
  - --group ID extracts the newest box of the group; --list --group and
    the filters (--comm, --state, --machine, --since, --until) choose the
    entries they say;
  - deaths whose boxes were removed while --journal-rate kept them out of
    the journal are counted in the owner's next entry (BB_SUPPRESSED), and
    those of a crash loop whose boxes the library's budget removed before
    bb-reap ran in the boxes it left (BB_BUDGET_REMOVED); --groups adds
    both to its group's deaths;
  - an OOM kill of a process in a PID namespace of its own told as one
    (the kernel's pid is not the box's);
  - boxes shipped as zstd frames (BB_BOX_ENCODING=zstd, the default) and
    as they are (--compress=none), bb-extract reading both;
  - how each group died (signal, oom-kill, orphaned: one vocabulary in
    text, JSON and --state) and its top frame's file:line; --list in time
    order, newest last; no line of --list or --groups wider than 120
    columns without --wide.

Then, on a collector of 170 entries from 70 machines written by
systemd-journal-remote from the export format (two senders, interleaved
in time): exact host counts past 64, each release of a group with its
count and first and last seen, the releases a group was not seen in, and
--release.

    fleet_e2e.py BB_REAP BB_EXTRACT SRC INCDIR LIBBLACKBOX_A SANITIZE CC [CC ARGS...]

Root only, in a private mount namespace (tests/helpers/journalns.py): each
host's journald runs in a UTS namespace of its own (its hostname) with a
machine id bound over /etc/machine-id, its journal in a directory of its
own.  Every daemon started is killed at the end, every wait is bounded.
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))
from journalns import (JOURNALD, MESSAGE_ID, REMOTE, UPLOAD, Daemons, check,  # noqa: E402
                       enter, entries, export_entry, free_port, mount, port_open, private_dirs,
                       remote_import, rmdir_retry, run, run_suite, wait_for)

HOSTS = ("web-01", "web-02", "web-03")


def build_id(path):
    m = re.search(r"Build ID: ([0-9a-f]+)", run(["readelf", "-n", path]).stdout.decode())
    return m.group(1)


class Fleet:
    def __init__(self, argv):
        self.reap, self.extract, self.src, self.inc, self.liba, self.sanitize = argv[:6]
        self.cc = argv[6:]
        self.d = Daemons()
        self.procs = []
        self.cgroups = []

    # -- the programs: stripped, debug files in the store only --
    def svc_env(self, boxes):
        """The services' environment.  Under UBSan a service linked with
        the static library reports the address of the library's
        initial-exec TLS block as a null pointer in bb__begin() (a false
        report: the same write goes on and lands in the box); the services
        are the fixture here, bb-reap and bb-extract the subjects, so they
        report it without halting."""
        env = dict(os.environ, BLACKBOX_DIR=boxes)
        if self.sanitize not in ("", "none"):
            env["UBSAN_OPTIONS"] = "print_stacktrace=0:halt_on_error=0"
        return env

    def build(self):
        self.store = os.path.join(self.work, "store")
        self.bins = {}
        flags = ["-O2", "-g", "-I" + self.inc]
        if self.sanitize not in ("", "none"):
            flags.append("-fsanitize=" + self.sanitize)
        for name, defs in (("api-gw.1", ["-DFLEET_BUILD=1"]), ("api-gw.2", ["-DFLEET_BUILD=2"]),
                           ("worker", ["-DFLEET_BUILD=1", "-DFLEET_OTHER=1"])):
            full = os.path.join(self.work, name + ".full")
            run(self.cc + flags + defs + [os.path.join(self.src, "fleet_svc.c"), "-o", full,
                                          self.liba, "-lcbor", "-lpthread"])
            bid = build_id(full)
            d = os.path.join(self.store, ".build-id", bid[:2])
            os.makedirs(d, exist_ok=True)
            run(["objcopy", "--only-keep-debug", full, os.path.join(d, bid[2:] + ".debug")])
            stripped = os.path.join(self.work, name)
            run(["strip", "--strip-all", "-o", stripped, full])
            os.unlink(full)
            self.bins[name] = (stripped, bid)
        check(self.bins["api-gw.1"][1] != self.bins["api-gw.2"][1], "two builds, one build id")

    # -- one host: its journald, its deaths, bb-reap, the upload --
    def host(self, n, name, deaths, reap_args, extra=None):
        hd = os.path.join(self.work, name)
        os.mkdir(hd, 0o755)
        mid = os.urandom(16).hex()
        with open(os.path.join(hd, "machine-id"), "w") as f:
            f.write(mid + "\n")
        mount("--bind", os.path.join(hd, "machine-id"), "/etc/machine-id")
        private_dirs(hd)
        jd = self.d.start(["unshare", "-u", "sh", "-c", 'hostname "$0" && exec "$1"', name,
                           JOURNALD], self.logs)
        wait_for(lambda: os.path.exists("/run/systemd/journal/socket") or jd.poll() is not None,
                 "journald of " + name)
        check(jd.poll() is None, "journald of %s exited (daemons.log)" % name)
        # the programs where the hosts install them; the collector has none
        bindir = os.path.join(hd, "opt", "fleet", "bin")
        os.makedirs(bindir)
        boxes = os.path.join(hd, "boxes")
        os.mkdir(boxes)
        pids = []
        for prog, mode in deaths:
            exe = os.path.join(bindir, "worker" if prog == "worker" else "api-gw")
            shutil.copy2(self.bins[prog][0], exe)
            if mode.startswith("hog") and not self.oom_cgroup:
                continue

            def pre(mode=mode):
                if mode.startswith("hog"):
                    with open(os.path.join(self.oom_cgroup, "cgroup.procs"), "w") as f:
                        f.write(str(os.getpid()))
            # hog-ns: in a PID namespace of its own (a container), under a
            # shell that is the namespace's init: the box has its pid there
            argv = ["unshare", "--pid", "--fork", "sh", "-c", '"$0" hog; exit 9', exe] \
                if mode == "hog-ns" else [exe, mode]
            p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, env=self.svc_env(boxes),
                                 preexec_fn=pre)
            self.procs.append(p)
            line = p.stdout.readline()
            if not line.strip():
                p.wait(60)
                raise AssertionError("%s %s did not start: status %r, %r" %
                             (prog, mode, p.returncode, p.stderr.read()[-800:]))
            pid = int(line)
            if mode == "wait":
                p.kill()
            rc = p.wait(60)
            want = {"segv": -signal.SIGSEGV, "assert": -signal.SIGABRT, "wait": -signal.SIGKILL,
                    "hog": -signal.SIGKILL, "hog-ns": 9}
            check(rc == want[mode], "%s %s %s: exit %r" % (name, prog, mode, rc))
            pids.append((prog, mode, pid))
        state = os.path.join(hd, "reported")
        reap = [self.reap, "--dir", boxes, "--journal-reported", state, "--json"] + reap_args + \
               ["--min-age", "1h"]
        run(reap)
        if extra:
            extra(reap[:-2], boxes, bindir, pids)
        run(["journalctl", "--flush"], timeout=30)
        port = free_port()
        remote = self.d.start([REMOTE, "--listen-http=127.0.0.1:%d" % port, "--split-mode=none",
                               "--output=%s/remote-%s.journal" % (self.central, name)],
                              self.logs)
        wait_for(lambda: port_open(port) or remote.poll() is not None, "journal-remote")
        check(remote.poll() is None, "systemd-journal-remote exited (daemons.log)")
        run([UPLOAD, "--url=http://127.0.0.1:%d" % port, "--directory=/var/log/journal",
             "--follow=no"], timeout=120)
        self.d.stop(remote)
        self.d.stop(jd)
        return mid, pids

    def make_oom_cgroup(self):
        """A cgroup where the OOM killer kills a process at 64 MiB (None,
        with the reason printed, where this machine gives none)."""
        self.oom_cgroup = None
        v2 = os.path.exists("/sys/fs/cgroup/cgroup.subtree_control")
        root = "/sys/fs/cgroup" if v2 else "/sys/fs/cgroup/memory"
        try:
            if v2:
                with open(os.path.join(root, "cgroup.subtree_control")) as f:
                    if "memory" not in f.read().split():
                        raise OSError("no memory controller for child cgroups")
            path = os.path.join(root, "bb-fleet-oom-%d" % os.getpid())
            os.mkdir(path)
            self.cgroups.append(path)
            limits = ((("memory.max", "64M"), ("memory.swap.max", "0")) if v2 else
                      (("memory.limit_in_bytes", "64M"), ("memory.memsw.limit_in_bytes", "64M")))
            for k, v in limits:
                if os.path.exists(os.path.join(path, k)):
                    with open(os.path.join(path, k), "w") as f:
                        f.write(v)
                elif k != limits[1][0]:
                    raise OSError("no " + k)
            self.oom_cgroup = path
        except OSError as e:
            print("fleet_e2e: no cgroup with a memory limit (%s): the OOM case is left out" % e)

    def rate_limited(self, reap, boxes, bindir, pids):
        """web-03: two more deaths over --journal-rate, their boxes removed
        unreported (--min-age 0), then one more: its entry counts the two."""
        late = [self.die(bindir, boxes, "segv") for _ in range(2)]
        pids.extend(late)
        dec = [json.loads(x) for x in run(reap + ["--min-age", "0", "--journal-rate", "2"])
               .stdout.splitlines()]
        for _, _, pid in late:
            mine = [x for x in dec if x.get("pid") == pid]
            check([x["decision"] for x in mine] == ["skipped", "reaped"] and
                  "--journal-rate" in mine[0].get("reason", ""),
                  "web-03: pid %d over --journal-rate: %r" % (pid, mine))
        # another program of the same owner dies first: the rate-limited
        # deaths are api-gw's, not its (BB_SUPPRESSED per program)
        shutil.copy2(self.bins["worker"][0], os.path.join(bindir, "worker"))
        pids.append(self.die(bindir, boxes, "assert", prog="worker"))
        pids.append(self.die(bindir, boxes, "segv"))
        run(reap + ["--min-age", "0", "--journal-rate", "100"])
        # a crash loop between two runs of bb-reap: each start's budget
        # (BLACKBOX_BUDGET below one box) removes the program's dead boxes
        # but the newest ones (bb_init(3), CRASH LOOPS), and the boxes left
        # count those it removed (blackbox.budget_removed)
        loop = boxes + "-loop"
        os.mkdir(loop)
        for _ in range(4):
            self.die(bindir, loop, "segv", {"BLACKBOX_BUDGET": "4K"})
        left = [int(n.split(".")[1]) for n in os.listdir(loop) if n.startswith("blackbox.")]
        check(1 <= len(left) < 4, "crash loop: %r left" % os.listdir(loop))
        self.loop_removed = 4 - len(left)
        pids.extend(("api-gw.1", "segv-loop", pid) for pid in left)
        run([loop if x == boxes else x for x in reap] +
            ["--min-age", "0", "--journal-rate", "100"])

    def die(self, bindir, boxes, mode, env=None, prog="api-gw"):
        exe = os.path.join(bindir, prog)
        p = subprocess.Popen([exe, mode], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE,
                             env=dict(self.svc_env(boxes), **(env or {})))
        self.procs.append(p)
        pid = int(p.stdout.readline())
        sig = signal.SIGABRT if mode == "assert" else signal.SIGSEGV
        check(p.wait(20) == -sig, "%s %s did not die of %s" % (prog, mode, sig.name))
        return ("api-gw.1" if prog == "api-gw" else prog, mode, pid)

    def bx(self, *args, ok=(0,)):
        return run([self.extract, "--journal-directory", self.central] + list(args), ok=ok)

    def groups(self, *args):
        return [json.loads(x) for x in self.bx("--groups", "--json", *args).stdout.splitlines()]

    def main(self):
        self.work = tempfile.mkdtemp(prefix="bbf.")
        os.chmod(self.work, 0o755)
        self.central = os.path.join(self.work, "central")
        os.mkdir(self.central)
        self.logs = open(os.path.join(self.work, "daemons.log"), "wb")
        self.build()
        self.make_oom_cgroup()
        m1, p1 = self.host(1, HOSTS[0], [("api-gw.1", "segv"), ("api-gw.1", "segv"),
                                         ("api-gw.1", "assert"), ("worker", "assert"),
                                         ("api-gw.1", "wait"), ("api-gw.1", "hog"),
                                         ("api-gw.1", "hog-ns")],
                           ["--journal=box"])
        # web-01 ships its boxes compressed (the default), web-02 as they are
        m2, p2 = self.host(2, HOSTS[1], [("api-gw.2", "segv"), ("api-gw.2", "segv"),
                                         ("worker", "assert")], ["--journal=box",
                                                                 "--compress=none"])
        # web-03 ships summaries: no box, the stack only
        m3, p3 = self.host(3, HOSTS[2], [("api-gw.2", "segv"), ("api-gw.1", "segv")],
                           ["--journal=summary"], extra=self.rate_limited)
        check(sorted(n for n in os.listdir(self.central)) ==
              sorted("remote-%s.journal" % h for h in HOSTS), "central: %r"
              % os.listdir(self.central))
        ents = entries("-D", self.central)
        check(len({e["_MACHINE_ID"] for e in ents}) == 3 and
              {e["_HOSTNAME"].decode() for e in ents} == set(HOSTS),
              "hosts: %r" % {(e["_HOSTNAME"], e["_MACHINE_ID"]) for e in ents})
        segv = [x for x in p1 + p2 + p3 if x[1] == "segv"]
        # two withheld by --journal-rate; and the crash loop's boxes left
        reported_segv = len(segv) - 2 + sum(x[1] == "segv-loop" for x in p3)
        lr = self.loop_removed

        g = self.groups("--debug-dir", self.store)
        byfirst = {}
        for x in g:
            byfirst.setdefault(x["top_frames"].split(" < ")[0], []).append(x)
        # one bug, two builds, three hosts
        gs = byfirst.get("parse_header", [])
        check(len(gs) == 1, "segv: %d groups: %r" % (len(gs), g))
        gs = gs[0]
        check(gs["top_frames"] == "parse_header < handle_request < main" and gs["named"] and
              gs["count"] == reported_segv and gs["machines"] == 3 and gs["kind"] == "app",
              "segv group: %r" % gs)
        check(gs["suppressed"] == 2, "segv: suppressed %r, expected 2" % gs["suppressed"])
        # every death counted: entries, rate-limited, removed by the budget
        check(gs["budget_removed"] == lr and gs["deaths"] == reported_segv + 2 + lr,
              "segv: deaths %r, budget %r (%d removed)" % (gs["deaths"], gs["budget_removed"],
                                                          lr))
        bud = [int(e["BB_BUDGET_REMOVED"]) for e in ents if "BB_BUDGET_REMOVED" in e]
        check(sum(bud) == lr, "BB_BUDGET_REMOVED: %r, %d removed" % (bud, lr))
        sent = [e for e in ents if "BB_SUPPRESSED" in e]
        check(len(sent) == 1 and sent[0]["BB_SUPPRESSED"] == b"2" and
              sent[0]["_HOSTNAME"] == b"web-03", "BB_SUPPRESSED: %r" % sent)
        check(sorted(b["build_id"] for b in gs["builds"]) ==
              sorted((self.bins["api-gw.1"][1], self.bins["api-gw.2"][1])),
              "segv builds: %r" % gs["builds"])
        check(sorted(b.get("release") for b in gs["builds"]) == ["1.4.2", "1.4.3"],
              "segv releases: %r" % gs["builds"])
        # the same assert() in two programs: two groups
        ga = byfirst.get("check_config", [])
        check(sorted((x["comm"], x["count"]) for x in ga) == [("api-gw", 1), ("worker", 3)],
              "assert groups: %r" % ga)
        check(all(x["suppressed"] == 0 for x in ga), "rate-limited api-gw deaths counted for "
              "another program: %r" % ga)
        check(all(x["top_frames"] == "check_config < main" for x in ga), "assert: %r" % ga)
        check(not any(re.search(r"__libc|abort|raise|__assert|_start|pthread", x["top_frames"])
                      for x in g), "a system frame in a group: %r" % g)
        check(gs["how"] == "SIGSEGV" and re.fullmatch(r"fleet_svc\.c:\d+", gs.get("where", "")),
              "segv: how %r where %r" % (gs["how"], gs.get("where")))
        # the other builds of api-gw's release did not hit its assert
        gaa = [x for x in byfirst.get("check_config", []) if x["comm"] == "api-gw"]
        check(len(gaa) == 1 and gaa[0]["how"] == "SIGABRT" and
              [r["release"] for r in gaa[0]["releases"]] == ["1.4.2"] and
              gaa[0]["not_seen_in"] == [{"release": "1.4.3", "deaths": 3, "hosts": 2}],
              "api-gw assert: releases, not seen in: %r" % gaa)
        check([(r["release"], r["count"]) for r in gs["releases"]] ==
              [("1.4.2", reported_segv - 3), ("1.4.3", 3)] and
              all(r["first_seen"] <= r["last_seen"] for r in gs["releases"]),
              "segv releases: %r" % gs["releases"])
        # killed: by SIGKILL, and by the OOM killer (the kernel's log says so)
        go = [x for x in g if x["kind"] == "orphaned"]
        check(sorted((x["count"], x["oom_kill"], x["liveness"], x["how"]) for x in go) ==
              ([(1, False, "orphaned", "orphaned"), (2, True, "oom-kill", "oom-kill")]
               if self.oom_cgroup else [(1, False, "orphaned", "orphaned")]),
              "orphaned: %r" % go)
        if self.oom_cgroup:
            hog = [x for x in p1 if x[1] == "hog"][0][2]
            eo = [e for e in ents if e["BB_PID"] == str(hog).encode()]
            ew = [e for e in ents if e["BB_PID"] == str(
                [x for x in p1 if x[1] == "wait"][0][2]).encode()]
            check(len(eo) == 1 and eo[0].get("BB_OOM_KILL") == b"1" and
                  b"was killed by the OOM killer" in eo[0]["MESSAGE"],
                  "OOM kill: %r" % [(e.get("BB_OOM_KILL"), e["MESSAGE"]) for e in eo])
            # in its own PID namespace: the kernel's pid is not the box's
            hns = [x for x in p1 if x[1] == "hog-ns"][0][2]
            en = [e for e in ents if e["BB_PID"] == str(hns).encode() and
                  e["_HOSTNAME"] == b"web-01" and e["BB_LIVENESS"] == b"orphaned"]
            check(hns < 10 and len(en) == 1 and en[0].get("BB_OOM_KILL") == b"1",
                  "OOM kill in a PID namespace (pid %d there): %r" % (
                      hns, [(e.get("BB_OOM_KILL"), e["MESSAGE"]) for e in en]))
            check(len(ew) == 1 and ew[0].get("BB_OOM_KILL") == b"0" and
                  b"died without a word: SIGKILL, _exit or exec" in ew[0]["MESSAGE"],
                  "SIGKILL: %r" % [(e.get("BB_OOM_KILL"), e["MESSAGE"]) for e in ew])
        # by offsets alone (no symbols): one group per build
        n = self.groups("--no-symbols")
        ns = [x for x in n if x["top_frames"].startswith("api-gw+0x") and x["liveness"] == "crashed"
              and x["count"] >= 3]
        check(len(ns) == 2 and not any(x["named"] for x in ns) and
              sorted(len(x["builds"]) for x in ns) == [1, 1], "--no-symbols: %r" % n)

        # the text view says the same
        t = self.bx("--groups", "--debug-dir", self.store).stdout.decode()
        check(re.search(r"^%s +%d +3 +\S+ \S+ +\S+ \S+ +SIGSEGV +api-gw$" % (
            gs["group"], reported_segv + 2 + lr), t, re.M)
              and re.search(r"^    frames: parse_header \(fleet_svc\.c:\d+\) < handle_request < "
                            r"main$", t, re.M) and
              "    not reported: %d more deaths (--journal-rate 2, crash-loop budget %d)\n"
              % (2 + lr, lr) in t, "--groups text:\n%s" % t)
        check(max(len(x) for x in t.splitlines()) <= 120, "--groups wider than 120:\n%s" % t)
        t = self.bx("--list", "--no-symbols").stdout.decode()
        check(max(len(x) for x in t.splitlines()) <= 120, "--list wider than 120:\n%s" % t)
        check(len(self.bx("--list", "--wide", "--no-symbols").stdout.decode().splitlines()[1])
              > 120, "--list --wide")

        # boxes shipped as zstd frames (web-01) and as they are (web-02):
        # bb-extract reads both
        boxed = [e for e in ents if "BB_BOX" in e]
        zst = [e for e in boxed if e["_HOSTNAME"] == b"web-01"]
        raw = [e for e in boxed if e["_HOSTNAME"] == b"web-02"]
        check(zst and all(e.get("BB_BOX_ENCODING") == b"zstd" and
                          e["BB_BOX"][:4] == b"\x28\xb5\x2f\xfd" and
                          len(e["BB_BOX"]) * 4 < int(e["BB_BOX_SIZE"]) for e in zst),
              "web-01: BB_BOX not compressed: %r" % [(e.get("BB_BOX_ENCODING"), len(e["BB_BOX"]),
                                                      e["BB_BOX_SIZE"]) for e in zst])
        check(raw and all("BB_BOX_ENCODING" not in e and
                          len(e["BB_BOX"]) == int(e["BB_BOX_SIZE"]) for e in raw),
              "web-02: BB_BOX not as in the file: %r" % [(e.get("BB_BOX_ENCODING"),
                                                          len(e["BB_BOX"])) for e in raw])
        for m, pid in ((m1, p1[0][2]), (m2, p2[0][2])):
            out = self.bx("--json", "--machine", m, str(pid)).stdout.splitlines()
            check(json.loads(out[-1])["summary"]["pid"] == pid, "box of %d: %r" % (pid, out[-1]))

        # frames named on the collector: a shipped box, and a stack alone
        pid = p1[0][2]
        t = self.bx("--debug-dir", self.store, "--machine", m1, str(pid)).stdout.decode()
        check(re.search(r"^  #0 .*/opt/fleet/bin/api-gw\+0x[0-9a-f]+  parse_header\+0x", t, re.M)
              and re.search(r"^  #1 .*  handle_request\+0x", t, re.M), "box of %d:\n%s" % (pid, t))
        pid = p3[0][2]
        r = self.bx("--debug-dir", self.store, "--machine", m3, str(pid), ok=(4,))
        t = r.stdout.decode()
        check("BB_STACK=" in t and re.search(r"^  #0 .*api-gw\+0x[0-9a-f]+  parse_header\+0x", t, re.M)
              and "*** group %s: parse_header < handle_request < main" % gs["group"] in t and
              b"not shipped" in r.stderr, "summary of %d:\n%s\n%r" % (pid, t, r.stderr))
        js = json.loads(self.bx("--json", "--debug-dir", self.store, "--machine", m3, str(pid),
                                ok=(4,)).stdout)
        check(js.get("group") == gs["group"] and
              js["frames"][0].get("function") == "parse_header", "summary JSON: %r" % js)

        # --group: the newest box of the group (web-03 shipped none)
        newest = max((e for e in ents if e.get("BB_BOX_ATTACHED") == b"1" and
                      e.get("BB_LIVENESS") == b"crashed" and b"SIGSEGV" in e["MESSAGE"]),
                     key=lambda e: int(e["__REALTIME_TIMESTAMP"]))
        out = self.bx("--group", gs["group"], "--json", "--debug-dir", self.store).stdout.splitlines()
        check(json.loads(out[-1])["summary"]["pid"] == int(newest["BB_PID"]),
              "--group extracted %r, newest box is pid %s" % (out[-1][:200], newest["BB_PID"]))
        lines = self.bx("--list", "--group", gs["group"], "--debug-dir",
                        self.store).stdout.decode().splitlines()
        check(len(lines) == 1 + reported_segv and all(gs["group"] in x for x in lines[1:]) and
              "GROUP" in lines[0], "--list --group:\n%s" % "\n".join(lines))
        lj = [json.loads(x) for x in self.bx("--list", "--json", "--debug-dir",
                                              self.store).stdout.splitlines()]
        check(len(lj) == len(ents) and
              sum(x.get("group") == gs["group"] for x in lj) == reported_segv, "--list --json")
        # newest last
        check([x["time"] for x in lj] == sorted(x["time"] for x in lj),
              "--list --json not in time order: %r" % [(x["time"], x["sender"]) for x in lj])
        self.bx("--group", "0123456789abcdef", ok=(4,))
        self.bx("--group", "xyz", ok=(2,))

        # filters
        check([x["comm"] for x in self.groups("--comm", "worker", "--debug-dir", self.store)] ==
              ["worker"], "--comm worker")
        check([x["liveness"] for x in self.groups("--state", "orphaned")] == ["orphaned"],
              "--state orphaned")
        check([x["liveness"] for x in self.groups("--state", "oom-kill")] ==
              (["oom-kill"] if self.oom_cgroup else []), "--state oom-kill")
        check(all(x["liveness"] == "crashed" for x in self.groups("--state", "crashed")),
              "--state crashed")
        w1 = self.groups("--machine", m1, "--debug-dir", self.store)
        check(sum(x["count"] for x in w1) == len(p1) and
              all(x["machines"] == 1 for x in w1), "--machine: %r" % w1)
        check(sum(x["count"] for x in self.groups("--since", "-1d", "--no-symbols")) == len(ents),
              "--since -1d")
        check(self.groups("--until", "@1", "--no-symbols") == [], "--until @1")
        check(self.groups("--since", "2999-01-01", "--no-symbols") == [], "--since 2999-01-01")
        self.many()
        print("fleet_e2e: ok (%d entries, %d groups)" % (len(ents), len(g)))

    def many(self):
        """70 machines: 140 deaths of one bug in release 2.0 (two on each,
        sender remote-a), 30 of another in 2.1 on 10 of them (remote-b),
        in between in time."""
        d = os.path.join(self.work, "many")
        os.mkdir(d)
        t0 = (int(time.time()) - 3600) * 1000000
        bid = "%040x" % 0x2b0b

        def death(i, m, rel, off, usec):
            return export_entry([
                ("__REALTIME_TIMESTAMP", str(usec)), ("__MONOTONIC_TIMESTAMP", str(i + 1)),
                ("_BOOT_ID", "%032x" % (m + 1)), ("MESSAGE_ID", MESSAGE_ID),
                ("MESSAGE", "billing[%d] crashed: SIGSEGV" % (1000 + i)), ("PRIORITY", "2"),
                ("_UID", "0"), ("_TRANSPORT", "journal"), ("_HOSTNAME", "node-%02d" % m),
                ("_MACHINE_ID", "%032x" % (0xa000 + m)), ("BB_PID", str(1000 + i)),
                ("BB_STARTTIME", str(i)), ("BB_BOOT_ID", "%032x" % (m + 1)), ("BB_UID", "0"),
                ("BB_COMM", "billing"), ("BB_LIVENESS", "crashed"), ("BB_SIGNAL", "11"),
                ("BB_SIGNAL_NAME", "SIGSEGV"), ("BB_CRASH_KIND", "signal"),
                ("BB_BUILD_ID", bid), ("BB_RELEASE", rel), ("BB_BOX_ATTACHED", "0"),
                ("BB_STACK", "#0 0x%x /srv/billing+0x%x %s\n#1 0x55d000001234 /srv/billing"
                             "+0x1234 %s" % (0x55d000000000 + off, off, bid, bid))])
        a = b"".join(death(i, i % 70, "2.0", 0x4a0, t0 + i * 1000000) for i in range(140))
        b = b"".join(death(200 + i, i % 10, "2.1", 0x5b0, t0 + 500000 + (2 * i + 41) * 1000000)
                     for i in range(30))
        remote_import(a, os.path.join(d, "remote-a.journal"))
        remote_import(b, os.path.join(d, "remote-b.journal"))

        def bx(*args):
            return run([self.extract, "--journal-directory", d, "--no-symbols"] + list(args))

        g = {x["releases"][0]["release"]: x for x in
             (json.loads(x) for x in bx("--groups", "--json").stdout.splitlines())}
        check(sorted(g) == ["2.0", "2.1"], "many: groups %r" % list(g))
        ga, gb = g["2.0"], g["2.1"]
        check(ga["count"] == 140 and ga["machines"] == 70 and len(ga["hosts"]) == 70 and
              all(h["count"] == 2 for h in ga["hosts"]), "many: 2.0 hosts %r" % ga)
        check(gb["count"] == 30 and gb["machines"] == 10 and
              sorted(h["count"] for h in gb["hosts"]) == [3] * 10, "many: 2.1 hosts %r" % gb)
        check(ga["releases"][0]["count"] == 140 and gb["releases"][0]["count"] == 30 and
              ga["releases"][0]["first_seen"] < gb["releases"][0]["first_seen"] <
              gb["releases"][0]["last_seen"] < ga["releases"][0]["last_seen"],
              "many: releases %r %r" % (ga["releases"], gb["releases"]))
        check(ga["not_seen_in"] == [{"release": "2.1", "deaths": 30, "hosts": 10}] and
              gb["not_seen_in"] == [{"release": "2.0", "deaths": 140, "hosts": 70}],
              "many: not seen in %r %r" % (ga["not_seen_in"], gb["not_seen_in"]))
        t = bx("--groups").stdout.decode()
        check(re.search(r"^%s +140 +70 " % ga["group"], t, re.M) and
              "    releases: 2.0 x140, first " in t and
              "    not seen in: 2.1 (30 deaths of billing 2.1 in other groups, on 10 hosts)\n"
              in t and max(len(x) for x in t.splitlines()) <= 120, "many: --groups:\n%s" % t)
        t = bx("--groups", "--wide").stdout.decode()
        check(all(("node-%02d x2" % m) in t for m in range(70)), "many: --wide hosts:\n%s" % t)
        check([x["group"] for x in (json.loads(x) for x in
                                    bx("--groups", "--json", "--release", "2.1").stdout
                                    .splitlines())] == [gb["group"]], "many: --release 2.1")
        lj = [json.loads(x) for x in bx("--list", "--json").stdout.splitlines()]
        check(len(lj) == 170 and [x["time"] for x in lj] == sorted(x["time"] for x in lj) and
              [x["release"] for x in lj[41:46]] == ["2.0", "2.1", "2.0", "2.0", "2.1"],
              "many: --list order %r" % [(x["time"], x.get("release")) for x in lj[38:48]])
        lt = bx("--list", "--release", "2.0").stdout.decode().splitlines()
        check(len(lt) == 141 and max(len(x) for x in lt) <= 120, "many: --list --release 2.0")

    def cleanup(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait(10)
        self.d.stop_all()
        for cg in self.cgroups:
            rmdir_retry(cg)
        if getattr(self, "logs", None):
            self.logs.close()


def main():
    argv = sys.argv[1:]
    if len(argv) < 7:
        print("usage: fleet_e2e.py BB_REAP BB_EXTRACT SRC INCDIR LIBBLACKBOX_A SANITIZE CC...")
        return 2
    enter(sys.argv, "fleet_e2e", timeout=600)
    return run_suite(Fleet(argv), "fleet_e2e")


if __name__ == "__main__":
    sys.exit(main())
