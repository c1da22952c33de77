#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""bb-extract --journal-directory on a collector of N entries (default
5,000, over 10 senders), each with a shipped box: how long --list and
--groups take and their peak RSS, for entries that say BB_BOX_ATTACHED
(what bb-reap sends) and for the same entries without it (what an older
bb-reap sent: the box is decompressed to see that it is there).

    bench/journal_bench.py BUILD [-n ENTRIES] [-r RUNS] [--box-kib K]

With --baseline OTHER_BUILD (e.g. a build of the previous release), the
fleet questions instead, on entries of the last N * 10 seconds (one every
10 s, 10 senders): --groups, --group ID, --list --since -1h and --groups
--since -1h, each by both builds in the same run, with the ratio of their
CPU times.  --data DIR keeps the journal files there (made once, reused).

The journal files are written by systemd-journal-remote from the export
format (no journald, no root).  Reports medians (the ratio is of CPU
time, which a loaded machine disturbs less than wall time); asserts
nothing.
"""

import argparse
import os
import random
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

REMOTE = "/lib/systemd/systemd-journal-remote"
MESSAGE_ID = "541b7f4a9be94cee9da4b63740198349"


def field(k, v):
    if isinstance(v, str):
        v = v.encode()
    if b"\n" in v or any(c < 0x20 and c != 0x09 for c in v):
        return k.encode() + b"\n" + struct.pack("<Q", len(v)) + v + b"\n"
    return k.encode() + b"=" + v + b"\n"


T0_US, STEP_US = 1764000000000000, 1000


def entry(i, sender, attached, box, rnd):
    builds = ["%040x" % (0x4bbca9 + b) for b in range(3)]
    b = builds[i % 3]
    pid = 1000 + i
    stack = "\n".join([
        "#0 0x%016x /opt/fleet/bin/api-gw+0x%x %s" % (0x55d000003db3 + i, 0x3db3 + 16 * (i % 7), b),
        "#1 0x%016x /opt/fleet/bin/api-gw+0x3dc9 %s" % (0x55d000003dc9, b),
        "#2 0x%016x /lib/x86_64-linux-gnu/libc.so.6+0x2724a %s" % (0x7f1400000000, "ab" * 20),
    ])
    out = b"".join([
        field("__REALTIME_TIMESTAMP", str(T0_US + i * STEP_US)),
        field("__MONOTONIC_TIMESTAMP", str(i * 1000)),
        field("_BOOT_ID", "%032x" % sender),
        field("MESSAGE_ID", MESSAGE_ID), field("PRIORITY", "2"),
        field("_UID", "0"), field("_TRANSPORT", "journal"),
        field("_HOSTNAME", "web-%02d" % sender), field("_MACHINE_ID", "%032x" % (sender + 1)),
        field("BB_PID", str(pid)), field("BB_STARTTIME", str(i)),
        field("BB_BOOT_ID", "%032x" % sender), field("BB_UID", "0"),
        field("BB_COMM", "api-gw"), field("BB_LIVENESS", "crashed"),
        field("BB_SIGNAL", "11"), field("BB_SIGNAL_NAME", "SIGSEGV"),
        field("BB_CRASH_KIND", "signal"), field("BB_BUILD_ID", b),
        field("BB_BOX_SIZE", str(len(box))), field("BB_STACK", stack),
        field("BB_STACK_KINDS", "prr"), field("BB_STACK_HASH", "%016x" % rnd.getrandbits(64)),
        field("MESSAGE", "api-gw[%d] (uid 0) crashed: SIGSEGV at api-gw+0x3db3" % pid),
    ])
    if attached:
        out += field("BB_BOX_ATTACHED", "1")
    # each box its own (the journal stores equal values once)
    return out + field("BB_BOX", struct.pack("<Q", i) + box[8:]) + b"\n"


def make(d, n, senders, attached, box_kib):
    os.makedirs(d)
    rnd = random.Random(1)
    # a box compresses like a real one: mostly empty ring space
    box = bytes(rnd.getrandbits(8) for _ in range(4096)) + bytes(box_kib * 1024 - 4096)
    for s in range(senders):
        data = b"".join(entry(i, s, attached, box, rnd) for i in range(s, n, senders))
        subprocess.run([REMOTE, "--split-mode=none",
                        "--output=%s/remote-web-%02d.journal" % (d, s), "-"],
                       input=data, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)


def measure(argv, runs, ok=(0,)):
    """Median wall time, peak RSS (KiB, /usr/bin/time's: a forked python
    would count its own memory) and median CPU time."""
    times, cpu, rss = [], [], 0
    for _ in range(runs):
        t = time.monotonic()
        p = subprocess.run(["/usr/bin/time", "-f", "%M %U %S"] + argv,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        times.append(time.monotonic() - t)
        if p.returncode not in ok:
            sys.exit("%r: exit %d %r" % (argv, p.returncode, p.stderr[-300:]))
        m, u, s = p.stderr.decode().split()[-3:]
        rss = max(rss, int(m))
        cpu.append(float(u) + float(s))
    return statistics.median(times), rss, statistics.median(cpu)


def fleet(a):
    """The fleet questions, by this build and the baseline, same data."""
    global T0_US, STEP_US
    bx = os.path.join(a.build, "extractor", "bb-extract")
    base = os.path.join(a.baseline, "extractor", "bb-extract")
    d = a.data or tempfile.mkdtemp(prefix="bbjf.")
    try:
        if not os.path.isdir(d) or not os.listdir(d):
            if os.path.isdir(d):
                os.rmdir(d)
            STEP_US = 10 * 1000000
            T0_US = (int(time.time()) - a.n * 10) * 1000000
            t = time.monotonic()
            make(d, a.n, 10, True, a.box_kib)
            print("made %d entries in %.0f s" % (a.n, time.monotonic() - t))
        out = subprocess.run([bx, "--journal-directory", d, "--groups", "--json",
                              "--no-symbols"], stdout=subprocess.PIPE, check=True).stdout
        gid = out.split(b'"group":"')[1][:16].decode()
        size = sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d))
        print("%d entries, 10 senders, a %d KiB box each (%.0f MB of journal files), "
              "median of %d runs" % (a.n, a.box_kib, size / 1e6, a.r))
        print("%-26s %28s %28s %7s" % ("", "this build", "baseline", "ratio"))
        print("%-26s %28s %28s" % ("", "wall    CPU  peak RSS", "wall    CPU  peak RSS"))
        # --group ID: the newest box of the group is found and opened (the
        # bench's boxes are no boxes: exit 4 once it is)
        for what, args, ok in (("--groups", ["--groups"], (0,)),
                               ("--group ID", ["--group", gid, "--quiet"], (0, 4)),
                               ("--list --since -1h", ["--list", "--since", "-1h"], (0,)),
                               ("--groups --since -1h", ["--groups", "--since", "-1h"], (0,))):
            (t1, r1, c1), (t0, r0, c0) = (measure([b, "--journal-directory", d] + args, a.r,
                                                  ok) for b in (bx, base))
            print("%-26s %7.0f ms %5.0f ms %5.0f MB %7.0f ms %5.0f ms %5.0f MB %6.1fx" % (
                what, t1 * 1e3, c1 * 1e3, r1 / 1024, t0 * 1e3, c0 * 1e3, r0 / 1024,
                c0 / c1 if c1 else 0))
    finally:
        if not a.data:
            shutil.rmtree(d, ignore_errors=True)
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("-n", type=int, default=5000)
    ap.add_argument("-r", type=int, default=5)
    ap.add_argument("--box-kib", type=int, default=64)
    ap.add_argument("--baseline")
    ap.add_argument("--data")
    a = ap.parse_args()
    if not os.access(REMOTE, os.X_OK):
        print("journal_bench: %s not installed: skipped" % REMOTE)
        return 77
    if a.baseline:
        return fleet(a)
    bx = os.path.join(a.build, "extractor", "bb-extract")
    tmp = tempfile.mkdtemp(prefix="bbjb.")
    try:
        res = {}
        for attached in (True, False):
            d = os.path.join(tmp, "attached" if attached else "legacy")
            make(d, a.n, 10, attached, a.box_kib)
            for what, args in (("--list", ["--list"]),
                               ("--list --json", ["--list", "--json"]),
                               ("--groups --no-symbols", ["--groups", "--no-symbols"]),
                               ("--groups", ["--groups"])):
                res[(attached, what)] = measure([bx, "--journal-directory", d] + args, a.r)
        size = sum(os.path.getsize(os.path.join(tmp, "attached", f))
                   for f in os.listdir(os.path.join(tmp, "attached")))
        print("%d entries, 10 senders, a %d KiB box each (%.0f MB of journal files), "
              "median of %d runs" % (a.n, a.box_kib, size / 1e6, a.r))
        print("%-22s %28s %28s %6s" % ("", "with BB_BOX_ATTACHED", "without it", "ratio"))
        print("%-22s %28s %28s" % ("", "wall    CPU  peak RSS", "wall    CPU  peak RSS"))
        for what in ("--list", "--list --json", "--groups --no-symbols", "--groups"):
            (t1, r1, c1), (t0, r0, c0) = res[(True, what)], res[(False, what)]
            print("%-22s %7.0f ms %4.0f ms %5.0f MB %7.0f ms %4.0f ms %5.0f MB %5.1fx" % (
                what, t1 * 1e3, c1 * 1e3, r1 / 1024, t0 * 1e3, c0 * 1e3, r0 / 1024,
                c0 / c1 if c1 else 0))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
