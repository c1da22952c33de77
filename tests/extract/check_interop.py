#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Description: bb-extract --json parses with Debian's json module and
--cbor decodes with python3-cbor2 (an independent decoder) to the same
values, and both agree with the text output.

usage: check_interop.py BB_EXTRACT BBX_WRITER
Exit 0 pass, 1 fail, 77 skip (no cbor2).
"""
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

try:
    import cbor2
except ImportError:
    print("python3-cbor2 is not installed: skipped")
    sys.exit(77)


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(args, **kw):
    return subprocess.run(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          timeout=60, **kw)


def main():
    bbx, writer = sys.argv[1], sys.argv[2]
    d = tempfile.mkdtemp(prefix="bbx-interop.")
    try:
        env = dict(os.environ, BLACKBOX_DIR=d)
        w = subprocess.Popen([writer, "-t", "3", "-n", "40", "_exit"], env=env,
                             stdout=subprocess.PIPE)
        ready = w.stdout.readline().decode()
        w.wait(timeout=60)
        if not ready.startswith("ready "):
            fail("writer: " + ready)
        pid = ready.split()[1]

        js = run([bbx, "--json", "--dir", d, pid])
        cb = run([bbx, "--dir", d, pid, "--cbor"])
        tx = run([bbx, "--dir", d, pid])
        for name, r in (("json", js), ("cbor", cb), ("text", tx)):
            if r.returncode != 0:
                fail("%s: exit %d: %s" % (name, r.returncode, r.stderr.decode()))

        jrecs = [json.loads(line) for line in js.stdout.decode("utf-8").splitlines()]
        f = io.BytesIO(cb.stdout)
        crecs = []
        while f.tell() < len(cb.stdout):
            crecs.append(cbor2.load(f))
        if len(jrecs) != len(crecs):
            fail("json has %d items, cbor %d" % (len(jrecs), len(crecs)))
        if "summary" not in jrecs[-1] or "summary" not in crecs[-1]:
            fail("no summary last")
        js_sum, cb_sum = jrecs.pop()["summary"], crecs.pop()["summary"]
        if js_sum != cb_sum:
            fail("summaries differ:\n%s\n%s" % (js_sum, cb_sum))
        if js_sum["records"] != len(jrecs) or js_sum["status"] != "intact":
            fail("summary: %s" % js_sum)
        if js_sum["pid"] != int(pid) or js_sum["liveness"] != "orphaned":
            fail("summary owner: %s" % js_sum)

        # JSON and CBOR: the same records, field by field; bytes are hex in JSON
        def norm(v):
            if isinstance(v, (bytes, bytearray)):
                return v.hex()
            if isinstance(v, dict):
                return {k: norm(x) for k, x in v.items()}
            if isinstance(v, list):
                return [norm(x) for x in v]
            return v

        for j, c in zip(jrecs, crecs):
            if j != norm(c):
                fail("record differs:\n%s\n%s" % (j, c))

        # types: the writer's values come back typed
        seen = set()
        for r in jrecs:
            t = r["type"]
            seen.add(t)
            if t == "kv":
                k, v = r["key"], r["value"]
                if k == "v":
                    if not re.fullmatch(r"t\d-\d+", v):
                        fail("kv v: %r" % v)
                elif k in ("i", "u"):
                    if type(v) is not int:
                        fail("kv %s: %r" % (k, v))
                elif k == "f":
                    if type(v) is not float or v != int(v) + 0.5:
                        fail("kv f: %r" % v)
                elif k == "b" and type(v) is not bool:
                    fail("kv b: %r" % v)
            elif t == "event":
                f_ = r["fields"]
                if r["name"] != "tick" or len(f_["pad"]) != f_["seq"] % 40:
                    fail("event: %s" % r)
            elif t in ("i64", "u64") and type(r["value"]) is not int:
                fail("%s: %r" % (t, r))
            elif t == "f64" and type(r["value"]) is not float:
                fail("f64: %r" % r)
            elif t == "bytes":
                b = bytes.fromhex(r["value"])
                if len(b) != 4:
                    fail("bytes: %r" % r)
            if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z", r["ts"]):
                fail("ts: %r" % r["ts"])
        for t in ("str", "i64", "u64", "f64", "bool", "bytes", "kv", "event"):
            if t not in seen:
                fail("no %s record" % t)

        # escaping: the strings come back exactly, invalid UTF-8 as U+FFFD
        esc = [r["value"] for r in jrecs if r["type"] == "kv" and r["key"] == "esc"]
        want = ["quote\" back\\ nl\n tab\t bell\a",
                "utf8 \u00fcn\u00efc\u00f8de \u2713",
                "bad \ufffd\ufffd utf8 \ufffd"]
        if esc != want:
            fail("escapes: %r" % esc)

        # text: one line per record, the same order, the same time and tid
        lines = tx.stdout.decode("utf-8", "replace").splitlines()
        if len(lines) != len(jrecs):
            fail("text has %d lines, json %d records" % (len(lines), len(jrecs)))
        for line, r in zip(lines, jrecs):
            ts, tid, thread, value = line.split(" ", 3)
            if ts != r["ts"] or int(tid) != r["tid"]:
                fail("text %r vs json %s" % (line, r))
            if r["type"] == "kv" and r["key"] in ("v", "i", "u"):
                if value.replace('"', '') != "%s=%s" % (r["key"], r["value"]):
                    fail("text %r vs json %s" % (line, r))
            if r["type"] == "event" and not value.startswith(
                    "tick th=%d seq=%d" % (r["fields"]["th"], r["fields"]["seq"])):
                fail("text %r vs json %s" % (line, r))
        print("ok: %d records agree in text, JSON and CBOR" % len(jrecs))
    finally:
        shutil.rmtree(d, ignore_errors=True)


main()
