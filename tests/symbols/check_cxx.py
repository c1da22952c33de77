#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Description: bb-extract's crash symbols for a C++ service (symt_svc.cpp:
namespaces, a class template, lambdas, a thread pool, the C API and the
crash handler) built with g++ and with clang++ at -O2 -g, dying of SIGSEGV
in a member of a class template inside inlined members of others:
frame 0 is named as gdb names it ("kvsvc::store::ShardedMap<int,
kvsvc::Entry>::value_length") with file:line, and so is each inlined call,
in both builds (clang++ emits no .debug_aranges: the compile units' own
ranges are read); JSON and CBOR carry the mangled name as linkage_name;
--raw-names prints the names as the binary has them; the same binary
stripped of its DWARF has its names demangled from the symbol table.  When
gdb runs here, its names for the frames are compared with ours.  Then a
symbol whose demangling would never end (a mangled name of a few hundred
bytes that expands exponentially): the child gives up on demangling within
its time, answers with the names as they are and says so, and extraction
goes on; its frames, compiled without -g in a binary whose library has
DWARF, are noted as having no line.

usage: check_cxx.py BB_EXTRACT SRCDIR INCDIR LIBBLACKBOX_A SANITIZE CC [CC ARGS...]
with BB_TEST_GXX and BB_TEST_CLANGXX naming the C++ compilers (empty:
missing; without clang++ its build is skipped, saying so).
Exit 0 pass, 1 fail, 77 skip (bb-extract built without libdw, or no g++).
"""
import io
import json
import os
import re
import shutil
import subprocess
import sys

import check_symbols as cs
from check_symbols import check, extract, crash_record, text_of

SVC_CPP = os.path.join(cs.SRC, "symt_svc.cpp")
LINES = cs.markers(SVC_CPP)
NS = "kvsvc::store::"
MEMBER = NS + "ShardedMap<int, kvsvc::Entry>::value_length"
CHAIN = [NS + "Shard<kvsvc::Entry>::length_of", NS + "ShardedMap<int, kvsvc::Entry>::find_length"]
MEMBER_MANGLED = "_ZN5kvsvc5store10ShardedMapIiNS_5EntryEE12value_lengthEi"
CHAIN_MANGLED = ["_ZN5kvsvc5store5ShardINS_5EntryEE9length_ofEi",
                 "_ZN5kvsvc5store10ShardedMapIiNS_5EntryEE11find_lengthEi"]


def at_line(loc, key):
    return loc.get("file", "").endswith("symt_svc.cpp") and loc.get("line") == LINES[key]


def build_svc(cxx, out):
    flags = ["-O2", "-g", "-I" + cs.INC]
    if cs.SANITIZE not in ("", "none"):
        # the service's own null dereference is the crash under test:
        # UBSan would stop it before the SIGSEGV the handler records
        flags += ["-fsanitize=" + cs.SANITIZE, "-fno-sanitize=null"]
    cs.sh([cxx] + flags + [SVC_CPP, "-o", out, cs.LIBA, "-lcbor", "-lpthread"])
    cs.TRUTH[out] = cs.symtab(out)


def crash_svc(prog, box):
    return cs.crash(prog, box, mode="7")


def gdb_names(prog, box):
    """gdb's function names of the crashing thread's frames, or None."""
    gdb = shutil.which("gdb")
    if not gdb:
        return None
    p = cs.run([gdb, "-nx", "-batch", "-ex", "run", "-ex", "bt", "--args", prog, "7"],
               env=dict(os.environ, BLACKBOX_DIR=box), timeout=120)
    names = []
    for line in p.stdout.decode(errors="replace").splitlines():
        m = re.match(r"#\d+\s+(?:0x[0-9a-f]+ in )?(.+?) \(", line)
        if m:
            names.append(m.group(1))
    return names or None


def service_case(t, kind, cxx):
    d = t.sub(kind)
    prog = os.path.join(d, "svc")
    build_svc(cxx, prog)
    box = t.sub(kind + "-box")
    pid = crash_svc(prog, box)
    what = "%s build" % kind
    c = cs.crash_record(box, pid, what=what)
    f = c["frames"]
    f0 = f[0] if f else {}
    inl = f0.get("inlined", [])
    check(f0.get("module") == prog and f0.get("function") == MEMBER and
          f0.get("linkage_name") == MEMBER_MANGLED and at_line(f0, "CALL_FIND") and
          f0.get("function_offset", 0) > 0, "%s: frame 0 %r" % (what, f0))
    check(len(inl) == 2 and
          [x.get("function") for x in inl] == CHAIN and
          [x.get("linkage_name") for x in inl] == CHAIN_MANGLED and
          at_line(inl[0], "CRASH_INLINE") and at_line(inl[1], "CALL_LENGTH_OF"),
          "%s: frame 0's inlined calls %r" % (what, inl))
    # the lambda's call in frame 1 (itself, or inlined into the pool's
    # std::function invoker), the pool's loop further out; no name mangled
    locs = [x for fr in f for x in fr.get("inlined", []) + [fr]]
    check(len(f) > 1 and any(at_line(x, "CALL_MEMBER") for x in f[1].get("inlined", []) + [f[1]]),
          "%s: frame 1 is not the lambda's call: %r" % (what, f[1:2]))
    check(any(x.get("function") == "kvsvc::ThreadPool::run" for x in locs),
          "%s: no kvsvc::ThreadPool::run: %r" % (what, [x.get("function") for x in locs]))
    check(not any(x.get("function", "").startswith("_Z") for x in locs),
          "%s: a name left mangled: %r" % (what, [x.get("function") for x in locs]))
    note = c.get("symbols_note", "")
    # clang++ -fsanitize links AddressSanitizer's runtime into the service
    # itself, without line information: the other threads' stacks (every
    # thread's, blocked in its interceptors) then earn the service a note.
    if cs.SANITIZE in ("", "none") or not what.startswith("clang"):
        check(prog + ":" not in note, "%s: a note on the service: %r" % (what, note))

    # text: the chain as gdb prints it, innermost first
    rc, txt, err = text_of(box, pid)
    lines = txt.splitlines()
    want = [r"  #0  0x[0-9a-f]{16}  %s\+0x[0-9a-f]+  %s at \S*symt_svc\.cpp:%d \(inlined\)"
            % (re.escape(prog), re.escape(CHAIN[0]), LINES["CRASH_INLINE"]),
            r"        called from %s at \S*symt_svc\.cpp:%d \(inlined\)"
            % (re.escape(CHAIN[1]), LINES["CALL_LENGTH_OF"]),
            r"        called from %s\+0x[0-9a-f]+ at \S*symt_svc\.cpp:%d"
            % (re.escape(MEMBER), LINES["CALL_FIND"])]
    check(rc == 0 and len(lines) > 3 and all(re.fullmatch(w, l) for w, l in zip(want, lines[1:4])),
          "%s, text:\n%s" % (what, "\n".join(lines[:6])))

    # --raw-names: as the binary has them, in the text and in JSON
    rc, txt, err = text_of(box, pid, "--raw-names")
    lines = txt.splitlines()
    check(rc == 0 and len(lines) > 3 and CHAIN_MANGLED[0] + " at " in lines[1] and
          CHAIN_MANGLED[1] + " at " in lines[2] and MEMBER_MANGLED + "+0x" in lines[3],
          "%s, --raw-names text:\n%s" % (what, "\n".join(lines[:6])))
    r = cs.crash_record(box, pid, "--raw-names", what=what + " --raw-names")
    r0 = r["frames"][0] if r.get("frames") else {}
    check(r0.get("function") == MEMBER_MANGLED and "linkage_name" not in r0 and
          [x.get("function") for x in r0.get("inlined", [])] == CHAIN_MANGLED,
          "%s, --raw-names JSON: frame 0 %r" % (what, r0))

    if cs.cbor2:
        rc, out, err = extract(box, pid, fmt="--cbor")
        item = cs.cbor2.load(io.BytesIO(out))
        cf = [dict(x, build_id=x["build_id"].hex()) if "build_id" in x else x
              for x in item["frames"]]
        check(cf == f, "%s: --cbor frames differ from --json" % what)

    names = gdb_names(prog, t.sub(kind + "-gdb-box"))
    if names is None:
        print("%s: gdb not here or it ran nothing: names not compared with gdb's" % what,
              file=sys.stderr)
    else:
        ours = [x.get("function") for x in inl] + [f0.get("function")]
        check(names[:3] == ours, "%s: gdb names the frames %r, we %r" % (what, names[:3], ours))

    # stripped of DWARF: the symbol table's names, demangled as gdb shows
    # them (with their parameters), the mangled one beside
    stripped = os.path.join(d, "svc.stripped")
    cs.sh(["strip", "--strip-debug", "-o", stripped, prog])
    cs.TRUTH[stripped] = cs.TRUTH[prog]
    pid = crash_svc(stripped, box)
    c = cs.crash_record(box, pid, what=what + " stripped")
    f0 = c["frames"][0] if c.get("frames") else {}
    check(f0.get("function") == MEMBER + "(int)" and f0.get("linkage_name") == MEMBER_MANGLED
          and "file" not in f0 and "inlined" not in f0, "%s stripped: frame 0 %r" % (what, f0))


# A C program whose crashing function's symbol is a mangled name that
# demangles to 2^60 parameters, and its caller an ordinary C++ name.
HOSTILE_C = r"""
#include <blackbox.h>
#include <stdio.h>
#include <unistd.h>
int *volatile hostile_null;
__attribute__((noipa)) int hostile(int x) __asm__("%s");
__attribute__((noipa)) int hostile(int x) { *hostile_null = x; return x; }
__attribute__((noipa)) int caller(int x) __asm__("_ZN7hostile6callerEi");
__attribute__((noipa)) int caller(int x)
{
	int r = hostile(x);
	__asm__ __volatile__("" ::: "memory");
	return r + 1;
}
int main(void)
{
	struct bb_options o = { .flags = BB_OPT_CRASH_HANDLER, .size = 1 << 20 };
	if (bb_init_opts(&o))
		return 2;
	printf("%%d\n", (int)getpid());
	fflush(stdout);
	return caller(3);
}
"""


def exploding_name(levels):
    """_Z1f with @levels function-pointer parameters each naming the one
    before twice (substitutions): its demangling doubles with each."""
    def b36(n):
        digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
        s = ""
        while True:
            s, n = digits[n % 36] + s, n // 36
            if not n:
                return s

    def sub(k):
        return "S_" if k == 0 else "S%s_" % b36(k - 1)
    name = "_Z1fPFvvE"
    for i in range(levels):
        name += "PFv%s%sE" % (sub(2 * i), sub(2 * i))
    return name


def hostile_case(t):
    d = t.sub("hostile-name")
    name = exploding_name(60)
    assert len(name) < 1000, len(name)
    src, prog = os.path.join(d, "hostile.c"), os.path.join(d, "hostile")
    with open(src, "w") as f:
        f.write(HOSTILE_C % name)
    cs.sh(cs.CC + [x for x in cs.cflags() if x != "-g"] + ["-O1", src, "-o", prog, cs.LIBA,
                                                           "-lcbor", "-lpthread"])
    cs.TRUTH[prog] = cs.symtab(prog)
    box = t.sub("hostile-name-box")
    pid = cs.crash(prog, box, mode="x")
    c = cs.crash_record(box, pid, env_extra={"BB_EXTRACT_SYMBOL_TIMEOUT_MS": "30000"},
                        what="a name that never ends demangling")
    f = c.get("frames", [])
    note = c.get("symbols_note", "")
    check(len(f) > 1 and f[0].get("function") == name and "linkage_name" not in f[0] and
          f[1].get("function") == "_ZN7hostile6callerEi" and
          "C++ names left mangled: the demangler ran out of time" in note and
          "timed out" not in note, "a name that never ends demangling: %r" % c)
    # its functions have no DWARF, the library's have: said, but of the
    # entry point (_start), which never has a line
    check(re.search(r"%s: no line in its debug information for 3 of its 4 frames "
                    r"\(\+0x[0-9a-f]+, \+0x[0-9a-f]+, \+0x[0-9a-f]+\)" % re.escape(prog), note),
          "frames without a line in a module with DWARF: note %r" % note)


def main():
    gxx, clangxx = os.environ.get("BB_TEST_GXX", ""), os.environ.get("BB_TEST_CLANGXX", "")
    if not gxx:
        print("no g++: skipped")
        sys.exit(77)
    t = cs.Dirs()
    try:
        probe = t.sub("probe")
        cs.compile_prog(os.path.join(probe, "prog"))
        pid = cs.crash(os.path.join(probe, "prog"), probe)
        rc, out, err = extract(probe, pid)
        if "built without libdw" in out.decode():
            print("bb-extract built without libdw: skipped")
            sys.exit(77)
        service_case(t, "g++", gxx)
        if clangxx:
            service_case(t, "clang++", clangxx)
        else:
            print("clang++ is not installed: its build is not checked", file=sys.stderr)
        hostile_case(t)
    finally:
        shutil.rmtree(t.root)
    if cs.failures:
        sys.exit("%d check(s) failed" % len(cs.failures))
    print("ok")


main()
