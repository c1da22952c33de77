#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Description: root's tools against a hostile local user (docs/SECURITY.md).

Runs as root (exit 77, skipped, otherwise).  A second identity, uid 65534,
plants files in a private sticky (1777) box directory -- never the real
/dev/shm -- and root runs bb-extract and bb-reap on it, as the packaged timer
and an engineer in an incident would.  Each case asserts the exact outcome:
nothing forged shown, nothing evicted, memory bounded, no death by signal, no
raw control byte.

    hostile.py BB_EXTRACT BB_REAP BBH_BOX LIBBLACKBOX_SO [SANITIZERS]

What uid 65534 runs (bbh_box, and bb-extract for the archive case) is copied
with the library to a 0755 temporary directory and run with LD_LIBRARY_PATH
there: the build tree may sit in a 0700 directory (/root/x).  A case that cannot
give the other identity what it needs is skipped with the reason.
BB_HOSTILE_RUNS overrides the 1000 tool runs of the truncation loop.  In a
sanitizer build (SANITIZERS not "none") a tool's own RSS is tens of MiB of
shadow memory: the memory bound is then box_size + 16 MiB above the RSS of
the same tool doing nothing (bb-extract --version).
"""

import ctypes
import errno
import json
import os
import re
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))
from adversary import (H_BOX_SIZE, H_MOD_OFF, H_MOD_SIZE, MIB, NOBODY, Box,  # noqa: E402
                       Failed, Skipped, as_nobody, as_nobody_background, check, forge,
                       header, run, run_cases, starttime, stop, terminal_unsafe)

EXTRACT, REAP, HELPER, LIB = sys.argv[1:5]
SANITIZED = len(sys.argv) > 5 and sys.argv[5] not in ("", "none")
RSS_SLACK = 16 * MIB          # the bound: box_size + 16 MiB (peak RSS)
RUNS = int(os.environ.get("BB_HOSTILE_RUNS", "1000"))

# ---- the cases ------------------------------------------------------------

class Ctx:
    pass


def case_forged_box(ctx):
    """1. A user copies its own dead box under the victim's name, patching
    pid, start time, sequence and creation time: never shown as the
    victim's; the claim is flagged, and once the victim is gone
    bb-extract PID refuses to choose (exit 5) and names both files."""
    victim = Box(ctx, "wait", marker="victim-original")
    vstart = starttime(victim.pid)
    att = Box(ctx, "exit", nobody=True, marker="forged-by-attacker")
    forged = os.path.join(ctx.shm, "blackbox.%d.%d.1" % (victim.pid, vstart))
    as_nobody(forge, att.path, forged, victim.pid, vstart, 1, time.time_ns() + 3600 * 10**9)

    r = run([EXTRACT, "--dir", ctx.shm, str(victim.pid)])
    check(r.status == 0 and b"victim-original" in r.out and b"forged" not in r.out,
          "alive victim: %r" % r)
    r = run([EXTRACT, "--dir", ctx.shm, "--list"])
    line = next((l for l in r.out.splitlines() if forged.encode() in l), b"")
    check(r.status == 0 and b"[claims a running process whose box is another owner's]" in line,
          "--list does not flag the forged claim: %r" % r)
    r = run([EXTRACT, "--dir", ctx.shm, "--list", "--json"])
    rows = [json.loads(l) for l in r.out.splitlines()]
    check(any(x["path"] == forged and x.get("flags") == ["foreign"] and x["file_uid"] == NOBODY
              for x in rows), "--list --json: %r" % rows)

    victim.kill()
    r = run([EXTRACT, "--dir", ctx.shm, str(victim.pid)])
    check(r.status == 5 and not r.out, "dead victim, two owners claim it: %r" % r)
    check(forged.encode() in r.err and os.path.basename(victim.path).encode() in r.err and
          b"file owner uid 65534" in r.err and b"file owner uid 0" in r.err,
          "the refusal does not name both claims: %r" % r)
    r = run([EXTRACT, "--dir", ctx.shm, "--json", str(victim.pid)])
    check(r.status == 5 and not r.out, "--json: %r" % r)
    r = run([EXTRACT, "--dir", ctx.shm, "--list", "--json"])
    rows = [json.loads(l) for l in r.out.splitlines()]
    check(sum("ambiguous" in x.get("flags", []) for x in rows if x["pid"] == victim.pid) == 2,
          "--list: both claims ambiguous: %r" % rows)
    r = run([EXTRACT, "--path", forged])  # an explicit choice: shown, with its owner
    check(r.status == 0 and b"forged-by-attacker" in r.out and b"uid 65534" in r.err,
          "--path: %r" % r)

    # a header naming another uid than its file's owner is never chosen
    as_nobody(os.unlink, forged)
    mism = os.path.join(ctx.shm, "blackbox.%d.%d.2" % (victim.pid, vstart))
    as_nobody(forge, att.path, mism, victim.pid, vstart, 2, time.time_ns() + 7200 * 10**9, 0)
    r = run([EXTRACT, "--dir", ctx.shm, str(victim.pid)])
    check(r.status == 0 and b"victim-original" in r.out and b"forged" not in r.out,
          "a uid-mismatched claim was chosen: %r" % r)
    r = run([EXTRACT, "--dir", ctx.shm, "--list"])
    line = next((l for l in r.out.splitlines() if mism.encode() in l), b"")
    check(b"[file owner is not the header's uid: never chosen]" in line, "--list: %r" % r)
    r = run([EXTRACT, "--path", mism])
    check(r.status == 4 and b"file owner uid 65534 differs from the box's uid 0" in r.err,
          "--path of a mismatched box: %r" % r)


ARCH_NAME = re.compile(rb"^blackbox-(\d+)-[A-Za-z0-9_+.-]+-(\d+)-\d{8}T\d{6}Z(\.\d+)?\.box(\.zst)?$")


def archives(arch):
    """{name: stat} of the archive directory."""
    return {n: os.lstat(os.path.join(arch, n)) for n in os.listdir(arch)}


def case_archive_eviction(ctx):
    """2. Quotas per owner: a dozen small dead boxes of one user, or one
    large one, never push root's archive out; a box larger than its
    owner's quota goes without a copy, with a log line; names carry only
    validated, sanitized fields."""
    arch = os.path.join(ctx.tmp, "arch-evict")
    reap = [REAP, "--dir", ctx.shm, "--min-age", "0", "--archive", arch, "--keep", "3",
            "--max-archive-bytes", "4M"]
    root = Box(ctx, "exit", size=128 * 1024, marker="root-evidence")
    r = run(reap)
    check(r.status == 0, "first run: %r" % r)
    rootarch = [n for n, st in archives(arch).items() if st.st_uid == 0]
    check(len(rootarch) == 1, "root's box not archived: %r" % r)
    # then the attacker's boxes: more than --keep, one near the byte quota,
    # one above it, with a comm that would be a path and an escape
    for i in range(12):
        Box(ctx, "exit", nobody=True, size=128 * 1024, comm=b"../x\x1b]0;\x07/" + str(i).encode())
    Box(ctx, "exit", nobody=True, size=3 * MIB)
    huge = Box(ctx, "exit", nobody=True, size=8 * MIB)
    r = run(reap)
    check(r.status == 3, "second run (a box over its quota: exit 3): %r" % r)
    a = archives(arch)
    check([n for n, st in a.items() if st.st_uid == 0] == rootarch,
          "root's archive was evicted by another user's boxes: %r" % sorted(a))
    mine = {n: st for n, st in a.items() if st.st_uid == NOBODY}
    check(0 < len(mine) <= 3, "--keep 3 per owner: %d archives of uid 65534" % len(mine))
    check(sum(st.st_size for st in mine.values()) <= 4 * MIB, "over the byte quota")
    check(not os.path.exists(huge.path), "the box over the quota was left in place")
    check(b"not archived: larger than its owner's archive quota" in r.err,
          "no log line for the box over the quota: %r" % r)
    for n, st in a.items():
        m = ARCH_NAME.match(n.encode())
        check(m and int(m.group(1)) == st.st_uid, "archive name %r (owner %d)" % (n, st.st_uid))
        check(stat.S_IMODE(st.st_mode) == 0o400, "archive mode %o" % st.st_mode)
    check(stat.S_IMODE(os.stat(arch).st_mode) == 0o711, "archive directory mode")
    r = run([EXTRACT, "--path", os.path.join(arch, rootarch[0])])
    check(r.status == 0 and b"root-evidence" in r.out, "root's archive reads back: %r" % r)


def case_sparse(ctx):
    """3. A 2 MiB box grown to a 1 GiB sparse file: refused with a clear
    message, and no tool's peak RSS passes box_size + 16 MiB; a box whose
    header says 1 GiB (a sparse file of that size) is read within the same
    bound, and bb-reap removes it without reading it when it exceeds the
    quota."""
    att = Box(ctx, "exit", nobody=True, size=2 * MIB, marker="sparse")
    box_size = struct.unpack_from("<Q", header(att.path), H_BOX_SIZE)[0]
    as_nobody(os.truncate, att.path, 1 << 30)
    arch = os.path.join(ctx.tmp, "arch-sparse")
    runs = [
        [EXTRACT, "--dir", ctx.shm, "--list"],
        [EXTRACT, "--dir", ctx.shm, "--all"],
        [EXTRACT, "--dir", ctx.shm, "--all", "--uring"],
        [EXTRACT, "--dir", ctx.shm, str(att.pid)],
        [EXTRACT, "--dir", ctx.shm, "--json", str(att.pid)],
        [EXTRACT, "--path", att.path],
        [EXTRACT, "--path", att.path, "--any-owner", "--uring"],
        [REAP, "--dir", ctx.shm, "--min-age", "0", "--archive", arch],
    ]
    for argv in runs:
        r = run(argv)
        ctx.note("sparse 1 GiB file of a %d-byte box: %s: peak RSS %.1f MiB" %
                 (box_size, " ".join(argv[1:]).replace(ctx.tmp, "T"), r.rss / MIB))
        check(r.sig is None, "died of a signal: %r" % r)
        check(r.rss <= ctx.rss_base + box_size + RSS_SLACK,
              "peak RSS over box_size + 16 MiB: %r" % r)
    r = run([EXTRACT, "--path", att.path])
    check(r.status == 4 and b"grown or cut after it was written, refused" in r.err,
          "--path: %r" % r)
    check(os.path.exists(att.path) and not os.listdir(arch), "bb-reap archived a grown file")

    # a header that says 1 GiB, on a 1 GiB sparse file: consistent
    big = os.path.join(ctx.shm, "blackbox.big")
    as_nobody(os.truncate, att.path, box_size)
    as_nobody(forge, att.path, big, None, None, None, None, None, 1 << 30, 1 << 30)
    as_nobody(os.unlink, att.path)
    for argv in ([EXTRACT, "--path", big], [EXTRACT, "--path", big, "--json"],
                 [EXTRACT, "--dir", ctx.shm, "--list"],
                 [REAP, "--dir", ctx.shm, "--min-age", "0", "--archive", arch,
                  "--max-archive-bytes", "64M"]):
        r = run(argv)
        ctx.note("1 GiB box_size, sparse: %s: peak RSS %.1f MiB" %
                 (" ".join(argv[1:]).replace(ctx.tmp, "T"), r.rss / MIB))
        check(r.sig is None and r.rss <= ctx.rss_base + (1 << 30) + RSS_SLACK, "%r" % r)
    check(not os.path.exists(big) and not os.listdir(arch),
          "the 1 GiB box was archived or left in place")
    check(b"larger than its owner's archive quota" in r.err, "%r" % r)


def truncate_loop(path, size, seconds):
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end and n < 10_000_000:
        os.truncate(path, 8192)
        os.truncate(path, size)
        n += 1


def catches_sigint(p, timeout=30):
    """Wait until process @p catches SIGINT (SigCgt in /proc/<pid>/status):
    its readiness to be stopped as a person would.  Returns early if it
    exits (a box gone, a run that failed: nothing left to stop)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end and p.poll() is None:
        try:
            with open("/proc/%d/status" % p.pid) as f:
                for line in f:
                    if line.startswith("SigCgt:") and \
                            int(line.split()[1], 16) & (1 << (signal.SIGINT - 1)):
                        return
        except OSError:
            return
        time.sleep(0.01)


def case_truncation_loop(ctx):
    """4. A user keeps an idle process mapping a 32 MiB box and truncates
    and regrows the file in a loop: 1000 runs of root's tools, every mode
    (--list, --all, PID, --json, --save, --follow, bb-reap), 0 deaths by a
    signal."""
    size = 32 * MIB
    att = Box(ctx, "wait", nobody=True, size=size, marker="truncated")
    size = os.stat(att.path).st_size
    looper = as_nobody_background(truncate_loop, att.path, size, 600)
    pid = str(att.pid)
    modes = [
        [EXTRACT, "--dir", ctx.shm, "--list"],
        [EXTRACT, "--dir", ctx.shm, "--all"],
        [EXTRACT, "--dir", ctx.shm, pid],
        [EXTRACT, "--dir", ctx.shm, "--json", pid],
        "save",
        [REAP, "--dir", ctx.shm, "--min-age", "0", "--dry-run"],
    ]
    deaths, statuses, t0 = [], {}, time.monotonic()
    try:
        for i in range(RUNS):
            argv = modes[i % len(modes)]
            if argv == "save":
                out = os.path.join(ctx.tmp, "saved.box")
                argv = [EXTRACT, "--dir", ctx.shm, "--save", out, pid]
            r = run(argv, timeout=30)
            if argv[1] == "--dir" and "--save" in argv and os.path.exists(out):
                os.unlink(out)
            if r.sig is not None:
                deaths.append(r)
            statuses[r.status] = statuses.get(r.status, 0) + 1
        for i in range(10):  # --follow: stopped by SIGINT, as a person would
            p = subprocess.Popen([EXTRACT, "--dir", ctx.shm, "--follow", pid],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            catches_sigint(p)
            p.send_signal(signal.SIGINT)
            rc = p.wait(timeout=30)
            statuses["follow %d" % rc] = statuses.get("follow %d" % rc, 0) + 1
            if rc < 0:
                deaths.append("--follow died of signal %d" % -rc)
    finally:
        stop(looper)
        att.kill()
    ctx.note("truncation loop: %d runs + 10 --follow in %.1f s, exit statuses %s, "
             "%d deaths by signal" % (RUNS, time.monotonic() - t0, statuses, len(deaths)))
    check(not deaths, "%d deaths by signal, first: %r" % (len(deaths), deaths[:1]))


INJ_COMM = b"\x1b]0;pwn\x07\x9b"
INJ_THREAD = b"\x1b[8mhid\xc2\x9b"
INJ_KEY = b"k\x1b]52;c;cHduZWQ=\x07"
INJ_VALUE = b"v\x1b[2J\n2026-01-01T00:00:00Z 1 fake line\xe2\x80\xae\xff\x7f"


def patch_module_path(path, old, new):
    """As the attacker: rename a module in its own box's module area."""
    with open(path, "r+b") as f:
        h = f.read(4096)
        size, = struct.unpack_from("<I", h, H_MOD_SIZE)
        off, = struct.unpack_from("<Q", h, H_MOD_OFF)
        f.seek(off)
        area = f.read(size)
        i = area.find(old)
        if i < 0:
            raise RuntimeError("module %r not in the module area" % old)
        f.seek(off + i)
        f.write(new)


def case_terminal_injection(ctx):
    """5. Escape bytes in comm, thread names, keys, values, a module path
    and a file name reach root's terminal only as visible escapes, in text
    output and in every message; JSON keeps the exact values."""
    att = Box(ctx, "crash", nobody=True, comm=INJ_COMM, thread=INJ_THREAD, key=INJ_KEY,
              value=INJ_VALUE, marker="injection")
    check(len(b"bbh_box") == len(b"\x1b]0;X\x07\x9b"), "same length")
    as_nobody(patch_module_path, att.path, b"bbh_box", b"\x1b]0;X\x07\x9b")
    odd = os.path.join(ctx.shm.encode(), b"blackbox.\x1b]0;evil\x07.\x1b[8m")
    as_nobody(forge, att.path, odd)
    text_runs = [
        [EXTRACT, "--dir", ctx.shm, str(att.pid)],
        [EXTRACT, "--dir", ctx.shm, "--no-symbols", str(att.pid)],
        [EXTRACT, "--dir", ctx.shm, "--all"],
        [EXTRACT, "--dir", ctx.shm, "--list"],
        [EXTRACT, "--path", odd],
        [EXTRACT, "--path", odd + b".missing"],
        [REAP, "--dir", ctx.shm, "--min-age", "0", "--dry-run", "--verbose"],
    ]
    seen = b""
    for argv in text_runs:
        r = run(argv)
        check(r.sig is None, "%r" % r)
        for name, b in (("stdout", r.out), ("stderr", r.err)):
            bad = terminal_unsafe(b)
            check(bad is None, "%s of %r: %s" % (name, argv[1:], bad))
        seen += r.out + r.err
    # shown, escaped: comm, thread name, key, value, module path, file name
    for want in (rb"\x1b]0;pwn\x07\x9b", rb"\x1b[8mhid\xc2\x9b", rb"k\x1b]52;c;cHduZWQ=\x07",
                 rb"\x1b[2J\n2026", rb"\xe2\x80\xae\xff\x7f", rb"\x1b]0;X\x07\x9b",
                 rb"blackbox.\x1b]0;evil\x07.\x1b[8m"):
        check(want in seen, "%r never shown (escaped)" % want)
    # JSON: exact values (bidirectional controls included), escaped as JSON:
    # no raw control character
    r = run([EXTRACT, "--dir", ctx.shm, "--json", str(att.pid)])
    check(r.sig is None and terminal_unsafe(r.out, json=True) is None,
          "--json: %s: %r" % (terminal_unsafe(r.out, json=True), r))
    rows = [json.loads(l) for l in r.out.splitlines()]
    key = INJ_KEY.decode()
    check(any(x.get("key") == key for x in rows), "--json lost the exact key")
    check(any(x.get("thread") == INJ_THREAD.decode("utf-8", "replace") for x in rows),
          "--json thread name")
    r = run([REAP, "--dir", ctx.shm, "--min-age", "0", "--dry-run", "--json"])
    for l in r.out.splitlines():
        json.loads(l)
    check(terminal_unsafe(r.out, json=True) is None, "bb-reap --json: %r" % r)


def squat(shm, pid, start, n, src):
    for i in range(n):
        fd = os.open(os.path.join(shm, "blackbox.%d.%d.%d" % (pid, start, i)),
                     os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.close(fd)
    forge(src, os.path.join(shm, "blackbox.%d.%d.%d" % (pid, start, n)), pid, start, n,
          time.time_ns())


def case_squatting(ctx):
    """6. A user pre-creates blackbox.<pid>.<start>.0 ... .999 (and a valid
    box claiming the pid) before a service's bb_init(): the service still
    gets a box, under a name nobody could guess, and bb-extract PID finds
    it by its header."""
    att = Box(ctx, "exit", nobody=True, marker="squatter")
    svc = Box(ctx, "wait", marker="squatted-victim", wait_init=True)
    line = svc.p.stdout.readline().decode()
    check(line == "pid %d\n" % svc.pid, "bbh_box: %r" % line)
    start = starttime(svc.pid)
    as_nobody(squat, ctx.shm, svc.pid, start, 1000, att.path)
    try:
        svc.go()
    except Failed as e:
        raise Failed("bb_init did not get a box: %s" % e)
    try:
        check(not os.path.basename(svc.path).startswith("blackbox.%d.%d." % (svc.pid, start))
              or int(svc.path.rsplit(".", 1)[1]) > 1000, "took a squatted name: %s" % svc.path)
        check(os.stat(svc.path).st_uid == 0, "the box is not root's")
        r = run([EXTRACT, "--dir", ctx.shm, str(svc.pid)])
        check(r.status == 0 and b"squatted-victim" in r.out and b"squatter" not in r.out,
              "%r" % r)
        r = run([EXTRACT, "--dir", ctx.shm, "--list", "--json"])
        rows = [json.loads(l) for l in r.out.splitlines()]
        check(any(x["pid"] == svc.pid and x["file_uid"] == NOBODY and
                  x.get("flags") == ["foreign"] for x in rows), "--list: %r" % rows)
    finally:
        svc.kill()


def case_archive_readable(ctx):
    """7. The archived box of a non-root service is read with bb-extract
    --path (no --any-owner) by that service's user and by root; whose box
    it was stays visible; a user's planted claim and a user's grown archive
    are told apart from genuine ones."""
    if not ctx.extract_as_nobody:
        raise Skipped(ctx.extract_as_nobody_why)
    arch = os.path.join(ctx.tmp, "arch-readable")
    svc = Box(ctx, "exit", nobody=True, marker="service-evidence")
    claim = os.path.join(ctx.shm, "blackbox.claims-root")
    as_nobody(forge, svc.path, claim, None, None, None, None, 0)
    root = Box(ctx, "exit", marker="root-archive")
    r = run([REAP, "--dir", ctx.shm, "--min-age", "0", "--archive", arch,
             "--max-archive-bytes", "64M"])
    check(r.status == 0, "%r" % r)
    a = archives(arch)
    mine = [n for n, st in a.items() if st.st_uid == NOBODY]
    check(len(mine) == 2, "uid 65534's archives: %r" % a)
    for n in mine:
        p = os.path.join(arch, n)
        r0 = run([EXTRACT, "--path", p, "--json"])
        summ = json.loads(r0.out.splitlines()[-1])["summary"] if r0.out else {}
        if summ.get("uid") == NOBODY:  # the service's own box
            r = run([ctx.extract_copy, "--path", p], nobody=True,
                    env=dict(os.environ, LD_LIBRARY_PATH=ctx.bin))
            check(r.status == 0 and b"service-evidence" in r.out,
                  "the service's user cannot read its archive: %r" % r)
            check(r0.status == 0 and summ["file_uid"] == NOBODY, "root reads it: %r" % r0)
            svc_arch = p
        else:  # the planted claim of uid 0: refused without --any-owner
            check(r0.status == 4, "a planted archive read as root's: %r" % r0)
            r = run([EXTRACT, "--path", p])
            check(b"file owner uid 65534 differs from the box's uid 0" in r.err, "%r" % r)
    # the owner grows its own archive: refused, and pruned against its own quota

    def grow(p):
        os.chmod(p, 0o600)  # its own file: 0400 stops nobody who owns it
        os.truncate(p, 1 << 30)
    as_nobody(grow, svc_arch)
    r = run([EXTRACT, "--path", svc_arch])
    check(r.status == 4 and r.rss <= ctx.rss_base + 64 * MIB, "%r" % r)
    r = run([REAP, "--dir", ctx.shm, "--min-age", "0", "--archive", arch,
             "--max-archive-bytes", "64M"])
    rootarch = [n for n, st in archives(arch).items() if st.st_uid == 0]
    check(rootarch and not os.path.exists(svc_arch), "quota: %r %r" % (archives(arch), r))
    r = run([EXTRACT, "--path", os.path.join(arch, rootarch[0])])
    check(r.status == 0 and b"root-archive" in r.out, "%r" % r)


def case_symlink_hardlink_fifo(ctx):
    """Already handled, kept so: a symlink is never followed, a hard link to
    another user's box cannot be made (or changes nothing), a FIFO never
    blocks a tool."""
    secret = os.path.join(ctx.tmp, "secret")
    with open(secret, "w") as f:
        f.write("SECRET-CONTENT")
    os.chmod(secret, 0o600)
    live = Box(ctx, "wait", marker="hardlink-target")
    link = os.path.join(ctx.shm, "blackbox.link")
    fifo = os.path.join(ctx.shm, "blackbox.fifo")
    hard = os.path.join(ctx.shm, "blackbox.hard")

    def plant():
        os.symlink(secret, link)
        os.mkfifo(fifo, 0o666)
        try:
            os.link(live.path, hard)
        except PermissionError:
            pass  # protected_hardlinks: another user's 0600 file
    as_nobody(plant)
    try:
        ctx.note("hard link to root's box: %s" %
                 ("made (fs.protected_hardlinks off)" if os.path.exists(hard)
                  else "refused (fs.protected_hardlinks)"))
        for argv in ([EXTRACT, "--dir", ctx.shm, "--list"], [EXTRACT, "--dir", ctx.shm, "--all"],
                     [REAP, "--dir", ctx.shm, "--min-age", "0"]):
            r = run(argv, timeout=30)
            check(r.sig is None and r.secs < 30, "blocked or died: %r" % r)
            check(b"SECRET-CONTENT" not in r.out + r.err, "followed the symlink: %r" % r)
        with open(secret) as f:
            check(f.read() == "SECRET-CONTENT", "the symlink's target changed")
        check(os.path.islink(link) and stat.S_ISFIFO(os.lstat(fifo).st_mode), "removed")
        check(os.path.exists(live.path), "root's live box was removed")
    finally:
        live.kill()


def exchange_loop(a, b, seconds):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p,
                               ctypes.c_uint]
    AT_FDCWD, RENAME_EXCHANGE = -100, 2
    end = time.monotonic() + seconds
    n = 0
    while time.monotonic() < end and n < 5_000_000:
        libc.renameat2(AT_FDCWD, a.encode(), AT_FDCWD, b.encode(), RENAME_EXCHANGE)
        n += 1


def case_rename_race(ctx):
    """Already handled, kept so: a user swapping a dead box of its own and
    a symlink to root's file (renameat2 RENAME_EXCHANGE) while bb-reap runs
    never makes root remove or change that file."""
    target = os.path.join(ctx.tmp, "precious")
    with open(target, "w") as f:
        f.write("PRECIOUS")
    dead = Box(ctx, "exit", nobody=True, marker="racer")
    a = dead.path
    b = os.path.join(ctx.shm, "blackbox.swap")
    as_nobody(os.symlink, target, b)
    racer = as_nobody_background(exchange_loop, a, b, 60)
    try:
        t0 = time.monotonic()
        n = 0
        while n < 150 and time.monotonic() - t0 < 30:
            r = run([REAP, "--dir", ctx.shm, "--min-age", "0"], timeout=30)
            check(r.sig is None, "%r" % r)
            n += 1
            with open(target) as f:
                check(f.read() == "PRECIOUS", "root's file changed after %d runs" % n)
    finally:
        stop(racer)
    ctx.note("rename race: %d bb-reap runs against an exchange loop, target intact" % n)
    check(os.path.exists(target), "root's file removed")


CASES = [case_forged_box, case_archive_eviction, case_sparse, case_truncation_loop,
         case_terminal_injection, case_squatting, case_archive_readable,
         case_symlink_hardlink_fifo, case_rename_race]


def setup(ctx):
    ctx.tmp = tempfile.mkdtemp(prefix="bbhostile.")
    os.chmod(ctx.tmp, 0o755)
    ctx.bin = os.path.join(ctx.tmp, "bin")
    os.mkdir(ctx.bin, 0o755)
    ctx.helper = os.path.join(ctx.bin, "bbh_box")
    shutil.copy(HELPER, ctx.helper)
    os.chmod(ctx.helper, 0o755)
    ctx.extract_copy = os.path.join(ctx.bin, "bb-extract")
    shutil.copy(EXTRACT, ctx.extract_copy)
    os.chmod(ctx.extract_copy, 0o755)
    shutil.copy(LIB, os.path.join(ctx.bin, "libblackbox.so.0"))
    os.chmod(os.path.join(ctx.bin, "libblackbox.so.0"), 0o755)
    ctx.notes = []
    ctx.note = ctx.notes.append
    ctx.rss_base = run([EXTRACT, "--version"]).rss if SANITIZED else 0
    # can uid 65534 reach what it runs?
    probe = run([ctx.helper, "--bogus", "x"], nobody=True,
                env=dict(os.environ, LD_LIBRARY_PATH=ctx.bin))
    if probe.status != 2:
        return "uid %d cannot run %s (a parent directory it cannot search?): %r" % (
            NOBODY, ctx.helper, probe)
    probe = run([ctx.extract_copy, "--version"], nobody=True,
                env=dict(os.environ, LD_LIBRARY_PATH=ctx.bin))
    ctx.extract_as_nobody = probe.status == 0
    ctx.extract_as_nobody_why = "uid %d cannot run a copy of bb-extract: %r" % (NOBODY, probe)
    return None


def main():
    if os.geteuid() != 0:
        print("SKIP: the hostile suite runs root's tools against uid %d: needs root" % NOBODY)
        return 77
    ctx = Ctx()
    why = setup(ctx)
    if why:
        print("SKIP: " + why)
        shutil.rmtree(ctx.tmp, ignore_errors=True)
        return 77
    failed = skipped = 0
    try:
        failed, skipped = run_cases(ctx, CASES)
    finally:
        shutil.rmtree(ctx.tmp, ignore_errors=True)
    print("%d cases, %d failed, %d skipped" % (len(CASES), failed, skipped))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
