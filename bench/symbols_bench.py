#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""bench/symbols_bench.py BUILD_DIR [OLD_BB_EXTRACT] [-n RUNS]

Time to symbolise a 32-frame crash stack (tests/symbols/symt_prog.c "deep":
27 frames in the program, built -O1 -g, 2 in libc, with its Debian debug
file when libc6-dbg is installed), in one run:

  floor    bb-extract --no-symbols --json: start, read the box, print
  libdw    bb-extract --json: the same plus one confined child per module
           (fresh image, libdwfl), i.e. what a user waits for
  addr2line  the way bb-extract symbolised before libdw: the floor plus one
           `addr2line -f -C -e MODULE OFFSETS...` per module (return
           addresses looked up at offset - 1), run one after the other
  old      OLD_BB_EXTRACT --json, if given: a bb-extract built before the
           change (addr2line inside), end to end

Each figure is the best and the median of RUNS (default 15) wall-clock
runs, and the best CPU time (user + system of the process and its
children).  The symbolising cost is a figure minus the floor; ratios are
against the addr2line path measured in the same run.  A benchmark, not a
test: nothing is asserted.
"""
import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time


def main():
    args = [a for a in sys.argv[1:]]
    runs = 15
    if "-n" in args:
        i = args.index("-n")
        runs = int(args[i + 1])
        del args[i:i + 2]
    if not args:
        sys.exit(__doc__)
    build = args[0]
    old = args[1] if len(args) > 1 else None
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    bbx = os.path.join(build, "extractor", "bb-extract")
    work = tempfile.mkdtemp(prefix="bbsym-bench.")
    try:
        prog = os.path.join(work, "symt_prog")
        subprocess.run(["cc", "-O1", "-g", "-fno-toplevel-reorder", "-rdynamic",
                        "-I" + os.path.join(root, "include"),
                        os.path.join(root, "tests", "symbols", "symt_prog.c"), "-o", prog,
                        os.path.join(build, "libblackbox", "libblackbox.a"), "-lcbor",
                        "-lpthread"], check=True)
        p = subprocess.run([prog, "deep"], env=dict(os.environ, BLACKBOX_DIR=work),
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        assert p.returncode == -signal.SIGSEGV, p.returncode
        pid = p.stdout.split()[0].decode()
        base = [bbx, "--dir", work, pid, "--json"]

        def crash(argv):
            out = subprocess.run(argv, stdout=subprocess.PIPE, check=True).stdout
            return json.loads(out.decode().splitlines()[0])

        frames = crash(base + ["--no-symbols"])["frames"]
        named = crash(base)
        mods = {}
        for i, f in enumerate(frames):
            mods.setdefault(f["module"], []).append(hex(f["offset"] - (1 if i else 0)))
        print("stack: %d frames, %d named by libdw, in %s" %
              (len(frames), sum("function" in f for f in named["frames"]),
               ", ".join("%s (%d)" % (os.path.basename(m), len(o)) for m, o in mods.items())))
        if named.get("symbols_note"):
            print("note:", named["symbols_note"])

        def addr2line():
            for m, offs in mods.items():
                subprocess.run(["addr2line", "-f", "-C", "-e", m] + offs,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        def cmd(argv):
            return lambda: subprocess.run(argv, stdout=subprocess.DEVNULL,
                                          stderr=subprocess.DEVNULL)

        cases = [("floor", cmd(base + ["--no-symbols"])), ("libdw", cmd(base))]
        if shutil.which("addr2line"):
            floor = cmd(base + ["--no-symbols"])
            cases.append(("addr2line", lambda: (floor(), addr2line())))
        if old:
            cases.append(("old", cmd([old, "--dir", work, pid, "--json"])))
        res = {}
        for name, fn in cases:
            fn()  # warm the page cache
        for _ in range(runs):  # interleaved: load changes hit every case alike
            for name, fn in cases:
                r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
                t0 = time.perf_counter()
                fn()
                t = time.perf_counter() - t0
                r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
                cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
                res.setdefault(name, []).append((t * 1000, cpu * 1000))
        print("%-10s %9s %9s %9s %11s %11s" % ("path", "best ms", "median", "cpu ms",
                                               "symbols ms", "vs addr2line"))
        fl = min(t for t, _ in res["floor"])
        ref = min(t for t, _ in res["addr2line"]) - fl if "addr2line" in res else None
        for name, _ in cases:
            ts = [t for t, _ in res[name]]
            best, cpu = min(ts), min(c for _, c in res[name])
            sym = best - fl
            ratio = "%.2fx" % (sym / ref) if ref and name != "floor" else ""
            print("%-10s %9.1f %9.1f %9.1f %11s %11s" %
                  (name, best, statistics.median(ts), cpu,
                   "" if name == "floor" else "%.1f" % sym, ratio))
        print("(%d runs each, interleaved; symbols = best - floor's best; ratio of the "
              "symbolising costs)" % runs)
    finally:
        shutil.rmtree(work)


main()
