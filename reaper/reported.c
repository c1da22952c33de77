/* SPDX-License-Identifier: MIT */
/*
 * reaper/reported.c - which boxes bb-reap --journal has reported: one small
 * reported file, so that each box gets one journal entry across runs, whatever
 * --min-age, archiving and removal do with it, and never a write into the
 * box itself.
 *
 * A box is known by its file owner's uid, which nobody can forge, and by
 * its header's identity of the owner process (boot id, pid, start time,
 * sequence, creation time): a user can mark as reported only boxes that
 * its own uid owns, never another user's, however it forges headers.
 *
 * The file holds one line per reported box:
 *   <uid> <boot> <pid> <starttime> <sequence> <created_ns> <reported_s> <seen_s> <bytes>
 * (boot: the header's boot id if it is made of [0-9a-f-], else "x" and its
 * bytes in hex; reported_s, seen_s: CLOCK_REALTIME seconds of the report
 * and of the last run that saw the box; bytes: BB_BOX bytes sent).  A run
 * appends a line, synced, right after each entry it sends (a run killed
 * later does not send it again), and rewrites the file compacted at its end
 * (a new file renamed over the old one): an entry goes once its box has
 * not been seen for REAP_REPORTED_FORGET_S, the oldest first when an owner has
 * more than REAP_REPORTED_PER_OWNER, or the whole file more than
 * REAP_REPORTED_MAX.  So the file stays small, one user's boxes cannot push
 * another's out, and a box that goes and comes back within the window is
 * not reported again.  One run at a time: the file is locked (flock) for
 * the run.
 *
 * And one line per owner and program whose deaths went unreported, its
 * boxes removed while --journal-rate kept them out of the journal:
 *   s <uid> <count> <comm>
 * (comm: the boxes' header's, in hex), carried as BB_SUPPRESSED by the
 * next entry of that owner and program, then cleared.  A line without
 * comm, as the previous bb-reap wrote, counts for the owner's next entry
 * of any program.  A bb-reap older still skips "s" lines as malformed
 * (and warns).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <blackbox/reader.h>

#include "../shared/grow.h"
#include "../shared/hex.h"
#include "reap.h"

#define REPORTED_MAGIC      "# bb-reap reported boxes 1\n"
#define REPORTED_READ_MAX   (16u << 20) /* bytes read at most: REAP_REPORTED_MAX lines fit */
#define REPORTED_LINE_MAX   256u
#define LOCK_WAIT_MS     60000       /* another run holds the file at most this long */

struct reported_entry {
	struct reap_key key;
	int64_t         reported_s;
	int64_t         seen_s;
	uint64_t        bytes;
};

/* Deaths --journal-rate kept out of the journal, per owner and program
 * (the box header's comm: "" on a line an older bb-reap wrote, the
 * owner's deaths of any program). */
struct suppressed {
	uint32_t uid;
	char     comm[32];
	uint64_t count;
};

#define SUPPRESSED_MAX 4096 /* owners with a count kept, at most */

struct reap_reported {
	char                   path[PATH_MAX];
	int                    fd;
	struct reported_entry *v;
	size_t                 n, cap;
	struct suppressed     *sup;
	size_t                 nsup, supcap;
};

/* The header's boot id as a token of the file: what a normal one is made
 * of as it is, anything else in hex (injective, no blank, no newline). */
void reap_key_init(struct reap_key *k, const struct bb_box_info *in, uint32_t file_uid)
{
	size_t n = strnlen(in->boot_id, sizeof(in->boot_id)), i;
	bool plain = n > 0;

	memset(k, 0, sizeof(*k));
	for (i = 0; i < n && plain; i++)
		plain = (in->boot_id[i] >= '0' && in->boot_id[i] <= '9') ||
			(in->boot_id[i] >= 'a' && in->boot_id[i] <= 'f') || in->boot_id[i] == '-';
	if (plain) {
		memcpy(k->boot, in->boot_id, n);
	} else {
		k->boot[0] = 'x';
		for (i = 0; i < n; i++)
			snprintf(k->boot + 1 + 2 * i, 3, "%02x", (unsigned char)in->boot_id[i]);
		if (!n)
			k->boot[1] = '-';
	}
	k->uid = file_uid;
	k->pid = in->pid;
	k->starttime = in->starttime;
	k->sequence = in->sequence;
	k->created_ns = in->created_ns;
}

static bool key_eq(const struct reap_key *a, const struct reap_key *b)
{
	return a->uid == b->uid && a->pid == b->pid && a->starttime == b->starttime &&
	       a->sequence == b->sequence && a->created_ns == b->created_ns &&
	       !strcmp(a->boot, b->boot);
}

/* A whole decimal token, at most @hi. */
static bool num(const char *t, uint64_t hi, uint64_t *out)
{
	return reap_parse_num(t, "", NULL, out) == 0 && *out <= hi;
}

static bool parse_line(char *line, struct reported_entry *e)
{
	char *tok[9], *save = NULL;
	uint64_t v[9];
	size_t n = 0;

	for (char *t = strtok_r(line, " ", &save); t; t = strtok_r(NULL, " ", &save)) {
		if (n == 9)
			return false;
		tok[n++] = t;
	}
	if (n != 9 || strlen(tok[1]) >= sizeof(e->key.boot) || !tok[1][0])
		return false;
	if (!num(tok[0], UINT32_MAX, &v[0]) || !num(tok[2], INT32_MAX, &v[2]) ||
	    !num(tok[3], UINT64_MAX, &v[3]) || !num(tok[4], UINT32_MAX, &v[4]) ||
	    !num(tok[5], UINT64_MAX, &v[5]) || !num(tok[6], INT64_MAX, &v[6]) ||
	    !num(tok[7], INT64_MAX, &v[7]) || !num(tok[8], UINT64_MAX, &v[8]))
		return false;
	memset(e, 0, sizeof(*e));
	e->key.uid = (uint32_t)v[0];
	memcpy(e->key.boot, tok[1], strlen(tok[1]));
	e->key.pid = (int32_t)v[2];
	e->key.starttime = v[3];
	e->key.sequence = (uint32_t)v[4];
	e->key.created_ns = v[5];
	e->reported_s = (int64_t)v[6];
	e->seen_s = (int64_t)v[7];
	e->bytes = v[8];
	return true;
}

/* The count of @uid's program @comm, created (0) if need be; NULL when
 * there is no room. */
static struct suppressed *sup_of(struct reap_reported *s, uint32_t uid, const char *comm,
				 bool create)
{
	for (size_t i = 0; i < s->nsup; i++)
		if (s->sup[i].uid == uid && !strcmp(s->sup[i].comm, comm))
			return &s->sup[i];
	if (!create || s->nsup == SUPPRESSED_MAX || BB__GROW(&s->sup, &s->supcap, s->nsup + 1) < 0)
		return NULL;
	s->sup[s->nsup] = (struct suppressed){ .uid = uid };
	snprintf(s->sup[s->nsup].comm, sizeof(s->sup[s->nsup].comm), "%s", comm);
	return &s->sup[s->nsup++];
}

/* "<uid> <count>[ <comm in hex>]" of an "s" line. */
static bool parse_suppressed(struct reap_reported *s, char *line)
{
	char *sp = strchr(line, ' '), *hx, comm[32] = "";
	struct suppressed *e;
	uint64_t uid, count;
	size_t k = 0;

	if (!sp)
		return false;
	*sp = '\0';
	if ((hx = strchr(sp + 1, ' '))) {
		size_t n = strlen(hx + 1);

		*hx++ = '\0';
		if (!n || n % 2 || n / 2 >= sizeof(comm) || strspn(hx, "0123456789abcdef") != n)
			return false;
		for (; k < n / 2; k++) {
			unsigned v;

			if (sscanf(hx + 2 * k, "%2x", &v) != 1 || !v)
				return false;
			comm[k] = (char)v;
		}
		comm[k] = '\0';
	}
	if (!num(line, UINT32_MAX, &uid) || !num(sp + 1, UINT32_MAX, &count))
		return false;
	if ((e = sup_of(s, (uint32_t)uid, comm, true)))
		e->count = count;
	return true;
}

void reap_reported_suppress(struct reap_ctx *c, uint32_t uid, const char *comm)
{
	struct suppressed *e =
		c->reported_file ? sup_of(c->reported_file, uid, comm, true) : NULL;

	if (e && e->count < UINT32_MAX)
		e->count++;
}

uint64_t reap_reported_suppressed(const struct reap_ctx *c, uint32_t uid, const char *comm)
{
	struct suppressed *e, *any;

	if (!c->reported_file)
		return 0;
	e = sup_of(c->reported_file, uid, comm, false);
	any = sup_of(c->reported_file, uid, "", false); /* an older bb-reap's */
	return (e ? e->count : 0) + (any && any != e ? any->count : 0);
}

void reap_reported_clear_suppressed(struct reap_ctx *c, uint32_t uid, const char *comm)
{
	struct suppressed *e;

	if (!c->reported_file)
		return;
	if ((e = sup_of(c->reported_file, uid, comm, false)))
		e->count = 0;
	if ((e = sup_of(c->reported_file, uid, "", false)))
		e->count = 0;
}

static int push(struct reap_reported *s, const struct reported_entry *e)
{
	if (BB__GROW(&s->v, &s->cap, s->n + 1) < 0)
		return -ENOMEM;
	s->v[s->n++] = *e;
	return 0;
}

static int load(struct reap_reported *s)
{
	char *buf = malloc(REPORTED_READ_MAX + 1), *p, *nl;
	size_t len = 0, bad = 0;
	ssize_t r;
	int ret = 0;

	if (!buf)
		return -ENOMEM;
	while (len < REPORTED_READ_MAX) {
		r = pread(s->fd, buf + len, REPORTED_READ_MAX - len, (off_t)len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			ret = -errno;
			goto out;
		}
		if (r == 0)
			break;
		len += (size_t)r;
	}
	buf[len] = '\0';
	for (p = buf; (nl = memchr(p, '\n', (size_t)(buf + len - p))); p = nl + 1) {
		struct reported_entry e;

		*nl = '\0';
		if (*p == '#' || !*p)
			continue;
		if (p[0] == 's' && p[1] == ' ') {
			if (!parse_suppressed(s, p + 2))
				bad++;
			continue;
		}
		if ((size_t)(nl - p) >= REPORTED_LINE_MAX || !parse_line(p, &e)) {
			bad++;
			continue;
		}
		ret = push(s, &e);
		if (ret)
			goto out;
	}
	if (bad)
		reap_log("warning: reported file %s: %zu malformed lines ignored", s->path, bad);
out:
	free(buf);
	return ret;
}

/*
 * Where the reported file lives unless --journal-reported says: the service's state
 * directory ($STATE_DIRECTORY, the first one), /var/lib/blackbox for root,
 * a user's $XDG_STATE_HOME (~/.local/state) otherwise.
 */
static int default_path(char *buf, size_t len)
{
	const char *sd = getenv("STATE_DIRECTORY"), *x = getenv("XDG_STATE_HOME");
	const char *home = getenv("HOME");
	int w;

	if (sd && *sd == '/')
		w = snprintf(buf, len, "%.*s/journal-reported", (int)strcspn(sd, ":"), sd);
	else if (geteuid() == 0)
		w = snprintf(buf, len, "%s", REAP_REPORTED_DEFAULT);
	else if (x && *x == '/')
		w = snprintf(buf, len, "%s/blackbox-journal-reported", x);
	else if (home && *home == '/')
		w = snprintf(buf, len, "%s/.local/state/blackbox-journal-reported", home);
	else
		return -ENOENT;
	return w < 0 || (size_t)w >= len ? -ENAMETOOLONG : 0;
}

/* Create the file's directory if only its last component is missing (the
 * first run under cron); 0711 as the archive directory. */
static void make_parent(const char *path)
{
	char dir[PATH_MAX];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (!slash || slash == dir)
		return;
	*slash = '\0';
	if (mkdir(dir, 0711) < 0 && errno != EEXIST)
		return;
}

/* Lock the file for the run, waiting a bounded time for another run; the
 * lock must be on the inode the name still refers to (a run that ends
 * renames a new file over it). */
static int lock_current(struct reap_reported *s)
{
	for (int waited = 0;;) {
		struct stat a, b;

		if (flock(s->fd, LOCK_EX | LOCK_NB) == 0) {
			if (fstat(s->fd, &a) == 0 && stat(s->path, &b) == 0 &&
			    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
				return 0;
			/* replaced while we waited: take the new one */
			close(s->fd);
			s->fd = open(s->path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
			if (s->fd < 0)
				return -errno;
			continue;
		}
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		if (waited >= LOCK_WAIT_MS)
			return -EBUSY;
		nanosleep(&(struct timespec){ 0, 100 * 1000 * 1000 }, NULL);
		waited += 100;
	}
}

int reap_reported_open(struct reap_ctx *c)
{
	struct reap_reported *s = calloc(1, sizeof(*s));
	struct stat st;
	int r;

	if (!s)
		return -ENOMEM;
	s->fd = -1;
	if (c->o.journal_reported) {
		if (snprintf(s->path, sizeof(s->path), "%s", c->o.journal_reported) >=
		    (int)sizeof(s->path))
			r = -ENAMETOOLONG;
		else
			r = 0;
	} else {
		r = default_path(s->path, sizeof(s->path));
	}
	if (r)
		goto fail;
	make_parent(s->path);
	s->fd = open(s->path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (s->fd < 0) {
		r = -errno;
		goto fail;
	}
	r = lock_current(s);
	if (r)
		goto fail;
	/* ours alone: a regular file of our uid, not writable by others */
	if (fstat(s->fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 0022)) {
		r = -EPERM;
		goto fail;
	}
	r = load(s);
	if (r)
		goto fail;
	c->reported_file = s;
	return 0;
fail:
	reap_log("error: reported file %s: %s", s->path[0] ? s->path : "(no path)",
		 r == -EBUSY ? "locked by another bb-reap for too long" :
		 r == -EPERM ? "not a regular file of ours, or writable by others" :
		 r == -ENOENT ? "no state directory (give --journal-reported FILE)" : strerror(-r));
	if (s->fd >= 0)
		close(s->fd);
	free(s->v);
	free(s->sup);
	free(s);
	return r;
}

bool reap_reported_seen(struct reap_ctx *c, const struct reap_key *k)
{
	struct reap_reported *s = c->reported_file;
	int64_t now = c->now_ns / 1000000000;

	for (size_t i = 0; s && i < s->n; i++)
		if (key_eq(&s->v[i].key, k)) {
			s->v[i].seen_s = now;
			return true;
		}
	return false;
}

void reap_reported_usage(const struct reap_ctx *c, uint32_t uid, unsigned *last_hour,
			 uint64_t *bytes_last_day)
{
	const struct reap_reported *s = c->reported_file;
	int64_t now = c->now_ns / 1000000000;

	*last_hour = 0;
	*bytes_last_day = 0;
	for (size_t i = 0; s && i < s->n; i++) {
		const struct reported_entry *e = &s->v[i];

		if (e->key.uid != uid)
			continue;
		if (e->reported_s > now - 3600 && e->reported_s <= now + 60)
			(*last_hour)++;
		if (e->reported_s > now - 86400 && e->reported_s <= now + 60)
			*bytes_last_day += e->bytes;
	}
}

static int format_line(char *buf, size_t len, const struct reported_entry *e)
{
	return snprintf(buf, len, "%lu %s %ld %llu %lu %llu %lld %lld %llu\n",
			(unsigned long)e->key.uid, e->key.boot, (long)e->key.pid,
			(unsigned long long)e->key.starttime, (unsigned long)e->key.sequence,
			(unsigned long long)e->key.created_ns, (long long)e->reported_s,
			(long long)e->seen_s, (unsigned long long)e->bytes);
}

static int write_all(int fd, const char *p, size_t n, off_t off)
{
	while (n) {
		ssize_t w = pwrite(fd, p, n, off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		p += w;
		n -= (size_t)w;
		off += w;
	}
	return 0;
}

int reap_reported_add(struct reap_ctx *c, const struct reap_key *k, uint64_t bytes)
{
	struct reap_reported *s = c->reported_file;
	struct reported_entry e = { .key = *k, .bytes = bytes };
	char line[REPORTED_LINE_MAX];
	struct stat st;
	int n, r;

	e.reported_s = e.seen_s = c->now_ns / 1000000000;
	r = push(s, &e);
	if (r)
		return r;
	n = format_line(line, sizeof(line), &e);
	if (fstat(s->fd, &st) < 0)
		return -errno;
	r = write_all(s->fd, line, (size_t)n, st.st_size);
	if (!r && fdatasync(s->fd) < 0)
		r = -errno;
	return r;
}

/* Newest sign first: seen, then reported. */
static int by_uid_newest(const void *a, const void *b)
{
	const struct reported_entry *x = a, *y = b;

	if (x->key.uid != y->key.uid)
		return x->key.uid < y->key.uid ? -1 : 1;
	if (x->seen_s != y->seen_s)
		return x->seen_s > y->seen_s ? -1 : 1;
	if (x->reported_s != y->reported_s)
		return x->reported_s > y->reported_s ? -1 : 1;
	return 0;
}

static int by_newest(const void *a, const void *b)
{
	const struct reported_entry *x = a, *y = b;

	if (x->seen_s != y->seen_s)
		return x->seen_s > y->seen_s ? -1 : 1;
	return x->reported_s > y->reported_s ? -1 : x->reported_s < y->reported_s;
}

/* Drop what is forgotten (module comment), in memory. */
static void compact(struct reap_reported *s, int64_t now)
{
	size_t i, j, k;

	if (s->n > 1)
		qsort(s->v, s->n, sizeof(*s->v), by_uid_newest);
	for (i = j = 0; i < s->n; i = k) {
		for (k = i; k < s->n && s->v[k].key.uid == s->v[i].key.uid; k++) {
			if (k - i >= REAP_REPORTED_PER_OWNER || s->v[k].seen_s < now - REAP_REPORTED_FORGET_S)
				continue;
			s->v[j++] = s->v[k];
		}
	}
	s->n = j;
	if (s->n > REAP_REPORTED_MAX) {
		qsort(s->v, s->n, sizeof(*s->v), by_newest);
		s->n = REAP_REPORTED_MAX;
	}
}

/* The compacted state into a new file, renamed over the old one. */
static int rewrite(struct reap_reported *s)
{
	char tmp[PATH_MAX + 16], line[REPORTED_LINE_MAX];
	char *buf = NULL;
	size_t len = 0, cap = 0;
	int fd, r = 0;

	if (snprintf(tmp, sizeof(tmp), "%s.new", s->path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	for (size_t i = 0; i <= s->n + s->nsup; i++) {
		const struct suppressed *sp = i > s->n ? &s->sup[i - 1 - s->n] : NULL;
		char hx[2 * sizeof(sp->comm) + 2] = "";
		int n;

		if (sp && sp->comm[0]) {
			hx[0] = ' ';
			bb__hex(hx + 1, (const uint8_t *)sp->comm, strlen(sp->comm));
		}
		n = !i ? snprintf(line, sizeof(line), "%s", REPORTED_MAGIC)
		  : !sp ? format_line(line, sizeof(line), &s->v[i - 1])
		  : !sp->count ? 0
		  : snprintf(line, sizeof(line), "s %lu %llu%s\n", (unsigned long)sp->uid,
			     (unsigned long long)sp->count, hx);

		if (BB__GROW(&buf, &cap, len + (size_t)n) < 0) {
			free(buf);
			return -ENOMEM;
		}
		memcpy(buf + len, line, (size_t)n);
		len += (size_t)n;
	}
	unlink(tmp); /* a leftover of a run that died here; ours (the lock) */
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		free(buf);
		return -errno;
	}
	r = write_all(fd, buf, len, 0);
	if (!r && fsync(fd) < 0)
		r = -errno;
	if (close(fd) < 0 && !r)
		r = -errno;
	free(buf);
	if (!r && rename(tmp, s->path) < 0)
		r = -errno;
	if (r)
		unlink(tmp);
	return r;
}

int reap_reported_close(struct reap_ctx *c)
{
	struct reap_reported *s = c->reported_file;
	int r = 0;

	if (!s)
		return 0;
	if (!c->o.dry_run) {
		compact(s, c->now_ns / 1000000000);
		r = rewrite(s);
		if (r)
			reap_log("error: reported file %s: cannot rewrite: %s", s->path,
				 strerror(-r));
	}
	close(s->fd); /* the lock goes with it, after the rename */
	free(s->v);
	free(s->sup);
	free(s);
	c->reported_file = NULL;
	return r;
}
