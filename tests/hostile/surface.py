#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Description: the surface the collector, the archive, the watcher and the
packaged units opened holds (docs/SECURITY.md, "Collectors, archives and
units"): an uploading host, a local user and an operator against root's
installed tools, each row of that table one case.

    surface.py BB_EXTRACT BB_REAP BBH_BOX LIBBLACKBOX_SO BBH_SYNTH UNITDIR [SANITIZE]

Runs as root (exit 77, skipped with the reason, otherwise) in a private
mount namespace with journald started by hand (tests/helpers/journalns.py);
a collector's files are written by the real systemd-journal-remote.  Boxes
live in private sticky (1777) directories and /dev/shm is a private tmpfs.
BB_SURFACE_CASES (names, comma separated, without "case_") runs only those.
Each case fails on a tree without the rule it shows; every wait is bounded.
In a sanitizer build (SANITIZE not "none") the memory bounds are taken
above the RSS of the same tool doing nothing (--version).
"""

import json
import os
import re
import shlex
import shutil
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))
from adversary import (H_BOX_SIZE, MIB, NOBODY, Box, Skipped, as_nobody,  # noqa: E402
                       as_nobody_background, check, run, run_suite_cases, stop, terminal_unsafe)
from journalns import (MESSAGE_ID, Daemons, enter, entries, export_entry, mount,  # noqa: E402
                       private_dirs, remote_import, wait_for)

EXTRACT, REAP, HELPER, LIB, SYNTH, UNITDIR = sys.argv[1:7]
SANITIZE = sys.argv[7] if len(sys.argv) > 7 else "none"
GUARD = 240          # seconds: a run that takes longer is hung
RSS_MAX = 64 * MIB   # what any tool may take meeting a hostile file


def json_rows(out, live=False):
    """The JSON lines of a tool's output; @live: a file the tool is still
    writing, whose last line may be half written (only whole lines)."""
    lines = out.splitlines(True)
    if live and lines and not lines[-1].endswith(b"\n" if isinstance(out, bytes) else "\n"):
        lines.pop()
    return [json.loads(l) for l in lines if l.strip()]


def rss_bound(ctx, tool):
    """The peak RSS @tool may reach: 64 MiB, or that above its own idle RSS
    in a sanitizer build (shadow memory)."""
    if SANITIZE in ("", "none"):
        return RSS_MAX
    return run([tool, "--version"]).rss + RSS_MAX


def collector_entry(pid, boot, machine, now, **extra):
    """One entry of bb-reap's as a host uploads it, without its box."""
    fields = [("__REALTIME_TIMESTAMP", str(now + pid)), ("__MONOTONIC_TIMESTAMP", "1000"),
              ("_BOOT_ID", boot), ("_MACHINE_ID", machine), ("_HOSTNAME", "evil"),
              ("_UID", "0"), ("_TRANSPORT", "journal"), ("MESSAGE_ID", MESSAGE_ID),
              ("BB_PID", str(pid)), ("BB_STARTTIME", "1"), ("BB_BOOT_ID", boot),
              ("BB_UID", "0"), ("BB_COMM", "victim"), ("BB_LIVENESS", "crashed"),
              ("BB_SIGNAL", "11"), ("BB_CRASH_KIND", "signal"), ("BB_BOX_ATTACHED", "0")]
    return export_entry(fields + list(extra.items()))


def escaped(b):
    """@b as bb_escape_text() shows it (the bytes the tests use: printable
    ASCII, backslash, newline, ESC, BEL and valid UTF-8)."""
    out = []
    for ch in b.decode():
        c = ord(ch)
        if ch == "\\":
            out.append("\\\\")
        elif ch == "\t":
            out.append("\\t")
        elif c < 0x20 or c == 0x7f:
            out.append("\\x%02x" % c)
        else:
            out.append(ch)
    return "".join(out).encode()


# ---- N1: escaped output of any length -----------------------------------

def case_collector_long_fields(ctx):
    """N1. A host uploads entries whose MESSAGE is 70 KB and 1 MiB (escape
    bytes and multi-byte characters throughout, a line break in the
    middle): root's `bb-extract --journal-directory DIR PID` (and
    --cursor, and --json) prints every byte of them escaped, and exits
    as for any entry without its box (4); never a signal."""
    central = os.path.join(ctx.tmp, "central-long")
    os.mkdir(central, 0o755)
    boot, machine, now = "a" * 32, "d" * 32, int(time.time() * 1e6)
    unit = "ab\x1b[2J\x07\\é€".encode()
    m70 = (unit * (70 * 1024 // len(unit)))
    m70 = m70[:len(m70) // 2] + b"\n" + m70[len(m70) // 2:]
    m1m = unit * ((1 << 20) // len(unit) - 8)
    remote_import(collector_entry(201, boot, machine, now, MESSAGE=m70) +
                  collector_entry(202, boot, machine, now, MESSAGE=m1m),
                  os.path.join(central, "remote-evil.journal"))
    for pid, msg in ((201, m70), (202, m1m)):
        r = run([EXTRACT, "--journal-directory", central, "--no-symbols", str(pid)],
                timeout=GUARD)
        check(r.sig is None and r.status == 4, "entry %d of %d bytes: %r" % (pid, len(msg), r))
        want = b"\n    ".join(escaped(l) for l in msg.split(b"\n"))
        check(b"MESSAGE=" + want + b"\n" in r.out,
              "entry %d: the MESSAGE is not all there, escaped (%d bytes out)" %
              (pid, len(r.out)))
        check(not terminal_unsafe(r.out), "entry %d: raw control bytes" % pid)
        r = run([EXTRACT, "--journal-directory", central, "--no-symbols", "--json", str(pid)],
                timeout=GUARD)
        check(r.sig is None and r.status == 4, "--json %d: %r" % (pid, r))
        rows = json_rows(r.out)
        got = [x["journal_entry"].get("MESSAGE") for x in rows if "journal_entry" in x]
        check(got == [msg.decode()], "--json %d: MESSAGE of %r bytes" %
              (pid, [len(g or "") for g in got]))
    r = run([EXTRACT, "--journal-directory", central, "--list"], timeout=GUARD)
    check(r.sig is None and r.status == 0 and not terminal_unsafe(r.out), "--list: %r" % r)


# ---- N5: every field a listing prints is escaped ---------------------------

def case_groups_build_id(ctx):
    """N5. A host uploads crashes whose BB_BUILD_ID is escape sequences
    (conceal, window title, terminal reset) or too long: `--groups`
    shows it as "invalid", never raw, and looks nothing up with it."""
    central = os.path.join(ctx.tmp, "central-build")
    os.mkdir(central, 0o755)
    boot, machine, now = "b" * 32, "e" * 32, int(time.time() * 1e6)
    evil = "\x1b[8m\x1b]0;pwned\x07\x1bc0123"
    stack = "#0 0x00007f0000000010 /opt/app/bin/app+0x10 %s" % ("ab" * 20)
    remote_import(collector_entry(301, boot, machine, now, BB_BUILD_ID=evil, BB_STACK=stack,
                                  MESSAGE="x") +
                  collector_entry(302, boot, machine, now, BB_BUILD_ID="ab" * 80,
                                  BB_STACK=stack, MESSAGE="y"),
                  os.path.join(central, "remote-evil.journal"))
    r = run([EXTRACT, "--journal-directory", central, "--groups"], timeout=GUARD)
    check(r.status == 0 and not terminal_unsafe(r.out) and not terminal_unsafe(r.err),
          "--groups printed a raw build id: %r" % r.out[:600])
    check(b"builds: invalid x2" in r.out, "--groups text: %r" % r.out[:600])
    r = run([EXTRACT, "--journal-directory", central, "--groups", "--json"], timeout=GUARD)
    ids = [b["build_id"] for g in json_rows(r.out) for b in g.get("builds", [])]
    check(r.status == 0 and ids == ["invalid"], "--groups --json: %r" % r.out[:600])


# ---- N2: compressed files are never decompressed beyond a cap -------------

def zstd_bomb(src, dst, claim):
    """As its owner: @src's box, its header claiming @claim bytes, padded
    with zeros to that size and compressed (zstd -19): a few tens of KB."""
    with open(src, "rb") as f:
        data = bytearray(f.read())
    struct.pack_into("<Q", data, H_BOX_SIZE, claim)
    p = subprocess.Popen(["zstd", "-19", "--long=23", "-q", "-c"], stdin=subprocess.PIPE,
                         stdout=open(dst, "wb"))
    p.stdin.write(data)
    zero = bytes(1 << 20)
    left = claim - len(data)
    while left > 0:
        p.stdin.write(zero[:min(left, len(zero))])
        left -= len(zero)
    p.stdin.close()
    check(p.wait() == 0, "zstd failed")


def corrupt_frames(src, dst):
    """As its owner: a valid zstd frame of @src's box, then its blocks
    overwritten with noise after the first 64 bytes."""
    out = subprocess.run(["zstd", "-3", "-q", "-c", src], stdout=subprocess.PIPE,
                         check=True).stdout
    noise = bytes((i * 131 + 7) & 0xff for i in range(len(out) - 64))
    with open(dst, "wb") as f:
        f.write(out[:64] + noise)


def case_archive_bomb(ctx):
    """N2. A user drops 2 GiB zstd bombs (tens of KB; one with a format 3
    header, one with a 2.1-style header, bbh_synth's) and corrupt frames
    named blackbox.* in the box directory, next to root's crashed
    service: bb-reap refuses them with a clear message, never
    decompresses them, and still reaps, archives and reports root's box;
    bb-extract --list, --all, --path refuse them likewise and show the
    rest; every run stays under 64 MiB."""
    if not shutil.which("zstd"):
        raise Skipped("the zstd program is not installed (package zstd)")
    att = Box(ctx, "exit", nobody=True, marker="attacker")
    bomb = os.path.join(ctx.shm, "blackbox.bomb")
    as_nobody(zstd_bomb, att.path, bomb, 2 << 30)
    junk = os.path.join(ctx.shm, "blackbox.junk")
    as_nobody(corrupt_frames, att.path, junk)
    v2 = os.path.join(ctx.tmp, "v2.box")
    subprocess.run([SYNTH, v2, "--pid", "4242", "--uid", str(NOBODY)], check=True,
                   stdout=subprocess.DEVNULL)
    os.chmod(v2, 0o644)
    bomb2 = os.path.join(ctx.shm, "blackbox.bomb2")
    as_nobody(zstd_bomb, v2, bomb2, 2 << 30)
    as_nobody(os.unlink, att.path)
    ctx.note("2 GiB bomb: %d bytes" % os.path.getsize(bomb))
    root = Box(ctx, "crash", marker="root-evidence")
    arch = os.path.join(ctx.tmp, "arch-bomb")

    for argv in ([EXTRACT, "--dir", ctx.shm, "--list"], [EXTRACT, "--dir", ctx.shm, "--all"],
                 [EXTRACT, "--path", bomb], [EXTRACT, "--path", bomb2],
                 [EXTRACT, "--path", junk]):
        r = run(argv, timeout=GUARD)
        check(r.sig is None and r.rss <= rss_bound(ctx, EXTRACT), "%r" % r)
        if "--path" in argv:
            check(r.status == 4 and (b"refused" in r.err or b"compressed box" in r.err),
                  "a hostile compressed file was read: %r" % r)
        else:
            check(r.status == 0 and str(root.pid).encode() in r.out, "%r" % r)
            check(r.err.count(b"a compressed box whose header claims 2147483648 bytes") == 2,
                  "the bombs are not refused with a clear message: %r" % r)
    r = run([REAP, "--dir", ctx.shm, "--min-age", "0", "--archive", arch, "--journal",
             "--journal-reported", os.path.join(ctx.tmp, "reported-bomb"), "--json"],
            timeout=GUARD)
    check(r.sig is None and r.rss <= rss_bound(ctx, REAP), "bb-reap: %r" % r)
    check(r.status == 0, "bb-reap: %r" % r)
    rows = json_rows(r.out)
    check(any(x.get("pid") == root.pid and x["decision"] == "reaped" and x.get("archive")
              for x in rows), "root's box not reaped and archived: %r" % rows)
    check(r.err.count(b"a compressed file where only boxes processes map belong") == 3,
          "the bombs are not refused with a clear message: %r" % r)
    wait_for(lambda: entries("BB_PID=%d" % root.pid), "root's crash in the journal")
    check(os.path.exists(bomb), "the bomb was removed (not root's to judge)")


# ---- U4: no copy is said in the entry and the status ----------------------

def case_no_copy_said(ctx):
    """U4. A root service's box larger than the archive quota is reaped
    without a copy: bb-reap exits 3 (bb-reap(8)), and its journal entry
    says there is no copy (BB_NOT_ARCHIVED, and in MESSAGE)."""
    big = Box(ctx, "crash", size=4 * MIB, marker="big-evidence")
    arch = os.path.join(ctx.tmp, "arch-nocopy")
    r = run([REAP, "--dir", ctx.shm, "--min-age", "0", "--archive", arch,
             "--max-archive-bytes", "1M", "--journal",
             "--journal-reported", os.path.join(ctx.tmp, "reported-nocopy")], timeout=GUARD)
    check(r.status == 3 and b"reaped without an archive copy" in r.err, "%r" % r)
    check(not os.path.exists(big.path) and not os.listdir(arch), "%r" % r)
    got = []

    def entry():
        got[:] = entries("BB_PID=%d" % big.pid)
        return got
    wait_for(entry, "the entry of the box without a copy")
    e = got[0]
    check(e.get("BB_NOT_ARCHIVED", b"").startswith(b"not archived: larger than its owner's "
                                                   b"archive quota") and
          b"[no archive copy: " in e.get("MESSAGE", b""), "the entry: %r" % {
              k: v[:200] for k, v in e.items() if k.startswith(("BB_NOT", "MESSAGE"))})


# ---- U5: the tools read where the library writes ---------------------------

def case_blackbox_dir(ctx):
    """U5. A service writes its boxes to BLACKBOX_DIR: with the same
    variable, bb-extract --list, bb-extract PID and bb-reap find them
    without --dir."""
    box = Box(ctx, "exit", marker="in-blackbox-dir")
    env = dict(os.environ, BLACKBOX_DIR=ctx.shm)
    r = run([EXTRACT, "--list"], env=env)
    check(r.status == 0 and str(box.pid).encode() in r.out, "--list: %r" % r)
    r = run([EXTRACT, str(box.pid)], env=env)
    check(r.status == 0 and b"in-blackbox-dir" in r.out, "PID: %r" % r)
    r = run([REAP, "--min-age", "0", "--dry-run", "--json"], env=env)
    check(r.status == 0 and any(x.get("pid") == box.pid and x["decision"] == "would-reap"
                                for x in json_rows(r.out)), "bb-reap: %r" % r)


# ---- N7: a debug file someone else could write names nothing ---------------

def crash_of(out):
    return next((x for x in json_rows(out) if x.get("type") == "crash"), {})


def case_planted_debug_file(ctx):
    """N7. An admin points --debug-dir at a world-writable directory; uid
    65534 plants the debug file of root's stripped service there (its
    build id, its names): root's bb-extract refuses it, names no frame
    from it, and the symbols note says why.  The same file owned by root
    (0644) names the frames: the refusal is the owner's, nothing else."""
    for tool in ("objcopy", "strip", "readelf"):
        if not shutil.which(tool):
            raise Skipped("%s is not installed (package binutils)" % tool)
    exe = os.path.join(ctx.bin, "stripped-svc")
    subprocess.run(["strip", "-s", "-o", exe, HELPER], check=True)
    os.chmod(exe, 0o755)
    out = subprocess.run(["readelf", "-n", exe], stdout=subprocess.PIPE, text=True).stdout
    bid = re.search(r"Build ID: ([0-9a-f]+)", out).group(1)
    ddir = os.path.join(ctx.tmp, "debug-world")
    os.makedirs(os.path.join(ddir, ".build-id", bid[:2]))
    for d in (ddir, os.path.join(ddir, ".build-id"), os.path.join(ddir, ".build-id", bid[:2])):
        os.chmod(d, 0o1777)
    dbg = os.path.join(ddir, ".build-id", bid[:2], bid[2:] + ".debug")
    full = os.path.join(ctx.tmp, "full.debug")
    subprocess.run(["objcopy", "--only-keep-debug", HELPER, full], check=True)
    os.chmod(full, 0o644)
    as_nobody(shutil.copyfile, full, dbg)
    svc = Box(ctx, "crash", marker="stripped-root-service", exe=exe)

    r = run([EXTRACT, "--dir", ctx.shm, "--debug-dir", ddir, "--json", str(svc.pid)],
            timeout=GUARD)
    c = crash_of(r.out)
    check(r.status == 0 and c.get("frames") and
          not any(f.get("function") == "main" for f in c["frames"]),
          "a planted debug file named root's frames: %r" % r)
    check("owned by uid %d, neither root nor uid 0: refused" % NOBODY in c.get("symbols_note", ""),
          "the symbols note does not say why: %r" % c.get("symbols_note"))
    as_nobody(os.chmod, dbg, 0o666)
    os.chown(dbg, 0, 0)
    r = run([EXTRACT, "--dir", ctx.shm, "--debug-dir", ddir, "--json", str(svc.pid)],
            timeout=GUARD)
    c = crash_of(r.out)
    check(r.status == 0 and not any(f.get("function") == "main" for f in c.get("frames", [])) and
          "writable by others: refused" in c.get("symbols_note", ""),
          "a world-writable debug file named root's frames: %r" % r)
    os.chmod(dbg, 0o644)
    r = run([EXTRACT, "--dir", ctx.shm, "--debug-dir", ddir, "--json", str(svc.pid)],
            timeout=GUARD)
    c = crash_of(r.out)
    check(r.status == 0 and any(f.get("function") == "main" for f in c.get("frames", [])),
          "root's own debug file is not used: %r" % r)


# ---- N8: the stack signal taken by the program is said --------------------

def case_stack_signal_taken(ctx):
    """N8. A program installs its own handler on the library's stack signal
    after bb_init(), then crashes with a second thread alive: the crash
    handler sees the signal is no longer its own, asks nothing, and the
    box says the thread was not asked and why (bb-extract prints it),
    instead of "no answer".  Without the theft the thread answers."""
    for mode, want in (("crash-threads", rb"\*\*\* thread \d+ \(bbh-waiter\), at "),
                       ("crash-stolen", rb"\*\*\* thread \d+ \(bbh-waiter\): not asked: the "
                        rb"program had replaced the handler of the stack signal")):
        box = Box(ctx, mode, marker="stack-signal")
        box.p.wait()
        check(box.p.returncode == -11, "%s: status %r" % (mode, box.p.returncode))
        r = run([EXTRACT, "--no-symbols", "--path", box.path], timeout=GUARD)
        check(r.status == 0 and re.search(want, r.out) and b"no answer" not in r.out,
              "%s: %r" % (mode, r.out[:800]))
        box.kill()


# ---- N4: a flood of entries does not delay a report ----------------------

def flood(shm, secs, count_fd):
    """As uid 65534: create and remove blackbox.* entries as fast as it
    can for @secs seconds; the count goes to @count_fd."""
    n, end = 0, time.monotonic() + secs
    while time.monotonic() < end:
        for _ in range(1000):
            p = os.path.join(shm, "blackbox.flood.%d" % n)
            os.close(os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            os.unlink(p)
            n += 1
    os.write(count_fd, b"%d" % n)


def case_watch_flood(ctx):
    """N4. bb-reap --watch --journal while uid 65534 creates and removes
    blackbox.* entries as fast as it can (before and after the death): the
    flood never opens, reads or rewrites the reported file (its inode and
    contents stay as they were: before, each event replaced it), and a
    root crash meanwhile is reaped and reported within 5 s of its death.
    The requirement is 1 s (measured: 0.05 s without the flood, 1 to 2 s
    in it on a 2-core machine loaded by other builds and suites); 5 s is
    the bound such a machine keeps, below the 12.7 s of before at 20,000
    events a second.  The rewrite check above is what fails first."""
    reported = os.path.join(ctx.tmp, "reported-flood")
    # "a+b": the watcher's stdout shares this file's offset, which the
    # reads below move; O_APPEND keeps its writes at the end regardless.
    out = open(os.path.join(ctx.tmp, "flood.out"), "a+b")
    err = open(os.path.join(ctx.tmp, "flood.err"), "a+b")
    w = subprocess.Popen([REAP, "--watch", "--min-age", "0", "--dir", ctx.shm, "--journal",
                          "--journal-reported", reported, "--json"], stdout=out, stderr=err)
    cpath = os.path.join(ctx.tmp, "flood.count")
    cfd = os.open(cpath, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    fl = None
    try:
        time.sleep(0.5)  # its first pass (of an empty directory)
        before = os.stat(reported) if os.path.exists(reported) else None
        t0 = time.monotonic()
        fl = as_nobody_background(flood, ctx.shm, 6, cfd)
        time.sleep(2)
        after = os.stat(reported) if os.path.exists(reported) else None
        check((before and (before.st_ino, before.st_mtime_ns)) ==
              (after and (after.st_ino, after.st_mtime_ns)),
              "the flood made the watcher rewrite its reported file: %r -> %r" % (before, after))
        svc = Box(ctx, "crash", marker="root-crash-in-a-flood")
        died = time.monotonic()

        def reported_it():
            out.seek(0)
            return any(x.get("pid") == svc.pid and x["decision"] == "reaped"
                       for x in json_rows(out.read(), live=True))
        wait_for(reported_it, "the crash reaped and reported within 5 s of its death", 5)
        ctx.note("reaped and reported %.2f s after the death, in the flood" %
                 (time.monotonic() - died))
        wait_for(lambda: entries("BB_PID=%d" % svc.pid), "the entry in the journal", 10)
        os.waitpid(fl, 0)
        fl = None
        with open(cpath) as f:
            n = int(f.read() or 0)
        ctx.note("flood: %d creates+unlinks in %.1f s (%.0f/s)" %
                 (n, time.monotonic() - t0, n / (time.monotonic() - t0)))
        check(w.poll() is None, "the watcher stopped: %r" % w.poll())
    finally:
        if fl:
            stop(fl)
        os.close(cfd)
        w.terminate()
        w.wait()


# ---- U2: the watcher out of descriptors polls, at most a second ----------

OWNERS = int(os.environ.get("BB_SURFACE_OWNERS", "10000"))
PER_HOLDER = 100


def hold_boxes(shm, template, first, n, ready):
    """A forked child: @n boxes claiming this process (pid, start time),
    made from @template (its non-zero prefix, the rest sparse), each
    mapped as its owner maps it; says so on the pipe @ready, then waits."""
    import mmap
    from adversary import starttime as st_of
    pid, start = os.getpid(), st_of(os.getpid())
    with open(template, "rb") as f:
        data = bytearray(f.read())
    size = len(data)
    end = len(data.rstrip(b"\0"))
    data = data[:(end + 4095) // 4096 * 4096]
    struct.pack_into("<i", data, 64, pid)
    struct.pack_into("<Q", data, 72, start)
    maps = []
    for i in range(n):
        path = os.path.join(shm, "blackbox.%d.%d.%d" % (pid, start, first + i))
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        os.write(fd, data)
        os.ftruncate(fd, size)
        maps.append(mmap.mmap(fd, size, mmap.MAP_SHARED))
        os.close(fd)
    os.write(ready, b"r")
    while True:
        time.sleep(3600)


def case_watch_out_of_fds(ctx):
    """U2. bb-reap --watch with 10,000 live owners (boxes of 100 processes)
    at a descriptor limit of 1024 (soft and hard: the unit's
    LimitNOFILE= cannot help): it says once that it polls, and the
    boxes of owners killed then are reaped within 2 s (a bound 4 times
    its poll of 500 ms, for a loaded machine; before: 10 s, or the
    15-minute rescan)."""
    tmpl = Box(ctx, "exit", size=128 * 1024, marker="template")
    template = os.path.join(ctx.tmp, "template.box")
    shutil.copy(tmpl.path, template)
    os.unlink(tmpl.path)
    holders = []
    w = None
    try:
        for h in range(OWNERS // PER_HOLDER):
            r_, w_ = os.pipe()
            pid = os.fork()
            if pid == 0:
                try:
                    os.close(r_)
                    hold_boxes(ctx.shm, template, 0, PER_HOLDER, w_)
                finally:
                    os._exit(1)
            os.close(w_)
            holders.append(pid)
            check(os.read(r_, 1) == b"r", "holder %d did not get ready" % h)
            os.close(r_)

        def low_limit():
            import resource
            resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))
        out = open(os.path.join(ctx.tmp, "watch.out"), "a+b")  # O_APPEND: see case_watch_flood
        err = open(os.path.join(ctx.tmp, "watch.err"), "a+b")
        w = subprocess.Popen([REAP, "--watch", "--min-age", "0", "--dir", ctx.shm, "--json"],
                             stdout=out, stderr=err, preexec_fn=low_limit)

        def said(what):
            err.seek(0)
            return what in err.read()
        t0 = time.monotonic()
        wait_for(lambda: said(b"the boxes of further live owners are polled"),
                 "the watcher saying it polls", 600)
        victims = [Box(ctx, "wait", size=128 * 1024, marker="victim-%d" % i) for i in range(5)]

        def kept(pids):
            out.seek(0)
            rows = json_rows(out.read(), live=True)
            return all(any(x.get("pid") == p and x["decision"] == "kept" for x in rows)
                       for p in pids)
        wait_for(lambda: kept([v.pid for v in victims]), "the victims judged alive", 120)
        ctx.note("%d live owners' boxes watched at 1024 descriptors: first pass and victims "
                 "judged in %.1f s" % (OWNERS, time.monotonic() - t0))
        for v in victims:
            v.kill()
        t1 = time.monotonic()
        wait_for(lambda: not any(os.path.exists(v.path) for v in victims),
                 "the killed owners' boxes reaped within 2 s", 2)
        ctx.note("killed owners' boxes reaped %.2f s after their death" %
                 (time.monotonic() - t1))
        check(w.poll() is None, "the watcher stopped")
        err.seek(0)
        e = err.read()
        check(e.count(b"polled") == 1 and b"Too many open files" not in e,
              "said more than once, or ran out: %r" % e[-600:])
    finally:
        if w:
            w.terminate()
            w.wait()
        for pid in holders:
            os.kill(pid, 9)
            os.waitpid(pid, 0)


# ---- U1: the packaged units start as shipped -------------------------------

def exec_start(unit):
    """The ExecStart= of @unit (its source, systemd/*.in) as systemd splits
    it, @BB_REAP@ being the built bb-reap."""
    with open(os.path.join(UNITDIR, unit)) as f:
        lines = [l.strip() for l in f if l.startswith("ExecStart=")]
    check(len(lines) == 1, "%s: %d ExecStart= lines" % (unit, len(lines)))
    return shlex.split(lines[0][len("ExecStart="):].replace("@BB_REAP@", REAP))


def case_units_as_shipped(ctx):
    """U1. The ExecStart= line of every shipped service, exactly as written,
    in a scratch root (a private /dev/shm and /var/lib): bb-reap.service's
    run is accepted and succeeds; bb-reap-watch.service's starts, stays
    up, and archives and reports a root crash to the journal a minute
    after it (its --min-age 1min); the timer's service run while it
    watches (both enabled: no Conflicts=) succeeds too."""
    timer = exec_start("bb-reap.service.in")
    watch = exec_start("bb-reap-watch.service.in")
    ctx.note("bb-reap.service: %s" % " ".join(timer[1:]))
    ctx.note("bb-reap-watch.service: %s" % " ".join(watch[1:]))
    for unit in ("bb-reap.service.in", "bb-reap-watch.service.in"):
        with open(os.path.join(UNITDIR, unit)) as f:
            check(not any(l.startswith("Conflicts=") for l in f),
                  "%s conflicts with the other unit: enabling one stops the other" % unit)
    mount("-t", "tmpfs", "tmpfs", "/var/lib")
    os.mkdir("/var/lib/blackbox", 0o711)   # StateDirectory=, StateDirectoryMode=
    shm = ctx.shm
    ctx.shm = "/dev/shm"
    w = None
    try:
        r = run(timer, timeout=GUARD)
        check(r.status == 0, "bb-reap.service's command line: %r" % r)
        w = subprocess.Popen(watch, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        svc = Box(ctx, "crash", marker="watched-root-crash")
        r = run(timer, timeout=GUARD)
        check(r.status == 0, "bb-reap.service beside the watcher: %r" % r)
        check(w.poll() is None, "bb-reap-watch.service's command line did not stay up: "
              "status %r %r" % (w.poll(), w.stderr.read()[:600] if w.poll() is not None
                                else b""))
        # its --min-age 1min: archived and reported a minute after the
        # death (the bound is generous; the minute is the unit's choice)
        wait_for(lambda: any(n.startswith("blackbox-0-") for n in os.listdir("/var/lib/blackbox"))
                 and not os.path.exists(svc.path), "the watcher archiving root's box", 150)
        wait_for(lambda: entries("BB_PID=%d" % svc.pid), "root's crash in the journal", 30)
        check(w.poll() is None, "the watcher stopped: %r" % w.poll())
    finally:
        if w:
            if w.poll() is None:
                w.terminate()
            try:
                w.wait(10)
            except subprocess.TimeoutExpired:
                w.kill()
                w.wait()
            w.stderr.close()
        ctx.shm = shm
        subprocess.run(["umount", "-l", "/var/lib"])


CASES = [case_collector_long_fields, case_groups_build_id, case_archive_bomb,
         case_no_copy_said, case_blackbox_dir, case_planted_debug_file,
         case_stack_signal_taken, case_watch_flood, case_watch_out_of_fds,
         case_units_as_shipped]


class Ctx:
    pass


def setup(ctx):
    ctx.tmp = tempfile.mkdtemp(prefix="bbsurface.")
    os.chmod(ctx.tmp, 0o755)
    ctx.bin = os.path.join(ctx.tmp, "bin")
    os.mkdir(ctx.bin, 0o755)
    ctx.helper = os.path.join(ctx.bin, "bbh_box")
    shutil.copy(HELPER, ctx.helper)
    shutil.copy(LIB, os.path.join(ctx.bin, "libblackbox.so.0"))
    for n in os.listdir(ctx.bin):
        os.chmod(os.path.join(ctx.bin, n), 0o755)
    ctx.notes = []
    ctx.note = ctx.notes.append
    ctx.logs = open(os.path.join(ctx.tmp, "daemons.log"), "wb")
    private_dirs(ctx.tmp)
    mount("-t", "tmpfs", "-o", "mode=1777", "tmpfs", "/dev/shm")
    ctx.daemons = Daemons()
    ctx.daemons.journald(ctx.logs)
    probe = run([ctx.helper, "--bogus", "x"], nobody=True,
                env=dict(os.environ, LD_LIBRARY_PATH=ctx.bin))
    if probe.status != 2:
        return "uid %d cannot run %s: %r" % (NOBODY, ctx.helper, probe)
    return None


def inside():
    only = [c for c in os.environ.get("BB_SURFACE_CASES", "").split(",") if c]
    return run_suite_cases(Ctx(), setup, [c for c in CASES if not only or c.__name__[5:] in only])


def main():
    if len(sys.argv) < 7:
        print(__doc__.split("\n\n")[1])
        return 2
    enter(sys.argv, "surface", timeout=850)
    return inside()


if __name__ == "__main__":
    sys.exit(main())
