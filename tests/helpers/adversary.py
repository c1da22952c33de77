# SPDX-License-Identifier: MIT
"""What the hostile suites share (tests/hostile: hostile.py, evidence.py):
processes run as the attacker (uid 65534), its boxes (bbh_box) and forged
copies of them, tool runs measured to the end, and the test of what a
terminal must never see.  Box is given a context with .helper (bbh_box),
.shm (the box directory) and .bin (where the library copy is)."""

import os
import shutil
import signal
import sys
import struct
import subprocess
import tempfile
import time
import traceback

NOBODY = 65534
MIB = 1 << 20

# struct bb_header offsets (include/blackbox/format.h)
H_BOX_SIZE, H_PID, H_UID, H_START = 24, 64, 68, 72
H_COMM = 120
H_CREATED, H_SEQ = 424, 432
H_MOD_SIZE, H_MOD_OFF = 540, 544


class Failed(Exception):
    pass


class Skipped(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failed(what)


# ---- processes ------------------------------------------------------------

def drop_to_nobody():
    """preexec / fork child: become uid 65534 for good."""
    os.setgroups([])
    os.setresgid(NOBODY, NOBODY, NOBODY)
    os.setresuid(NOBODY, NOBODY, NOBODY)


class Run:
    """One finished process: status (exit code or None), sig (killing
    signal or None), out, err (bytes), rss (peak RSS in bytes)."""

    def __init__(self, argv, status, sig, out, err, rss, secs):
        self.argv, self.status, self.sig = argv, status, sig
        self.out, self.err, self.rss, self.secs = out, err, rss, secs

    def __repr__(self):
        return "%r: status %s signal %s rss %.1f MiB\nstdout %r\nstderr %r" % (
            [a if isinstance(a, str) else a.decode("utf-8", "replace") for a in self.argv],
            self.status, self.sig, self.rss / MIB, self.out[:600], self.err[:600])


def run(argv, nobody=False, timeout=60, env=None, preexec=None):
    """Run @argv to the end (killed after @timeout s) and measure its peak
    RSS with wait4(2): ru_maxrss of that child alone.  As uid 65534 with
    @nobody, or after @preexec."""
    with tempfile.TemporaryFile() as o, tempfile.TemporaryFile() as e:
        t0 = time.monotonic()
        p = subprocess.Popen(argv, stdout=o, stderr=e, stdin=subprocess.DEVNULL,
                             preexec_fn=drop_to_nobody if nobody else preexec, env=env)
        while True:
            pid, st, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() - t0 > timeout:
                os.kill(p.pid, signal.SIGKILL)
                pid, st, ru = os.wait4(p.pid, 0)
                break
            time.sleep(0.002)
        p.returncode = 0  # reaped here, not by Popen
        o.seek(0)
        e.seek(0)
        sig = os.WTERMSIG(st) if os.WIFSIGNALED(st) else None
        status = os.WEXITSTATUS(st) if os.WIFEXITED(st) else None
        return Run(argv, status, sig, o.read(), e.read(), ru.ru_maxrss * 1024,
                   time.monotonic() - t0)


def as_nobody(fn, *args):
    """Call fn(*args) in a child process running as uid 65534; its
    exception (if any) is reported, the child's exit status returned."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        code = 0
        try:
            drop_to_nobody()
            fn(*args)
        except BaseException:
            os.write(w, traceback.format_exc().encode())
            code = 1
        os._exit(code)
    os.close(w)
    msg = b""
    while True:
        b = os.read(r, 65536)
        if not b:
            break
        msg += b
    os.close(r)
    _, st = os.waitpid(pid, 0)
    if st:
        raise Failed("as uid %d: %s" % (NOBODY, msg.decode(errors="replace")))


def as_nobody_background(fn, *args):
    """fn(*args) as uid 65534 in a child that runs until stop()."""
    pid = os.fork()
    if pid == 0:
        try:
            drop_to_nobody()
            fn(*args)
        except BaseException:
            traceback.print_exc()
            os._exit(1)
        os._exit(0)
    return pid


def stop(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    os.waitpid(pid, 0)


class Box:
    """A bbh_box process (the victim's or the attacker's) and its box."""

    def __init__(self, ctx, mode, nobody=False, size=None, marker="box", comm=None,
                 thread=None, key=None, value=None, wait_init=False, exe=None):
        argv = [exe or ctx.helper]
        for opt, v in (("--size", size), ("--comm", comm), ("--thread", thread),
                       ("--key", key), ("--value", value), ("--marker", marker)):
            if v is not None:
                argv += [opt, str(v) if isinstance(v, int) else v]
        if wait_init:
            argv.append("--wait-before-init")
        argv.append(mode)
        env = dict(os.environ, BLACKBOX_DIR=ctx.shm, LD_LIBRARY_PATH=ctx.bin)
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=env,
                                  preexec_fn=drop_to_nobody if nobody else None)
        self.pid = self.p.pid
        self.path = None
        if not wait_init:
            self._ready()
        if mode in ("exit", "crash"):
            self.p.wait()

    def _ready(self):
        line = self.p.stdout.readline().decode()
        if not line.startswith("ready "):
            self.p.kill()
            raise Failed("bbh_box did not get ready: %r %r" % (line, self.p.stderr.read()))
        _, pid, self.path = line.split(None, 2)
        self.path = self.path.strip()
        check(int(pid) == self.pid, "pid")

    def go(self):
        """--wait-before-init: let it call bb_init()."""
        self.p.stdin.write(b"go\n")
        self.p.stdin.flush()
        self._ready()

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
        self.p.wait()
        for f in (self.p.stdin, self.p.stdout, self.p.stderr):
            f.close()


def starttime(pid):
    with open("/proc/%d/stat" % pid) as f:
        s = f.read()
    return int(s[s.rindex(")") + 2:].split()[19])


def header(path):
    with open(path, "rb") as f:
        return f.read(4096)


def forge(src, dst, pid=None, start=None, seq=None, created=None, uid=None, box_size=None,
          grow=None):
    """As the attacker: copy its own box @src to @dst (O_EXCL), patching
    header fields; @grow makes the copy that many bytes (sparse)."""
    with open(src, "rb") as f:
        data = bytearray(f.read())
    for off, fmt, v in ((H_PID, "<i", pid), (H_START, "<Q", start), (H_SEQ, "<I", seq),
                        (H_CREATED, "<Q", created), (H_UID, "<I", uid),
                        (H_BOX_SIZE, "<Q", box_size)):
        if v is not None:
            struct.pack_into(fmt, data, off, v)
    fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, data)
    if grow:
        os.ftruncate(fd, grow)
    os.close(fd)


# ---- what a terminal must never see -------------------------------------

UNSAFE_CP = {0x061c, 0x200e, 0x200f, 0x2028, 0x2029, 0x202a, 0x202b, 0x202c, 0x202d,
             0x202e, 0x2066, 0x2067, 0x2068, 0x2069}


def terminal_unsafe(b, json=False):
    """None if @b is valid UTF-8 with no control character but newline, no
    DEL, no C1 control and no bidirectional control; else what is wrong.
    JSON keeps exact values: there only C0 and C1 controls must not be raw
    (DEL and bidirectional characters are text a JSON string may hold)."""
    try:
        s = b.decode("utf-8", "strict")
    except UnicodeDecodeError as e:
        return "invalid UTF-8 at byte %d: %r" % (e.start, b[max(0, e.start - 20):e.start + 20])
    for i, ch in enumerate(s):
        o = ord(ch)
        if ((o < 0x20 and ch != "\n") or 0x80 <= o <= 0x9f or
                (not json and (o == 0x7f or o in UNSAFE_CP))):
            return "raw U+%04X at %d: %r" % (o, i, s[max(0, i - 30):i + 30])
    return None


def run_cases(ctx, cases):
    """Each case(ctx) in its own private sticky box directory (ctx.shm,
    like /dev/shm), reported PASS, SKIP or FAIL with its notes (ctx.notes);
    returns (failed, skipped)."""
    failed = skipped = 0
    for case in cases:
        ctx.shm = os.path.join(ctx.tmp, "shm-" + case.__name__[5:])
        os.mkdir(ctx.shm)
        os.chmod(ctx.shm, 0o1777)
        t0 = time.monotonic()
        try:
            case(ctx)
            print("PASS %s (%.1f s)" % (case.__name__, time.monotonic() - t0))
        except Skipped as e:
            skipped += 1
            print("SKIP %s: %s" % (case.__name__, e))
        except Exception as e:
            failed += 1
            print("FAIL %s: %s" % (case.__name__, e))
            if not isinstance(e, Failed):
                traceback.print_exc()
        for n in ctx.notes:
            print("     " + n)
        del ctx.notes[:]
        sys.stdout.flush()
    return failed, skipped


def run_suite_cases(ctx, setup, cases):
    """setup(ctx) (a reason to skip, or None), then run_cases(); the
    daemons stopped, the logs closed and ctx.tmp removed (unless BBJ_KEEP
    is set) whatever happened: the suite's exit status, 0, 1 or 77."""
    failed = skipped = 0
    try:
        why = setup(ctx)
        if why:
            print("SKIP: " + why)
            return 77
        failed, skipped = run_cases(ctx, cases)
    finally:
        if getattr(ctx, "daemons", None):
            ctx.daemons.stop_all()
        if getattr(ctx, "logs", None):
            ctx.logs.close()
        if getattr(ctx, "tmp", None) and not os.environ.get("BBJ_KEEP"):
            shutil.rmtree(ctx.tmp, ignore_errors=True)
    print("%d cases, %d failed, %d skipped" % (len(cases), failed, skipped))
    return 1 if failed else 0
