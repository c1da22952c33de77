/* SPDX-License-Identifier: MIT */
/*
 * out.c - the tools' output buffers: plain write(2), or io_uring.
 *
 * The io_uring path keeps BBX_OUT_NBUF buffers.  When one is full it is
 * queued as an IORING_OP_WRITE and formatting continues in the next free
 * buffer, so decoding overlaps the copy into the page cache (the kernel runs
 * a write that would block in its io-wq worker, on the other CPU).
 *
 * Ordering: for a regular file opened without O_APPEND every buffer carries
 * its own file offset, so several writes may be in flight and complete in
 * any order.  For anything else (pipe, tty, socket, O_APPEND) the offset is
 * the file position (-1) and only one write is in flight at a time, which
 * keeps the bytes in order and still overlaps one write with formatting.
 */
#include "out.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef BB_HAVE_URING
#include <liburing.h>
#endif

/*
 * Write all of @p at file offset @off (pwrite), or at the file position
 * when @off is -1 (write), retrying on EINTR and short writes.
 */
static int write_all(int fd, const char *p, size_t n, int64_t off)
{
	while (n) {
		ssize_t w = off < 0 ? write(fd, p, n) : pwrite(fd, p, n, (off_t)off);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (w == 0)
			return -EIO;
		p += w;
		n -= (size_t)w;
		if (off >= 0)
			off += w;
	}
	return 0;
}

#ifdef BB_HAVE_URING

struct bbx_slot {
	char    *data;
	size_t   len;   /* bytes to write */
	size_t   done;  /* bytes written so far */
	uint64_t off;   /* file offset of data[0] (positional mode) */
	bool     busy;  /* queued or in flight */
};

struct bbx_uring {
	struct io_uring ring;
	struct bbx_slot slot[BBX_OUT_NBUF];
	unsigned cur;        /* slot being filled */
	unsigned inflight;
	bool     positional; /* regular file without O_APPEND */
	bool     broken;     /* submission failed once: write synchronously */
	uint64_t off;        /* next file offset (positional) */
	uint64_t start_off;
};

static void uring_queue(struct bbx_out *o, unsigned i)
{
	struct bbx_uring *u = o->u;
	struct bbx_slot *s = &u->slot[i];
	struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);
	uint64_t off = u->positional ? s->off + s->done : (uint64_t)-1;
	int ret;

	if (sqe) {
		io_uring_prep_write(sqe, o->fd, s->data + s->done,
				    (unsigned)(s->len - s->done), off);
		io_uring_sqe_set_data64(sqe, i);
		ret = io_uring_submit(&u->ring);
		if (ret == 1) {
			u->inflight++;
			return;
		}
	}
	/*
	 * Could not queue (should not happen: the ring has room for every
	 * slot).  Never fail for io_uring's sake: write this buffer
	 * synchronously, and the rest too.  Only the non-positional mode
	 * depends on order, and there nothing else is in flight here.
	 */
	u->broken = true;
	ret = write_all(o->fd, s->data + s->done, s->len - s->done,
			u->positional ? (int64_t)off : -1);
	if (ret && !o->err)
		o->err = ret;
	s->busy = false;
}

/* Reap one completion, waiting for it.  Re-queues short writes. */
static void uring_reap_one(struct bbx_out *o)
{
	struct bbx_uring *u = o->u;
	struct io_uring_cqe *cqe;
	struct bbx_slot *s;
	unsigned i;
	int res, ret;

	do
		ret = io_uring_wait_cqe(&u->ring, &cqe);
	while (ret == -EINTR);
	if (ret < 0) {
		/* The ring itself failed: nothing more will complete. */
		if (!o->err)
			o->err = ret;
		for (i = 0; i < BBX_OUT_NBUF; i++)
			u->slot[i].busy = false;
		u->inflight = 0;
		u->broken = true;
		return;
	}
	i = (unsigned)io_uring_cqe_get_data64(cqe);
	res = cqe->res;
	io_uring_cqe_seen(&u->ring, cqe);
	if (i >= BBX_OUT_NBUF)
		return;
	s = &u->slot[i];
	u->inflight--;
	if (res == -EINTR || res == -EAGAIN) {
		uring_queue(o, i);
		return;
	}
	if (res <= 0) {
		if (!o->err)
			o->err = res ? res : -EIO;
		s->busy = false;
		return;
	}
	s->done += (size_t)res;
	if (s->done < s->len && !o->err)
		uring_queue(o, i); /* short write: the rest, at its offset */
	else
		s->busy = false;
}

static void uring_spill(struct bbx_out *o)
{
	struct bbx_uring *u = o->u;
	struct bbx_slot *s = &u->slot[u->cur];
	unsigned i, next;

	if (o->len && !o->err) {
		/* in-order mode: the previous write must be complete */
		while (!u->positional && u->inflight)
			uring_reap_one(o);
		s->len = o->len;
		s->done = 0;
		s->off = u->off;
		s->busy = true;
		u->off += o->len;
		o->bytes += o->len;
		uring_queue(o, u->cur);
	}
	o->len = 0;
	for (;;) {
		for (i = 1; i <= BBX_OUT_NBUF; i++) {
			next = (u->cur + i) % BBX_OUT_NBUF;
			if (!u->slot[next].busy) {
				u->cur = next;
				o->buf = u->slot[next].data;
				return;
			}
		}
		uring_reap_one(o);
	}
}

static void uring_drain(struct bbx_out *o)
{
	while (o->u->inflight)
		uring_reap_one(o);
}

static int uring_open(struct bbx_out *o)
{
	struct bbx_uring *u;
	struct stat st;
	char *mem;
	int fl, ret;
	unsigned i;

	u = calloc(1, sizeof(*u));
	mem = aligned_alloc(4096, (size_t)BBX_OUT_NBUF * BBX_OUT_BUFSZ);
	if (!u || !mem) {
		free(u);
		free(mem);
		return -ENOMEM;
	}
	ret = io_uring_queue_init(2 * BBX_OUT_NBUF, &u->ring, 0);
	if (ret < 0) {
		free(u);
		free(mem);
		return ret;
	}
	for (i = 0; i < BBX_OUT_NBUF; i++)
		u->slot[i].data = mem + (size_t)i * BBX_OUT_BUFSZ;
	fl = fcntl(o->fd, F_GETFL);
	if (fstat(o->fd, &st) == 0 && S_ISREG(st.st_mode) && fl >= 0 &&
	    !(fl & O_APPEND)) {
		off_t pos = lseek(o->fd, 0, SEEK_CUR);

		if (pos >= 0) {
			u->positional = true;
			u->off = u->start_off = (uint64_t)pos;
		}
	}
	o->u = u;
	o->buf = u->slot[0].data;
	return 0;
}

static void uring_close(struct bbx_out *o)
{
	struct bbx_uring *u = o->u;

	uring_drain(o);
	/* leave the file position where write(2) would have left it */
	if (u->positional)
		(void)lseek(o->fd, (off_t)u->off, SEEK_SET);
	io_uring_queue_exit(&u->ring);
	free(u->slot[0].data);
	free(u);
	o->u = NULL;
}

#endif /* BB_HAVE_URING */

int bbx_out_open(struct bbx_out *o, int fd, bool want_uring)
{
	memset(o, 0, sizeof(*o));
	o->fd = fd;
#ifdef BB_HAVE_URING
	if (want_uring && uring_open(o) == 0)
		return 0;
#else
	(void)want_uring;
#endif
	o->plain = malloc(BBX_OUT_BUFSZ);
	if (!o->plain)
		return -ENOMEM;
	o->buf = o->plain;
	return 0;
}

bool bbx_out_is_uring(const struct bbx_out *o)
{
	return o->u != NULL;
}

void bbx__out_spill(struct bbx_out *o)
{
#ifdef BB_HAVE_URING
	if (o->u && !o->u->broken) {
		uring_spill(o);
		return;
	}
	if (o->u)
		uring_drain(o); /* broken ring: finish what is in flight, in order */
#endif
	if (o->len && !o->err) {
		int64_t off = -1;
		int ret;

#ifdef BB_HAVE_URING
		if (o->u && o->u->positional) {
			off = (int64_t)o->u->off;
			o->u->off += o->len;
		}
#endif
		ret = write_all(o->fd, o->buf, o->len, off);
		if (ret)
			o->err = ret;
		o->bytes += o->len;
	}
	o->len = 0;
}

int bbx_out_flush(struct bbx_out *o)
{
	bbx__out_spill(o);
#ifdef BB_HAVE_URING
	if (o->u)
		uring_drain(o);
#endif
	return o->err;
}

int bbx_out_close(struct bbx_out *o)
{
	int ret = bbx_out_flush(o);

#ifdef BB_HAVE_URING
	if (o->u)
		uring_close(o);
#endif
	free(o->plain);
	o->plain = NULL;
	o->buf = NULL;
	return ret;
}
