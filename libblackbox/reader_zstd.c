/* SPDX-License-Identifier: MIT */
/*
 * reader_zstd.c - reading a compressed box: an archive bb-reap wrote as
 * "<name>.box.zst" (bb-reap(8), --compress), one zstd frame whose content
 * is the box, byte for byte.  The reader decompresses it at open into the
 * private copy every reader works on (a snapshot: nothing is read again),
 * and from there on it is a box like any other.
 *
 * A compressed file is untrusted like any box, and its owner chose every
 * byte of it.  Nothing a reader does follows what the stream says beyond
 * the header: the header is decompressed first and validated field by
 * field; the copy is then at most its box_size (the memory any reader of
 * that box spends), a stream that would decompress to more is refused,
 * one that ends more than a page short of it too ("cut"), and so is a
 * file with more compressed bytes than a box of that size can need
 * (ZSTD_COMPRESSBOUND), so that the work is bounded by the header as well.
 * The decoder's window is capped (WINDOW_LOG_MAX): a frame that asks for
 * more is refused rather than allocated.
 *
 * A few kilobytes of zstd can claim gigabytes of zeros.  So a header that
 * claims more than BB_ZSTD_BOX_MAX is refused before anything is
 * allocated, and the body is decompressed through a bounce buffer of
 * BOUNCE bytes into the copy, whose untouched pages read as zeros: a
 * piece of the stream that is all zeros is never written there
 * (put_sparse()), so the memory a compressed box costs is its non-zero
 * content, whatever its header claims.
 *
 * libzstd is loaded with dlopen() the first time a compressed box is
 * opened: a process that writes boxes, or reads only plain ones, never
 * loads it.  Without it (or in a build without zstd.h) a compressed box is
 * refused with -EPROTONOSUPPORT and a message that says why.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "reader_int.h"
#include "text.h"

#define ZSTD_MAGIC_LE 0xFD2FB528u /* a zstd frame's first four bytes, little endian */

bool bb__rdr_is_zstd(int fd)
{
	uint8_t m[4];

	return pread(fd, m, sizeof(m), 0) == (ssize_t)sizeof(m) &&
	       ((uint32_t)m[0] | (uint32_t)m[1] << 8 | (uint32_t)m[2] << 16 |
		(uint32_t)m[3] << 24) == ZSTD_MAGIC_LE;
}

#ifndef BB_HAVE_ZSTD

int bb__rdr_open_zstd(int fd, const char *label, unsigned flags, struct bb_reader **out,
		      char *err, size_t errlen)
{
	(void)flags;
	*out = NULL;
	close(fd);
	return bb__rdr_say(err, errlen, -EPROTONOSUPPORT,
		   "%s: a zstd-compressed box, and this libblackbox was built without zstd",
		   label);
}

#else

#include <dlfcn.h>
#include <pthread.h>
#include <zstd.h>

#define WINDOW_LOG_MAX 23          /* 8 MiB: bb-reap's frames need 2 MiB at most */
#define CHUNK          (128u << 10) /* compressed bytes read at a time */
#define BOUNCE         (256u << 10) /* the body is decompressed this much at a time */
#define PIECE          4096u        /* put_sparse() skips all-zero pieces of this size */

/* The functions of libzstd.so.1 a reader needs. */
static struct {
	ZSTD_DCtx *(*create)(void);
	size_t (*free)(ZSTD_DCtx *);
	size_t (*set)(ZSTD_DCtx *, ZSTD_dParameter, int);
	size_t (*stream)(ZSTD_DCtx *, ZSTD_outBuffer *, ZSTD_inBuffer *);
	unsigned (*is_error)(size_t);
	const char *(*error_name)(size_t);
	char why[160];             /* "" when loaded */
} zs;
static pthread_once_t zs_once = PTHREAD_ONCE_INIT;

static void zs_load(void)
{
	void *h = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!h) {
		snprintf(zs.why, sizeof(zs.why), "%s", dlerror());
		return;
	}
	/* POSIX: a function pointer through a void * (dlsym's contract) */
	*(void **)&zs.create = dlsym(h, "ZSTD_createDCtx");
	*(void **)&zs.free = dlsym(h, "ZSTD_freeDCtx");
	*(void **)&zs.set = dlsym(h, "ZSTD_DCtx_setParameter");
	*(void **)&zs.stream = dlsym(h, "ZSTD_decompressStream");
	*(void **)&zs.is_error = dlsym(h, "ZSTD_isError");
	*(void **)&zs.error_name = dlsym(h, "ZSTD_getErrorName");
	if (!zs.create || !zs.free || !zs.set || !zs.stream || !zs.is_error || !zs.error_name)
		snprintf(zs.why, sizeof(zs.why), "libzstd.so.1 lacks the streaming API");
}

/* One decompression in progress: the file, how much of it was read. */
struct zin {
	int fd;
	uint64_t off, limit;   /* compressed bytes read / allowed */
	uint8_t *buf;
	uint8_t *bounce;       /* NULL: decompress straight into the output */
	ZSTD_inBuffer in;
	ZSTD_DCtx *dctx;
	bool done;             /* the frame is complete */
};

/*
 * @n bytes at @src into @dst, which is @pos bytes into a copy that reads
 * as zeros where nothing was written: the pieces of PIECE bytes (cut at
 * multiples of PIECE from the copy's start) that are all zeros are left
 * alone, so that their pages are never touched.
 */
static void put_sparse(uint8_t *dst, const uint8_t *src, size_t n, size_t pos)
{
	while (n) {
		size_t k = PIECE - pos % PIECE;

		if (k > n)
			k = n;
		if (src[0] || (k > 1 && memcmp(src, src + 1, k - 1)))
			memcpy(dst, src, k);
		dst += k;
		src += k;
		pos += k;
		n -= k;
	}
}

/*
 * Decompress into @o until it holds @want bytes or the frame ends (through
 * z->bounce, put_sparse(), when there is one).  0, or -EBADMSG / -errno
 * after saying why.
 */
static int fill(struct zin *z, ZSTD_outBuffer *o, size_t want, const char *label, char *err,
		size_t errlen)
{
	while (o->pos < want && !z->done) {
		size_t r, cap = o->size;

		if (z->in.pos == z->in.size) {
			ssize_t n;

			if (z->off >= z->limit)
				return bb__rdr_say(err, errlen, -EBADMSG,
					   "%s: more compressed bytes than a box of its size can "
					   "need (%" PRIu64 "): refused", label, z->limit);
			n = pread(z->fd, z->buf, CHUNK, (off_t)z->off);
			if (n < 0)
				return bb__rdr_say(err, errlen, -errno, "%s: %s", label,
					   strerror(errno));
			if (n == 0)
				return bb__rdr_say(err, errlen, -EBADMSG,
					   "%s: the compressed box ends before its frame does (cut)",
					   label);
			z->off += (uint64_t)n;
			z->in = (ZSTD_inBuffer){ z->buf, (size_t)n, 0 };
		}
		if (z->bounce) {
			ZSTD_outBuffer b = { z->bounce, want - o->pos < BOUNCE ? want - o->pos
						       : BOUNCE, 0 };

			r = zs.stream(z->dctx, &b, &z->in);
			put_sparse((uint8_t *)o->dst + o->pos, z->bounce, b.pos, o->pos);
			o->pos += b.pos;
		} else {
			o->size = want; /* never past what is asked */
			r = zs.stream(z->dctx, o, &z->in);
			o->size = cap;
		}
		if (zs.is_error(r))
			return bb__rdr_say(err, errlen, -EBADMSG, "%s: compressed box: %s", label,
				   zs.error_name(r));
		z->done = r == 0;
	}
	return 0;
}

/* Is there output beyond what fill() took (the frame not done yet)? */
static bool more_output(struct zin *z)
{
	uint8_t b;
	ZSTD_outBuffer o = { &b, 1, 0 };
	size_t r;

	if (z->done)
		return false;
	if (z->in.pos == z->in.size) {
		ssize_t n = z->off < z->limit ? pread(z->fd, z->buf, CHUNK, (off_t)z->off) : 0;

		if (n <= 0)
			return true; /* not done, and nothing to finish it with */
		z->off += (uint64_t)n;
		z->in = (ZSTD_inBuffer){ z->buf, (size_t)n, 0 };
	}
	r = zs.stream(z->dctx, &o, &z->in);
	return zs.is_error(r) || o.pos > 0 || r != 0;
}

/* Bytes after the frame (one frame is a compressed box, nothing else)? */
static bool trailing(const struct zin *z)
{
	uint8_t b;

	return z->in.pos < z->in.size || pread(z->fd, &b, 1, (off_t)z->off) == 1;
}

int bb__rdr_open_zstd(int fd, const char *label, unsigned flags, struct bb_reader **out,
		      char *err, size_t errlen)
{
	struct bb_reader tmp = { 0 }, *r = NULL;
	struct zin z = { .fd = fd };
	struct bb_header h;
	ZSTD_outBuffer o = { &h, sizeof(h), 0 };
	struct stat st;
	uint64_t box = 0, page;
	uint8_t *m = NULL;
	size_t want;
	int rc;

	*out = NULL;
	pthread_once(&zs_once, zs_load);
	if (zs.why[0]) {
		rc = bb__rdr_say(err, errlen, -EPROTONOSUPPORT,
			 "%s: a zstd-compressed box, and libzstd cannot be loaded: %s", label, zs.why);
		goto fail;
	}
	if (fstat(fd, &st) < 0) {
		rc = bb__rdr_say(err, errlen, -errno, "%s: fstat: %s", label, strerror(errno));
		goto fail;
	}
	z.buf = malloc(CHUNK);
	z.dctx = z.buf ? zs.create() : NULL;
	if (!z.dctx) {
		rc = bb__rdr_say(err, errlen, -ENOMEM, "%s: out of memory", label);
		goto fail;
	}
	zs.set(z.dctx, ZSTD_d_windowLogMax, WINDOW_LOG_MAX);
	/* the header first: until it is validated, no more than a header's
	 * worth of compressed input (plus a frame header) is read */
	z.limit = ZSTD_COMPRESSBOUND(sizeof(h)) + CHUNK;
	rc = fill(&z, &o, sizeof(h), label, err, errlen);
	if (!rc && o.pos < sizeof(h))
		rc = bb__rdr_say(err, errlen, -ENODATA,
			 "%s: decompresses to %zu bytes, shorter than a %u-byte header", label,
			 o.pos, BB_HEADER_SIZE);
	if (rc)
		goto fail;
	rc = bb__rdr_check_header(&tmp, &h, h.box_size, label, err, errlen);
	if (rc)
		goto fail;
	box = h.box_size;
	page = h.page_size;
	if (box > BB_ZSTD_BOX_MAX || box > SIZE_MAX / 2) {
		rc = bb__rdr_say(err, errlen, -EFBIG,
			 "%s: a compressed box whose header claims %" PRIu64 " bytes, more than "
			 "the %" PRIu64 " a compressed box may hold: refused, nothing decompressed",
			 label, box, (uint64_t)BB_ZSTD_BOX_MAX);
		goto fail;
	}
	z.limit = ZSTD_COMPRESSBOUND(box) + CHUNK;
	if ((uint64_t)st.st_size > z.limit) {
		rc = bb__rdr_say(err, errlen, -EBADMSG,
			 "%s: %lld compressed bytes, more than a %" PRIu64 "-byte box can need: "
			 "refused", label, (long long)st.st_size, box);
		goto fail;
	}
	/* the copy every reader makes: box_size bytes, as check_fd() allows */
	m = mmap(NULL, (size_t)box, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED) {
		m = NULL;
		rc = bb__rdr_say(err, errlen, -ENOMEM, "%s: out of memory", label);
		goto fail;
	}
	memcpy(m, &h, sizeof(h));
	o = (ZSTD_outBuffer){ m, (size_t)box, sizeof(h) };
	z.bounce = malloc(BOUNCE);
	if (!z.bounce) {
		rc = bb__rdr_say(err, errlen, -ENOMEM, "%s: out of memory", label);
		goto fail;
	}
	/* --list and scans: the header and ring table are all they read */
	want = (flags & BB__OPEN_TABLE_ONLY) ? (size_t)tmp.table_end : (size_t)box;
	rc = fill(&z, &o, want, label, err, errlen);
	if (rc)
		goto fail;
	if (!(flags & BB__OPEN_TABLE_ONLY)) {
		if (o.pos == box && more_output(&z)) {
			rc = bb__rdr_say(err, errlen, -EBADMSG,
				 "%s: decompresses to more than its header's box_size %" PRIu64
				 ": grown after it was written, refused", label, box);
			goto fail;
		}
		if (trailing(&z)) {
			rc = bb__rdr_say(err, errlen, -EBADMSG,
				 "%s: bytes after the compressed box: refused", label);
			goto fail;
		}
		if (o.pos + page < box) {
			rc = bb__rdr_say(err, errlen, -EBADMSG,
				 "%s: decompresses to %zu bytes, its header says %" PRIu64
				 " (box_size): cut after it was written, refused", label, o.pos, box);
			goto fail;
		}
		rc = bb__rdr_check_header(&tmp, &h, o.pos, label, err, errlen);
		if (rc)
			goto fail;
	} else if (o.pos < want) {
		rc = bb__rdr_say(err, errlen, -EBADMSG,
			 "%s: the compressed box ends inside its ring table", label);
		goto fail;
	}
	if (st.st_uid != h.uid && !(flags & BB_OPEN_ANY_OWNER)) {
		rc = bb__rdr_say(err, errlen, -EPERM,
			 "%s: file owner uid %u differs from the box's uid %" PRIu32
			 " (planted file? BB_OPEN_ANY_OWNER accepts it)", label,
			 (unsigned)st.st_uid, h.uid);
		goto fail;
	}
	r = bb__rdr_new(&tmp);
	if (!r) {
		rc = bb__rdr_say(err, errlen, -ENOMEM, "%s: out of memory", label);
		goto fail;
	}
	if (!(flags & BB__OPEN_TABLE_ONLY) && o.pos < box) {
		/* cut by less than a page: the copy is what the stream held */
		size_t sys = (size_t)sysconf(_SC_PAGESIZE), keep = (o.pos + sys - 1) / sys * sys;

		if (keep < box)
			munmap(m + keep, (size_t)box - keep);
		box = o.pos;
	}
	r->base = m;
	r->len = (size_t)box;
	r->anon = true;
	m = NULL;
	bb__strlcpy(r->info.path, label, sizeof(r->info.path));
	r->info.file_size = (flags & BB__OPEN_TABLE_ONLY) ? box : o.pos;
	r->info.file_mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000u +
				(uint64_t)st.st_mtim.tv_nsec;
	r->info.file_ino = st.st_ino;
	r->info.file_dev = st.st_dev;
	r->info.file_uid = st.st_uid;
	rc = bb__rdr_setup(r, label, err, errlen);
	if (rc)
		goto fail;
	zs.free(z.dctx);
	free(z.buf);
	free(z.bounce);
	close(fd);
	*out = r;
	return 0;
fail:
	bb_reader_close(r);
	if (m)
		munmap(m, (size_t)box);
	if (z.dctx)
		zs.free(z.dctx);
	free(z.buf);
	free(z.bounce);
	close(fd);
	return rc;
}

#endif /* BB_HAVE_ZSTD */
