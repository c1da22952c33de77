/* SPDX-License-Identifier: MIT */
/*
 * reader_scan.c - finding boxes: every entry of a directory judged by its
 * header and file owner, never by its name (FORMAT.md §2); the box of a
 * pid (bb_reader_open_pid).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../shared/grow.h"
#include "internal.h"
#include "reader_int.h"
#include "text.h"

/* ---- finding boxes: by header, never by name ---------------------------- */

/*
 * A file name in /dev/shm proves nothing: any user can create any name
 * (squatting one bb_init() wanted, or naming a copy after another
 * process).  What a reader can trust is the file's owner (nobody can
 * create a file owned by another uid) and, while the process runs, what
 * /proc says about it.  So every entry under BB_NAME_PREFIX is opened and
 * judged by its header: pid, start time and boot id say which process it
 * claims, the file owner who made that claim.
 */

/* What /proc says about a running process. */
struct proc_facts {
	bool alive;
	uint64_t starttime;
	uint32_t uids[4];      /* real, effective, saved, file system */
	bool have_uids;
};

static void proc_facts(pid_t pid, struct proc_facts *pf)
{
	char path[64], buf[4096], *u;

	memset(pf, 0, sizeof(*pf));
	if (pid <= 0 || bb__proc_starttime(pid, &pf->starttime))
		return;
	pf->alive = true;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (bb__read_file(path, buf, sizeof(buf)) <= 0 || !(u = strstr(buf, "\nUid:")))
		return;
	pf->have_uids = sscanf(u + 5, "%" SCNu32 " %" SCNu32 " %" SCNu32 " %" SCNu32,
			       &pf->uids[0], &pf->uids[1], &pf->uids[2], &pf->uids[3]) == 4;
}

static bool is_proc_uid(const struct proc_facts *pf, uint32_t uid)
{
	for (int i = 0; pf->have_uids && i < 4; i++)
		if (pf->uids[i] == uid)
			return true;
	return false;
}

/* Newer first: created_ns, then sequence, then name (a total order). */
static bool entry_newer(const struct bb_box_entry *a, const struct bb_box_entry *b)
{
	if (a->info.created_ns != b->info.created_ns)
		return a->info.created_ns > b->info.created_ns;
	if (a->info.sequence != b->info.sequence)
		return a->info.sequence > b->info.sequence;
	return strcmp(a->name, b->name) > 0;
}

/* By pid, then creation time, then sequence, then name. */
static int entry_cmp(const void *x, const void *y)
{
	const struct bb_box_entry *a = x, *b = y;

	if (a->error != b->error)
		return a->error ? 1 : -1; /* boxes first */
	if (a->info.pid != b->info.pid)
		return a->info.pid < b->info.pid ? -1 : 1;
	if (a->info.created_ns != b->info.created_ns)
		return a->info.created_ns < b->info.created_ns ? -1 : 1;
	if (a->info.sequence != b->info.sequence)
		return a->info.sequence < b->info.sequence ? -1 : 1;
	return strcmp(a->name, b->name);
}

/* A candidate of bb_reader_open_pid(): a box claiming the pid whose file
 * owner is the uid its header names. */
static bool candidate(const struct bb_box_entry *e, pid_t pid)
{
	return !e->error && e->info.pid == pid && !(e->flags & BB_BOX_UID_MISMATCH);
}

/*
 * choose - the box of @pid among @v, the @n entries (from scan(), sorted
 * by entry_cmp) that claim it or at least hold no box of another pid,
 * marking the claims that lose with BB_BOX_FOREIGN or BB_BOX_AMBIGUOUS.
 * @boot is this boot's id, "" when unknown.  Returns its index in @v,
 * -ESRCH (no candidate) or -ENOTUNIQ (boxes of several owners claim the
 * pid and nothing tells which is the process's).  Its work is @n entries
 * and one look at /proc: callers give it the pid's own run of entries
 * (pid_run()), so that a scan judges every pid in one pass.
 *
 * While the process runs (same pid, start time and boot), the box it maps
 * is its box: nobody else can make it map a file.  When its maps cannot be
 * read (another user's process, no privilege), the boxes owned by one of
 * its uids are.  Otherwise, and once it is gone, the newest claim counts
 * only if every claim comes from one owner: a user can copy a box of its
 * own and patch pid, start time and creation time, and the file owner is
 * then the only thing telling the two apart.
 */
static int choose(struct bb_box_entry *v, size_t n, pid_t pid, const char *boot)
{
	struct proc_facts pf;
	int64_t best = -1;
	bool several = false;
	uint32_t owner = 0;

	proc_facts(pid, &pf);
	if (pf.alive) {
		for (size_t i = 0; i < n; i++) {
			struct bb_box_entry *e = &v[i];
			int m;

			if (!candidate(e, pid) || e->info.starttime != pf.starttime ||
			    (boot[0] && strncmp(boot, e->info.boot_id, sizeof(e->info.boot_id))))
				continue;
			/* its maps, or (unreadable: another user's process) its uids */
			m = bb__rdr_maps_has(pid, e->info.file_dev, e->info.file_ino);
			if (m < 0 ? !is_proc_uid(&pf, e->info.file_uid) : m != 1)
				continue;
			if (best < 0 || entry_newer(e, &v[best]))
				best = (int64_t)i;
		}
		if (best >= 0) {
			/* other claims of this very process, by another owner */
			for (size_t i = 0; i < n; i++)
				if (candidate(&v[i], pid) && (int64_t)i != best &&
				    v[i].info.starttime == pf.starttime &&
				    v[i].info.file_uid != v[best].info.file_uid)
					v[i].flags |= BB_BOX_FOREIGN;
			v[best].flags |= BB_BOX_CHOSEN;
			return (int)best;
		}
	}
	for (size_t i = 0; i < n; i++) {
		if (!candidate(&v[i], pid))
			continue;
		if (best < 0)
			owner = v[i].info.file_uid;
		else if (v[i].info.file_uid != owner)
			several = true;
		if (best < 0 || entry_newer(&v[i], &v[best]))
			best = (int64_t)i;
	}
	if (best < 0)
		return -ESRCH;
	if (several) {
		for (size_t i = 0; i < n; i++)
			if (candidate(&v[i], pid))
				v[i].flags |= BB_BOX_AMBIGUOUS;
		return -ENOTUNIQ;
	}
	v[best].flags |= BB_BOX_CHOSEN;
	return (int)best;
}

/*
 * The run of @v (@n entries sorted by entry_cmp: boxes by pid, then the
 * entries that are not boxes) whose boxes claim @pid: [*lo, *lo + return).
 * Binary search: log n comparisons.
 */
static size_t pid_run(const struct bb_box_entry *v, size_t n, pid_t pid, size_t *lo)
{
	size_t a = 0, b = n, end;

	while (a < b) { /* first entry not below pid */
		size_t m = a + (b - a) / 2;

		if (!v[m].error && v[m].info.pid < pid)
			a = m + 1;
		else
			b = m;
	}
	for (end = a; end < n && !v[end].error && v[end].info.pid == pid; end++)
		;
	*lo = a;
	return end - a;
}

/* A box's name, or an archive copy's: the names a scan opens (what is in
 * them is judged by their header and owner, never by the name). */
static bool scan_name(const char *name)
{
	return !strncmp(name, BB_NAME_PREFIX, strlen(BB_NAME_PREFIX)) ||
	       !strncmp(name, BB_ARCHIVE_PREFIX, strlen(BB_ARCHIVE_PREFIX));
}

/* Sorted by entry_cmp (qsort through pointers: an entry is kilobytes). */
static int entry_ptr_cmp(const void *x, const void *y)
{
	return entry_cmp(*(const struct bb_box_entry *const *)x,
			 *(const struct bb_box_entry *const *)y);
}

static int sort_entries(struct bb_box_entry **v, size_t n)
{
	struct bb_box_entry **p, *sorted;

	if (n < 2)
		return 0;
	p = malloc(n * sizeof(*p));
	sorted = malloc(n * sizeof(*sorted));
	if (!p || !sorted) {
		free(p);
		free(sorted);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		p[i] = &(*v)[i];
	qsort(p, n, sizeof(*p), entry_ptr_cmp);
	for (size_t i = 0; i < n; i++)
		memcpy(&sorted[i], p[i], sizeof(sorted[i]));
	free(p);
	free(*v);
	*v = sorted;
	return 0;
}

/*
 * Does the box file @fd claim @pid?  Its header's pid, read alone: a
 * file that is not a box yet (no magic), or claims another pid, is no
 * candidate of bb_reader_open_pid() and is not opened any further.
 */
static bool claims_pid(int fd, pid_t pid)
{
	struct bb_header h;

	return bb__rdr_pread_all(fd, &h, sizeof(h), 0) == 0 && h.magic == BB_MAGIC &&
	       h.pid == pid;
}

/*
 * Every entry of the directory @d under BB_NAME_PREFIX or BB_ARCHIVE_PREFIX,
 * opened and judged (any owner accepted, mismatches flagged), sorted by
 * entry_cmp, every pid's claims judged (choose()).  With @only > 0, only
 * the boxes whose header claims that pid (what bb_reader_open_pid needs):
 * the other files are read no further than their header.  Work and memory
 * are linear in the entries.  0 or -ENOMEM.
 */
static int scan_entries(DIR *d, const char *dir, pid_t only, struct bb_box_entry **out,
			size_t *count)
{
	char boot[64];
	size_t n = 0, cap = 0;
	struct bb_box_entry *v = NULL;
	struct dirent *de;

	for (;;) {
		struct bb_box_entry *e;
		struct bb_reader *r;
		char label[4096];
		int fd;

		errno = 0;
		de = readdir(d);
		if (!de)
			break;
		if (!scan_name(de->d_name) || strlen(de->d_name) >= sizeof(v->name))
			continue;
		if (BB__GROW(&v, &cap, n + 1)) {
			free(v);
			return -ENOMEM;
		}
		e = &v[n++];
		memset(e, 0, sizeof(*e));
		bb__strlcpy(e->name, de->d_name, sizeof(e->name));
		snprintf(label, sizeof(label), "%s/%s", dir, de->d_name);
		fd = bb__rdr_open_nofollow(dirfd(d), de->d_name, label, e->problem, sizeof(e->problem));
		if (fd >= 0 && only > 0 && !claims_pid(fd, only)) {
			close(fd);
			n--;
			continue;
		}
		if (fd < 0) {
			e->error = fd;
			if (only > 0)
				n--;
			continue;
		}
		/* header and ring table only: nothing else is read here */
		e->error = bb__rdr_open_owned_fd(fd, label, BB_OPEN_ANY_OWNER | BB__OPEN_TABLE_ONLY,
						 &r, e->problem, sizeof(e->problem));
		if (e->error) {
			if (only > 0)
				n--;
			continue;
		}
		e->info = *bb_reader_info(r);
		e->liveness = bb_reader_liveness(r);
		bb_reader_close(r);
		if (e->info.file_uid != e->info.uid)
			e->flags |= BB_BOX_UID_MISMATCH;
	}
	if (sort_entries(&v, n)) {
		free(v);
		return -ENOMEM;
	}
	/* judge every pid's claims once, each on its own run of entries:
	 * the whole pass is linear in the entries */
	if (bb__boot_id(boot, sizeof(boot)))
		boot[0] = '\0';
	for (size_t i = 0, j; i < n && !v[i].error; i = j) {
		for (j = i + 1; j < n && !v[j].error && v[j].info.pid == v[i].info.pid; j++)
			;
		(void)choose(v + i, j - i, v[i].info.pid, boot);
	}
	*out = v;
	*count = n;
	return 0;
}

BB_EXPORT int bb_reader_scan(const char *dir, struct bb_box_entry **entries, size_t *count,
			     char *err, size_t errlen)
{
	DIR *d;
	int rc;

	if (!entries || !count)
		return bb__rdr_say(err, errlen, -EINVAL, "no output");
	*entries = NULL;
	*count = 0;
	if (!dir)
		dir = BB_DEFAULT_DIR;
	d = opendir(dir);
	if (!d)
		return bb__rdr_say(err, errlen, -errno, "%s: cannot open directory: %s", dir,
			   strerror(errno));
	rc = scan_entries(d, dir, 0, entries, count);
	closedir(d);
	if (rc)
		return bb__rdr_say(err, errlen, rc, "%s: out of memory", dir);
	return 0;
}

BB_EXPORT void bb_reader_scan_free(struct bb_box_entry *entries)
{
	free(entries);
}

/* "2026-11-21T13:45:01Z" */
static void fmt_utc(char *buf, size_t len, uint64_t ns)
{
	time_t t = (time_t)(ns / 1000000000u);
	struct tm tm;

	if (!gmtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(buf, len, "%" PRIu64 " ns", ns);
}

/* The message of an ambiguous pid: every claim, its owner and age. */
static int say_ambiguous(char *err, size_t errlen, pid_t pid, const char *dir,
			 const struct bb_box_entry *v, size_t n)
{
	size_t at = 0, shown = 0, total = 0;
	int w;

	for (size_t i = 0; i < n; i++)
		total += candidate(&v[i], pid);
	if (!err || !errlen)
		return -ENOTUNIQ;
	w = snprintf(err, errlen, "pid %d: %zu boxes of different owners claim it and "
		     "nothing tells which is the process's:", (int)pid, total);
	at = w > 0 ? (size_t)w : 0;
	for (size_t i = 0; i < n && at < errlen; i++) {
		char t[32];

		if (!candidate(&v[i], pid))
			continue;
		fmt_utc(t, sizeof(t), v[i].info.created_ns);
		w = snprintf(err + at, errlen - at, "%s %s/%s (file owner uid %" PRIu32
			     ", created %s)", shown ? "," : "", dir, v[i].name,
			     v[i].info.file_uid, t);
		if (w < 0 || (size_t)w >= errlen - at)
			break;
		at += (size_t)w;
		shown++;
	}
	if (at < errlen)
		snprintf(err + at, errlen - at, "%s; read one with --path",
			 shown < total ? ", ..." : "");
	return -ENOTUNIQ;
}

BB_EXPORT int bb_reader_open_pid(pid_t pid, const char *dir, unsigned flags,
				 struct bb_reader **out, char *err, size_t errlen)
{
	char label[4096 + 256 + 2], why[256 + 96] = "";
	struct bb_box_entry *v = NULL;
	unsigned rejected = 0;
	size_t n = 0, lo = 0;
	DIR *d;
	int rc, k;

	if (!dir)
		dir = BB_DEFAULT_DIR;
	if (!out)
		return bb__rdr_say(err, errlen, -EINVAL, "%s: no reader pointer", dir);
	*out = NULL;
	d = opendir(dir);
	if (!d)
		return bb__rdr_say(err, errlen, -errno, "%s: cannot open directory: %s", dir,
			   strerror(errno));
	/* only the boxes claiming the pid: their run is all of v (pid_run) */
	rc = scan_entries(d, dir, pid > 0 ? pid : -1, &v, &n);
	if (rc) {
		closedir(d);
		return bb__rdr_say(err, errlen, rc, "%s: out of memory", dir);
	}
	n = pid_run(v, n, pid, &lo);
	/* scan_entries() judged the pid: its choice is the flagged entry */
	k = -ESRCH;
	for (size_t i = lo; i < lo + n; i++) {
		if (v[i].flags & BB_BOX_CHOSEN)
			k = (int)i;
		else if (v[i].flags & BB_BOX_AMBIGUOUS && k == -ESRCH)
			k = -ENOTUNIQ;
	}
	if (k == -ENOTUNIQ) {
		rc = say_ambiguous(err, errlen, pid, dir, v + lo, n);
		goto out;
	}
	if (k < 0) {
		for (size_t i = lo; i < lo + n; i++) {
			rejected++;
			snprintf(why, sizeof(why), "%s: file owner uid %" PRIu32
				 " differs from the box's uid %" PRIu32 ": never chosen",
				 v[i].name, v[i].info.file_uid, v[i].info.uid);
		}
		if (rejected)
			rc = bb__rdr_say(err, errlen, -ESRCH, "no box of pid %d in %s (%u rejected, last: %s)",
				 (int)pid, dir, rejected, why);
		else
			rc = bb__rdr_say(err, errlen, -ESRCH, "no box of pid %d in %s", (int)pid, dir);
		goto out;
	}
	snprintf(label, sizeof(label), "%s/%s", dir, v[k].name);
	rc = bb__rdr_open_at(dirfd(d), v[k].name, label, flags, out, err, errlen);
	if (!rc && (bb_reader_info(*out)->file_dev != v[k].info.file_dev ||
		    bb_reader_info(*out)->file_ino != v[k].info.file_ino)) {
		/* the name now refers to another file than the one judged */
		bb_reader_close(*out);
		*out = NULL;
		rc = bb__rdr_say(err, errlen, -ESTALE, "%s: replaced while being opened", label);
	}
out:
	free(v);
	closedir(d);
	return rc;
}

BB_EXPORT int bb_scan_dir(const char *dir, bb_scan_fn fn, void *arg)
{
	size_t plen = strlen(BB_NAME_PREFIX);
	struct dirent *e;
	DIR *d;
	int rc = 0;

	if (!fn)
		return -EINVAL;
	d = opendir(dir ? dir : BB_DEFAULT_DIR);
	if (!d)
		return -errno;
	for (;;) {
		errno = 0;
		e = readdir(d);
		if (!e) {
			rc = errno ? -errno : 0;
			break;
		}
		if (strncmp(e->d_name, BB_NAME_PREFIX, plen))
			continue;
		rc = fn(dirfd(d), e->d_name, arg);
		if (rc)
			break;
	}
	closedir(d);
	return rc;
}
