#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# Description: bb-extract --perfetto on real boxes (the demo worker killed
# with SIGKILL, a crash with 4 threads inside nested spans and flows, a
# SIGKILL inside nested spans, threads whose span begins their logs
# recycled, a crash that tears the record it was writing): Debian's protoc decodes every trace with the project's .proto
# subset, and an independent reader (python3-protobuf, modules generated
# from that file at test time) checks its meaning: every track described
# before use, slices balanced per track, timestamps monotonic in the
# sequence, thread names and record counts per thread equal to
# bb-extract --json of the same box, the open spans closed at the death
# and flagged as the JSON's open_spans says, the crash and every thread's
# stack on their tracks, flows shared across threads, state keys as
# counters, the torn record marked, the spans whose begin was overwritten
# said to be so.  Also the text's open-spans lines.
#
# usage: check_perfetto.py BB_EXTRACT BBX_SPANNER BBX_CRASHER DEMO_WORKER PROTO
import collections
import importlib
import json
import re
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

EXTRACT, SPANNER, CRASHER, WORKER, PROTO = sys.argv[1:6]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def skip(why):
    print("SKIP:", why)
    sys.exit(77)


protoc = shutil.which("protoc")
if not protoc:
    skip("protoc not installed (Debian: protobuf-compiler)")
try:
    import google.protobuf  # noqa: F401
except ImportError:
    skip("python3-protobuf not installed")

work = tempfile.mkdtemp(prefix="bb-perfetto-")
gen = os.path.join(work, "gen")
os.mkdir(gen)
protodir, protofile = os.path.split(os.path.abspath(PROTO))
subprocess.run([protoc, "-I" + protodir, "--python_out=" + gen, protofile], check=True)
sys.path.insert(0, gen)
pb = importlib.import_module(os.path.splitext(protofile)[0] + "_pb2")
TE = pb.TrackEvent


def box_dir(name):
    d = os.path.join(work, name)
    os.mkdir(d)
    return d


def run_until_pid(d, argv, env_extra=None):
    env = dict(os.environ, BLACKBOX_DIR=d)
    env.update(env_extra or {})
    p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    return p


def extract(d, pid, *args, binary=False):
    p = subprocess.run([EXTRACT, "--dir", d, *args, str(pid)], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=120)
    return p.returncode, (p.stdout if binary else p.stdout.decode()), p.stderr.decode()


def trace_of(d, pid, label):
    path = os.path.join(work, label + ".pftrace")
    with open(path, "wb") as f:
        p = subprocess.run([EXTRACT, "--dir", d, "--perfetto", str(pid)], stdout=f,
                           stderr=subprocess.PIPE, timeout=120)
    check(p.returncode in (0, 3), "%s: --perfetto exit %d: %s" % (label, p.returncode,
                                                                p.stderr.decode()))
    dec = subprocess.run([protoc, "-I" + protodir, "--decode=perfetto.protos.Trace",
                          protofile], stdin=open(path, "rb"), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    check(dec.returncode == 0 and b"track_event" in dec.stdout,
          "%s: protoc --decode failed: %s" % (label, dec.stderr.decode()))
    t = pb.Trace()
    t.ParseFromString(open(path, "rb").read())
    return t


def json_of(d, pid):
    code, out, err = extract(d, pid, "--json")
    check(code in (0, 3), "--json exit %d: %s" % (code, err))
    recs, summary = [], None
    for line in out.splitlines():
        o = json.loads(line)
        if "summary" in o:
            summary = o["summary"]
        elif "tid" in o and "stream" in o and o.get("type") != "gap":
            recs.append(o)
    return recs, summary


def ann(ev):
    out = {}
    for a in ev.debug_annotations:
        out[a.name] = getattr(a, a.WhichOneof("value")) if a.WhichOneof("value") else None
    return out


def meaning(label, t, recs, summary):
    """The checks every trace passes; returns per-track facts for more."""
    tracks, threads = {}, {}
    last_ts, depth = None, collections.Counter()
    per_track = collections.defaultdict(list)
    clock_seen = False
    for p in t.packet:
        check(p.trusted_packet_sequence_id == 1, "%s: a packet off the sequence" % label)
        kind = p.WhichOneof("data")
        if kind == "clock_snapshot":
            clock_seen = True
            check(p.clock_snapshot.primary_trace_clock in (1, 3, 6),
                  "%s: the snapshot names no trace clock" % label)
        if kind == "track_descriptor":
            td = p.track_descriptor
            check(td.uuid not in tracks, "%s: track %d described twice" % (label, td.uuid))
            check(not td.HasField("parent_uuid") or td.parent_uuid in tracks,
                  "%s: track %d's parent is not described before it" % (label, td.uuid))
            tracks[td.uuid] = td
            if td.HasField("thread"):
                threads[td.uuid] = td.thread
        if p.HasField("timestamp"):
            check(last_ts is None or p.timestamp >= last_ts,
                  "%s: timestamp %d before %d" % (label, p.timestamp, last_ts or 0))
            last_ts = p.timestamp
        if kind == "track_event":
            ev = p.track_event
            check(p.HasField("timestamp") and p.timestamp_clock_id in (1, 3, 6),
                  "%s: an event without a timestamp of a builtin clock" % label)
            check(clock_seen, "%s: an event before the clock snapshot" % label)
            check(ev.track_uuid in tracks,
                  "%s: track %d used before it is described" % (label, ev.track_uuid))
            if ev.type == TE.TYPE_SLICE_BEGIN:
                depth[ev.track_uuid] += 1
            elif ev.type == TE.TYPE_SLICE_END:
                depth[ev.track_uuid] -= 1
                check(depth[ev.track_uuid] >= 0,
                      "%s: a slice ends on track %d with none open" % (label, ev.track_uuid))
            per_track[ev.track_uuid].append(ev)
    for u, n in depth.items():
        check(n == 0, "%s: %d slices left open on track %d" % (label, n, u))
    # thread names and record counts, against the JSON of the same box
    jcount = collections.Counter(r["tid"] for r in recs)
    jname = {}
    for r in recs:
        if r["thread"]:
            jname.setdefault(r["tid"], r["thread"])
    pcount = collections.Counter()
    for u, evs in per_track.items():
        if u in threads:
            pcount[threads[u].tid] += sum(1 for e in evs if "record" in e.categories)
    check(jcount == pcount, "%s: records per thread differ: json %s, perfetto %s"
          % (label, dict(jcount), dict(pcount)))
    for u, th in threads.items():
        if th.tid in jname:
            check(th.thread_name == jname[th.tid], "%s: thread %d named %r, json %r"
                  % (label, th.tid, th.thread_name, jname[th.tid]))
    check(sum(jcount.values()) == summary["records"],
          "%s: json records %d, summary %d" % (label, sum(jcount.values()), summary["records"]))
    # the open spans at the death: as many flagged ends per thread
    want = {o["tid"]: len(o["spans"]) for o in summary.get("open_spans", {}).get("threads", [])}
    got = collections.Counter()
    for u, evs in per_track.items():
        if u in threads:
            got[threads[u].tid] += sum(1 for e in evs if e.type == TE.TYPE_SLICE_END
                                       and ann(e).get("open_at_death"))
    check(want == {k: v for k, v in got.items() if v},
          "%s: open at death: json %s, perfetto %s" % (label, want, dict(got)))
    return tracks, threads, per_track


def killed_spanner(mode):
    """bbx_spanner MODE killed with SIGKILL once inside its spans: its
    box's directory, pid, JSON records and summary, and trace, checked."""
    d = box_dir(mode)
    p = run_until_pid(d, [SPANNER, mode])
    pid = int(p.stdout.readline())
    p.kill()
    p.wait()
    recs, summary = json_of(d, pid)
    t = trace_of(d, pid, mode)
    return (d, pid, summary) + meaning(mode, t, recs, summary)


def tid_track(threads, tid):
    return next((u for u, th in threads.items() if th.tid == tid), None)


# ---- 1. the demo worker, killed -------------------------------------------
d = box_dir("demo")
p = run_until_pid(d, [WORKER, "4"])
time.sleep(0.4)
p.kill()
p.wait()
recs, summary = json_of(d, p.pid)
t = trace_of(d, p.pid, "demo")
tracks, threads, per_track = meaning("demo", t, recs, summary)
check(len(threads) == 5, "demo: %d thread tracks, want 5" % len(threads))
check(any(tr.HasField("counter") and tr.name == "config.version" for tr in tracks.values()),
      "demo: no counter track for the numeric state key config.version")
slices = [e for evs in per_track.values() for e in evs if e.type == TE.TYPE_SLICE_BEGIN]
check(any(e.name == "request" for e in slices) and any(e.name == "db.query" for e in slices),
      "demo: the spans are not slices")
code, text, _ = extract(d, p.pid)
check("== open spans at the newest record" in text and " inside db.query{table=orders} " in text,
      "demo: text says no open spans:\n" + text[-600:])

# ---- 2. a crash with 4 threads inside nested spans ---------------------------
d = box_dir("crash")
env = dict(os.environ, BLACKBOX_DIR=d)
cp = subprocess.run([SPANNER, "crash"], env=env, stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE, timeout=60)
check(cp.returncode == -signal.SIGSEGV, "spanner crash: exit %d" % cp.returncode)
pid = int(cp.stdout.split()[0])
recs, summary = json_of(d, pid)
t = trace_of(d, pid, "crash")
tracks, threads, per_track = meaning("crash", t, recs, summary)
check(len(threads) == 5, "crash: %d thread tracks, want 5 (main, acceptor, 3 workers)"
      % len(threads))
main = tid_track(threads, pid)
crash_ev = [e for e in per_track.get(main, []) if "crash" in e.categories
            and e.name.startswith("crash: ")]
check(len(crash_ev) == 1 and crash_ev and crash_ev[0].name == "crash: SIGSEGV"
      and "#0 0x" in ann(crash_ev[0]).get("stack", ""),
      "crash: no crash instant with its stack on the crashing thread")
stacks = [u for u, evs in per_track.items()
          if any(e.name == "stack at the crash" for e in evs)]
check(len(stacks) == 4, "crash: %d threads' stacks at the crash, want 4" % len(stacks))
flows = collections.defaultdict(set)
for u, evs in per_track.items():
    for e in evs:
        for f in e.flow_ids:
            flows[f].add(u)
check(any(len(us) >= 2 for us in flows.values()),
      "crash: no flow id shared by two threads' tracks: %s" % dict(flows))
acc = [e for e in per_track.get(tid_track(threads, [r["tid"] for r in recs
                                                    if r["thread"] == "acceptor"][0]), [])
       if e.type == TE.TYPE_SLICE_BEGIN and ann(e).get("trace_id")]
check(acc and ann(acc[-1])["trace_id"] == "4bf92f3577b34da6a3ce929d0e0e4736"
      and ann(acc[-1])["span_id"] == "00f067aa0ba902b7", "crash: the W3C trace context is lost")
check(any(tr.HasField("counter") and tr.name == "load" for tr in tracks.values()) and
      any(e.name == "state" and "mode" in ann(e) for evs in per_track.values() for e in evs),
      "crash: state keys not as a counter (load) and an instant (mode)")
ospans = {o["thread"]: o for o in summary["open_spans"]["threads"]}
check(summary["open_spans"]["until"] == "crash_record", "crash: open spans not until the crash")
w = ospans.get("worker-1")
check(w and [s["name"] for s in w["spans"]] == ["lock.wait", "db.query", "request"]
      and w["spans"][2]["fields"] == {"id": 458} and w["spans"][0]["open_ns"] > 0,
      "crash: worker-1's open spans: %s" % w)
code, text, _ = extract(d, pid)
check("== open spans at the crash" in text and
      "inside lock.wait " in text and " < db.query{table=orders} " in text
      and " < request{id=458} " in text, "crash: text open spans:\n" + text[-800:])

# ---- 3. SIGKILL inside nested spans ------------------------------------------
d, pid, summary, tracks, threads, per_track = killed_spanner("kill")
check(summary["open_spans"]["until"] == "newest_record", "kill: open spans reference")
ends = sum(1 for evs in per_track.values() for e in evs
           if e.type == TE.TYPE_SLICE_END and ann(e).get("open_at_death"))
check(ends == 3 * 3 + 2, "kill: %d spans closed at the death, want 11" % ends)

# ---- 3b. spans whose begin was overwritten -------------------------------------
d, pid, summary, tracks, threads, per_track = killed_spanner("lost")
keeper = next(o for o in summary["open_spans"]["threads"] if o["thread"] == "keeper")
check([s["name"] for s in keeper["spans"]] == ["inner"] and keeper["overwritten"] == 1,
      "lost: keeper's open spans %r" % keeper)
check(not any(o["thread"] == "ender" for o in summary["open_spans"]["threads"]),
      "lost: ender has no span open")
names = collections.Counter(e.name for evs in per_track.values() for e in evs)
check(names["span end (begin overwritten)"] == 1 and
      names["open spans whose begin was overwritten"] == 1,
      "lost: the overwritten begins are not said: %r" % {k: v for k, v in names.items()
                                                         if "overwritten" in k})
code, text, _ = extract(d, pid)
check(re.search(r"^keeper \(\d+\) inside inner \S+ \S+ < 1 span whose begin was overwritten$",
                text, re.M), "lost: text:\n" + text[-400:])

# ---- 4. a torn record (a crash inside a write) --------------------------------
d = box_dir("torn")
cp = subprocess.run([CRASHER, "inwrite"], env=dict(os.environ, BLACKBOX_DIR=d),
                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
pid = int(cp.stdout.split()[0])
recs, summary = json_of(d, pid)
check(summary["torn"] >= 1, "torn: the crasher left no torn record")
t = trace_of(d, pid, "torn")
tracks, threads, per_track = meaning("torn", t, recs, summary)
check(any(e.name == "torn record" and ann(e).get("torn", 0) >= 1
          for evs in per_track.values() for e in evs), "torn: the torn record is not marked")

shutil.rmtree(work, ignore_errors=True)
if failures:
    sys.exit("%d failure(s)" % len(failures))
print("ok")
