/* SPDX-License-Identifier: MIT */
/*
 * reaper/journal-send.c - bb-reap --journal: one structured journal entry for
 * each box whose owner died (crashed, or orphaned: SIGKILL, the OOM killer,
 * _exit, exec), sent once per box (reported.c) with sd_journal_sendv(3), for
 * systemd-journal-upload to carry to a collector and for
 * `bb-extract --journal[-directory]` to read back.
 *
 * What an entry can be trusted for (docs/SECURITY.md): bb-reap sends it as
 * root, so journald records _UID=0 and _TRANSPORT=journal, which no other
 * local user's entry can carry (bb-extract --journal reads back only
 * those); BB_UID is the owner of the box file, which no other user can
 * forge; everything else comes from the box, written by that user's
 * processes, read through the reader API (bounds-checked) and sent as it
 * said: BB_COMM, BB_CMDLINE, module paths and the MESSAGE are escaped
 * (bb_escape_text), comm and the module's name quoted in the MESSAGE
 * unless plain (bbx_quote), the JSON fields are the JSON emitter's, the
 * box itself is bytes.  A box of another uid than root is that user's
 * private data: its records, state table and the box itself go into the
 * entry only with --journal-content=all (the journal is read by the
 * journal's groups and by every collector it is shipped to); the crash,
 * the stack and the counts always do.  OBJECT_SYSTEMD_UNIT, which puts
 * the entry under `journalctl -u` beside the unit's own logs with root's
 * authority, is set only when the unit the box names is vouched for
 * (unitcheck.c); the message names the uid so that a box cannot pass for
 * another user's process.  Per owner, at most --journal-rate entries an
 * hour and --journal-box-budget bytes of boxes a day, counted from the
 * reported file: one user's crashes cannot flood the journal nor spend
 * another's allowance.
 *
 * No symboliser runs here: a box names its modules' paths, and bb-reap runs
 * as root; opening and parsing files a user chose (a FIFO, a device, a
 * crafted ELF or DWARF) is what the symboliser's confined child exists to
 * keep out of privileged processes.  The entry carries each frame's module,
 * offset and build id instead, which name the code exactly: bb-extract run
 * by a person (unprivileged) or a debuginfod lookup turns them into
 * functions and lines.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define SD_JOURNAL_SUPPRESS_LOCATION
#include <systemd/sd-journal.h>

#include <blackbox/reader.h>

#include "../shared/cbor.h"
#include "../shared/fnv.h"
#include "../shared/hex.h"
#include "emit.h"
#include "journal-fields.h"
#include "msg.h"
#include "out.h"
#include "reap.h"
#include "signames.h"

#define FIELDS_MAX      64
#define STACK_MAX       (64u << 10) /* bytes of BB_STACK */
#define JSON_MAX        (256u << 10)/* bytes of BB_RECORDS, and of BB_STATE_JSON */
#define HASH_FRAMES     5           /* top frames in BB_STACK_HASH */

/* The entry being built: iovecs over buffers it owns. */
struct entry {
	struct iovec iov[FIELDS_MAX];
	char        *own[FIELDS_MAX];
	size_t       n;
	int          err;
};

static void entry_free(struct entry *e)
{
	for (size_t i = 0; i < e->n; i++)
		free(e->own[i]);
	e->n = 0;
}

/* NAME=<len bytes>: one allocation, so that a field is one iovec. */
static void add_bytes(struct entry *e, const char *name, const void *p, size_t len)
{
	size_t k = strlen(name);
	char *b;

	if (e->err || e->n == FIELDS_MAX) {
		e->err = e->err ? e->err : -E2BIG;
		return;
	}
	b = malloc(k + 1 + len);
	if (!b) {
		e->err = -ENOMEM;
		return;
	}
	memcpy(b, name, k);
	b[k] = '=';
	if (len)
		memcpy(b + k + 1, p, len);
	e->own[e->n] = b;
	e->iov[e->n].iov_base = b;
	e->iov[e->n].iov_len = k + 1 + len;
	e->n++;
}

static void add(struct entry *e, const char *name, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void add(struct entry *e, const char *name, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int w;

	va_start(ap, fmt);
	w = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (w < 0)
		w = 0;
	add_bytes(e, name, buf, (size_t)w < sizeof(buf) ? (size_t)w : sizeof(buf) - 1);
}

/* Untrusted text (a box's string): escaped, so it is one line of
 * displayable characters wherever it is shown. */
static void add_text(struct entry *e, const char *name, const char *s, size_t max)
{
	size_t n = strnlen(s, max);
	char *buf = malloc(4 * n + 1);

	if (!buf) {
		e->err = -ENOMEM;
		return;
	}
	add_bytes(e, name, buf, bb_escape_text(s, n, buf, 4 * n + 1));
	free(buf);
}

/* ---- records and state table as JSON (the emitter bb-extract uses) ---- */

/* JSON Lines into an anonymous file, read back after. */
struct jsonbuf {
	int            fd;
	struct bbx_out o;
	struct bbx_em  em;
};

static int json_open(struct jsonbuf *j)
{
	j->fd = memfd_create("bb-reap-json", MFD_CLOEXEC);
	if (j->fd < 0)
		return -errno;
	if (bbx_out_open(&j->o, j->fd, false) < 0) {
		close(j->fd);
		return -ENOMEM;
	}
	bbx_em_init(&j->em, &j->o, false);
	return 0;
}

/*
 * Close @j and add what it holds as field @name: whole lines, the last
 * ones when there are more than @max bytes (the newest records).
 */
static void json_field(struct entry *e, struct jsonbuf *j, const char *name, size_t max)
{
	int r = bbx_out_close(&j->o);
	size_t len = (size_t)j->o.bytes, skip = 0;
	char *buf = NULL;

	if (!r && len) {
		buf = malloc(len);
		if (!buf)
			r = -ENOMEM;
		else if (pread(j->fd, buf, len, 0) != (ssize_t)len)
			r = -EIO;
	}
	close(j->fd);
	if (r) {
		free(buf);
		e->err = e->err ? e->err : r;
		return;
	}
	if (!len)
		return;
	while (len - skip > max) {
		char *nl = memchr(buf + skip, '\n', len - skip);

		skip = nl ? (size_t)(nl - buf) + 1 : len;
	}
	if (skip < len)
		add_bytes(e, name, buf + skip, len - skip);
	free(buf);
}

struct walk {
	uint64_t       count, from;
	struct bbx_em *em;
};

static int count_cb(const struct bb_record *rec, void *arg)
{
	(void)rec;
	((struct walk *)arg)->count++;
	return 0;
}

/* A record line exactly as `bb-extract --json PID` prints it. */
static int record_cb(const struct bb_record *rec, void *arg)
{
	struct walk *w = arg;

	if (w->count++ < w->from)
		return 0;
	bbx_em_record_start(w->em, rec->wall_ns, rec->ts, false, 0, rec->tid,
			    rec->thread_name ? rec->thread_name : "", rec->stream,
			    bb_tag_name(rec->tag));
	bbx_em_record_value(w->em, rec->tag, rec->value, rec->value_len);
	bbx_em_record_end(w->em, rec->flags & BB_RF_TRUNCATED, rec->flags & BB_RF_IMPORTANT);
	return 0;
}

/* A state slot as `bb-extract --json` prints it: {"type":"state",...}. */
static int state_cb(const struct bb_state_entry *s, void *arg)
{
	struct bbx_em *em = arg;
	char t[BBX_TIME_MAX];

	bbx_em_map(em);
	bbx_em_kv_str(em, "type", "state");
	if (s->status != BB_SLOT_OK) {
		bbx_em_kv_u64(em, "slot", s->slot);
		bbx_em_kv_str(em, "status", s->status == BB_SLOT_BUSY ? "busy" : "corrupt");
		bbx_em_kv_str(em, "problem", s->problem);
	} else {
		bbx_em_key(em, "ts");
		bbx_em_str(em, t, bbx_fmt_time(t, s->wall_ns));
		bbx_em_record_value(em, BB_TAG_KV, s->value, s->value_len);
	}
	bbx_em_end(em);
	bbx_em_eol(em);
	return 0;
}

/* BB_RECORDS (the last @n records) and BB_RECORDS_TOTAL; returns the
 * number of intact records in the box. */
static uint64_t add_records(struct entry *e, struct bb_reader *r, unsigned n)
{
	struct walk w = { 0 };
	struct jsonbuf j;
	uint64_t total;

	if (bb_reader_walk(r, BB_WALK_MERGE, count_cb, &w) < 0)
		return 0;
	total = w.count;
	add(e, BBJ_RECORDS_TOTAL, "%llu", (unsigned long long)total);
	if (!n || !total)
		return total;
	if (json_open(&j) < 0) {
		e->err = -ENOMEM;
		return total;
	}
	/* the same walk again (the owner is dead: the same records), the
	 * last @n of them as JSON */
	w = (struct walk){ .from = total > n ? total - n : 0, .em = &j.em };
	bb_reader_walk(r, BB_WALK_MERGE, record_cb, &w);
	json_field(e, &j, BBJ_RECORDS, JSON_MAX);
	return total;
}

/*
 * BB_RELEASE: the program's release, the text value of its state key
 * "release" (bb_set("release", "1.4.3")), whoever owns the box: a version
 * string is no more private than the command line, and a fleet's crash
 * groups list the releases they happened in.
 */
struct release {
	char text[4 * 128 + 1];
};

static int release_cb(const struct bb_state_entry *s, void *arg)
{
	struct release *rel = arg;
	struct bb__cbor c;
	const uint8_t *k, *v;
	size_t kn, vn;
	uint64_t n;

	if (s->status != BB_SLOT_OK || s->key_len != 7 || memcmp(s->key, "release", 7))
		return 0;
	c = (struct bb__cbor){ .p = s->value, .end = s->value + s->value_len };
	if (bb__cbor_container(&c, 4, &n) || n != 2 || bb__cbor_string(&c, 3, &k, &kn) ||
	    bb__cbor_string(&c, 3, &v, &vn))
		return 0;
	bb_escape_text((const char *)v, vn < 128 ? vn : 128, rel->text, sizeof(rel->text));
	return 1; /* found: stop */
}

static void add_release(struct entry *e, struct bb_reader *r)
{
	struct release rel = { "" };

	bb_reader_state(r, release_cb, &rel, NULL);
	if (rel.text[0])
		add(e, BBJ_RELEASE, "%s", rel.text);
}

static void add_state(struct entry *e, struct bb_reader *r)
{
	struct jsonbuf j;

	if (json_open(&j) < 0) {
		e->err = -ENOMEM;
		return;
	}
	bb_reader_state(r, state_cb, &j.em, NULL);
	json_field(e, &j, BBJ_STATE_JSON, JSON_MAX);
}

/* ---- the crash: signal, stack, grouping key ---------------------------- */

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s && s[1] ? s + 1 : path;
}

/*
 * BB_STACK: one line per frame, "#<i> 0x<addr> <module>+0x<offset> <build id>"
 * (module path escaped; "?" when no module holds the address).
 * BB_STACK_KINDS: one letter per frame of BB_STACK, what its address is:
 * "p" an interrupted instruction (looked up as is), "r" a return address
 * (looked up at address - 1: the call), "s" a signal trampoline.
 * BB_STACK_HASH: over the top frames' build ids (module name when a module
 * has none) and offsets, which do not change with ASLR or the path a
 * package is installed at: the same crash of the same build on any host
 * gives the same key.  @where gets "<module name>+0x<offset>" of frame 0.
 */
static uint64_t add_stack(struct entry *e, struct bb_reader *r, const struct bb_crash *cr,
			  char *where, size_t wherelen)
{
	const struct bb_module *mods = NULL;
	size_t nmods = 0, len = 0;
	uint64_t h = BB__FNV64_INIT;
	char *buf = malloc(STACK_MAX);
	char err[128], kinds[BB_CRASH_MAX_FRAMES + 1];
	uint32_t nk = 0;

	where[0] = '\0';
	if (!buf) {
		e->err = -ENOMEM;
		return 0;
	}
	if (bb_reader_modules(r, &mods, &nmods, NULL, err, sizeof(err)) < 0)
		nmods = 0;
	for (uint32_t i = 0; i < cr->nframes; i++) {
		const struct bb_module *m = bb_module_find(mods, nmods, cr->frames[i]);
		char line[4 * 4096 + 256], id[2 * 64 + 1] = "", key[2 * 64 + 32];
		int w;

		if (m) {
			char path[4 * 4096 + 1];
			uint64_t off = cr->frames[i] - m->bias;

			bb_escape_text(m->path, strnlen(m->path, 4096), path, sizeof(path));
			if (m->build_id_len && m->build_id_len <= 64) {
				bb__hex(id, m->build_id, m->build_id_len);
				id[2 * m->build_id_len] = '\0';
			}
			w = snprintf(line, sizeof(line), "#%u 0x%016llx %s+0x%llx%s%s\n", i,
				     (unsigned long long)cr->frames[i], path[0] ? path : "?",
				     (unsigned long long)off, id[0] ? " " : "", id);
			if (i < HASH_FRAMES) {
				int k = snprintf(key, sizeof(key), "%.*s+%llx\n", id[0] ? 128 : 64,
						 id[0] ? id : base_name(path), (unsigned long long)off);

				h = bb__fnv1a64(h, key, (size_t)k < sizeof(key) ? (size_t)k : 0);
			}
			if (i == 0) {
				const char *b = base_name(m->path);
				char q[4 * 256 + 3];

				bbx_quote(b, strnlen(b, 256), q, sizeof(q));
				snprintf(where, wherelen, "%s+0x%llx", q, (unsigned long long)off);
			}
		} else {
			w = snprintf(line, sizeof(line), "#%u 0x%016llx ?\n", i,
				     (unsigned long long)cr->frames[i]);
			if (i < HASH_FRAMES)
				h = bb__fnv1a64(h, "?\n", 2);
			if (i == 0)
				snprintf(where, wherelen, "0x%llx", (unsigned long long)cr->frames[i]);
		}
		if (w < 0 || len + (size_t)w > STACK_MAX)
			break;
		memcpy(buf + len, line, (size_t)w);
		len += (size_t)w;
		kinds[nk++] = cr->frame_flags[i] & BB_CRASH_FRAME_SIGNAL ? 's'
			    : cr->frame_flags[i] & BB_CRASH_FRAME_EXACT ? 'p' : 'r';
	}
	if (len) {
		add_bytes(e, BBJ_STACK, buf, len - 1); /* without the last newline */
		add_bytes(e, BBJ_STACK_KINDS, kinds, nk);
	}
	free(buf);
	if (cr->nframes)
		add(e, BBJ_STACK_HASH, "%016llx", (unsigned long long)h);
	return h;
}

/* BB_BUILD_ID: the executable's, the module area's first object, crash or
 * not (a killed process's build is as worth knowing). */
static void add_build_id(struct entry *e, struct bb_reader *r)
{
	const struct bb_module *mods = NULL;
	size_t nmods = 0;
	char err[128], id[2 * 64 + 1];

	if (bb_reader_modules(r, &mods, &nmods, NULL, err, sizeof(err)) < 0 || !nmods ||
	    !mods[0].build_id_len || mods[0].build_id_len > 64)
		return;
	bb__hex(id, mods[0].build_id, mods[0].build_id_len);
	id[2 * mods[0].build_id_len] = '\0';
	add(e, BBJ_BUILD_ID, "%s", id);
}

/* ---- OOM kills: the kernel's word, from the journal -------------------- */

/*
 * Whether the OOM killer killed a process that died without a word: the
 * kernel says so in its log ("Out of memory: Killed process 4804 (nginx)
 * ...", "Memory cgroup out of memory: Killed process ..."), which
 * journald imports from /dev/kmsg.  The kernel messages of a boot are read
 * once per run, newest first, at most OOM_SCAN_MAX of them, and the kills
 * kept (at most OOM_MAX); a kill counts for a box when its pid is the
 * box's and it came after the box was created.  Nothing can be told when
 * the journal holds no kernel message of that boot (journald not reading
 * /dev/kmsg, a journal rotated away, another boot's journal gone), nor of
 * a process systemd-oomd or a user sent SIGKILL to: those stay "died
 * without a word".
 *
 * The kernel names the process by its pid in the initial PID namespace; a
 * box holds the pid its owner saw.  An owner in a PID namespace of its
 * own (a container) records that namespace in its state table
 * (blackbox.pid_ns, budget.c); its box's pid is then no kernel pid, and a
 * kill counts for it when the kill's command name and uid are the box's,
 * it came after the box was created, and it is the only such kill (two
 * of them: cannot tell).
 */
#define OOM_SCAN_MAX 200000
#define OOM_MAX      4096
#define OOM_BOOTS    8

static struct {
	char     boot[33];
	bool     any;              /* the journal has kernel messages of it */
} oom_boots[OOM_BOOTS];
static size_t noom_boots;

static struct {
	char     boot[33];
	int32_t  pid;
	uint64_t usec;             /* CLOCK_REALTIME of the message */
	char     comm[16];         /* the kernel's command name of it */
	int64_t  uid;              /* its "UID:", -1 when not said */
} ooms[OOM_MAX];
static size_t nooms;

/* The pid of "...Killed process <pid> (<comm>) ... UID:<uid> ..." in @msg,
 * or -1; its command name into @comm ("" when not said), its uid into
 * *@uid (-1 when not said). */
static long oom_pid(const char *msg, char comm[16], int64_t *uid)
{
	const char *p = strstr(msg, "Killed process "), *u, *close;
	char *end;
	long pid;

	comm[0] = '\0';
	*uid = -1;
	if (!p || strncmp(msg, "oom_reaper", 10) == 0)
		return -1;
	p += 15;
	if (*p < '1' || *p > '9')
		return -1;
	pid = strtol(p, &end, 10);
	if (end[0] != ' ' || end[1] != '(' || pid > INT32_MAX)
		return -1;
	/* a command name may hold ')': the last ") " of the message's
	 * head is the one after it (the kernel writes 15 bytes at most) */
	close = strstr(end + 2, ") total-vm:");
	if (close && close - (end + 2) <= 15) {
		memcpy(comm, end + 2, (size_t)(close - (end + 2)));
		comm[close - (end + 2)] = '\0';
	}
	if ((u = strstr(end, ", UID:")) && u[6] >= '0' && u[6] <= '9') {
		long long v = strtoll(u + 6, &end, 10);

		if (v >= 0 && v <= UINT32_MAX)
			*uid = v;
	}
	return pid;
}

static void scan_ooms(size_t b)
{
	char m[64], msg[256];
	sd_journal *j;
	int n = snprintf(m, sizeof(m), "_BOOT_ID=%s", oom_boots[b].boot);

	if (sd_journal_open(&j, SD_JOURNAL_LOCAL_ONLY | SD_JOURNAL_SYSTEM) < 0)
		return;
	if (sd_journal_add_match(j, "_TRANSPORT=kernel", 0) < 0 ||
	    sd_journal_add_match(j, m, (size_t)n) < 0 || sd_journal_seek_tail(j) < 0) {
		sd_journal_close(j);
		return;
	}
	sd_journal_set_data_threshold(j, sizeof(msg));
	for (unsigned k = 0; k < OOM_SCAN_MAX && sd_journal_previous(j) > 0; k++) {
		const void *d;
		size_t l;
		long pid;

		oom_boots[b].any = true;
		if (sd_journal_get_data(j, "MESSAGE", &d, &l) < 0 || l <= 8)
			continue;
		l = l - 8 < sizeof(msg) - 1 ? l - 8 : sizeof(msg) - 1;
		memcpy(msg, (const char *)d + 8, l);
		msg[l] = '\0';
		if ((pid = oom_pid(msg, ooms[nooms].comm, &ooms[nooms].uid)) < 0 ||
		    nooms == OOM_MAX)
			continue;
		memcpy(ooms[nooms].boot, oom_boots[b].boot, sizeof(ooms[nooms].boot));
		ooms[nooms].pid = (int32_t)pid;
		if (sd_journal_get_realtime_usec(j, &ooms[nooms].usec) >= 0)
			nooms++;
	}
	sd_journal_close(j);
}

/* The inode of the initial PID namespace (the kernel's PROC_PID_INIT_INO):
 * a box that records no blackbox.pid_ns is of it. */
#define INIT_PID_NS 0xEFFFFFFCu

/* A whole-number state key the library writes about its box. */
struct ukey {
	const char *key;
	uint64_t    v;
};

static int ukey_cb(const struct bb_state_entry *s, void *arg)
{
	struct ukey *u = arg;
	size_t n = strlen(u->key);
	struct bb__cbor c;
	const uint8_t *k;
	size_t kn;
	uint64_t items;

	if (s->status != BB_SLOT_OK || s->key_len != n || memcmp(s->key, u->key, n))
		return 0;
	c = (struct bb__cbor){ .p = s->value, .end = s->value + s->value_len };
	if (bb__cbor_container(&c, 4, &items) || items != 2 || bb__cbor_string(&c, 3, &k, &kn) ||
	    bb__cbor_uint(&c, &u->v))
		return 0;
	return 1; /* found: stop */
}

/* The value of @key in @r's state table, or @dflt. */
static uint64_t state_u64(struct bb_reader *r, const char *key, uint64_t dflt)
{
	struct ukey u = { key, dflt };

	bb_reader_state(r, ukey_cb, &u, NULL);
	return u.v;
}

/* Whether the owner of @r's box lived in another PID namespace than the
 * kernel's pids are of (the initial one). */
static bool other_pidns(struct bb_reader *r)
{
	uint64_t ns = state_u64(r, "blackbox.pid_ns", INIT_PID_NS);

	return ns && ns != INIT_PID_NS;
}

/* 1: the OOM killer killed the owner of @in (the box @r reads); 0: the
 * kernel's log of its boot says nothing of it; -1: cannot tell. */
static int oom_killed(const struct bb_box_info *in, struct bb_reader *r)
{
	char boot[33];
	size_t k = 0, b, same = 0;

	for (size_t i = 0; in->boot_id[i] && i < sizeof(in->boot_id) && k < 33; i++)
		if (in->boot_id[i] != '-')
			boot[k++] = in->boot_id[i];
	if (k != 32 || strspn(boot, "0123456789abcdef") < 32)
		return -1;
	boot[32] = '\0';
	for (b = 0; b < noom_boots && strcmp(oom_boots[b].boot, boot); b++)
		;
	if (b == noom_boots) {
		if (noom_boots == OOM_BOOTS)
			return -1;
		memcpy(oom_boots[noom_boots++].boot, boot, sizeof(boot));
		scan_ooms(b);
	}
	if (!oom_boots[b].any)
		return -1;
	if (!other_pidns(r)) {
		for (size_t i = 0; i < nooms; i++)
			if (ooms[i].pid == in->pid && !strcmp(ooms[i].boot, boot) &&
			    ooms[i].usec >= in->created_ns / 1000)
				return 1;
		return 0;
	}
	/* its pid is its namespace's: by command name and uid, one kill */
	for (size_t i = 0; i < nooms; i++)
		same += !strcmp(ooms[i].boot, boot) && ooms[i].usec >= in->created_ns / 1000 &&
			ooms[i].uid == (int64_t)in->uid && ooms[i].comm[0] &&
			!strncmp(ooms[i].comm, in->comm, 15);
	return same == 1 ? 1 : same ? -1 : 0;
}

/* ---- the entry ---------------------------------------------------------- */

/* "2,341" */
static void group3(char *out, size_t len, uint64_t v)
{
	char d[32];
	int n = snprintf(d, sizeof(d), "%llu", (unsigned long long)v), o = 0;

	for (int i = 0; i < n && (size_t)o + 2 < len; i++) {
		if (i && (n - i) % 3 == 0)
			out[o++] = ',';
		out[o++] = d[i];
	}
	out[o] = '\0';
}

static void mib(char *out, size_t len, uint64_t v)
{
	snprintf(out, len, "%.1f MiB", (double)v / (1024.0 * 1024.0));
}

/* The boot id as systemd writes _BOOT_ID (32 hex digits), when it is a
 * UUID; otherwise escaped as it is. */
static void add_boot_id(struct entry *e, const char *boot)
{
	char id[33];
	size_t k = 0;

	for (size_t i = 0; boot[i] && i < 40 && k < 33; i++) {
		char c = boot[i];

		if (c == '-')
			continue;
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			break;
		id[k++] = c;
	}
	if (k == 32 && strlen(boot) == 36) {
		id[32] = '\0';
		add(e, BBJ_BOOT_ID, "%s", id);
	} else {
		add_text(e, BBJ_BOOT_ID, boot, 40);
	}
}

/* The unit fields: what the box claims (BB_*), and the OBJECT_* fields of
 * journalctl -u only when vouched for. */
static void add_unit(struct entry *e, const struct bb_box_info *in, uint32_t file_uid)
{
	char why[512];

	if (in->cgroup[0])
		add_text(e, BBJ_CGROUP, in->cgroup, sizeof(in->cgroup));
	if (in->invocation_id[0])
		add(e, BBJ_INVOCATION_ID, "%s", in->invocation_id);
	if (!in->unit[0])
		return;
	/* unit names are checked by the reader: [A-Za-z0-9:_.\\@-] only */
	add(e, BBJ_UNIT, "%s", in->unit);
	if (in->user_unit[0])
		add(e, BBJ_USER_UNIT, "%s", in->user_unit);
	if (!reap_unit_vouched(in, file_uid, why, sizeof(why))) {
		add(e, BBJ_UNIT_VOUCHED, "0");
		add_text(e, BBJ_UNIT_CLAIM, why, sizeof(why));
		return;
	}
	add(e, BBJ_UNIT_VOUCHED, "1");
	add_text(e, BBJ_UNIT_VOUCHED_BY, why, sizeof(why));
	add(e, "OBJECT_SYSTEMD_UNIT", "%s", in->unit);
	if (in->invocation_id[0])
		add(e, "OBJECT_SYSTEMD_INVOCATION_ID", "%s", in->invocation_id);
	if (in->user_unit[0]) {
		add(e, "OBJECT_SYSTEMD_USER_UNIT", "%s", in->user_unit);
		add(e, "OBJECT_UID", "%lu", (unsigned long)file_uid);
	}
}

/* Once per owner and run: the log line saying its entries wait. */
static bool first_time(struct reap_ctx *c, uint32_t uid)
{
	for (size_t i = 0; i < c->nrated; i++)
		if (c->rated[i] == uid)
			return false;
	if (c->nrated < sizeof(c->rated) / sizeof(c->rated[0]))
		c->rated[c->nrated++] = uid;
	return true;
}

/*
 * The entry of one box (reap_journal_box() decided what goes in): every
 * field, the MESSAGE last but one and the box itself last.  @omit: why
 * the box or its records are not in it ("" if they are).  Errors in e->err.
 */
static void build(struct entry *e, const struct reap_ctx *c, struct bb_reader *r,
		  uint32_t uid, bool crashed, bool read_all, bool attach, const char *omit,
		  const char *path, const char *archive, const char *nocopy, uint64_t box_bytes)
{
	const struct bb_box_info *in = bb_reader_info(r);
	char comm[4 * 32 + 1], qcomm[4 * 32 + 3], where[4 * 4096 + 64] = "", msg[8192];
	char sig[32], recs[48];
	const char *signame = crashed ? bbx_signal_name(in->phase_signal) : NULL;
	bool content = uid == 0 || c->o.journal_content == REAP_CONTENT_ALL;
	struct bb_crash cr;
	int oom = -1;
	uint64_t n;

	bb_reader_crash(r, &cr);
	bb_escape_text(in->comm, strnlen(in->comm, sizeof(in->comm)), comm, sizeof(comm));
	bbx_quote(in->comm, strnlen(in->comm, sizeof(in->comm)), qcomm, sizeof(qcomm));
	add(e, "MESSAGE_ID", "%s", BB_JOURNAL_MESSAGE_ID);
	add(e, "PRIORITY", "%d", crashed ? 2 : 4);
	add(e, "SYSLOG_IDENTIFIER", "bb-reap");
	add(e, BBJ_PID, "%ld", (long)in->pid);
	add(e, BBJ_STARTTIME, "%llu", (unsigned long long)in->starttime);
	add_boot_id(e, in->boot_id);
	add(e, BBJ_UID, "%lu", (unsigned long)uid);
	add_bytes(e, BBJ_COMM, comm, strlen(comm));
	add_text(e, BBJ_CMDLINE, in->cmdline, sizeof(in->cmdline));
	add(e, BBJ_LIVENESS, "%s", crashed ? "crashed" : "orphaned");
	add(e, BBJ_FORMAT, "%u.%u", in->version_major, in->version_minor);
	add(e, BBJ_BOX_SIZE, "%llu", (unsigned long long)box_bytes);
	add_text(e, BBJ_BOX_PATH, path, PATH_MAX);
	if (archive)
		add_text(e, BBJ_ARCHIVE, archive, 4096);
	/* --archive asked for a copy and there is none: the entry says so
	 * (BB_NOT_ARCHIVED, and in MESSAGE), not only the run's log */
	if (nocopy)
		add(e, BBJ_NOT_ARCHIVED, "%s", nocopy);
	if (crashed) {
		add(e, BBJ_SIGNAL, "%d", in->phase_signal);
		if (signame)
			add(e, BBJ_SIGNAL_NAME, "%s", signame);
		add(e, BBJ_CRASH_RECORD, "%s", bb_crash_status_name(cr.status));
	}
	if (crashed && cr.status == BB_CRASH_COMPLETE && cr.kind == BB_CRASH_KIND_FATAL) {
		/* bb_crash_record(): why, instead of a signal's details.
		 * The reason is text the program wrote, like a record: another
		 * user's only with --journal-content=all. */
		add(e, BBJ_CRASH_KIND, "fatal");
		if (content)
			add_text(e, BBJ_CRASH_REASON, cr.reason, sizeof(cr.reason));
	} else if (crashed && cr.status == BB_CRASH_COMPLETE) {
		const char *code = bbx_sigcode_name(cr.signal, cr.code);

		add(e, BBJ_CRASH_KIND, "signal");
		add(e, BBJ_SIGNAL_CODE, "%d", cr.code);
		if (code)
			add(e, BBJ_SIGNAL_CODE_NAME, "%s", code);
		/* only a fault the kernel raised has an address */
		if (cr.has_addr && cr.code > 0)
			add(e, BBJ_FAULT_ADDR, "0x%llx", (unsigned long long)cr.addr);
		if (cr.stack_overflow)
			add(e, BBJ_STACK_OVERFLOW, "1");
	}
	if (crashed && cr.status == BB_CRASH_COMPLETE) {
		add(e, BBJ_CRASH_TID, "%d", (int)cr.tid);
		add_text(e, BBJ_CRASH_THREAD, cr.thread, sizeof(cr.thread));
		add_stack(e, r, &cr, where, sizeof(where));
	}
	add_build_id(e, r);
	add_release(e, r);
	add_unit(e, in, uid);
	if (!crashed && (oom = oom_killed(in, r)) >= 0)
		add(e, BBJ_OOM_KILL, "%d", oom);
	/* BB_BUDGET_REMOVED: the deaths of this box's program that the
	 * library's crash-loop budget removed, unreported, before this box
	 * was created (its state key blackbox.budget_removed, bb_init(3) CRASH
	 * LOOPS; libblackbox/budget.c): each a box like this one, so a fleet's
	 * count of the program's deaths adds it to this entry's.  A count,
	 * sent in every mode whoever owns the box, when not 0. */
	if ((n = state_u64(r, "blackbox.budget_removed", 0)))
		add(e, BBJ_BUDGET_REMOVED, "%llu", (unsigned long long)n);
	/* the owner's deaths since its last entry that no entry tells of */
	if (reap_reported_suppressed(c, uid, in->comm))
		add(e, BBJ_SUPPRESSED, "%llu",
		    (unsigned long long)reap_reported_suppressed(c, uid, in->comm));
	if (read_all) {
		uint64_t total;

		/* another user's records and state table are that user's
		 * private data: only their count, unless the administrator
		 * opted in (--journal-content=all) */
		if (content)
			add_state(e, r);
		total = add_records(e, r, content ? c->o.journal_records : 0);
		group3(recs, sizeof(recs), total);
		strcat(recs, total == 1 ? " record" : " records");
	} else {
		snprintf(recs, sizeof(recs), "records not read");
	}

	/* "nginx[4804] (uid 33) crashed: SIGSEGV at nginx+0x4a1f2 (2,341 records)":
	 * the uid is the file owner's, so that no box passes for another
	 * user's process; comm and the module's name are quoted unless
	 * plain (bbx_quote), so that neither passes for the words around it */
	if (signame)
		snprintf(sig, sizeof(sig), "%s", signame);
	else if (!in->phase_signal && cr.status == BB_CRASH_COMPLETE &&
		 cr.kind == BB_CRASH_KIND_FATAL)
		snprintf(sig, sizeof(sig), "fatal error");   /* bb_crash_record(), no signal */
	else
		snprintf(sig, sizeof(sig), "signal %d", in->phase_signal);
	if (!crashed && oom == 1)
		snprintf(msg, sizeof(msg), "%s[%ld] (uid %lu) was killed by the OOM killer "
			 "(kernel log) (%s)", qcomm, (long)in->pid, (unsigned long)uid, recs);
	else if (!crashed)
		snprintf(msg, sizeof(msg), "%s[%ld] (uid %lu) died without a word: SIGKILL, "
			 "%s_exit or exec (%s)", qcomm, (long)in->pid, (unsigned long)uid,
			 oom == 0 ? "" : "OOM kill, ", recs);
	else if (cr.status == BB_CRASH_COMPLETE)
		snprintf(msg, sizeof(msg), "%s[%ld] (uid %lu) crashed: %s at %s (%s)", qcomm,
			 (long)in->pid, (unsigned long)uid, sig, where[0] ? where : "?", recs);
	else
		snprintf(msg, sizeof(msg), "%s[%ld] (uid %lu) crashed: %s, crash record %s (%s)",
			 qcomm, (long)in->pid, (unsigned long)uid, sig,
			 bb_crash_status_name(cr.status), recs);
	if (nocopy) {
		size_t m = strlen(msg);

		snprintf(msg + m, sizeof(msg) - m, " [no archive copy: %s]", nocopy);
	}
	if (omit[0]) {
		size_t m = strlen(msg);

		snprintf(msg + m, sizeof(msg) - m, " [%s]", omit);
		add(e, BBJ_BOX_OMITTED, "%s", omit);
	}
	add_bytes(e, "MESSAGE", msg, strlen(msg));
	/* whether BB_BOX follows: a reader listing entries knows without
	 * reading (and decompressing) the box */
	add(e, BBJ_BOX_ATTACHED, "%d", attach ? 1 : 0);
	if (attach) {
		size_t len = 0;
		const void *data = bb_reader_data(r, &len);

		void *z = NULL;
		size_t zlen = 0;

		if (!data || len != box_bytes) {
			e->err = e->err ? e->err : -ESTALE; /* changed while being read */
		} else if (c->o.compress && reap_zstd_box(data, len, &z, &zlen) == 0) {
			/* a box is mostly empty ring space: what goes over the
			 * wire to a collector is a zstd frame, as an archive */
			add(e, BBJ_BOX_ENCODING, "zstd");
			add_bytes(e, BBJ_BOX, z, zlen);
			free(z);
		} else {
			add_bytes(e, BBJ_BOX, data, len);
		}
	}
}

/*
 * Why the box (or its records) cannot be in the entry, into @omit (""
 * when it can); *@read_all: its records may be read; returns whether the
 * box goes in.
 */
static bool decide(const struct reap_ctx *c, uint32_t uid, uint64_t box_bytes,
		   uint64_t used_bytes, bool *read_all, char *omit, size_t len)
{
	char a[32], b[32];

	omit[0] = '\0';
	mib(a, sizeof(a), box_bytes);
	/* what a run may read of one box is bounded by --max-archive-bytes
	 * (bb-reap(8), BOUNDS): a larger box gets its header's entry only */
	*read_all = !c->o.max_bytes || box_bytes <= c->o.max_bytes;
	if (!*read_all) {
		mib(b, sizeof(b), c->o.max_bytes);
		snprintf(omit, len, "box of %s not read: over --max-archive-bytes %s", a, b);
		return false;
	}
	if (uid != 0 && c->o.journal_content != REAP_CONTENT_ALL) {
		snprintf(omit, len, "uid %lu's records, state table and box left out: private "
			 "(--journal-content=all puts them in)", (unsigned long)uid);
		return false;
	}
	if (c->o.journal != REAP_JOURNAL_BOX)
		return false;
	if (box_bytes > c->o.journal_box_max) {
		mib(b, sizeof(b), c->o.journal_box_max);
		snprintf(omit, len, "box of %s not attached: over --journal-box-max %s", a, b);
		return false;
	}
	if (used_bytes + box_bytes > c->o.journal_budget) {
		mib(b, sizeof(b), c->o.journal_budget);
		snprintf(omit, len, "box of %s not attached: uid %lu's boxes in the journal reached "
			 "--journal-box-budget %s in the last 24 hours", a, (unsigned long)uid, b);
		return false;
	}
	return true;
}

int reap_journal_box(struct reap_ctx *c, struct bb_reader *r, const struct stat *st,
		     int liveness, const char *archive, const struct reap_event *base)
{
	const struct bb_box_info *in = bb_reader_info(r);
	uint32_t uid = (uint32_t)st->st_uid;
	bool crashed = liveness == BB_LIVENESS_CRASHED, attach, read_all;
	struct reap_event ev = *base;
	struct entry e = { .n = 0 };
	uint64_t box_bytes, used_bytes;
	unsigned used_hour;
	struct reap_key k;
	char omit[256], path[PATH_MAX];
	int ret;

	if (liveness != BB_LIVENESS_CRASHED && liveness != BB_LIVENESS_ORPHANED)
		return 0; /* alive, or a clean end (exit, bb_close): nothing to report */
	ev.archive = archive;
	ev.detail = NULL;
	ev.decision = "skipped";
	if (in->uid != uid) {
		/* a box file whose owner is not the uid its header names: a
		 * copy or a forgery; nobody's process to report */
		ev.reason = "not reported to the journal: the file owner is not the header's uid";
		reap_emit(c, &ev, false);
		return 0;
	}
	/* --watch opens (and locks) the reported file only for a pass that
	 * has a death to report (watch.c): said on failure; the box is kept */
	if (!c->reported_file && (ret = reap_reported_open(c)) < 0)
		return ret;
	reap_key_init(&k, in, uid);
	if (reap_reported_seen(c, &k))
		return 0;
	reap_reported_usage(c, uid, &used_hour, &used_bytes);
	if (used_hour >= c->o.journal_rate) {
		ev.reason = "not reported to the journal now: its owner reached --journal-rate; "
			    "a later run reports it if it is still there";
		reap_emit(c, &ev, first_time(c, uid));
		return REAP_JOURNAL_WITHHELD;
	}
	box_bytes = in->file_size < in->box_size ? in->file_size : in->box_size;
	attach = decide(c, uid, box_bytes, used_bytes, &read_all, omit, sizeof(omit));
	snprintf(path, sizeof(path), "%s/%s", base->dir, base->name);
	build(&e, c, r, uid, crashed, read_all, attach, omit, path, archive, base->nocopy,
	      box_bytes);
	ev.reason = crashed ? "crashed" : "orphaned";
	ev.journal = attach ? "box attached" : omit[0] ? omit : "summary";
	if (e.err) {
		ret = e.err;
		ev.detail = ret == -ESTALE ? "the box changed while being read" : strerror(-ret);
		entry_free(&e);
		goto fail;
	}
	if (c->o.dry_run) {
		entry_free(&e);
		ev.decision = "would-report";
		reap_emit(c, &ev, true);
		return 0;
	}
	ret = sd_journal_sendv(e.iov, (int)e.n);
	entry_free(&e);
	if (ret < 0) {
		ev.detail = strerror(-ret);
		goto fail;
	}
	c->reported++;
	ev.decision = "reported";
	reap_reported_clear_suppressed(c, uid, bb_reader_info(r)->comm); /* told by this entry */
	ret = reap_reported_add(c, &k, attach ? box_bytes : 0);
	if (ret < 0) {
		/* sent, but a later run may send it again */
		ev.decision = "error";
		ev.reason = "journal entry sent, but not recorded in the reported file";
		ev.detail = strerror(-ret);
		c->errors++;
	}
	reap_emit(c, &ev, true);
	return 0;
fail:
	ev.decision = "error";
	ev.reason = "journal entry not sent";
	c->errors++;
	reap_emit(c, &ev, true);
	return ret;
}

/*
 * Hangs and snapshots of live owners (hang.c): grouped like crashes, by
 * the owner's uid, the event and BB_STACK_HASH of the stuck thread (a
 * snapshot: of its reason), at most one entry per group every
 * INCIDENT_GROUP_S seconds; the others are counted in the next one's
 * BB_SUPPRESSED.  The trust rules of crash entries hold: the uid is the
 * file owner's, records and state only for root's boxes or with
 * --journal-content=all, no box attached.
 */
#define INCIDENT_GROUP_S 600
#define INCIDENT_GROUPS  256

static struct {
	uint64_t key;
	int64_t  last_s;
	uint64_t suppressed;
} groups[INCIDENT_GROUPS];

/* The group's slot (the oldest one when full), and whether it may send. */
static bool incident_rate(uint64_t key, int64_t now_s, uint64_t *suppressed)
{
	size_t old = 0;

	for (size_t i = 0; i < INCIDENT_GROUPS; i++) {
		if (groups[i].key == key && groups[i].last_s) {
			if (now_s - groups[i].last_s < INCIDENT_GROUP_S) {
				groups[i].suppressed++;
				return false;
			}
			*suppressed = groups[i].suppressed;
			groups[i].suppressed = 0;
			groups[i].last_s = now_s;
			return true;
		}
		if (groups[i].last_s < groups[old].last_s)
			old = i;
	}
	groups[old].key = key;
	groups[old].last_s = now_s;
	groups[old].suppressed = 0;
	*suppressed = 0;
	return true;
}

int reap_journal_incident(struct reap_ctx *c, struct bb_reader *r, const struct stat *st,
			  const struct reap_incident *inc)
{
	const struct bb_box_info *in = bb_reader_info(r);
	uint32_t uid = (uint32_t)st->st_uid;
	bool content = uid == 0 || c->o.journal_content == REAP_CONTENT_ALL;
	bool hang = !strcmp(inc->event, "hang");
	struct entry e = { .n = 0 };
	char comm[4 * 32 + 1], qcomm[4 * 32 + 3], where[4 * 4096 + 64] = "", msg[8192];
	char thread[4 * 16 + 1], qthread[4 * 16 + 3];
	uint64_t h = 0, suppressed = 0, total;
	struct timespec now;
	int ret;

	if (in->uid != uid)
		return 0; /* a copy or a forgery: nobody's process to report */
	bb_escape_text(in->comm, strnlen(in->comm, sizeof(in->comm)), comm, sizeof(comm));
	bbx_quote(in->comm, strnlen(in->comm, sizeof(in->comm)), qcomm, sizeof(qcomm));
	add(&e, "MESSAGE_ID", "%s", BB_JOURNAL_MESSAGE_ID);
	add(&e, "PRIORITY", "%d", hang ? 3 : 5);
	add(&e, "SYSLOG_IDENTIFIER", "bb-reap");
	add(&e, BBJ_EVENT, "%s", inc->event);
	add(&e, BBJ_PID, "%ld", (long)in->pid);
	add(&e, BBJ_STARTTIME, "%llu", (unsigned long long)in->starttime);
	add_boot_id(&e, in->boot_id);
	add(&e, BBJ_UID, "%lu", (unsigned long)uid);
	add_bytes(&e, BBJ_COMM, comm, strlen(comm));
	add_text(&e, BBJ_CMDLINE, in->cmdline, sizeof(in->cmdline));
	add(&e, BBJ_LIVENESS, "%s", inc->event);
	add(&e, BBJ_FORMAT, "%u.%u", in->version_major, in->version_minor);
	if (inc->archive)
		add_text(&e, BBJ_ARCHIVE, inc->archive, 4096);
	if (hang) {
		add(&e, BBJ_HANG_TID, "%d", (int)inc->tid);
		add_text(&e, BBJ_HANG_THREAD, inc->thread, sizeof(inc->thread));
		add(&e, BBJ_HANG_AGE_MS, "%llu", (unsigned long long)inc->age_ms);
		add(&e, BBJ_HANG_DEADLINE_MS, "%u", inc->deadline_ms);
		if (inc->stack)
			h = add_stack(&e, r, inc->stack, where, sizeof(where));
		if (inc->kernel)
			add_text(&e, BBJ_HANG_KERNEL, inc->kernel, 2048);
		if (!inc->stack)
			h = bb__fnv1a64(BB__FNV64_INIT, "no answer", 9);
	} else {
		if (content)
			add_text(&e, BBJ_SNAPSHOT_REASON, inc->reason ? inc->reason : "", 256);
		add(&e, BBJ_SNAPSHOT_MISSED, "%llu", (unsigned long long)inc->missed);
		h = bb__fnv1a64(BB__FNV64_INIT, inc->reason ? inc->reason : "",
				inc->reason ? strlen(inc->reason) : 0);
	}
	h = bb__fnv1a64(h, inc->event, strlen(inc->event));
	h = bb__fnv1a64(h, &uid, sizeof(uid));
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (!incident_rate(h, now.tv_sec, &suppressed)) {
		entry_free(&e);
		if (c->o.verbose)
			reap_log("%s[%ld]: %s not reported: one entry per group every %d s",
				 comm, (long)in->pid, inc->event, INCIDENT_GROUP_S);
		return REAP_JOURNAL_WITHHELD;
	}
	if (suppressed)
		add(&e, BBJ_SUPPRESSED, "%llu", (unsigned long long)suppressed);
	add_build_id(&e, r);
	add_release(&e, r);
	add_unit(&e, in, uid);
	total = add_records(&e, r, content ? c->o.journal_records : 0);
	bb_escape_text(inc->thread, strnlen(inc->thread, sizeof(inc->thread)), thread, sizeof(thread));
	bbx_quote(inc->thread, strnlen(inc->thread, sizeof(inc->thread)), qthread, sizeof(qthread));
	/* as the crash's MESSAGE: the file owner's uid, quoted names */
	if (hang)
		snprintf(msg, sizeof(msg), "%s[%ld] (uid %lu) hangs: thread %s (%d) silent for %llu ms "
			 "(deadline %u ms), %s%s (%llu records)", qcomm, (long)in->pid,
			 (unsigned long)uid, qthread, (int)inc->tid, (unsigned long long)inc->age_ms,
			 inc->deadline_ms, inc->stack ? "at " : "no answer: ",
			 inc->stack ? (where[0] ? where : "?") : inc->kernel ? inc->kernel : "?",
			 (unsigned long long)total);
	else
		snprintf(msg, sizeof(msg), "%s[%ld] (uid %lu) snapshot%s%s (%llu records, %llu missed)",
			 qcomm, (long)in->pid, (unsigned long)uid, content ? ": " : "",
			 content && inc->reason ? inc->reason : "", (unsigned long long)total,
			 (unsigned long long)inc->missed);
	add_bytes(&e, "MESSAGE", msg, strlen(msg));
	add(&e, BBJ_BOX_ATTACHED, "0");
	if (e.err) {
		ret = e.err;
		entry_free(&e);
		return ret;
	}
	if (c->o.dry_run) {
		entry_free(&e);
		return 0;
	}
	ret = sd_journal_sendv(e.iov, (int)e.n);
	entry_free(&e);
	if (ret >= 0)
		c->reported++;
	return ret < 0 ? ret : 0;
}
