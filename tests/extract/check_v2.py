#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# Description: bb-extract on real format 2.0 boxes: a child that dies of
# SIGSEGV with the crash handler on.  --json / --cbor / text start with the
# crash, frames symbolised to the function of the test program (built -g);
# state lines come before the records; --list says "crashed (SIGSEGV)";
# --no-symbols, a hanging symboliser and a deleted binary still give
# module+offset and a clean exit (tests/symbols tests the symboliser
# itself); an important record shows once; a crash
# inside a write leaves that record torn, never data; a TSC box converts to
# sane wall times, and a TSC fallback says so in --list.
# JSON parsed with Debian's python3, CBOR with python3-cbor2.
#
# usage: check_v2.py BB_EXTRACT BBX_CRASHER
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

try:
    import cbor2
except ImportError:
    cbor2 = None

EXTRACT, CRASHER = sys.argv[1], sys.argv[2]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def crash_child(d, prog=CRASHER, env_extra=None, args=()):
    """Run the crasher with BLACKBOX_DIR=d; return its pid (it died of SIGSEGV)."""
    env = dict(os.environ, BLACKBOX_DIR=d)
    env.update(env_extra or {})
    p = subprocess.run([prog, *args], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=60)
    if p.returncode != -signal.SIGSEGV:
        sys.exit("crasher did not die of SIGSEGV: %d %s" % (p.returncode, p.stderr))
    return int(p.stdout.split()[0])


def extract(d, pid, *args, env_extra=None, binary=False):
    env = dict(os.environ)
    env.update(env_extra or {})
    p = subprocess.run([EXTRACT, "--dir", d, *args, str(pid)], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    return p.returncode, p.stdout if binary else p.stdout.decode(), p.stderr.decode()


def jlines(out):
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def has_function(frames, name):
    return any(f.get("function") == name and f.get("file", "").endswith("bbx_crasher.c")
               and f.get("line", 0) > 0 and "function_offset" in f for f in frames)


def check_order(recs, what):
    """crash first, then state records, then the records, then the summary."""
    check(recs and recs[0].get("type") == "crash", what + ": crash is not first")
    kinds = ["crash" if r.get("type") == "crash" else
             "state" if r.get("type") == "state" else
             "summary" if "summary" in r else "record" for r in recs]
    first_rec = kinds.index("record") if "record" in kinds else len(kinds)
    check(kinds.count("state") == 2 and all(k == "state" for k in kinds[1:3]) and
          first_rec == 3, what + ": order " + " ".join(kinds))
    states = {r["key"]: r["value"] for r in recs if r.get("type") == "state"}
    check(states == {"request": "GET /index", "inflight": 3},
          what + ": state %r" % states)


def main():
    d = tempfile.mkdtemp(prefix="bbv2.")
    try:
        pid = crash_child(d)

        # --json: the crash first, symbolised
        rc, out, err = extract(d, pid, "--json")
        check(rc == 0, "--json exit %d: %s" % (rc, err))
        recs = jlines(out)
        check_order(recs, "--json")
        c = recs[0]
        check(c.get("status") == "complete" and c.get("signal") == 11 and
              c.get("signal_name") == "SIGSEGV" and c.get("code_name") == "SEGV_MAPERR" and
              c.get("addr") == 0 and c.get("tid") == pid, "crash fields %r" % c)
        frames = c.get("frames", [])
        check(has_function(frames, "bbx_crash_here"), "no bbx_crash_here frame: %r" % frames)
        check(has_function(frames, "main"), "no main frame")
        check(all("module" in f and "offset" in f for f in frames[:4]),
              "frames without module+offset")
        summ = recs[-1]["summary"]
        check(summ["liveness"] == "crashed" and summ["crash_record"] == "complete" and
              summ["status"] == "intact" and summ["exit"] == 0, "summary %r" % summ)
        check(summ["state_table"]["used"] == 2, "state_table %r" % summ.get("state_table"))
        # the important record is in the thread's ring and the important ring:
        # shown once
        phase = [r for r in recs if r.get("key") == "phase"]
        check(len(phase) == 1 and phase[0].get("important") is True,
              "important record shown %d times" % len(phase))
        check(summ["important_duplicates"] == 1, "important_duplicates %r" %
              summ["important_duplicates"])

        # --cbor: the same maps
        if cbor2:
            rc, out, err = extract(d, pid, "--cbor", binary=True)
            check(rc == 0, "--cbor exit %d" % rc)
            f, items = io.BytesIO(out), []
            while f.tell() < len(out):
                items.append(cbor2.load(f))
            check_order(items, "--cbor")
            # build ids are byte strings in CBOR, hex in JSON
            cf = [dict(f, build_id=f["build_id"].hex()) if "build_id" in f else f
                  for f in items[0]["frames"]]
            check(cf == frames, "--cbor frames differ from --json")
        else:
            print("python3-cbor2 missing: CBOR not checked", file=sys.stderr)

        # text: the crash block first
        rc, out, err = extract(d, pid)
        check(rc == 0, "text exit %d" % rc)
        lines = out.splitlines()
        check(lines[0].startswith("*** crashed: SIGSEGV (11), code SEGV_MAPERR (1), "
                                  "fault address 0x0, thread %d" % pid), lines[0])
        check(any(re.search(r"  bbx_crash_here\+0x[0-9a-f]+ at \S*bbx_crasher\.c:\d+$", l)
                  for l in lines[1:8]), "text frames:\n" + out)
        firststate = next(i for i, l in enumerate(lines) if " state " in l)
        check(all(l.startswith("  #") for l in lines[1:firststate]), "text crash block")

        # --list
        lst = subprocess.run([EXTRACT, "--list", "--dir", d], stdout=subprocess.PIPE,
                             text=True).stdout
        row = next((l for l in lst.splitlines() if l.startswith("%d " % pid)), "")
        check("crashed (SIGSEGV)" in row, "--list row %r" % row)
        lj = jlines(subprocess.run([EXTRACT, "--list", "--json", "--dir", d],
                                   stdout=subprocess.PIPE, text=True).stdout)
        check(lj and lj[0].get("signal_name") == "SIGSEGV" and lj[0].get("clock"),
              "--list --json %r" % lj)

        # --no-symbols: module+offset only
        rc, out, err = extract(d, pid, "--json", "--no-symbols")
        fr = jlines(out)[0]["frames"]
        check(rc == 0 and fr and not any("function" in f for f in fr) and
              [f.get("offset") for f in fr] == [f.get("offset") for f in frames],
              "--no-symbols frames %r" % fr)

        # a symboliser that never answers is killed; extraction goes on
        rc, out, err = extract(d, pid, "--json", env_extra={
            "BB_EXTRACT_SYMBOL_TEST": "hang", "BB_EXTRACT_SYMBOL_TIMEOUT_MS": "200"})
        c = jlines(out)[0]
        check(rc == 0 and not any("function" in f for f in c["frames"]) and
              "timed out" in c.get("symbols_note", ""), "hanging symboliser: %r" % c)

        # the binary is gone: module+offset, a note, exit 0
        d2 = tempfile.mkdtemp(prefix="bbv2b.")
        try:
            copy = os.path.join(d2, "crasher-copy")
            shutil.copy(CRASHER, copy)
            pid2 = crash_child(d2, prog=copy)
            os.unlink(copy)
            rc, out, err = extract(d2, pid2, "--json")
            c = jlines(out)[0]
            mine = [f for f in c["frames"] if f.get("module") == copy]
            check(rc == 0 and mine and not any("function" in f for f in mine) and
                  copy + ": not found" in c.get("symbols_note", ""),
                  "deleted binary: %r" % c)
        finally:
            shutil.rmtree(d2)

        # a crash inside a write: crash record complete, the record torn
        d4 = tempfile.mkdtemp(prefix="bbv2w.")
        try:
            pid4 = crash_child(d4, args=("inwrite",))
            rc, out, err = extract(d4, pid4, "--json")
            recs = jlines(out)
            summ = recs[-1]["summary"]
            check(rc == 0 and recs[0].get("type") == "crash" and
                  recs[0].get("status") == "complete", "inwrite crash %r" % recs[0])
            check(summ["torn"] == 1 and summ["corrupt"] == 0 and summ["status"] == "intact",
                  "inwrite summary %r" % summ)
            check(not any(r.get("type") == "bytes" for r in recs),
                  "the interrupted record was shown as data")
        finally:
            shutil.rmtree(d4)

        # a stack overflow: labelled, the recursion folded, the frames the
        # record left out counted, the outermost ones kept
        d6 = tempfile.mkdtemp(prefix="bbv2o.")
        try:
            pid6 = crash_child(d6, args=("overflow",))
            rc, out, err = extract(d6, pid6)
            lines = out.splitlines()
            check(rc == 0 and re.match(r"\*\*\* stack overflow: fault address 0x[0-9a-f]+ is "
                                       r"(at|\d+ bytes (below|above)) the stack pointer 0x[0-9a-f]+$",
                                       lines[1]), "overflow: second line %r" % lines[1:2])
            folds = [l for l in lines if re.match(r"  #\d+-#\d+  \(the same frame, \d+ more "
                                                  r"times\)$", l)]
            gap = [i for i, l in enumerate(lines)
                   if re.match(r"  #64-#\d+  \(\d+ frames not recorded\)$", l)]
            check(len(folds) == 2 and len(gap) == 1, "overflow: folds %r gap %r" % (folds, gap))
            rc, out, err = extract(d6, pid6, "--json")
            c = jlines(out)[0]
            check(c.get("stack_overflow") is True and c.get("omitted_at") == 64 and
                  c.get("frames_omitted", 0) > 100 and len(c.get("frames", [])) == 128,
                  "overflow crash %r" % {k: v for k, v in c.items() if k != "frames"})
            if "built without libdw" not in c.get("symbols_note", ""):
                check(has_function(c["frames"][64:], "main"),
                      "overflow: main is not among the outermost frames")
        finally:
            shutil.rmtree(d6)

        # a crash in a signal handler: the trampoline is "<signal handler>",
        # the frame after it an exact instruction
        d7 = tempfile.mkdtemp(prefix="bbv2h.")
        try:
            pid7 = crash_child(d7, args=("inhandler",))
            rc, out, err = extract(d7, pid7)
            check(rc == 0 and any(re.match(r"  #\d+ +0x[0-9a-f]{16}  \S+\+0x[0-9a-f]+  "
                                           r"<signal handler>$", l) for l in out.splitlines()),
                  "inhandler: no <signal handler> frame:\n" + out)
            rc, out, err = extract(d7, pid7, "--json")
            fr = jlines(out)[0].get("frames", [])
            at = [i for i, f in enumerate(fr) if f.get("signal_handler")]
            check(len(at) == 1 and 0 < at[0] < len(fr) - 1 and fr[at[0] + 1].get("exact") and
                  "function" not in fr[at[0]], "inhandler frames %r" % fr)
        finally:
            shutil.rmtree(d7)

        # TSC asked for, not available (test hook): --list says so
        d5 = tempfile.mkdtemp(prefix="bbv2f.")
        try:
            pid5 = crash_child(d5, env_extra={"BLACKBOX_CLOCK": "tsc",
                                              "BB_TEST_NO_INVARIANT_TSC": "1"})
            lst = subprocess.run([EXTRACT, "--list", "--dir", d5], stdout=subprocess.PIPE,
                                 text=True).stdout
            row = next((l for l in lst.splitlines() if l.startswith("%d " % pid5)), "")
            check("monotonic (tsc unavailable)" in row, "fallback --list row %r" % row)
            lst = subprocess.run([EXTRACT, "--list", "--json", "--dir", d5],
                                 stdout=subprocess.PIPE, text=True).stdout
            ent = [e for e in jlines(lst) if e.get("pid") == pid5]
            check(ent and ent[0].get("clock_reason") == "not-invariant",
                  "fallback --list --json %r" % ent)
        finally:
            shutil.rmtree(d5)

        # The default clock on a clocksource the kernel does not trust
        # (test hook: the library reads this file instead of sysfs):
        # monotonic, and both the summary and --list say why
        d8 = tempfile.mkdtemp(prefix="bbv2c.")
        try:
            cs = os.path.join(d8, "clocksource")
            with open(cs, "w") as f:
                f.write("hpet\n")
            env8 = {"BB_TEST_CLOCKSOURCE": cs, "BLACKBOX_CLOCK": ""}
            pid8 = crash_child(d8, env_extra=env8)
            rc, out, err = extract(d8, pid8)
            check("clock monotonic (default: the kernel's clocksource is not tsc)" in err,
                  "default clock on hpet: summary %r" % err)
            rc, out, err = extract(d8, pid8, "--json")
            summ = jlines(out)[-1]["summary"]
            check(summ.get("clock") == "monotonic" and
                  summ.get("clock_reason") in ("clocksource", "not-invariant"),
                  "default clock on hpet: %r" % summ)
        finally:
            shutil.rmtree(d8)

        # TSC: stamps convert to wall times inside the run (slack for the
        # calibration, not a timing threshold)
        d3 = tempfile.mkdtemp(prefix="bbv2t.")
        try:
            t0 = time.time_ns()
            pid3 = crash_child(d3, env_extra={"BLACKBOX_CLOCK": "tsc"})
            t1 = time.time_ns()
            rc, out, err = extract(d3, pid3, "--json")
            recs = jlines(out)
            summ = recs[-1]["summary"]
            check(summ["clock"] in ("tsc", "monotonic (tsc unavailable)"),
                  "clock %r" % summ["clock"])
            check(summ.get("clock_reason") in ("asked", "asked-untrusted", "not-invariant"),
                  "asked tsc: clock_reason %r" % summ.get("clock_reason"))
            stamps = [r["ts_ns"] for r in recs if "ts_ns" in r]
            check(len(stamps) >= 6, "tsc records %d" % len(stamps))
            check(all(t0 - 10**9 <= s <= t1 + 10**9 for s in stamps),
                  "tsc wall times %r outside [%d, %d]" % (stamps, t0, t1))
            check(stamps == sorted(stamps), "tsc stamps out of order")
            print("clock:", summ["clock"], "tsc_hz:", summ.get("tsc_hz"), file=sys.stderr)
        finally:
            shutil.rmtree(d3)
    finally:
        shutil.rmtree(d)
    if failures:
        sys.exit("%d check(s) failed" % len(failures))
    print("ok")


main()
