/* SPDX-License-Identifier: MIT */
/*
 * reader.c - open a box from outside its owner, close it, and hand out
 * its bytes (include/blackbox/reader.h, docs/DESIGN.md §4 and §6).  The rest of
 * the reader is in the files reader_int.h lists.
 *
 * Trust model: every byte of the box is untrusted.  The header is copied
 * once and validated field by field; the geometry the walk relies on (ring
 * count, sizes, table and data offsets) is taken from that validated copy
 * and cached, never re-read from a live mapping that could change under
 * us.  Only head, tail, seq words, descriptor names/tids and the record
 * bytes are read live, and every use of them is masked into the ring or
 * bounds-checked.  Every loop is bounded by the ring size or the file size.
 *
 * One read mechanism: the reader never maps a box.  A box is a file that
 * its owner (any local user, for a box in /dev/shm) can truncate at any
 * moment, and a mapping of a truncated file raises SIGBUS on access,
 * killing the reader.  Every byte is read with pread(2) into private
 * memory of min(box_size, file size) bytes, so a truncation is a short
 * read and a clean error (-ESTALE, "changed size while being read"), and
 * no reader's memory or work follows a file's apparent size.  A snapshot
 * (BB_OPEN_SNAPSHOT, and every memory copy) is read once at open and never
 * changes; a live reader reads the header and ring table at open and
 * again, with the part of each ring it needs, at every walk, crash, state,
 * module, save or data call.  The seqlock protocols of FORMAT.md §8 and
 * §11 then run on pread copies: a system call is a full barrier, and the
 * copies are fenced besides (see bb__rdr_load() and copy_seqlocked()).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "reader_int.h"
#include "text.h"

__attribute__((format(printf, 4, 5)))
int bb__rdr_say(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

/* A reader with the geometry and info validated into @tmp. */
struct bb_reader *bb__rdr_new(const struct bb_reader *tmp)
{
	struct bb_reader *r = malloc(sizeof(*r));

	if (!r)
		return NULL;
	*r = *tmp;
	r->fd = -1;
	r->cap_streams = r->table_rings ? r->table_rings : 1;
	r->streams = calloc(r->cap_streams, sizeof(*r->streams));
	r->rec = malloc(r->info.max_record);
	r->slot = r->slot_size ? malloc(r->slot_size) : NULL;
	if (!r->streams || !r->rec || (r->slot_size && !r->slot)) {
		free(r->streams);
		free(r->rec);
		free(r->slot);
		free(r);
		return NULL;
	}
	return r;
}

BB_EXPORT void bb_reader_close(struct bb_reader *r)
{
	if (!r)
		return;
	if (r->fd >= 0)
		close(r->fd);
	if (r->anon)
		munmap(r->base, r->len);
	else
		free(r->base);
	free(r->streams);
	free(r->rec);
	free(r->segs);
	free(r->logs);
	if (r->ents)
		munmap(r->ents, r->cents * sizeof(*r->ents));
	free(r->vals);
	free(r->gaps);
	free(r->names);
	free(r->shown);
	free(r->slot);
	free(r->modbuf);
	free(r->mods);
	free(r->modstr);
	free(r);
}

/* check_fd(): the file is a compressed box, bb__rdr_open_zstd() reads it */
#define CHECK_ZSTD 1

/*
 * check_fd - everything short of reading the box: a regular file, long
 * enough, a valid header (copied to @h), owned by the header's uid, as
 * long as its header says (to within a page).  Fills @tmp (zeroed by the
 * caller) with the validated geometry and info, file identity included.
 */
static int check_fd(int fd, const char *label, unsigned flags, struct bb_reader *tmp,
		    struct bb_header *h, char *err, size_t errlen)
{
	struct bb_box_info *in = &tmp->info;
	uint64_t size, gap;
	struct stat st;
	int rc;

	if (fstat(fd, &st))
		return bb__rdr_say(err, errlen, -errno, "%s: fstat: %s", label, strerror(errno));
	if (S_ISDIR(st.st_mode))
		return bb__rdr_say(err, errlen, -EISDIR, "%s: is a directory, not a box", label);
	if (!S_ISREG(st.st_mode))
		return bb__rdr_say(err, errlen, -EINVAL,
			   "%s: not a regular file (FIFOs, sockets and devices are never read)",
			   label);
	if (bb__rdr_is_zstd(fd)) {
		if (flags & BB_OPEN_PLAIN)
			return bb__rdr_say(err, errlen, -EMEDIUMTYPE,
				   "%s: a compressed file where only boxes processes map belong: "
				   "never decompressed here", label);
		return CHECK_ZSTD; /* a compressed box: reader_zstd.c */
	}
	if (st.st_size == 0)
		return bb__rdr_say(err, errlen, -ENODATA, "%s: empty file (a box still being created?)",
			   label);
	if (st.st_size < (off_t)BB_HEADER_SIZE)
		return bb__rdr_say(err, errlen, -ENODATA, "%s: %lld bytes, shorter than a %u-byte header",
			   label, (long long)st.st_size, BB_HEADER_SIZE);
	if ((uint64_t)st.st_size > SIZE_MAX)
		return bb__rdr_say(err, errlen, -EFBIG, "%s: too large to read", label);
	size = (uint64_t)st.st_size;
	rc = bb__rdr_pread_all(fd, h, sizeof(*h), 0);
	if (rc == -ESTALE)
		return bb__rdr_say(err, errlen, rc, "%s: box changed size while being read", label);
	if (rc)
		return bb__rdr_say(err, errlen, rc, "%s: cannot read the header: %s", label, strerror(-rc));
	rc = bb__rdr_check_header(tmp, h, size, label, err, errlen);
	if (rc)
		return rc;
	/* A box file is exactly box_size bytes (posix_fallocate at creation,
	 * bb_reader_save for copies).  One that is not was grown or cut
	 * since: refused, so that nothing is read past what the header
	 * describes, whatever size (sparse or not) the file claims. */
	gap = size > h->box_size ? size - h->box_size : h->box_size - size;
	if (gap > h->page_size)
		return bb__rdr_say(err, errlen, -EBADMSG,
			   "%s: the file has %" PRIu64 " bytes, its header says %" PRIu64
			   " (box_size): grown or cut after it was written, refused", label,
			   size, h->box_size);
	if (st.st_uid != h->uid && !(flags & BB_OPEN_ANY_OWNER))
		return bb__rdr_say(err, errlen, -EPERM,
			   "%s: file owner uid %u differs from the box's uid %" PRIu32
			   " (planted file? BB_OPEN_ANY_OWNER accepts it)", label,
			   (unsigned)st.st_uid, h->uid);
	bb__strlcpy(in->path, label, sizeof(in->path));
	in->file_size = size;
	in->file_mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000u +
			    (uint64_t)st.st_mtim.tv_nsec;
	in->file_ino = st.st_ino;
	in->file_dev = st.st_dev;
	in->file_uid = st.st_uid;
	return 0;
}

/*
 * Open an fd we own (it is kept by a live reader, closed otherwise).  The
 * header validated by check_fd() is the copy the reader keeps: identity
 * and geometry never come from a later read of a file its owner may be
 * rewriting.  Then the ring table (and with BB_OPEN_SNAPSHOT the rest).
 */
int bb__rdr_open_owned_fd(int fd, const char *label, unsigned flags,
			 struct bb_reader **out, char *err, size_t errlen)
{
	struct bb_reader tmp = { 0 }, *r = NULL;
	struct bb_header h;
	void *m;
	int rc;

	*out = NULL;
	rc = check_fd(fd, label, flags, &tmp, &h, err, errlen);
	if (rc == CHECK_ZSTD)
		return bb__rdr_open_zstd(fd, label, flags, out, err, errlen);
	if (rc)
		goto fail;
	r = bb__rdr_new(&tmp);
	if (!r) {
		rc = bb__rdr_say(err, errlen, -ENOMEM, "%s: out of memory", label);
		goto fail;
	}
	/*
	 * Private anonymous memory rather than malloc(): a box is tens or
	 * hundreds of MiB, and with 4 KiB pages a copy spends more time
	 * taking (and zeroing) one page fault per page than copying.
	 * Transparent huge pages take one fault per 2 MiB; madvise() failing
	 * (THP disabled, old kernel) only costs that speed.  MAP_NORESERVE:
	 * a live reader touches only the pages it reads.
	 */
	r->len = (size_t)r->limit;
	m = mmap(NULL, r->len, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (m == MAP_FAILED) {
		rc = bb__rdr_say(err, errlen, -ENOMEM, "%s: out of memory", label);
		goto fail;
	}
#ifdef MADV_HUGEPAGE
	(void)madvise(m, r->len, MADV_HUGEPAGE);
#endif
	r->base = m;
	r->anon = true;
	r->fd = fd;
	fd = -1;
	memcpy(r->base, &h, sizeof(h));
	rc = bb__rdr_fetch(r, BB_HEADER_SIZE, r->table_end - BB_HEADER_SIZE);
	if (!rc && (flags & BB_OPEN_SNAPSHOT))
		rc = bb__rdr_load(r, LOAD_SNAPSHOT, false);
	if (rc) {
		rc = bb__rdr_load_failed(err, errlen, label, rc);
		goto fail;
	}
	if (flags & BB_OPEN_SNAPSHOT) { /* read once: nothing is re-read */
		close(r->fd);
		r->fd = -1;
	}
	rc = bb__rdr_setup(r, label, err, errlen);
	if (rc)
		goto fail;
	*out = r;
	return 0;
fail:
	bb_reader_close(r);
	if (fd >= 0)
		close(fd);
	return rc;
}

/* openat() as FORMAT §9.1 says, with a precise message.  fd or -errno. */
int bb__rdr_open_nofollow(int dirfd, const char *name, const char *label, char *err,
			 size_t errlen)
{
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	int e = errno;

	if (fd >= 0)
		return fd;
	if (e == ELOOP)
		return bb__rdr_say(err, errlen, -ELOOP, "%s: is a symbolic link (never followed)", label);
	if (e == ENOENT)
		return bb__rdr_say(err, errlen, -ENOENT, "%s: no such file", label);
	if (e == EACCES)
		return bb__rdr_say(err, errlen, -EACCES, "%s: permission denied", label);
	return bb__rdr_say(err, errlen, -e, "%s: %s", label, strerror(e));
}

int bb__rdr_open_at(int dirfd, const char *name, const char *label, unsigned flags,
		   struct bb_reader **out, char *err, size_t errlen)
{
	int fd;

	*out = NULL;
	fd = bb__rdr_open_nofollow(dirfd, name, label, err, errlen);
	if (fd < 0)
		return fd;
	return bb__rdr_open_owned_fd(fd, label, flags, out, err, errlen);
}

BB_EXPORT int bb_reader_open_path(const char *path, unsigned flags,
				  struct bb_reader **out, char *err, size_t errlen)
{
	if (!path || !out)
		return bb__rdr_say(err, errlen, -EINVAL, "no path");
	return bb__rdr_open_at(AT_FDCWD, path, path, flags, out, err, errlen);
}

BB_EXPORT int bb_reader_openat(int dirfd, const char *name, unsigned flags,
			       struct bb_reader **out, char *err, size_t errlen)
{
	if (!name || !out)
		return bb__rdr_say(err, errlen, -EINVAL, "no name");
	return bb__rdr_open_at(dirfd, name, name, flags, out, err, errlen);
}

BB_EXPORT int bb_reader_open_fd(int fd, const char *label, unsigned flags,
				struct bb_reader **out, char *err, size_t errlen)
{
	int dup_fd;

	if (!label)
		label = "<fd>";
	if (!out)
		return bb__rdr_say(err, errlen, -EINVAL, "%s: no reader pointer", label);
	*out = NULL;
	dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (dup_fd < 0)
		return bb__rdr_say(err, errlen, -errno, "%s: %s", label, strerror(errno));
	return bb__rdr_open_owned_fd(dup_fd, label, flags, out, err, errlen);
}

BB_EXPORT int bb_reader_open_mem(const void *buf, size_t len, unsigned flags,
				 struct bb_reader **out, char *err, size_t errlen)
{
	static const char label[] = "<memory>";
	struct bb_reader tmp = { 0 }, *r;
	struct bb_header h;
	int rc;

	if (!out)
		return bb__rdr_say(err, errlen, -EINVAL, "%s: no reader pointer", label);
	*out = NULL;
	if (!buf || len < BB_HEADER_SIZE)
		return bb__rdr_say(err, errlen, -ENODATA, "%s: %zu bytes, shorter than a %u-byte header",
			   label, buf ? len : 0, BB_HEADER_SIZE);
	memcpy(&h, buf, sizeof(h));
	rc = bb__rdr_check_header(&tmp, &h, len, label, err, errlen);
	if (rc)
		return rc;
	r = bb__rdr_new(&tmp);
	if (!r || !(r->base = malloc(len))) {
		bb_reader_close(r);
		return bb__rdr_say(err, errlen, -ENOMEM, "%s: out of memory", label);
	}
	memcpy(r->base, buf, len);
	r->len = len;
	bb__strlcpy(r->info.path, label, sizeof(r->info.path));
	r->info.file_size = len;
	rc = bb__rdr_setup(r, label, err, errlen);
	if (rc) {
		bb_reader_close(r);
		return rc;
	}
	*out = r;
	return 0;
}

BB_EXPORT const struct bb_box_info *bb_reader_info(const struct bb_reader *r)
{
	return &r->info;
}

BB_EXPORT const void *bb_reader_data(const struct bb_reader *r, size_t *len)
{
	if (len)
		*len = 0;
	/* A live reader reads every byte again (the reader is the caller's,
	 * only its copy changes: the cast is to keep the API's const). */
	if (r->fd >= 0 && bb__rdr_load((struct bb_reader *)(uintptr_t)r, LOAD_ALL, false))
		return NULL;
	if (len)
		*len = r->len;
	return r->base;
}

static int write_all(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

BB_EXPORT int bb_reader_save(struct bb_reader *r, int fd)
{
	int rc;

	if (!r)
		return -EINVAL;
	/* A live reader reads every byte again, each ring's tail raised past
	 * what the writer overwrote during the read (bb__rdr_load()); a snapshot or
	 * a memory copy never changes. */
	if (r->fd >= 0 && (rc = bb__rdr_load(r, LOAD_ALL, false)))
		return rc;
	return write_all(fd, r->base, r->len);
}
