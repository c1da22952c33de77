#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""check-comment-names.py [SRCDIR] - every `name()` a comment mentions exists.

Reads the C and C++ sources of the tree at SRCDIR (default: the tree this
script sits in): the files git lists in a checkout (tracked, or new and
not ignored), else every file but those of build directories.  It
splits each file into comments and code.  A comment that mentions a
function as `name()` (an identifier, then "()") must name something the
code of the tree defines or uses: a function or macro called or defined
anywhere (an identifier followed by "(" in code), a macro #define'd, or an
identifier the tree's shell and Python scripts define as a function.  A
mention that starts with "_" and a lower-case letter ("bb_set_i64()/_u64()")
is the suffix of a name before it and resolves when a known name ends so.  The
functions of libc, the kernel and other libraries that comments explain
but the code never calls are on the short allow-list ALLOWED below.

Prints FILE:LINE: `name()` for each mention that names nothing, and exits 1
when there is one; exits 0 when every mention resolves.  Only comments are
checked: string literals are code's business.
"""
import os
import re
import subprocess
import sys

# Functions of libc, the kernel and other libraries that comments name to
# explain a choice, and which no code of the tree calls.  Keep it short:
# a name the tree calls somewhere needs no entry.
ALLOWED = {
    "exec",                  # the exec family, as a family
    "operator", "exceptions",  # C++: operator(), std::ios::exceptions()
    "backtrace", "_Unwind_Backtrace", "process_vm_readv", "rt_tgsigqueueinfo",
    "cbor_encode_double", "sd_journal_open_directory",
    "__libc_fatal",          # glibc's fatal error path, beside assert()
    # the kernel's seqcount, which barrier.h and ring.h follow
    "write_seqcount_begin", "write_seqcount_end",
    "read_seqcount_begin", "read_seqcount_retry",
}

SKIP_DIRS = {".git", "subprojects"}
C_EXT = (".c", ".h", ".cpp", ".hpp", ".cc")
SCRIPT_EXT = (".sh", ".py")

MENTION = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\(\)")
CALL = re.compile(r"([A-Za-z_]\w*)\s*\(")
DEFINE = re.compile(r"^[ \t]*#[ \t]*define[ \t]+([A-Za-z_]\w*)", re.M)
SH_FUNC = re.compile(r"^[ \t]*([A-Za-z_]\w*)[ \t]*\(\)[ \t]*\{?", re.M)
PY_FUNC = re.compile(r"^[ \t]*def[ \t]+([A-Za-z_]\w*)", re.M)


def split(text):
    """Return (code, comments): code with comments blanked, and a list of
    (line, comment text) pairs.  Strings and character literals stay in
    the code; a comment marker inside one is not a comment."""
    code = []
    comments = []
    i, n, line = 0, len(text), 1
    while i < n:
        c = text[i]
        if c == "/" and text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            body = text[i:end]
            comments.append((line, body))
            line += body.count("\n")
            code.append("\n" * body.count("\n") or " ")
            i = end
        elif c == "/" and text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
            comments.append((line, text[i:end]))
            code.append(" ")
            i = end
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            lit = text[i:j]
            line += lit.count("\n")
            code.append(c + " " * max(len(lit) - 2, 0) + c)
            i = j
        else:
            if c == "\n":
                line += 1
            code.append(c)
            i += 1
    return "".join(code), comments


def walk(root):
    """The tree's files: git's list (tracked, and new files not ignored)
    in a checkout, else every file but build directories'."""
    try:
        out = subprocess.run(
            ["git", "-C", root, "ls-files", "-z", "--cached", "--others",
             "--exclude-standard"], capture_output=True, check=True).stdout
        names = sorted(set(out.decode("utf-8", "replace").split("\0")) - {""})
        if names:
            yield from (os.path.join(root, f) for f in names
                        if os.path.isfile(os.path.join(root, f)))
            return
    except (OSError, subprocess.CalledProcessError):
        pass
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        dirnames[:] = sorted(
            d for d in dirnames
            if d not in SKIP_DIRS and not d.startswith(("build", "."))
            and not (rel == "." and d.startswith("obj-")))
        for f in sorted(filenames):
            yield os.path.join(dirpath, f)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(here)
    known = set(ALLOWED)
    mentions = []
    for path in walk(root):
        if path.endswith(C_EXT):
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            code, comments = split(text)
            known.update(CALL.findall(code))
            known.update(DEFINE.findall(code))
            rel = os.path.relpath(path, root)
            for line, body in comments:
                for k, part in enumerate(body.split("\n")):
                    for m in MENTION.finditer(part):
                        mentions.append((rel, line + k, m.group(1)))
        elif path.endswith(SCRIPT_EXT):
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
            known.update(SH_FUNC.findall(text) if path.endswith(".sh")
                         else PY_FUNC.findall(text))
    if not mentions:
        print(f"check-comment-names: no C sources under {root}", file=sys.stderr)
        return 1
    # "bb_write_kv_i64()/_u64()": a mention that starts with "_" and a
    # lower-case letter is a suffix of the name before it
    bad = [(p, l, name) for p, l, name in mentions
           if name not in known
           and not (re.match(r"_[a-z]", name) and any(k.endswith(name) for k in known))]
    for p, l, name in bad:
        print(f"{p}:{l}: `{name}()` names no function, macro or symbol of the tree")
    if bad:
        print(f"check-comment-names: {len(bad)} of {len(mentions)} mentions name "
              "nothing (rename the mention, or add a library's function to "
              "ALLOWED in scripts/check-comment-names.py)", file=sys.stderr)
        return 1
    print(f"check-comment-names: {len(mentions)} mentions, all resolve")
    return 0


if __name__ == "__main__":
    sys.exit(main())
