#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# Description: the lnav format of bb-extract --json (extractor/lnav/
# blackbox.json) in Debian's lnav, headless: installed with `lnav -i` into
# a private HOME, it reads a crashed box's JSON lines (4 threads in spans,
# an important record's crasher) and its SQL table returns the records by
# thread as bb-extract's JSON counts them, the thread as the op id, the
# crash at level fatal and the important record at warning, the typed
# fields as columns.  Skips (77) without lnav.
#
# usage: check_lnav.py BB_EXTRACT BBX_SPANNER BBX_CRASHER FORMAT
import collections
import json
import os
import shutil
import subprocess
import sys
import tempfile

EXTRACT, SPANNER, CRASHER, FORMAT = sys.argv[1:5]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


lnav = shutil.which("lnav")
if not lnav:
    print("SKIP: lnav not installed (Debian: lnav)")
    sys.exit(77)

work = tempfile.mkdtemp(prefix="bb-lnav-")
home = os.path.join(work, "home")
os.mkdir(home)
env = dict(os.environ, HOME=home, XDG_CONFIG_HOME=os.path.join(home, ".config"))
p = subprocess.run([lnav, "-i", FORMAT], env=env, stdout=subprocess.PIPE,
                   stderr=subprocess.STDOUT, timeout=60)
check(p.returncode == 0, "lnav -i: %s" % p.stdout.decode())


def box_json(prog, arg, name):
    d = os.path.join(work, name)
    os.mkdir(d)
    cp = subprocess.run([prog, arg], env=dict(os.environ, BLACKBOX_DIR=d),
                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    pid = int(cp.stdout.split()[0])
    out = subprocess.run([EXTRACT, "--dir", d, "--json", str(pid)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, timeout=60).stdout
    path = os.path.join(work, name + ".json")
    with open(path, "wb") as f:
        f.write(out)
    lines = [json.loads(x) for x in out.decode().splitlines()]
    return path, [o for o in lines if "tid" in o and "stream" in o]


def sql(path, query):
    p = subprocess.run([lnav, "-n", "-c", ";" + query, "-c", ":write-csv-to -", path],
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    check(p.returncode == 0, "lnav %r: %s" % (query, p.stderr.decode()))
    rows = [r.split(",") for r in p.stdout.decode().splitlines()]
    return rows[1:] if rows else []


# records by thread, as the JSON has them
path, recs = box_json(SPANNER, "crash", "spans")
want = collections.Counter(r["thread"] for r in recs)
rows = sql(path, "SELECT log_opid, count(*) FROM blackbox_json WHERE stream IS NOT NULL "
                 "GROUP BY log_opid")
got = {r[0]: int(r[1]) for r in rows}
check(got == dict(want), "records by thread: lnav %s, json %s" % (got, dict(want)))
check(len(got) == 5, "lnav sees %d threads, want 5" % len(got))
rows = sql(path, "SELECT log_level, type FROM blackbox_json WHERE type = 'crash'")
check(rows == [["fatal", "crash"]], "the crash's level: %s" % rows)
rows = sql(path, "SELECT json_extract(fields, '$.table') FROM blackbox_json "
                 "WHERE type = 'span_begin' AND name = 'db.query' LIMIT 1")
check(rows == [["orders"]], "a span's typed field as a column: %s" % rows)
rows = sql(path, "SELECT count(*) FROM blackbox_json WHERE type = 'span_begin' "
                 "AND flow IS NOT NULL")
check(rows and int(rows[0][0]) > 0, "span flow ids as a column: %s" % rows)

path, recs = box_json(CRASHER, "", "important")
rows = sql(path, "SELECT log_level, key FROM blackbox_json WHERE log_level = 'warning'")
check(rows == [["warning", "phase"]], "the important record's level: %s" % rows)

shutil.rmtree(work, ignore_errors=True)
if failures:
    sys.exit("%d failure(s)" % len(failures))
print("ok")
