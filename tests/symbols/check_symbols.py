#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Description: bb-extract's crash symbols against real programs that die
of SIGSEGV with the crash handler on, compiled here in every shape that
matters: stripped with -rdynamic (a static function after exported ones:
never named after a neighbour, "??"), its debug file split off under a
private --debug-dir as .build-id/xx/yyyy.debug or found by .gnu_debuglink
(exact function and file:line), PIE and non-PIE, always_inline at -O2 (the
inline chain), a frame in a shared library; module paths that are missing,
a FIFO, a device, a directory, a symlink to a device, to the same file, to
a rebuilt one; a build id mismatch; a box without build ids; hostile files
(truncated, garbage DWARF) and a child that crashes, hangs or answers
garbage (extraction goes on); root extracting a non-root box (the child
runs as the box's owner); debuginfod over loopback only with --debuginfod;
Debian's nginx with the box preloaded, a worker sent SIGSEGV (when nginx
is installed).
Every named frame of every run is checked against the unstripped symbol
table: the symbol must contain the address.

usage: check_symbols.py BB_EXTRACT SRCDIR INCDIR LIBBLACKBOX_A SANITIZE CC [CC ARGS...]
Exit 0 pass, 1 fail, 77 skip (bb-extract built without libdw).
"""
import http.server
import io
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
import threading

try:
    import cbor2
except ImportError:
    cbor2 = None

EXTRACT, SRC, INC, LIBA, SANITIZE = sys.argv[1:6]
CC = sys.argv[6:]
failures = []
verified = [0]


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)
    return cond


def run(args, **kw):
    kw.setdefault("stdout", subprocess.PIPE)
    kw.setdefault("stderr", subprocess.PIPE)
    return subprocess.run(args, timeout=kw.pop("timeout", 120), **kw)


def sh(args, **kw):
    p = run(args, **kw)
    if p.returncode != 0:
        sys.exit("%s failed (%d): %s" % (" ".join(args), p.returncode,
                                         p.stderr.decode(errors="replace")))
    return p.stdout.decode(errors="replace")


def markers(path):
    """{"CRASH_HIDDEN": 46, ...} from the "@NAME" comments of a source."""
    out = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            m = re.search(r"/\* @([A-Z_]+) \*/", line)
            if m:
                out[m.group(1)] = n
    return out


PROG_C = os.path.join(SRC, "symt_prog.c")
LIB_C = os.path.join(SRC, "symt_lib.c")
LINES = dict(markers(PROG_C), **markers(LIB_C))


def cflags():
    f = ["-g", "-fno-toplevel-reorder", "-I" + INC]
    if SANITIZE not in ("", "none"):
        # the programs' own null dereferences are the crashes under test:
        # UBSan would report them (and symbolise the report) first
        f += ["-fsanitize=" + SANITIZE, "-fno-sanitize=null"]
    return f


def build_id(path):
    m = re.search(r"Build ID: ([0-9a-f]+)", sh(["readelf", "-n", path]))
    return m.group(1) if m else None


def split_debug(full, stripped, debug):
    """Debug file split off @full; @stripped keeps .dynsym only.  @debug is
    kept out of @stripped's directory: libdw finds FILE.debug beside FILE."""
    assert os.path.dirname(debug) != os.path.dirname(stripped)
    sh(["objcopy", "--only-keep-debug", full, debug])
    sh(["strip", "--strip-all", "-o", stripped, full])


def place_build_id(debug, ddir):
    bid = build_id(debug)
    d = os.path.join(ddir, ".build-id", bid[:2])
    os.makedirs(d, exist_ok=True)
    shutil.copy(debug, os.path.join(d, bid[2:] + ".debug"))


def compile_prog(out, opt="-O1", extra=(), lib=None):
    args = CC + cflags() + [opt, "-rdynamic", PROG_C, "-o", out]
    if lib:
        args += ["-DSYMT_WITH_LIB", "-L" + os.path.dirname(lib), "-lsymt",
                 "-Wl,-rpath,$ORIGIN"]
    args += list(extra) + [LIBA, "-lcbor", "-lpthread"]
    sh(args)


# ---- the truth: symbols of the unstripped files ---------------------------

TRUTH = {}   # module path -> [(name, value, size)]


def symtab(path, dynamic=False):
    out = run(["nm", "-S", "--defined-only"] + (["-D"] if dynamic else []) + [path])
    syms = []
    for line in out.stdout.decode(errors="replace").splitlines():
        p = line.split()
        if len(p) == 4:
            syms.append((p[3].split("@")[0], int(p[0], 16), int(p[1], 16)))
        elif len(p) == 3:  # no size: contains nothing
            syms.append((p[2].split("@")[0], int(p[0], 16), 0))
    return syms


def truth_for(module):
    if module not in TRUTH:
        # modules we did not build (libc): their dynamic symbols, plus the
        # full table of a Debian debug file when one is installed
        syms = symtab(module, dynamic=True) if os.path.isfile(module) else []
        bid = build_id(module) if os.path.isfile(module) else None
        dbg = bid and "/usr/lib/debug/.build-id/%s/%s.debug" % (bid[:2], bid[2:])
        if dbg and os.path.isfile(dbg):
            syms += symtab(dbg)
        TRUTH[module] = syms
    return TRUTH[module]


def check_contained(frames, what):
    """No frame is named after a symbol that does not contain its address."""
    for i, f in enumerate(frames):
        if "function" not in f or "module" not in f:
            continue
        look = f["offset"] - (1 if i > 0 else 0)
        name = f.get("linkage_name", f["function"])  # the symbol's, for C++
        cands = [s for s in truth_for(f["module"]) if s[0] == name]
        if not cands:
            continue  # a name from DWARF only: not in any table we can read
        ok = any(v <= look < v + sz and f["offset"] - f["function_offset"] == v
                 for _, v, sz in cands)
        check(ok, "%s: frame %d named %s+%#x, but no such symbol contains offset %#x: %r"
              % (what, i, name, f.get("function_offset", 0), look, cands))
        verified[0] += ok


# ---- crashing and extracting -----------------------------------------------

def crash(prog, box, mode="hidden", preexec=None, env_extra=None):
    env = dict(os.environ, BLACKBOX_DIR=box)
    env.update(env_extra or {})
    p = run([prog, mode], env=env, preexec_fn=preexec)
    if p.returncode != -signal.SIGSEGV:
        sys.exit("%s %s did not die of SIGSEGV: %d %s" % (prog, mode, p.returncode,
                                                          p.stderr.decode(errors="replace")))
    return int(p.stdout.split()[0])


def extract(box, pid, *args, env_extra=None, fmt="--json"):
    env = dict(os.environ)
    env.update(env_extra or {})
    argv = [EXTRACT, "--dir", box, str(pid)] + ([fmt] if fmt else []) + list(args)
    p = run(argv, env=env)
    return p.returncode, p.stdout, p.stderr.decode(errors="replace")


def crash_record(box, pid, *args, what, env_extra=None):
    rc, out, err = extract(box, pid, *args, env_extra=env_extra)
    check(rc == 0, "%s: exit %d: %s" % (what, rc, err))
    recs = [json.loads(l) for l in out.decode().splitlines() if l.strip()]
    c = recs[0] if recs and recs[0].get("type") == "crash" else {}
    check(c.get("status") == "complete", "%s: no complete crash record" % what)
    check_contained(c.get("frames", []), what)
    note = c.get("symbols_note", "")
    check(not note.endswith(";") and not note.endswith(" "),
          "%s: symbols_note ends in a separator: %r" % (what, note))
    return c


def text_of(box, pid, *args, env_extra=None):
    rc, out, err = extract(box, pid, *args, env_extra=env_extra, fmt=None)
    return rc, out.decode(errors="replace"), err


def of(frames, module):
    return [f for f in frames if f.get("module") == module]


def at(f, name, line_key, src=PROG_C):
    return (f.get("function") == name and f.get("file", "").endswith(os.path.basename(src))
            and f.get("line") == LINES[line_key])


class Dirs:
    """A 0755 scratch directory (a dropped child must reach what it reads)."""

    def __init__(self):
        self.root = tempfile.mkdtemp(prefix="bbsym.")
        os.chmod(self.root, 0o755)

    def sub(self, name, mode=0o755):
        d = os.path.join(self.root, name)
        os.makedirs(d, exist_ok=True)
        os.chmod(d, mode)
        return d


# ---- the cases ---------------------------------------------------------------

def stripped_and_split(t):
    """-rdynamic, stripped: no neighbour's name; with its debug file: exact."""
    for kind, extra in (("pie", ["-fPIE", "-pie"]), ("nopie", ["-fno-pie", "-no-pie"])):
        d = t.sub(kind)
        full, prog = os.path.join(d, "prog.full"), os.path.join(d, "prog")
        dbg = os.path.join(t.sub(kind + "-store"), "prog.debug")
        compile_prog(full, extra=extra)
        split_debug(full, prog, dbg)
        TRUTH[prog] = symtab(full)
        box = t.sub(kind + "-box")
        pid = crash(prog, box)

        c = crash_record(box, pid, what=kind + " stripped")
        fr = of(c["frames"], prog)
        check(len(fr) >= 3, "%s: frames in prog %r" % (kind, c["frames"]))
        f0 = c["frames"][0]
        # the bug this guards against is real: the nearest exported symbol
        # below the fault does not contain it, and addr2line names it anyway
        dyn = [s for s in symtab(prog, dynamic=True) if s[1] <= f0["offset"]]
        near = max(dyn, key=lambda s: s[1]) if dyn else None
        check(near and not near[1] <= f0["offset"] < near[1] + near[2],
              "%s: no exported neighbour below the fault (test premise): %r" % (kind, near))
        if shutil.which("addr2line"):
            a2l = run(["addr2line", "-f", "-e", prog, hex(f0["offset"])]).stdout.decode()
            print("%s: addr2line names frame 0 %r (the neighbour's name)" %
                  (kind, a2l.split("\n")[0]), file=sys.stderr)
        check(f0.get("module") == prog and "function" not in f0 and "file" not in f0,
              "%s stripped: frame 0 must be unknown: %r" % (kind, f0))
        check(c["frames"][1].get("function") == "symt_run",
              "%s stripped: frame 1 (exported) %r" % (kind, c["frames"][1]))
        check(f0.get("build_id") == build_id(prog), "%s: build_id %r" % (kind, f0))
        rc, txt, err = text_of(box, pid)
        line0 = txt.splitlines()[1]
        check(rc == 0 and re.search(r"prog\+0x%x  \?\?$" % f0["offset"], line0),
              "%s stripped text frame 0 not marked unknown: %r" % (kind, line0))

        ddir = t.sub(kind + "-debug")
        place_build_id(dbg, ddir)
        c = crash_record(box, pid, "--debug-dir", ddir, what=kind + " --debug-dir")
        f = c["frames"]
        check(at(f[0], "symt_hidden", "CRASH_HIDDEN") and f[0]["function_offset"] > 0,
              "%s --debug-dir: frame 0 %r" % (kind, f[0]))
        check(at(f[1], "symt_run", "CALL_HIDDEN"), "%s --debug-dir: frame 1 %r" % (kind, f[1]))
        check(any(x.get("function") == "main" for x in f), "%s: no main frame" % kind)
        rc, txt, err = text_of(box, pid, "--debug-dir", ddir)
        check(re.search(r"  #0  0x[0-9a-f]{16}  %s\+0x[0-9a-f]+  symt_hidden\+0x[0-9a-f]+ "
                        r"at \S*symt_prog\.c:%d\n" % (re.escape(prog), LINES["CRASH_HIDDEN"]),
                        txt), "%s --debug-dir text:\n%s" % (kind, txt))
        if cbor2:
            rc, out, err = extract(box, pid, "--debug-dir", ddir, fmt="--cbor")
            item = cbor2.load(io.BytesIO(out))
            cf = [dict(x, build_id=x["build_id"].hex()) if "build_id" in x else x
                  for x in item["frames"]]
            check(cf == f, "%s: --cbor frames differ from --json" % kind)

        if kind == "pie":
            # the debug information in the binary itself
            pid2 = crash(full, box)
            c = crash_record(box, pid2, what="unstripped")
            check(at(c["frames"][0], "symt_hidden", "CRASH_HIDDEN"),
                  "unstripped: frame 0 %r" % c["frames"][0])
            # .gnu_debuglink beside the binary
            ld = t.sub("debuglink")
            linked, ldbg = os.path.join(ld, "prog"), os.path.join(ld, "prog.dbg")
            shutil.copy(dbg, ldbg)
            sh(["objcopy", "--add-gnu-debuglink=" + ldbg, prog, linked])
            TRUTH[linked] = symtab(full)
            pid3 = crash(linked, box)
            c = crash_record(box, pid3, what="debuglink")
            check(at(c["frames"][0], "symt_hidden", "CRASH_HIDDEN"),
                  "debuglink: frame 0 %r" % c["frames"][0])
            # --no-symbols: module+offset, nothing else
            rc, out, err = extract(box, pid, "--no-symbols", "--debug-dir", ddir)
            fr = json.loads(out.decode().splitlines()[0])["frames"]
            check(rc == 0 and all(set(x) <= {"addr", "module", "build_id", "offset", "exact"}
                                  for x in fr), "--no-symbols frames %r" % fr)
            rc, txt, err = text_of(box, pid, "--no-symbols")
            check(re.search(r"prog\+0x[0-9a-f]+\n", txt.splitlines()[1] + "\n"),
                  "--no-symbols text %r" % txt.splitlines()[1])
            pie = prog, full, dbg, box, pid
    return pie


def inline_case(t):
    d = t.sub("inline")
    full, prog = os.path.join(d, "prog.full"), os.path.join(d, "prog")
    dbg = os.path.join(t.sub("inline-store"), "prog.debug")
    compile_prog(full, opt="-O2")
    split_debug(full, prog, dbg)
    TRUTH[prog] = symtab(full)
    ddir = t.sub("inline-debug")
    place_build_id(dbg, ddir)
    box = t.sub("inline-box")
    pid = crash(prog, box, "inline")
    c = crash_record(box, pid, "--debug-dir", ddir, what="inline")
    f0 = c["frames"][0]
    inl = f0.get("inlined", [])
    check(at(f0, "symt_inl_outer", "CALL_MID"), "inline: frame 0 %r" % f0)
    check(len(inl) == 2 and at(inl[0], "symt_store", "CRASH_INLINE") and
          at(inl[1], "symt_mid", "CALL_STORE"), "inline: chain %r" % inl)
    check(at(c["frames"][1], "symt_run", "CALL_OUTER"), "inline: frame 1 %r" % c["frames"][1])
    rc, txt, err = text_of(box, pid, "--debug-dir", ddir)
    lines = txt.splitlines()
    check(re.search(r"  symt_store at \S*symt_prog\.c:%d \(inlined\)$" % LINES["CRASH_INLINE"],
                    lines[1]) and
          re.fullmatch(r"        called from symt_mid at \S*symt_prog\.c:%d \(inlined\)"
                       % LINES["CALL_STORE"], lines[2]) and
          re.fullmatch(r"        called from symt_inl_outer\+0x[0-9a-f]+ at \S*symt_prog\.c:%d"
                       % LINES["CALL_MID"], lines[3]) and lines[4].startswith("  #1 "),
          "inline text:\n" + "\n".join(lines[:6]))


def lib_case(t):
    d = t.sub("lib")
    store = t.sub("lib-store")
    libfull, lib = os.path.join(d, "libsymt.full"), os.path.join(d, "libsymt.so")
    libdbg = os.path.join(store, "libsymt.debug")
    sh(CC + cflags() + ["-O1", "-fPIC", "-shared", LIB_C, "-o", libfull])
    split_debug(libfull, lib, libdbg)
    TRUTH[lib] = symtab(libfull)
    full, prog = os.path.join(d, "prog.full"), os.path.join(d, "prog")
    dbg = os.path.join(store, "prog.debug")
    compile_prog(full, lib=lib)
    split_debug(full, prog, dbg)
    TRUTH[prog] = symtab(full)
    box = t.sub("lib-box")
    pid = crash(prog, box, "lib")
    c = crash_record(box, pid, what="lib stripped")
    f = c["frames"]
    check(f[0].get("module") == lib and "function" not in f[0],
          "lib stripped: frame 0 must be unknown: %r" % f[0])
    check(f[1].get("function") == "symt_lib_entry", "lib stripped: frame 1 %r" % f[1])
    ddir = t.sub("lib-debug")
    place_build_id(libdbg, ddir)
    place_build_id(dbg, ddir)
    c = crash_record(box, pid, "--debug-dir", ddir, what="lib --debug-dir")
    f = c["frames"]
    check(f[0].get("module") == lib and at(f[0], "symt_lib_hidden", "CRASH_LIB", LIB_C),
          "lib: frame 0 %r" % f[0])
    check(at(f[1], "symt_lib_entry", "CALL_LIB_HIDDEN", LIB_C), "lib: frame 1 %r" % f[1])
    check(f[2].get("module") == prog and at(f[2], "symt_run", "CALL_LIB"),
          "lib: frame 2 %r" % f[2])
    libc = [x for x in f if "libc.so" in x.get("module", "")]
    check(libc and all(x.get("build_id") for x in libc), "libc frames %r" % libc)


def paths_case(t, prog, full):
    """What a module path can be after the crash."""
    def victim(name):
        d = t.sub(name)
        v = os.path.join(d, "victim")
        shutil.copy(prog, v)
        TRUTH[v] = symtab(full)
        box = t.sub(name + "-box")
        return v, box, crash(v, box)

    def expect(box, pid, v, note, what):
        c = crash_record(box, pid, what=what)
        mine = of(c["frames"], v)
        check(mine and not any("function" in x for x in mine), "%s: names %r" % (what, mine))
        check(note in c.get("symbols_note", ""), "%s: note %r" % (what, c.get("symbols_note")))

    v, box, pid = victim("missing")
    os.unlink(v)
    expect(box, pid, v, v + ": not found", "missing")

    v, box, pid = victim("fifo")
    os.unlink(v)
    os.mkfifo(v)
    expect(box, pid, v, v + ": a FIFO: refused", "FIFO")

    v, box, pid = victim("dir")
    os.unlink(v)
    os.mkdir(v)
    expect(box, pid, v, v + ": a directory: refused", "directory")

    if os.geteuid() == 0:
        v, box, pid = victim("device")
        os.unlink(v)
        os.mknod(v, 0o666 | stat.S_IFCHR, os.makedev(1, 3))  # like /dev/null
        expect(box, pid, v, v + ": a character device: refused", "device")
    else:
        print("device node: not root, skipped", file=sys.stderr)

    v, box, pid = victim("symlink-dev")
    os.unlink(v)
    os.symlink("/dev/zero", v)
    expect(box, pid, v, v + ": a character device: refused", "symlink to a device")

    # a symlink to the very file (the loader names libraries by their
    # soname link): followed, the build id ties it to the process
    v, box, pid = victim("symlink-same")
    real = os.path.join(os.path.dirname(v), "real")
    os.rename(v, real)
    os.symlink(real, v)
    c = crash_record(box, pid, what="symlink to the same file")
    check(c["frames"][1].get("function") == "symt_run",
          "symlink to the same file: frame 1 %r" % c["frames"][1])

    # rebuilt in place: another build id
    other = os.path.join(t.sub("other"), "prog")
    compile_prog(other, extra=["-Wl,--build-id=0x0123456789abcdef0123456789abcdef01234567"])
    v, box, pid = victim("rebuilt")
    shutil.copy(other, v)
    expect(box, pid, v, v + ": build id differs", "rebuilt")

    v, box, pid = victim("symlink-other")
    os.unlink(v)
    os.symlink(other, v)
    expect(box, pid, v, v + ": build id differs", "symlink to another build")

    # a FIFO where a debug file is looked for (FILE.debug beside FILE):
    # refused as a module's FIFO is (O_PATH first), never waited on; the
    # symbol table's names stay
    v, box, pid = victim("fifo-debug")
    os.mkfifo(v + ".debug")
    c = crash_record(box, pid, env_extra={"BB_EXTRACT_SYMBOL_TIMEOUT_MS": "30000"},
                     what="FIFO as a debug file")
    note = c.get("symbols_note", "")
    check("debug file %s.debug: a FIFO: refused" % v in note and "timed out" not in note and
          c["frames"][1].get("function") == "symt_run", "FIFO as a debug file: %r" % c)

    # hostile: truncated after its notes
    v, box, pid = victim("truncated")
    with open(v, "r+b") as f:
        f.truncate(4096)
    expect(box, pid, v, v + ": ", "truncated")
    print("truncated: %s" % crash_record(box, pid, what="truncated").get("symbols_note"),
          file=sys.stderr)

    # hostile: ELF header, program headers and notes intact (the build id
    # matches), everything after them scrambled, section headers included;
    # whatever libdw makes of it, extraction goes on and no name is wrong
    v, box, pid = victim("scrambled")
    size = os.path.getsize(v)
    with open(v, "r+b") as f:
        f.seek(1024)
        f.write(bytes((i * 197 + 11) % 251 for i in range(size - 1024)))
    c = crash_record(box, pid, what="scrambled")
    print("scrambled: frame 0 %r; note %r" % (c["frames"][0], c.get("symbols_note")),
          file=sys.stderr)

    # the same with the section headers left whole: libdw reads symbol and
    # string tables of garbage; the text stays one line per frame
    v, box, pid = victim("scrambled-sections")
    with open(v, "r+b") as f:
        shoff = struct.unpack("<Q", f.read(64)[0x28:0x30])[0]
        f.seek(1024)
        f.write(bytes((i * 197 + 11) % 251 for i in range(shoff - 1024)))
    c = crash_record(box, pid, what="scrambled sections")
    rc, txt, err = text_of(box, pid)
    block = txt.split("\n")[:len(c["frames"]) + 1]
    check(rc == 0 and all(re.fullmatch(r"  #\d+ +0x[0-9a-f]{16}  [ -~]*", l) for l in block[1:]),
          "scrambled sections, text:\n%s" % "\n".join(block))
    print("scrambled sections: frames %r; note %r" % (c["frames"][:2], c.get("symbols_note")),
          file=sys.stderr)


def build_id_case(t, prog, full, dbg):
    """A collector's case: the module is not at its recorded path, or
    another build is; its debug file (or the executable) only in a
    build-id store: found by build id, named exactly.  Without the store
    the note says what is missing; with --debuginfod the executable comes
    from the server."""
    bid = build_id(prog)

    def victim(name):
        v = os.path.join(t.sub(name), "victim")
        shutil.copy(prog, v)
        TRUTH[v] = symtab(full)
        box = t.sub(name + "-box")
        return v, box, crash(v, box)

    def named(box, pid, v, args, what, note):
        c = crash_record(box, pid, *args, what=what)
        check(at(c["frames"][0], "symt_hidden", "CRASH_HIDDEN") and
              c["frames"][1].get("function") == "symt_run", "%s: frames %r" % (what, c["frames"][:2]))
        check(note in c.get("symbols_note", ""), "%s: note %r" % (what, c.get("symbols_note")))

    # the debug file alone, as DIR/.build-id/xx/yyyy.debug
    store = t.sub("bid-store")
    place_build_id(dbg, store)
    v, box, pid = victim("bid-missing")
    os.unlink(v)
    named(box, pid, v, ["--debug-dir", store], "missing, debug file by build id",
          "%s: not found at the recorded path: found by build id as %s/.build-id/%s/%s.debug"
          % (v, store, bid[:2], bid[2:]))
    c = crash_record(box, pid, what="missing, no store")
    check("function" not in c["frames"][0] and v + ": not found" in c.get("symbols_note", ""),
          "missing without a store: %r" % c["frames"][0])
    # another build at the path: the store's build is the one that ran
    other = os.path.join(t.sub("bid-other"), "prog")
    compile_prog(other, extra=["-Wl,--build-id=0x0123456789abcdef0123456789abcdef01234568"])
    v, box, pid = victim("bid-rebuilt")
    shutil.copy(other, v)
    named(box, pid, v, ["--debug-dir", store], "rebuilt, by build id",
          "%s: another build at the recorded path: found by build id" % v)
    # the executable (not stripped) as DIR/.build-id/xx/yyyy
    exe_store = t.sub("bid-exe-store")
    os.makedirs(os.path.join(exe_store, ".build-id", bid[:2]))
    shutil.copy(full, os.path.join(exe_store, ".build-id", bid[:2], bid[2:]))
    v, box, pid = victim("bid-exe")
    os.unlink(v)
    named(box, pid, v, ["--debug-dir", exe_store], "executable by build id",
          "found by build id as %s/.build-id/%s/%s" % (exe_store, bid[:2], bid[2:]))
    # --debuginfod: the executable from the server
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Debuginfod)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    Debuginfod.files[bid + "/executable"] = full
    env = {"DEBUGINFOD_URLS": "http://127.0.0.1:%d" % srv.server_address[1],
           "http_proxy": "", "https_proxy": "", "no_proxy": "127.0.0.1",
           "DEBUGINFOD_CACHE_PATH": t.sub("bid-cache")}
    try:
        del Debuginfod.requests[:]
        c = crash_record(box, pid, "--debuginfod", env_extra=env, what="executable by debuginfod")
        check(any(r == "/buildid/%s/executable" % bid for r in Debuginfod.requests),
              "--debuginfod: no request for the executable: %r" % Debuginfod.requests)
        check(at(c["frames"][0], "symt_hidden", "CRASH_HIDDEN"),
              "--debuginfod executable: frame 0 %r (%r)" % (c["frames"][0], c.get("symbols_note")))
    finally:
        del Debuginfod.files[bid + "/executable"]
        del Debuginfod.requests[:]
        srv.shutdown()


def no_build_id_case(t):
    d = t.sub("noid")
    prog = os.path.join(d, "prog")
    compile_prog(prog, extra=["-Wl,--build-id=none"])
    TRUTH[prog] = symtab(prog)
    check(build_id(prog) is None, "--build-id=none left a build id")
    box = t.sub("noid-box")
    pid = crash(prog, box)
    c = crash_record(box, pid, what="no build id")
    mine = of(c["frames"], prog)
    check(mine and not any("function" in x or "build_id" in x for x in mine),
          "no build id: frames %r" % mine)
    check(prog + ": the box records no build id for it: not symbolised" in
          c.get("symbols_note", ""), "no build id: note %r" % c.get("symbols_note"))


def hostile_case(t, prog, box, pid, full, dbg):
    # garbage DWARF under the right build id: the child may fail or crash;
    # extraction goes on, and no name it gives is a wrong one
    ddir = t.sub("garbage-debug")
    junk = os.path.join(t.root, "junk")
    with open(junk, "wb") as f:
        f.write(bytes((i * 131 + 7) % 256 for i in range(16384)))
    bad = os.path.join(t.root, "bad.debug")
    sh(["objcopy", "--update-section", ".debug_info=" + junk,
        "--update-section", ".debug_abbrev=" + junk,
        "--update-section", ".debug_line=" + junk, dbg, bad])
    place_build_id(bad, ddir)
    c = crash_record(box, pid, "--debug-dir", ddir, what="garbage DWARF")
    print("garbage DWARF: frame 0 %r; note %r" % (c["frames"][0], c.get("symbols_note")),
          file=sys.stderr)

    # a debug file whose .gnu_debugaltlink (a dwz supplementary file) names
    # a FIFO: refused, never waited on; without it the DWARF is not read
    # (libdw would look for the file itself), the symbol table still is
    ddir = t.sub("altlink-debug")
    link = os.path.join(t.root, "altlink")
    with open(link, "wb") as f:
        f.write(b"alt.fifo\0" + bytes(range(1, 21)))
    alt = os.path.join(t.root, "alt.debug")
    sh(["objcopy", "--add-section", ".gnu_debugaltlink=" + link, dbg, alt])
    place_build_id(alt, ddir)
    bid = build_id(alt)
    os.mkfifo(os.path.join(ddir, ".build-id", bid[:2], "alt.fifo"))
    c = crash_record(box, pid, "--debug-dir", ddir, what="FIFO as a supplementary file",
                     env_extra={"BB_EXTRACT_SYMBOL_TIMEOUT_MS": "30000"})
    note = c.get("symbols_note", "")
    check(c["frames"][0].get("function") == "symt_hidden" and "file" not in c["frames"][0] and
          "alt.fifo: a FIFO: refused" in note and "supplementary file" in note and
          "timed out" not in note, "FIFO as a supplementary file: %r" % c)

    # a child that misbehaves: the module loses its names, nothing else.
    # Only the hanging child gets a short deadline: on a loaded machine a
    # crashing child can take longer than 300 ms to start and die, and its
    # note would then say "timed out".
    for hook, note, ms in (("crash", "killed by SIGSEGV", "30000"),
                           ("hang", "timed out after 300 ms", "300"),
                           ("garbage", "answer is malformed", "30000")):
        env = {"BB_EXTRACT_SYMBOL_TEST": hook, "BB_EXTRACT_SYMBOL_TIMEOUT_MS": ms}
        c = crash_record(box, pid, env_extra=env, what="child " + hook)
        check(not any("function" in x for x in c["frames"]) and
              note in c.get("symbols_note", ""), "child %s: %r" % (hook, c))
        rc, txt, err = text_of(box, pid, env_extra=env)
        check(rc == 0 and txt.startswith("*** crashed") and note in err,
              "child %s, text: %d %r" % (hook, rc, err))


def owner_case(t):
    """Root extracting a non-root box: the child runs as the box's owner."""
    if os.geteuid() != 0:
        print("root extracting another user's box: not root, skipped", file=sys.stderr)
        return
    nobody = 65534
    d = t.sub("owner")
    prog = os.path.join(d, "prog")
    compile_prog(prog)
    TRUTH[prog] = symtab(prog)
    os.chmod(prog, 0o711)  # nobody may run it, not read it
    box = t.sub("owner-box")
    os.chown(box, nobody, nobody)

    def as_nobody():
        os.setgroups([])
        os.setgid(nobody)
        os.setuid(nobody)

    pid = crash(prog, box, preexec=as_nobody)
    boxfile = [n for n in os.listdir(box) if n.startswith("blackbox.%d." % pid)]
    check(boxfile and os.stat(os.path.join(box, boxfile[0])).st_uid == nobody,
          "the box is not nobody's")
    c = crash_record(box, pid, what="root reads nobody's box")
    mine = of(c["frames"], prog)
    check(mine and not any("function" in x for x in mine) and
          prog + ": Permission denied (uid %d)" % nobody in c.get("symbols_note", ""),
          "a root child would read what nobody cannot: %r" % c)
    libc = [x for x in c["frames"] if "libc.so" in x.get("module", "")]
    check(libc and any("function" in x for x in libc),
          "libc (readable by nobody) not symbolised: %r" % libc)
    os.chmod(prog, 0o755)
    c = crash_record(box, pid, what="root reads nobody's box, readable binary")
    check(at(c["frames"][0], "symt_hidden", "CRASH_HIDDEN"),
          "readable by nobody: frame 0 %r" % c["frames"][0])

    # bb-extract run by users: a copy of it (and of the library, where its
    # RUNPATH looks) that they can reach; a copy of the box they can read
    bindir, libdir = t.sub("bin"), t.sub("libblackbox")
    bbx = os.path.join(bindir, "bb-extract")
    shutil.copy(EXTRACT, bbx)
    for n in os.listdir(os.path.dirname(LIBA)):
        if n.startswith("libblackbox.so") and not n.endswith(".p"):
            shutil.copy(os.path.join(os.path.dirname(LIBA), n), libdir)
    copy = os.path.join(t.sub("owner-copy"), "box")
    shutil.copy(os.path.join(box, boxfile[0]), copy)
    os.chown(copy, nobody, nobody)
    os.chmod(copy, 0o644)

    def as_user(uid):
        def f():
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
        return f

    def by(uid, what):
        p = run([bbx, "--path", copy, "--json"], preexec_fn=as_user(uid))
        check(p.returncode == 0, "%s: exit %d %s" % (what, p.returncode, p.stderr))
        c = json.loads(p.stdout.decode().splitlines()[0]) if p.returncode == 0 else {}
        check_contained(c.get("frames", []), what)
        return c

    # the owner itself: the child stays nobody and reads what nobody can
    c = by(nobody, "nobody reads its own box")
    check(at(c["frames"][0], "symt_hidden", "CRASH_HIDDEN"),
          "nobody reads its own box: frame 0 %r" % c["frames"][0])
    # a third user (uid 65533) can read the copy, cannot become nobody:
    # no file is parsed for it
    c = by(65533, "another user reads nobody's box")
    check(c and not any("function" in f for f in c["frames"]) and
          "the box belongs to uid %d and we are uid 65533" % nobody in
          c.get("symbols_note", ""), "a third user's box was symbolised: %r" % c)


class Debuginfod(http.server.BaseHTTPRequestHandler):
    files = {}      # build id -> path
    requests = []
    hang = False

    def do_GET(self):
        Debuginfod.requests.append(self.path)
        if Debuginfod.hang:
            threading.Event().wait(30)
            return
        m = re.fullmatch(r"/buildid/([0-9a-f]+)/(debuginfo|executable)", self.path)
        path = m and Debuginfod.files.get(m.group(1) if m.group(2) == "debuginfo"
                                          else m.group(1) + "/executable")
        if not path:
            self.send_error(404)
            return
        with open(path, "rb") as f:
            data = f.read()
        self.send_response(200)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *a):
        pass


def debuginfod_case(t, prog, box, pid, dbg):
    """libdw's debuginfod client, against a server on 127.0.0.1 only."""
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Debuginfod)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    Debuginfod.files[build_id(prog)] = dbg
    base = {"DEBUGINFOD_URLS": "http://127.0.0.1:%d" % srv.server_address[1],
            "http_proxy": "", "https_proxy": "", "no_proxy": "127.0.0.1"}
    try:
        env = dict(base, DEBUGINFOD_CACHE_PATH=t.sub("cache1"))
        c = crash_record(box, pid, env_extra=env, what="DEBUGINFOD_URLS without --debuginfod")
        check(not Debuginfod.requests and "function" not in c["frames"][0],
              "debuginfod asked without --debuginfod: %r" % Debuginfod.requests)
        c = crash_record(box, pid, "--debuginfod", env_extra=env, what="--debuginfod")
        check(any(build_id(prog) in r for r in Debuginfod.requests),
              "--debuginfod: no request for the build id: %r" % Debuginfod.requests)
        check(at(c["frames"][0], "symt_hidden", "CRASH_HIDDEN"),
              "--debuginfod: frame 0 %r" % c["frames"][0])
        # a server that never answers: the download is given up within the
        # child's time, the symbol table's names stay
        Debuginfod.hang = True
        env = dict(base, DEBUGINFOD_CACHE_PATH=t.sub("cache2"),
                   BB_EXTRACT_SYMBOL_TIMEOUT_MS="8000")
        c = crash_record(box, pid, "--debuginfod", env_extra=env, what="hanging debuginfod")
        check(c["frames"][1].get("function") == "symt_run" and
              "timed out" not in c.get("symbols_note", ""),
              "hanging debuginfod: %r" % c)
    finally:
        srv.shutdown()


def nginx_case(t):
    """Debian's nginx (stripped, symbols exported dynamically), the box
    preloaded, a worker sent SIGSEGV: its static functions are "??", never
    the exported function laid out before them."""
    nginx = "/usr/sbin/nginx"
    if not os.access(nginx, os.X_OK) or os.geteuid() != 0 or SANITIZE not in ("", "none"):
        print("nginx: needs %s, root and a build without sanitizers: skipped" % nginx,
              file=sys.stderr)
        return
    d = t.sub("nginx")
    shim = os.path.join(d, "preload.so")
    sh(CC + cflags() + ["-O1", "-fPIC", "-shared", os.path.join(SRC, "symt_preload.c"),
                        "-o", shim, LIBA, "-lcbor", "-lpthread"])
    box = t.sub("nginx-box")
    os.makedirs(os.path.join(d, "logs"))
    s = __import__("socket").socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with open(os.path.join(d, "nginx.conf"), "w") as f:
        f.write("daemon off; master_process on; worker_processes 1;\n"
                "error_log %s/logs/error.log; pid %s/nginx.pid;\n"
                "events { worker_connections 16; }\n"
                "http { access_log off; server { listen 127.0.0.1:%d; return 200; } }\n"
                % (d, d, port))
    env = dict(os.environ, LD_PRELOAD=shim, BLACKBOX_DIR=box)
    env.pop("ASAN_OPTIONS", None)
    master = subprocess.Popen([nginx, "-p", d, "-c", os.path.join(d, "nginx.conf")], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    worker = None

    def parent_of(pid):  # None once it is gone (other processes come and go)
        try:
            with open("/proc/%s/stat" % pid) as f:
                return f.read().rsplit(")", 1)[1].split()[1]
        except (OSError, IndexError):
            return None
    try:
        for _ in range(300):  # until the worker has its box (or 30 s)
            kids = [int(p) for p in os.listdir("/proc") if p.isdigit() and
                    parent_of(p) == str(master.pid)] if master.poll() is None else []
            boxes = [n for n in os.listdir(box) if kids and n.startswith("blackbox.%d." % kids[0])]
            if boxes:
                worker = kids[0]
                break
            threading.Event().wait(0.1)
        if not check(worker, "nginx: no worker box"):
            return
        os.kill(worker, signal.SIGSEGV)
        for _ in range(300):
            rc, txt, err = text_of(box, worker)
            if txt.startswith("*** crashed"):
                break
            threading.Event().wait(0.1)
    finally:
        master.terminate()
        master.wait(timeout=60)
    c = crash_record(box, worker, what="nginx")
    TRUTH[nginx] = symtab(nginx, dynamic=True)
    mine = of(c["frames"], nginx)
    named = [f for f in mine if "function" in f]
    unknown = [f for f in mine if "function" not in f]
    check(named and unknown, "nginx: frames %r" % mine)
    for f in unknown:
        below = [s for s in TRUTH[nginx] if s[1] <= f["offset"]]
        near = max(below, key=lambda s: s[1]) if below else None
        check(not near or not near[1] <= f["offset"] - 1 < near[1] + near[2],
              "nginx: frame %r is unknown but %r contains it" % (f, near))
    print("nginx: %d frames named, %d unknown (static functions): %s" %
          (len(named), len(unknown), [f["function"] for f in named]), file=sys.stderr)


def main():
    p = run([EXTRACT, "--help"])
    if b"--debug-dir" not in p.stdout:
        sys.exit("bb-extract has no --debug-dir")
    t = Dirs()
    try:
        probe = t.sub("probe")
        compile_prog(os.path.join(probe, "prog"))
        pid = crash(os.path.join(probe, "prog"), probe)
        rc, out, err = extract(probe, pid)
        if "built without libdw" in out.decode():
            print("bb-extract built without libdw: skipped")
            sys.exit(77)
        prog, full, dbg, box, pid = stripped_and_split(t)
        inline_case(t)
        lib_case(t)
        paths_case(t, prog, full)
        build_id_case(t, prog, full, dbg)
        no_build_id_case(t)
        hostile_case(t, prog, box, pid, full, dbg)
        owner_case(t)
        debuginfod_case(t, prog, box, pid, dbg)
        nginx_case(t)
    finally:
        shutil.rmtree(t.root)
    print("%d named frames checked against the symbol tables" % verified[0], file=sys.stderr)
    check(verified[0] >= 20, "only %d named frames verified" % verified[0])
    if failures:
        sys.exit("%d check(s) failed" % len(failures))
    print("ok")


if __name__ == "__main__":
    main()
