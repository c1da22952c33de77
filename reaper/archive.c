/* SPDX-License-Identifier: MIT */
/*
 * reaper/archive.c - bb-reap's archive directory: names of the copies, who
 * owns them, and pruning them to --keep N newest and/or
 * --max-archive-bytes, per owner.
 *
 * An archive belongs to the owner of the box file it copies (fchown).
 * Nobody can create a file owned by another uid, so the owner is the one
 * identity bb-reap can vouch for: the archive keeps it, the reader's
 * owner check works on archives as on boxes (a copy of a box whose header
 * names another uid than its file owner stays refused), and the service's
 * user reads its own archive (the directory is 0711: anyone may reach a
 * file by its name, only root may list, create, rename or remove).  The
 * owner may then rewrite, grow or shrink its own archives, as it could
 * its boxes: the reader refuses a file whose size disagrees with its
 * header and reads nothing past box_size, and the quotas below count the
 * owner's own files against the owner alone.
 *
 * Quotas are per owner uid: --keep and --max-archive-bytes apply to each
 * owner's archives separately, so one user's boxes (a dozen small ones, or
 * one large one) never push another's out.
 *
 * Only files that are ours are ever pruned: a name that matches exactly the
 * pattern we create (archive_name), a regular file (never a symlink,
 * checked without following it), and, when bb-reap does not run as root,
 * owned by our effective uid.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <blackbox/reader.h>
#ifdef BB_HAVE_ZSTD
#include <zstd.h>
#endif

#include "../shared/grow.h"
#include "out.h"
#include "reap.h"

int reap_archive_open(struct reap_ctx *c)
{
	struct stat st;
	int fd;

	fd = open(c->o.archive, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 && errno == ENOENT && !c->o.dry_run) {
		/* Only the last component: a cron job's first run.  0711:
		 * owners reach their archives by name, nothing more. */
		if (mkdir(c->o.archive, 0711) < 0 && errno != EEXIST)
			return -errno;
		fd = open(c->o.archive, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) == 0 && (st.st_mode & S_IWOTH) && !(st.st_mode & S_ISVTX))
		reap_log("warning: archive directory %s is world-writable without the sticky bit",
			 c->o.archive);
	c->archfd = fd;
	return 0;
}

/*
 * "blackbox-<uid>-<comm>-<pid>-<YYYYmmddTHHMMSSZ>.box", or with ".<n>" before
 * ".box" when n > 0 (a name already taken), and ".zst" after it when the
 * copy is compressed (--compress=zstd).  uid is the box file's owner:
 * the only field no other user can choose, so names of different owners
 * never collide (a user cannot occupy the names another owner's archives
 * will get).  comm is reduced to [A-Za-z0-9_+.-] (anything else becomes
 * '_'): it is the owner's choice of bytes and must never carry a '/' or a
 * control character into a path.  pid was validated by the reader (> 0),
 * the time is a plausible one (bb-reap.c).
 */
static int archive_name(uint32_t uid, const char *comm, int32_t pid, int64_t when_ns,
			unsigned n, bool zst, char *buf, size_t len)
{
	char safe[32], stamp[32], suffix[16] = "";
	time_t t = (time_t)(when_ns / 1000000000);
	struct tm tm;
	size_t i;
	int w;

	for (i = 0; comm && comm[i] && i < 15; i++) {
		char ch = comm[i];
		int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			 (ch >= '0' && ch <= '9') || ch == '_' || ch == '+' ||
			 ch == '.' || ch == '-';
		safe[i] = ok ? ch : '_';
	}
	safe[i] = '\0';
	if (!i)
		strcpy(safe, "unknown");
	if (!gmtime_r(&t, &tm) || !strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm))
		strcpy(stamp, "19700101T000000Z");
	if (n)
		snprintf(suffix, sizeof(suffix), ".%u", n);
	w = snprintf(buf, len, BB_ARCHIVE_PREFIX "%lu-%s-%ld-%s%s.box%s", (unsigned long)uid, safe,
		     (long)pid, stamp, suffix, zst ? ".zst" : "");
	if (w < 0 || (size_t)w >= len)
		return -ENAMETOOLONG;
	return 0;
}

static bool all_digits(const char *s, size_t n)
{
	if (!n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

/* Does @name match what archive_name() makes?  The uid from the left,
 * the rest parsed from the right (comm may hold '-'). */
bool reap_archive_name_ours(const char *name)
{
	static const char pre[] = BB_ARCHIVE_PREFIX, suf[] = ".box", zst[] = ".zst";
	size_t len = strlen(name), end, dash, u;

	if (len > sizeof(zst) - 1 && !strcmp(name + len - (sizeof(zst) - 1), zst))
		len -= sizeof(zst) - 1;

	if (len < sizeof(pre) - 1 + sizeof(suf) - 1 || strncmp(name, pre, sizeof(pre) - 1) ||
	    strncmp(name + len - (sizeof(suf) - 1), suf, sizeof(suf) - 1))
		return false;
	/* "<uid>-" */
	u = sizeof(pre) - 1;
	while (u < len && name[u] >= '0' && name[u] <= '9')
		u++;
	if (u == sizeof(pre) - 1 || u >= len || name[u] != '-')
		return false;
	u++;                                    /* comm starts here */
	end = len - (sizeof(suf) - 1);          /* name[0..end) without ".box" */
	/* optional ".<n>" */
	if (end && name[end - 1] >= '0' && name[end - 1] <= '9') {
		size_t d = end;

		while (d > 0 && name[d - 1] >= '0' && name[d - 1] <= '9')
			d--;
		if (d > 0 && name[d - 1] == '.')
			end = d - 1;
	}
	/* "-YYYYmmddTHHMMSSZ": 17 bytes */
	if (end < 17 + u)
		return false;
	{
		const char *s = name + end - 17;

		if (s[0] != '-' || !all_digits(s + 1, 8) || s[9] != 'T' ||
		    !all_digits(s + 10, 6) || s[16] != 'Z')
			return false;
	}
	end -= 17;
	/* "-<pid>" */
	dash = end;
	while (dash > u && name[dash - 1] >= '0' && name[dash - 1] <= '9')
		dash--;
	if (dash == end || dash <= u || name[dash - 1] != '-')
		return false;
	/* a non-empty comm between "<uid>-" and "-<pid>" */
	return dash - 1 > u;
}

/*
 * Hand a written archive to the box file's owner: read-only for it
 * (0400), owned by it (fchown needs CAP_CHOWN for another uid: the unit
 * grants it).  An archive that cannot keep its owner's identity is not
 * kept at all (the caller removes it and keeps the box): owned by root, a
 * copy of another uid's box would be refused by every reader, or worse,
 * vouched for by root.  Returns 0 or -errno with @err set.
 */
static int give_to_owner(int fd, uid_t uid, gid_t gid, char *err, size_t errlen)
{
	struct stat st;

	if (fchmod(fd, 0400) < 0 || fstat(fd, &st) < 0)
		goto fail;
	if (st.st_uid == uid && st.st_gid == gid)
		return 0;
	if (fchown(fd, uid, gid) == 0)
		return 0;
	/* not root: our own box, another group is not ours to give */
	if (st.st_uid == uid && fchown(fd, uid, (gid_t)-1) == 0)
		return 0;
fail:
	snprintf(err, errlen, "cannot give the archive to uid %lu: %s", (unsigned long)uid,
		 strerror(errno));
	return -errno;
}

#ifdef BB_HAVE_ZSTD
/*
 * The box @r reads, as one zstd frame to @fd: its bytes as bb_reader_save()
 * writes them (bb_reader_data: a live box read again, tails raised), the
 * content size in the frame header, a checksum at its end, a window of
 * 2 MiB (readers accept up to 8, reader_zstd.c).  Level 3, zstd's
 * default: BENCHMARKS.md "Reap" has its sizes and times.  0 or -errno.
 */
/* A compressor of @len bytes as every compressed box is written, or NULL. */
static ZSTD_CCtx *box_cctx(size_t len)
{
	ZSTD_CCtx *cc = ZSTD_createCCtx();

	if (cc) {
		ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, 3);
		ZSTD_CCtx_setParameter(cc, ZSTD_c_windowLog, 21);
		ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
		ZSTD_CCtx_setPledgedSrcSize(cc, len);
	}
	return cc;
}

int reap_zstd_box(const void *data, size_t len, void **out, size_t *outlen)
{
	size_t cap = ZSTD_compressBound(len), z;
	ZSTD_CCtx *cc = box_cctx(len);
	void *buf = ZSTD_isError(cap) ? NULL : malloc(cap);

	if (!cc || !buf) {
		ZSTD_freeCCtx(cc);
		free(buf);
		return -ENOMEM;
	}
	z = ZSTD_compress2(cc, buf, cap, data, len);
	ZSTD_freeCCtx(cc);
	if (ZSTD_isError(z)) {
		free(buf);
		return -EIO;
	}
	*out = buf;
	*outlen = z;
	return 0;
}

static int save_zstd(struct bb_reader *r, int fd)
{
	size_t len = 0, z;
	const uint8_t *data = bb_reader_data(r, &len);
	ZSTD_inBuffer in = { data, len, 0 };
	struct bbx_out out;
	ZSTD_CCtx *cc;
	int ret;

	if (!data)
		return -ESTALE;
	cc = box_cctx(len);
	if (!cc || bbx_out_open(&out, fd, false) < 0) {
		ZSTD_freeCCtx(cc);
		return -ENOMEM;
	}
	/* compressed straight into the tools' output buffers (out.h) */
	do {
		ZSTD_outBuffer o = { bbx_out_reserve(&out, BBX_OUT_BUFSZ), BBX_OUT_BUFSZ, 0 };

		z = ZSTD_compressStream2(cc, &o, &in, ZSTD_e_end);
		if (ZSTD_isError(z))
			break;
		bbx_out_commit(&out, o.pos);
	} while (z && !out.err);
	ret = bbx_out_close(&out);
	if (!ret && ZSTD_isError(z))
		ret = -EIO;
	ZSTD_freeCCtx(cc);
	return ret;
}
#else
static int save_zstd(struct bb_reader *r, int fd)
{
	(void)r; (void)fd;
	return -EOPNOTSUPP;
}

int reap_zstd_box(const void *data, size_t len, void **out, size_t *outlen)
{
	(void)data; (void)len; (void)out; (void)outlen;
	return -EOPNOTSUPP;
}
#endif

/*
 * reap_archive_box - write the archive copy of the box @r reads, whose
 * file is @st.  The name comes from the file owner's uid (trusted: nobody
 * creates a file owned by another uid) and the header's comm (sanitized),
 * pid (validated by the reader) and creation time @when_ns (plausible,
 * else the file's mtime: the caller's choice); the copy is handed to the
 * file owner (see above).  --dry-run: only the name it would get.
 * Returns 0 with @a filled, or -errno (@err says more).
 */
int reap_archive_box(struct reap_ctx *c, struct bb_reader *r, const struct stat *st,
		     int64_t when_ns, struct reap_copy *a, char *err, size_t errlen)
{
	const struct bb_box_info *info = bb_reader_info(r);
	/* readers decompress no box larger than BB_ZSTD_BOX_MAX: kept plain */
	bool zst = c->o.compress && info->box_size <= BB_ZSTD_BOX_MAX;
	int ret = -EEXIST, fd = -1;

	for (unsigned n = 0; n < 1000 && ret == -EEXIST; n++) {
		ret = archive_name((uint32_t)st->st_uid, info->comm, info->pid, when_ns, n,
				   zst, a->name, sizeof(a->name));
		if (ret)
			break;
		if (c->o.dry_run)
			break; /* the name it would get, if no other run races us */
		fd = openat(c->archfd, a->name,
			    O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		ret = fd < 0 ? -errno : 0;
	}
	if (ret) {
		snprintf(err, errlen, "cannot create archive %s: %s", a->name, strerror(-ret));
		return ret;
	}
	snprintf(a->path, sizeof(a->path), "%s/%s", c->o.archive, a->name);
	if (c->o.dry_run)
		return 0;

	ret = zst ? save_zstd(r, fd) : bb_reader_save(r, fd);
	if (ret < 0)
		snprintf(err, errlen, "%s: %s", zst ? "compressing" : "bb_reader_save",
			 ret == -ESTALE ? "the box changed size while being read" : strerror(-ret));
	else if (!c->volatile_dir && fsync(fd) < 0)
		ret = -errno, snprintf(err, errlen, "fsync: %s", strerror(errno));
	if (!ret)
		ret = give_to_owner(fd, st->st_uid, st->st_gid, err, errlen);
	if (close(fd) < 0 && !ret)
		ret = -errno, snprintf(err, errlen, "close: %s", strerror(errno));
	if (ret) {
		unlinkat(c->archfd, a->name, 0);
		return ret;
	}
	/*
	 * A box on disk (--dir on a persistent file system) may only go once
	 * its copy is durable: fsync the file (above) and the new name.  A
	 * box in tmpfs (/dev/shm) dies with the machine anyway, so ordering
	 * buys nothing there: one syncfs() at the end of the run instead of
	 * two fsyncs per box, each a wait for the disk (BENCHMARKS.md "Reap").
	 */
	if (!c->volatile_dir)
		fsync(c->archfd);
	c->archived++;
	return 0;
}

/*
 * Unlink @name in @dirfd only if it is still the inode we examined.
 * Returns 0, -ENOENT (already gone), -ESTALE (another file took the name:
 * left alone) or the errno of unlinkat.  The window that remains between
 * the fstatat() and the unlinkat() is argued in bb-reap.c (reap_one).
 */
int reap_unlink_same(int dirfd, const char *name, dev_t dev, ino_t ino)
{
	struct stat st;

	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -errno;
	if (st.st_dev != dev || st.st_ino != ino || !S_ISREG(st.st_mode))
		return -ESTALE;
	if (unlinkat(dirfd, name, 0) < 0)
		return -errno;
	return 0;
}

struct arch_entry {
	char    *name;
	uid_t    uid;      /* the file's owner: whose quota it counts against */
	int64_t  mtime_ns;
	uint64_t size;
	dev_t    dev;
	ino_t    ino;
};

/* By owner; then oldest first; equal times by name (the name carries the
 * creation time). */
static int arch_cmp(const void *a, const void *b)
{
	const struct arch_entry *x = a, *y = b;

	if (x->uid != y->uid)
		return x->uid < y->uid ? -1 : 1;
	if (x->mtime_ns != y->mtime_ns)
		return x->mtime_ns < y->mtime_ns ? -1 : 1;
	return strcmp(x->name, y->name);
}

/*
 * Prune the archives v[0..n) of one owner (oldest first) to the quotas,
 * less what @res reserves for this pass's copies of that owner (NULL:
 * none): at most --keep minus res->count archives and --max-archive-bytes
 * minus res->bytes bytes remain.
 */
static int prune_owner(struct reap_ctx *c, struct arch_entry *v, size_t n,
		       const struct reap_reserve *res)
{
	long keep = c->o.keep;
	uint64_t total = 0, max = c->o.max_bytes;
	bool for_copies = res && (res->count || res->bytes);
	int ret = 0;

	if (res && keep >= 0)
		keep = keep > res->count ? keep - res->count : 0;
	if (res && max)
		/* from here on 0 is no room left (not "no bound") */
		max = max > res->bytes ? max - res->bytes : 0;
	for (size_t i = 0; i < n; i++)
		total += v[i].size;
	for (size_t i = 0; i < n; i++) {
		size_t left = n - i;
		struct reap_event ev = {
			.dir = c->o.archive, .name = v[i].name, .size = v[i].size, .age_s = -1,
		};
		bool over_keep = keep >= 0 && left > (size_t)keep;
		bool over_bytes = c->o.max_bytes && (max ? total > max : total > 0);
		int r;

		if (!over_keep && !over_bytes)
			break;
		ev.reason = over_keep ? (for_copies ? "more than --keep archives of its owner "
					  "with this run's copies" :
					  "more than --keep archives of its owner") :
			    for_copies ? "its owner's archives over --max-archive-bytes with this "
					 "run's copies" :
			    "its owner's archives over --max-archive-bytes";
		total -= v[i].size;
		if (c->o.dry_run) {
			ev.decision = "would-prune";
			reap_emit(c, &ev, true);
			continue;
		}
		r = reap_unlink_same(c->archfd, v[i].name, v[i].dev, v[i].ino);
		if (r == 0 || r == -ENOENT) {
			ev.decision = "pruned";
			c->pruned++;
			reap_emit(c, &ev, true);
		} else {
			ev.decision = "error";
			ev.detail = strerror(-r);
			reap_emit(c, &ev, true);
			c->errors++;
			ret = r;
		}
	}
	return ret;
}

/* The reservation of @uid in @res (sorted by uid), or NULL. */
static const struct reap_reserve *reserved(const struct reap_reserve *res, size_t nres,
					   uid_t uid)
{
	size_t a = 0, b = nres;

	while (a < b) {
		size_t m = a + (b - a) / 2;

		if (res[m].uid == uid)
			return &res[m];
		if (res[m].uid < uid)
			a = m + 1;
		else
			b = m;
	}
	return NULL;
}

int reap_prune(struct reap_ctx *c, const struct reap_reserve *res, size_t nres)
{
	struct arch_entry *v = NULL;
	size_t n = 0, cap = 0, i;
	struct dirent *e;
	int fd, ret = 0;
	DIR *d;

	if (c->archfd < 0 || (c->o.keep < 0 && !c->o.max_bytes))
		return 0;
	fd = openat(c->archfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || !(d = fdopendir(fd))) {
		ret = -errno;
		if (fd >= 0)
			close(fd);
		reap_log("error: cannot list archive directory %s: %s", c->o.archive,
			 strerror(-ret));
		c->errors++;
		return ret;
	}
	while ((e = readdir(d))) {
		struct stat st;

		if (!reap_archive_name_ours(e->d_name))
			continue;
		if (fstatat(c->archfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode) || (!c->root && st.st_uid != geteuid()))
			continue;
		if (BB__GROW(&v, &cap, n + 1) < 0) {
			ret = -ENOMEM;
			break;
		}
		v[n].name = strdup(e->d_name);
		if (!v[n].name) {
			ret = -ENOMEM;
			break;
		}
		v[n].uid = st.st_uid;
		v[n].mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
		/* the size the owner's file claims, sparse or not: an owner
		 * who grows an archive of its own spends its own quota */
		v[n].size = (uint64_t)st.st_size;
		v[n].dev = st.st_dev;
		v[n].ino = st.st_ino;
		n++;
	}
	closedir(d);
	if (ret) {
		reap_log("error: listing archive directory %s: %s", c->o.archive, strerror(-ret));
		c->errors++;
		goto out;
	}
	if (n) /* qsort(NULL, 0, ...) is undefined */
		qsort(v, n, sizeof(*v), arch_cmp);
	/* each owner's archives on their own */
	for (i = 0; i < n;) {
		size_t j = i;
		int r;

		while (j < n && v[j].uid == v[i].uid)
			j++;
		r = prune_owner(c, v + i, j - i, reserved(res, nres, v[i].uid));
		if (r)
			ret = r;
		i = j;
	}
out:
	for (i = 0; i < n; i++)
		free(v[i].name);
	free(v);
	return ret;
}
