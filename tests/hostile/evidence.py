#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Description: evidence that travels stays true: bb-reap --journal, the
journal read back by bb-extract (on the host and on a collector), the
symboliser and a set-uid program against a hostile local user (uid 65534)
and a hostile host uploading to a collector (docs/SECURITY.md, "Journal
entries", "Symbols", "Set-uid programs").

    evidence.py BB_EXTRACT BB_REAP BBH_BOX LIBBLACKBOX_SO BBH_SYNTH BBH_SUID
                CATALOG UNIT [SANITIZE]

Runs as root (exit 77, skipped with the reason, otherwise) in a private
mount namespace with journald started by hand (tests/helpers/journalns.py):
one journald for all the cases; a collector's files are written by the real
systemd-journal-remote from what each host uploads (the export format, one
file per sender as --split-mode=host names them: remote-<host>.journal).
Boxes live in private sticky (1777) directories, /dev/shm is a private
tmpfs.  Each case is one attack of the table in docs/SECURITY.md and
asserts what root's tools now do; each fails on a tree without the rule it
shows.  Every wait is bounded.
"""

import array
import fcntl
import json
import os
import re
import shlex
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "helpers"))
from adversary import (H_COMM, H_UID, NOBODY, Box, Failed, Skipped, as_nobody,  # noqa: E402
                       check, forge, run, run_suite_cases, starttime, terminal_unsafe)
from journalns import (MESSAGE_ID, Daemons, bind_catalog, enter, entries,  # noqa: E402
                       export_entry, mount, parse_export, private_dirs, remote_import,
                       wait_for)
import journalns  # noqa: E402

EXTRACT, REAP, HELPER, LIB, SYNTH, SUID, CATALOG, UNIT = sys.argv[1:9]
SANITIZE = sys.argv[9] if len(sys.argv) > 9 else "none"
OTHER = 65533        # a third user: a reader in the journal's group, say
GUARD = 240          # seconds: a run that takes longer is hung (before: 642 s)


def jrun(argv, **kw):
    return journalns.run(argv, **kw)


def boot_id():
    with open("/proc/sys/kernel/random/boot_id") as f:
        return f.read().strip().replace("-", "")


def machine_id():
    with open("/etc/machine-id") as f:
        return f.read().strip()


def send_native(fields):
    """As the caller: one entry over journald's native protocol, every field
    binary-framed, through a sealed memory file (any size)."""
    data = b""
    for k, v in fields:
        v = v.encode() if isinstance(v, str) else v
        data += k.encode() + b"\n" + struct.pack("<Q", len(v)) + v + b"\n"
    fd = os.memfd_create("entry", os.MFD_ALLOW_SEALING)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW |
                fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SEAL)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.sendmsg([], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))], 0,
              "/run/systemd/journal/socket")
    s.close()
    os.close(fd)


def wait_entries(n, *match):
    """Our entries of the local journal matching @match, once there are @n."""
    got = []

    def enough():
        got[:] = entries(*match)
        return len(got) >= n
    wait_for(enough, "%d journal entries %r" % (n, match))
    return got


def lines_of(out, pid):
    return [l for l in out.decode(errors="replace").splitlines()
            if re.search(r"\s%d\s" % pid, l)]


def json_rows(out):
    return [json.loads(l) for l in out.splitlines() if l.strip()]


def crash_of(out):
    return next((x for x in json_rows(out) if x.get("type") == "crash"), {})


def reap(ctx, *extra, content=None):
    argv = [REAP, "--dir", ctx.shm, "--journal=box", "--journal-reported",
            os.path.join(ctx.tmp, "reported"), "--json"] + list(extra)
    if content:
        argv.append("--journal-content=" + content)
    r = run(argv)
    check(r.status == 0, "bb-reap: %r" % r)
    return json_rows(r.out)


def forged_box(ctx, pid, start, uid=0, marker="forged-by-attacker"):
    """The attacker's own crashed box, patched to claim @pid, @start, @uid."""
    att = Box(ctx, "crash", nobody=True, marker=marker)
    with open(att.path, "rb") as f:
        data = bytearray(f.read())
    struct.pack_into("<i", data, 64, pid)
    struct.pack_into("<Q", data, 72, start)
    struct.pack_into("<I", data, H_UID, uid)
    as_nobody(os.unlink, att.path)
    return bytes(data)


def symbol_of(path, name):
    """The address of @name in the ELF @path (its file's own address)."""
    out = subprocess.run(["nm", path], stdout=subprocess.PIPE, text=True, check=True).stdout
    for l in out.splitlines():
        p = l.split()
        if len(p) == 3 and p[2] == name:
            return int(p[0], 16)
    raise Failed("no symbol %s in %s" % (name, path))


def build_id(path):
    out = subprocess.run(["readelf", "-n", path], stdout=subprocess.PIPE, text=True).stdout
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    check(m, "no build id in %s" % path)
    return m.group(1)


def as_uid(uid):
    def f():
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    return f


# ---- the cases ------------------------------------------------------------

def case_forged_entry(ctx):
    """1. uid 65534 sends one native journal entry with bb-reap's MESSAGE_ID,
    the victim's pid and start time, this boot, BB_UID=0 and a BB_BOX whose
    header says uid 0: never read back as bb-reap's.  Only entries journald
    records as root's (_UID=0, _TRANSPORT=journal) are; --list hides it,
    --list --untrusted shows it flagged."""
    victim = Box(ctx, "crash", marker="victim-original")
    dec = reap(ctx, "--min-age", "0")
    check([x for x in dec if x.get("pid") == victim.pid and x["decision"] == "reported"],
          "victim not reported: %r" % dec)
    wait_entries(1, "BB_PID=%d" % victim.pid)
    data = forged_box(ctx, victim.pid, 1)
    as_nobody(send_native, [
        ("MESSAGE_ID", MESSAGE_ID), ("PRIORITY", "2"), ("SYSLOG_IDENTIFIER", "bb-reap"),
        ("MESSAGE", "bbh_box[%d] (uid 0) crashed: SIGSEGV at bbh_box+0x1 (1 record)" % victim.pid),
        ("BB_PID", str(victim.pid)), ("BB_STARTTIME", "1"), ("BB_BOOT_ID", boot_id()),
        ("BB_UID", "0"), ("BB_COMM", "bbh_box"), ("BB_LIVENESS", "crashed"),
        ("BB_BOX_SIZE", str(len(data))), ("BB_BOX", data)])
    wait_entries(2, "BB_PID=%d" % victim.pid)

    r = run([EXTRACT, "--journal", "--no-symbols", str(victim.pid)])
    check(r.status == 0 and b"victim-original" in r.out and b"forged" not in r.out,
          "--journal PID read the forged entry: %r" % r)
    check(b"uid 0 (journal entry, trusted)" in r.err, "the owner's proof: %r" % r.err)
    r = run([EXTRACT, "--journal", "--list"])
    check(len(lines_of(r.out, victim.pid)) == 1, "--list shows the forgery: %r" % r)
    r = run([EXTRACT, "--journal", "--list", "--untrusted"])
    ls = lines_of(r.out, victim.pid)
    check(len(ls) == 2 and sum("[not bb-reap's: sent by uid 65534 over journal]" in l
                               for l in ls) == 1, "--list --untrusted: %r" % ls)
    r = run([EXTRACT, "--journal", "--list", "--untrusted", "--json"])
    rows = [x for x in json_rows(r.out) if x["pid"] == victim.pid]
    check(sorted(x["trusted"] for x in rows) == [False, True], "--json: %r" % rows)


def case_planted_claim(ctx):
    """2. uid 65534 plants a box of its own claiming a dead root service's
    pid and start time, and bb-reap reports it too: two entries of one
    machine, boot and pid with different owners are never resolved by
    recency (exit 5, each named with its uid and cursor); --list --wide has a
    UID column; --cursor reads the genuine one, reported as "uid 0
    (journal entry, trusted)", never "file owner uid 0"."""
    victim = Box(ctx, "wait", marker="victim-original")
    vstart = starttime(victim.pid)
    victim.kill()
    reap(ctx, "--min-age", "1h")            # the genuine entry first ...
    att = Box(ctx, "exit", nobody=True, marker="forged-by-attacker")
    planted = os.path.join(ctx.shm, "blackbox.%d.%d.1" % (victim.pid, vstart))
    as_nobody(forge, att.path, planted, victim.pid, vstart, 1, time.time_ns() + 3600 * 10**9)
    dec = reap(ctx, "--min-age", "1h")      # ... the planted one after it
    check([x for x in dec if x.get("pid") == victim.pid and x["decision"] == "reported" and
           x["uid"] == NOBODY], "the planted box was not reported: %r" % dec)
    wait_entries(2, "BB_PID=%d" % victim.pid)

    r = run([EXTRACT, "--journal", str(victim.pid)])
    check(r.status == 5 and not r.out, "two owners, one pid: %r" % r)
    check(b"disagree on the owner" in r.err and b" uid 0 start time %d" % vstart in r.err and
          b" uid 65534 start time %d" % vstart in r.err and r.err.count(b"--cursor '") == 2,
          "the refusal does not name both claims: %r" % r.err)
    r = run([EXTRACT, "--journal", "--list", "--wide"])
    uids = sorted(int(l.split()[3]) for l in lines_of(r.out, victim.pid))
    check(uids == [0, NOBODY] and b" UID " in r.out.splitlines()[0], "--list UID: %r" % r)
    rows = [x for x in json_rows(run([EXTRACT, "--journal", "--list", "--json"]).out)
            if x["pid"] == victim.pid]
    genuine = next(x for x in rows if x["uid"] == 0)
    r = run([EXTRACT, "--journal", "--cursor", genuine["cursor"]])
    check(r.status == 0 and b"victim-original" in r.out and b"forged" not in r.out and
          b"uid 0 (journal entry, trusted)" in r.err and b"file owner" not in r.err,
          "--cursor of the genuine entry: %r" % r)


def crafted_modules_box(ctx, name, pid, module, uid=0):
    """Bytes of a box (crafted: any host can upload any) that crashed in
    main of @module, a copy of bbh_box, and says uid @uid."""
    out = os.path.join(ctx.tmp, name)
    r = run([SYNTH, out, "--pid", str(pid), "--start", "99", "--uid", str(uid), "--comm",
             "secretd", "--marker", "crafted-" + name, "--modules", module, "1",
             "--build-id", build_id(module), "--offset", str(symbol_of(module, "main") + 4)])
    check(r.status == 0, "bbh_synth: %r" % r)
    with open(out, "rb") as f:
        return f.read()


def collector_entry(sender_host, machine, pid, uid, data, boot, usec, extra=()):
    """An entry as a host uploads it: every field, the trusted ones too."""
    return export_entry([
        ("__REALTIME_TIMESTAMP", str(usec)), ("__MONOTONIC_TIMESTAMP", "1000"),
        ("_BOOT_ID", boot), ("_MACHINE_ID", machine), ("_HOSTNAME", sender_host),
        ("_UID", "0"), ("_GID", "0"), ("_TRANSPORT", "journal"), ("MESSAGE_ID", MESSAGE_ID),
        ("MESSAGE", "secretd[%d] (uid %d) crashed" % (pid, uid)), ("BB_PID", str(pid)),
        ("BB_STARTTIME", "99"), ("BB_BOOT_ID", boot), ("BB_UID", str(uid)),
        ("BB_COMM", "secretd"), ("BB_LIVENESS", "crashed"), ("BB_BOX_SIZE", str(len(data))),
        ("BB_BOX", data)] + list(extra))


def case_symbol_identity(ctx):
    """3. A box taken out of a journal entry names a root-only binary (0700
    directory) as a module.  Root's own box, from bb-reap's entry, is
    parsed as root (BB_UID of a trusted entry); such an entry from uid
    65534 is not read at all; on a collector its symbols are parsed as
    nobody (65534), never as the uid the box's header names (0): the file
    is not read.  A non-root reader of the collector's files (another uid)
    never parses the files such a box names with its own rights."""
    secret = os.path.join(ctx.tmp, "secret")
    os.mkdir(secret, 0o700)
    secretd = os.path.join(secret, "secretd")
    shutil.copy(HELPER, secretd)
    # root's own service running it: its trusted entry's box is root's,
    # parsed as root (the owner the entry proves), so it gets its names
    svc = Box(ctx, "crash", marker="root-service", exe=secretd)
    reap(ctx, "--min-age", "0")
    wait_entries(1, "BB_PID=%d" % svc.pid)
    r = run([EXTRACT, "--journal", "--json", str(svc.pid)])
    frames = crash_of(r.out).get("frames", [])
    check(r.status == 0 and any(f.get("module") == secretd and f.get("function") == "main"
                                for f in frames), "root's box from its trusted entry: %r" % r)

    data = crafted_modules_box(ctx, "secret-box", 4242, secretd)
    as_nobody(send_native, [
        ("MESSAGE_ID", MESSAGE_ID), ("MESSAGE", "secretd[4242] (uid 0) crashed"),
        ("BB_PID", "4242"), ("BB_STARTTIME", "99"), ("BB_BOOT_ID", boot_id()),
        ("BB_UID", "0"), ("BB_COMM", "secretd"), ("BB_LIVENESS", "crashed"), ("BB_BOX", data)])
    wait_entries(1, "BB_PID=4242")
    r = run([EXTRACT, "--journal", "--json", "4242"])
    check(r.status == 4 and b'"function"' not in r.out, "a user's entry was read: %r" % r)

    central = os.path.join(ctx.tmp, "central-identity")
    os.mkdir(central, 0o755)
    mine = os.path.join(ctx.tmp, "other-home")
    os.mkdir(mine, 0o700)
    os.chown(mine, OTHER, OTHER)
    otherd = os.path.join(mine, "secretd")
    shutil.copy(HELPER, otherd)
    os.chown(otherd, OTHER, OTHER)
    data2 = crafted_modules_box(ctx, "other-box", 4243, otherd)
    machine, boot, now = os.urandom(16).hex(), os.urandom(16).hex(), time.time_ns() // 1000
    remote_import(collector_entry("evil", machine, 4242, 0, data, boot, now) +
                  collector_entry("evil", machine, 4243, 0, data2, boot, now + 1),
                  os.path.join(central, "remote-evil.journal"))
    r = run([EXTRACT, "--journal-directory", central, "--json", "4242"])
    c = crash_of(r.out)
    check(r.status == 0 and c.get("frames") and
          not any("function" in f for f in c["frames"]) and
          "Permission denied (uid %d)" % NOBODY in c.get("symbols_note", ""),
          "a collector's box was symbolised with more than nobody's rights: %r" % r)
    check(b"as uploaded by remote-evil: not proven" in run(
        [EXTRACT, "--journal-directory", central, "4242"]).err, "the owner's proof")
    for n in os.listdir(central):
        os.chmod(os.path.join(central, n), 0o644)
    r = run([ctx.extract_copy, "--journal-directory", central, "--json", "4243"],
            preexec=as_uid(OTHER), env=dict(os.environ, LD_LIBRARY_PATH=ctx.bin))
    c = crash_of(r.out)
    check(r.status == 0 and c.get("frames") and
          not any("function" in f for f in c["frames"]) and
          "the box belongs to uid %d and we are uid %d" % (NOBODY, OTHER) in
          c.get("symbols_note", ""), "a reader parsed a forger's files as itself: %r" % r)


def case_collector_senders(ctx):
    """4. A host uploading to systemd-journal-remote sends entries with
    another host's _MACHINE_ID, _HOSTNAME and BB_BOOT_ID: each entry is
    attributed to its sender's file; --machine/--boot never mix two
    senders (exit 5 naming both), --list --wide shows the sender, and --cursor
    reads the genuine entry, reported as that sender's unproven word."""
    victim = Box(ctx, "crash", marker="victim-original")
    reap(ctx, "--min-age", "0")
    wait_entries(1, "BB_PID=%d" % victim.pid)
    exp = jrun(["journalctl", "-o", "export", "--no-pager", "MESSAGE_ID=" + MESSAGE_ID,
                "BB_PID=%d" % victim.pid]).stdout
    central = os.path.join(ctx.tmp, "central-senders")
    os.mkdir(central, 0o755)
    remote_import(exp, os.path.join(central, "remote-hosta.journal"))
    (genuine,) = parse_export(exp)
    forged = forged_box(ctx, victim.pid, 1)

    def copy(boot, usec):
        return export_entry([(k, forged if k == "BB_BOX" else
                              boot if k == "BB_BOOT_ID" else
                              str(usec) if k == "__REALTIME_TIMESTAMP" else v)
                             for k, v in genuine.items() if k not in ("__CURSOR", "__SEQNUM",
                                                                      "__SEQNUM_ID")])
    t = int(genuine["__REALTIME_TIMESTAMP"])
    remote_import(copy(genuine["BB_BOOT_ID"], t + 10**6) + copy(b"f" * 32, t + 2 * 10**6),
                  os.path.join(central, "remote-hostb.journal"))
    jd = [EXTRACT, "--journal-directory", central]
    m, b = genuine["_MACHINE_ID"].decode(), genuine["BB_BOOT_ID"].decode()
    for sel in (["--machine", m], ["--machine", m, "--boot", b]):
        r = run(jd + sel + [str(victim.pid)])
        check(r.status == 5 and not r.out and b"forged" not in r.out and
              b"sender remote-hosta " in r.err and b"sender remote-hostb " in r.err,
              "%r: two senders claim one machine: %r" % (sel, r))
    check(b"several senders" in r.err, "one machine and boot, two senders: %r" % r.err)
    r = run(jd + [str(victim.pid)])
    check(r.status == 5 and b"forged" not in r.out, "no choice: %r" % r)
    r = run(jd + ["--list", "--wide"])
    ls = lines_of(r.out, victim.pid)
    check(len(ls) == 3 and sum(l.startswith("remote-hosta ") for l in ls) == 1 and
          r.out.startswith(b"SENDER "), "--list senders: %r" % ls)
    rows = [x for x in json_rows(run(jd + ["--list", "--json"]).out) if x["pid"] == victim.pid]
    a = next(x for x in rows if x["sender"] == "remote-hosta")
    r = run(jd + ["--cursor", a["cursor"]])
    check(r.status == 0 and b"victim-original" in r.out and
          b"as uploaded by remote-hosta: not proven" in r.err,
          "--cursor of host A's entry: %r" % r)


def case_catalog(ctx):
    """5. An entry with bb-reap's MESSAGE_ID and control characters in
    BB_COMM, BB_PID and BB_LIVENESS, then journalctl -x: the catalog
    substitutes no field, so nothing of the sender's reaches the terminal
    raw; it says that only entries with _UID=0 come from bb-reap."""
    tag = os.urandom(8).hex()
    as_nobody(send_native, [
        ("MESSAGE_ID", MESSAGE_ID), ("MESSAGE", "a crash"), ("BB_TEST", tag),
        ("BB_COMM", b"\x1b]0;pwn\x07\xc2\x9b2J"), ("BB_PID", b"7\x1b[2J"),
        ("BB_LIVENESS", b"crashed\x1b[8m"), ("BB_UID", "0")])
    wait_entries(1, "BB_TEST=" + tag)
    out = jrun(["journalctl", "-x", "--no-pager", "MESSAGE_ID=" + MESSAGE_ID,
                "BB_TEST=" + tag]).stdout
    check(b"flight recorder" in out and b"Only entries whose _UID is 0" in out,
          "no catalog text: %r" % out[:800])
    check(terminal_unsafe(out) is None, "journalctl -x: %s" % terminal_unsafe(out))


def packaged_reap(ctx):
    """bb-reap as the packaged unit runs it (its ExecStart), on our dirs."""
    with open(UNIT) as f:
        line = next(l for l in f if l.startswith("ExecStart="))
    argv = shlex.split(line[len("ExecStart="):])
    argv = [REAP if a == "@BB_REAP@" else ctx.shm if a == "/dev/shm" else
            os.path.join(ctx.tmp, "archive") if a == "/var/lib/blackbox" else a for a in argv]
    return argv + ["--journal-reported", os.path.join(ctx.tmp, "reported")]


def case_private_content(ctx):
    """6. alice's (uid 65534) box holds api_token=... in its state table and
    records; the packaged bb-reap --journal runs: the entry carries the
    crash metadata, not the records, the state table or the box, so no
    member of the journal's groups (or a collector) reads the token; with
    --journal-content=all (the administrator's choice) it does."""
    secret = "tok-" + os.urandom(6).hex()
    os.environ["BBH_SECRET"] = secret  # not in argv: the command line is public
    alice = Box(ctx, "exit", nobody=True, key="api_token", value="env:BBH_SECRET",
                marker="alice")
    r = run(packaged_reap(ctx))
    check(r.status == 0, "the packaged bb-reap: %r" % r)
    (e,) = wait_entries(1, "BB_PID=%d" % alice.pid)
    leaks = sorted(k for k, v in e.items() if secret.encode() in v)
    check(not leaks and "BB_STATE_JSON" not in e and "BB_RECORDS" not in e and
          "BB_BOX" not in e and b"private" in e.get("BB_BOX_OMITTED", b"") and
          e.get("BB_UID") == str(NOBODY).encode(), "alice's secrets in the journal: %r" % leaks)
    r = run([EXTRACT, "--journal", str(alice.pid)])
    check(r.status == 4 and secret.encode() not in r.out, "read back: %r" % r)
    bob = Box(ctx, "exit", nobody=True, key="api_token", value="env:BBH_SECRET", marker="bob")
    reap(ctx, "--min-age", "0", content="all")
    (e,) = wait_entries(1, "BB_PID=%d" % bob.pid)
    check(secret.encode() in e.get("BB_STATE_JSON", b"") and "BB_BOX" in e,
          "--journal-content=all: %r" % sorted(e))


def modules_256(ctx):
    """256 copies of bbh_box, debug information stripped, each with a
    .gnu_debuglink to a FIFO beside it; the box of uid 65534 that crashed
    with one frame in each (bbh_synth)."""
    d = os.path.join(ctx.tmp, "m")
    os.mkdir(d, 0o755)
    base = os.path.join(ctx.tmp, "base")
    subprocess.run(["strip", "--strip-debug", "-o", base + ".s", HELPER], check=True)
    with open(os.path.join(d, "d.dbg"), "wb") as f:
        f.write(b"x")
    subprocess.run(["objcopy", "--add-gnu-debuglink=" + os.path.join(d, "d.dbg"),
                    base + ".s", base], check=True)
    for i in range(256):
        shutil.copy(base, os.path.join(d, "%03d" % i))
    os.unlink(os.path.join(d, "d.dbg"))
    os.mkfifo(os.path.join(d, "d.dbg"), 0o666)
    os.chown(os.path.join(d, "d.dbg"), NOBODY, NOBODY)
    box = os.path.join(ctx.shm, "blackbox.256")
    r = run([SYNTH, box, "--comm", "many", "--modules", d, "256", "--build-id", build_id(base),
             "--offset", str(symbol_of(base, "main") + 4)], nobody=True)
    check(r.status == 0, "bbh_synth: %r" % r)
    return box


def case_symbol_budget(ctx):
    """7. A box of uid 65534 with 256 crash frames, each in its own module
    whose debuglink names a FIFO: one root bb-extract --path finishes (the
    FIFO is refused, never waited on; 64 modules at most are examined, the
    others' frames stay module+offset with a note); children that hang
    until killed cost the box's budget, then the run's, not a deadline per
    module."""
    box = modules_256(ctx)
    r = run([EXTRACT, "--json", "--path", box], timeout=GUARD)
    c = crash_of(r.out)
    note = c.get("symbols_note", "")
    named = [f for f in c.get("frames", []) if "function" in f]
    check(r.status == 0 and len(c.get("frames", [])) == 256 and
          note.startswith("symbols: 192 more modules not examined: at most 64 per box") and
          "d.dbg: a FIFO: refused" in note and "timed out" not in note and len(named) <= 64 and
          all("module" in f and "offset" in f for f in c["frames"]),
          "256 modules: %.1f s, status %s, %d named, note %r" % (
              r.secs, r.status, len(named), note[:300]))
    ctx.note("256 modules, FIFO debuglinks: %.1f s, %d frames named" % (r.secs, len(named)))

    # every child hangs until killed: 2 s each, 3 s for the box: the second
    # four get what is left of the budget (their deadline is cut to it),
    # then no child starts
    hang = dict(os.environ, BB_EXTRACT_SYMBOL_TEST="hang", BB_EXTRACT_SYMBOL_TIMEOUT_MS="2000",
                BB_EXTRACT_SYMBOL_BUDGET_MS="3000")
    r = run([EXTRACT, "--json", "--path", box], timeout=GUARD, env=hang)
    note = crash_of(r.out).get("symbols_note", "")
    cut = [int(ms) for ms in re.findall(r"timed out after (\d+) ms", note) if int(ms) < 2000]
    check(r.status == 0 and "not examined: the symbol budget of 3000 ms per box is spent"
          in note and cut, "hanging children, 3 s per box: %.1f s, note %r" % (r.secs, note[:600]))
    ctx.note("256 modules whose child hangs, budget 3 s per box: %.1f s" % r.secs)
    as_nobody(shutil.copy, box, box + ".copy")
    hang.update(BB_EXTRACT_SYMBOL_BUDGET_MS="30000", BB_EXTRACT_SYMBOL_RUN_BUDGET_MS="3000")
    r = run([EXTRACT, "--json", "--all", "--dir", ctx.shm], timeout=GUARD, env=hang)
    notes = [x.get("symbols_note", "") for x in json_rows(r.out) if x.get("type") == "crash"]
    check(len(notes) == 2 and all("the symbol budget of 3000 ms per run is spent" in n
                                  for n in notes), "3 s per run: %r" % notes)


def case_setuid(ctx):
    """8. A set-uid-root program linking the library, run by uid 65534 with
    BLACKBOX_DIR naming a root-only directory and BLACKBOX_SIZE=64M, or
    BLACKBOX_DISABLE=1: the environment is ignored (secure_getenv), the
    box goes to the default directory at the default size and recording
    stays on; without set-uid the same variables are obeyed."""
    d = os.path.join(ctx.tmp, "suid")
    os.mkdir(d, 0o755)
    if os.statvfs(d).f_flag & os.ST_NOSUID:
        raise Skipped("%s is mounted nosuid: a set-uid program cannot be run from it" % d)
    prog, plain = os.path.join(d, "bbh_suid"), os.path.join(d, "bbh_plain")
    shutil.copy(SUID, prog)
    shutil.copy(SUID, plain)
    os.chown(prog, 0, 0)
    os.chmod(prog, 0o4755)
    os.chmod(plain, 0o755)
    rootonly = os.path.join(ctx.tmp, "root-only")
    os.mkdir(rootonly, 0o700)
    mine = os.path.join(ctx.tmp, "nobody-dir")
    os.mkdir(mine)
    os.chmod(mine, 0o1777)
    env = {"PATH": "/usr/bin:/bin", "BLACKBOX_SIZE": "64M"}
    if SANITIZE not in ("", "none"):
        env["ASAN_OPTIONS"] = os.environ.get("ASAN_OPTIONS", "")
    r = run([plain], nobody=True, env=dict(env, BLACKBOX_DIR=mine))
    m = re.fullmatch(rb"box (\S+) (\d+)\n", r.out)
    check(r.status == 0 and m and m.group(1).startswith(mine.encode() + b"/"),
          "not set-uid, the user's BLACKBOX_DIR and BLACKBOX_SIZE: %r" % r)
    size64 = m.group(2)
    r = run([prog], nobody=True, env=dict(env, BLACKBOX_DIR=rootonly))
    m = re.fullmatch(rb"box (\S+) (\d+)\n", r.out)
    check(r.status == 0 and m and m.group(1).startswith(b"/dev/shm/") and
          m.group(2) != size64 and not os.listdir(rootonly),
          "set-uid, BLACKBOX_DIR of root's, BLACKBOX_SIZE=64M: %r" % r)
    r = run([prog], nobody=True, env=dict(env, BLACKBOX_DISABLE="1"))
    check(r.status == 0 and r.out.startswith(b"box /dev/shm/"),
          "set-uid, BLACKBOX_DISABLE=1: %r" % r)


def case_comm_prefix(ctx):
    """9. A box whose comm reads "sshd[812] (uid 0) crashed: SEGV": bb-reap's
    MESSAGE and its log line quote it, so it cannot pass for the line's
    own prefix."""
    att = Box(ctx, "exit", nobody=True, marker="comm")
    fake = b"sshd[812] (uid 0) crashed: SEGV"

    def patch(path):
        with open(path, "r+b") as f:
            f.seek(H_COMM)
            f.write(fake + b"\0")
    as_nobody(patch, att.path)
    r = run([REAP, "--dir", ctx.shm, "--journal", "--min-age", "0", "--journal-reported",
             os.path.join(ctx.tmp, "reported")])
    check(r.status == 0, "bb-reap: %r" % r)
    (e,) = wait_entries(1, "BB_PID=%d" % att.pid)
    check(e["MESSAGE"].startswith(b'"' + fake + b'"[%d] (uid %d) died' % (att.pid, NOBODY)),
          "MESSAGE %r" % e["MESSAGE"])
    check(b'comm "' + fake + b'"' in r.err, "bb-reap's log line: %r" % r.err)


def case_collector_stacks(ctx):
    """10. A host uploads crash stacks made to cost: two entries whose
    BB_STACKs name 300 modules by 300 build ids, lines that do not parse,
    a module path with terminal escapes, a BB_STACK_KINDS longer than the
    stack, and one entry of 4,000 distinct frames' worth of lines.
    `--groups` finishes, looks up at most 256 modules and says so, keeps
    every frame module+offset, escapes what it prints; `--list` and the
    entry without its box (its frames from BB_STACK) likewise."""
    central = os.path.join(ctx.tmp, "central-stacks")
    os.mkdir(central, 0o755)
    boot, machine, now = "b" * 32, "c" * 32, int(time.time() * 1e6)

    def stack(first, n, evil=False):
        lines = ["#%d 0x%016x /opt/evil/m%d.so+0x%x %040x" % (i, 0x7f0000000000 + i, first + i,
                                                              0x10 + i, first + i + 1)
                 for i in range(n)]
        if evil:
            lines.insert(1, "#1 0x00007f0000000001 /opt/\x1b]0;pwned\x07/\x1b[2J+0x10 abcd")
            lines.insert(2, "#2 not a frame at all")
        return "\n".join(lines)

    def entry(pid, st, kinds):
        return export_entry([
            ("__REALTIME_TIMESTAMP", str(now + pid)), ("__MONOTONIC_TIMESTAMP", "1000"),
            ("_BOOT_ID", boot), ("_MACHINE_ID", machine), ("_HOSTNAME", "evil"),
            ("_UID", "0"), ("_TRANSPORT", "journal"), ("MESSAGE_ID", MESSAGE_ID),
            ("MESSAGE", "x[%d] crashed" % pid), ("BB_PID", str(pid)), ("BB_STARTTIME", "1"),
            ("BB_BOOT_ID", boot), ("BB_UID", "0"), ("BB_COMM", "x\x1b[31m"),
            ("BB_LIVENESS", "crashed"), ("BB_SIGNAL", "11"), ("BB_CRASH_KIND", "signal"),
            ("BB_BOX_ATTACHED", "0"), ("BB_STACK", st), ("BB_STACK_KINDS", kinds)])

    remote_import(entry(101, stack(0, 150), "p" * 5000) + entry(102, stack(150, 150, True), "") +
                  entry(103, stack(0, 4000), "r"), os.path.join(central, "remote-evil.journal"))
    r = run([EXTRACT, "--journal-directory", central, "--groups", "--json"], timeout=GUARD)
    g = json_rows(r.out)
    check(r.status == 0 and len(g) >= 2 and sum(x["count"] for x in g) == 3 and
          b"more modules not examined: at most 256 a run" in r.err and
          not any(x["named"] for x in g), "--groups: %.1f s, status %d, %r %r" % (
              r.secs, r.status, g[:2], r.err[:300]))
    ctx.note("300 build ids in one collector file: --groups %.1f s" % r.secs)
    r = run([EXTRACT, "--journal-directory", central, "--groups"], timeout=GUARD)
    check(r.status == 0 and not terminal_unsafe(r.out) and not terminal_unsafe(r.err),
          "--groups text: %r" % r.out[:400])
    r = run([EXTRACT, "--journal-directory", central, "--list"], timeout=GUARD)
    check(r.status == 0 and r.out.count(b"\n") == 4 and not terminal_unsafe(r.out),
          "--list: %r" % r.out[:400])
    r = run([EXTRACT, "--journal-directory", central, "102"], timeout=GUARD)
    check(r.status == 4 and b"*** the crash stack of the entry (BB_STACK):" in r.out and
          not terminal_unsafe(r.out) and not terminal_unsafe(r.err),
          "entry 102: %d %r" % (r.status, r.out[-600:]))


CASES = [case_forged_entry, case_planted_claim, case_symbol_identity, case_collector_senders,
         case_catalog, case_private_content, case_symbol_budget, case_setuid,
         case_comm_prefix, case_collector_stacks]


class Ctx:
    pass


def setup(ctx):
    ctx.tmp = tempfile.mkdtemp(prefix="bbevidence.")
    os.chmod(ctx.tmp, 0o755)
    ctx.bin = os.path.join(ctx.tmp, "bin")
    os.mkdir(ctx.bin, 0o755)
    ctx.helper = os.path.join(ctx.bin, "bbh_box")
    shutil.copy(HELPER, ctx.helper)
    ctx.extract_copy = os.path.join(ctx.bin, "bb-extract")
    shutil.copy(EXTRACT, ctx.extract_copy)
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
    bind_catalog(ctx.tmp, CATALOG)
    probe = run([ctx.helper, "--bogus", "x"], nobody=True,
                env=dict(os.environ, LD_LIBRARY_PATH=ctx.bin))
    if probe.status != 2:
        return "uid %d cannot run %s: %r" % (NOBODY, ctx.helper, probe)
    return None


def inside():
    return run_suite_cases(Ctx(), setup, CASES)


def main():
    if len(sys.argv) < 9:
        print(__doc__.split("\n\n")[1])
        return 2
    enter(sys.argv, "evidence", timeout=850)
    return inside()


if __name__ == "__main__":
    sys.exit(main())
