/* SPDX-License-Identifier: MIT */
/*
 * prefetch.c - parallel box reads for bb-extract --all (see prefetch.h).
 *
 * A window of @depth boxes is in flight; each has one read outstanding at
 * a time (a box is read in chunks of up to BBX_PF_CHUNK; a short read is
 * continued).  Files are opened O_NOFOLLOW and must be regular: whatever
 * is read here is only a candidate snapshot, which the caller accepts only
 * if it is the same file (device, inode) its reader validated.
 */
#include "prefetch.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef BB_HAVE_URING
#include <liburing.h>

#define BBX_PF_CHUNK (16u << 20)
#define BBX_PF_MAXLEN ((size_t)1 << 36) /* larger than any box */

struct slot {
	int      fd;
	int      err;      /* negative errno once failed */
	bool     busy;     /* a read is outstanding */
	uint8_t *buf;
	size_t   len, done;
	uint64_t dev, ino;
};

struct bbx_pf {
	struct io_uring ring;
	int dfd;
	char *const *names;
	size_t n, next;    /* next box to start */
	unsigned depth;
	struct slot *s;    /* one per box */
};

static void finish(struct slot *s, int err)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
	s->err = err;
	if (err) {
		free(s->buf);
		s->buf = NULL;
	}
}

/* Queue the next chunk of box @i; false if nothing was queued. */
static bool queue(struct bbx_pf *pf, size_t i)
{
	struct slot *s = &pf->s[i];
	struct io_uring_sqe *sqe;
	size_t k = s->len - s->done;

	if (k > BBX_PF_CHUNK)
		k = BBX_PF_CHUNK;
	sqe = io_uring_get_sqe(&pf->ring);
	if (!sqe) {
		io_uring_submit(&pf->ring);
		sqe = io_uring_get_sqe(&pf->ring);
	}
	if (!sqe) {
		finish(s, -EAGAIN);
		return false;
	}
	io_uring_prep_read(sqe, s->fd, s->buf + s->done, (unsigned)k, s->done);
	io_uring_sqe_set_data64(sqe, i);
	s->busy = true;
	return true;
}

/* Open box @i and queue its first read. */
static void start(struct bbx_pf *pf, size_t i)
{
	struct slot *s = &pf->s[i];
	struct stat st;

	s->fd = openat(pf->dfd, pf->names[i], O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
	if (s->fd < 0) {
		finish(s, -errno);
		return;
	}
	if (fstat(s->fd, &st) < 0) {
		finish(s, -errno);
		return;
	}
	if (!S_ISREG(st.st_mode) || st.st_size <= 0 || (uint64_t)st.st_size > BBX_PF_MAXLEN) {
		finish(s, -EINVAL);
		return;
	}
	s->len = (size_t)st.st_size;
	s->dev = st.st_dev;
	s->ino = st.st_ino;
	if (!(s->buf = malloc(s->len))) {
		finish(s, -ENOMEM);
		return;
	}
	if (queue(pf, i))
		io_uring_submit(&pf->ring);
}

/* Keep @depth boxes in flight from @from on. */
static void fill(struct bbx_pf *pf, size_t from)
{
	while (pf->next < pf->n && pf->next < from + pf->depth)
		start(pf, pf->next++);
}

/* Reap one completion (waiting for it). */
static int reap(struct bbx_pf *pf)
{
	struct io_uring_cqe *cqe;
	struct slot *s;
	size_t i;
	int ret;

	do
		ret = io_uring_wait_cqe(&pf->ring, &cqe);
	while (ret == -EINTR);
	if (ret < 0)
		return ret;
	i = (size_t)io_uring_cqe_get_data64(cqe);
	ret = cqe->res;
	io_uring_cqe_seen(&pf->ring, cqe);
	if (i >= pf->n)
		return 0;
	s = &pf->s[i];
	s->busy = false;
	if (ret == -EINTR || ret == -EAGAIN)
		ret = 0; /* again from where it was */
	else if (ret < 0)
		return finish(s, ret), 0;
	else if (ret == 0)
		return finish(s, -ENODATA), 0; /* shrank under us */
	s->done += (size_t)ret;
	if (s->done == s->len)
		finish(s, 0);
	else if (queue(pf, i))
		io_uring_submit(&pf->ring);
	return 0;
}

struct bbx_pf *bbx_pf_init(int dfd, char *const *names, size_t n, unsigned depth)
{
	struct bbx_pf *pf = calloc(1, sizeof(*pf));

	if (!pf || !n || !depth)
		return free(pf), NULL;
	pf->s = calloc(n, sizeof(*pf->s));
	if (!pf->s || io_uring_queue_init(2 * depth, &pf->ring, 0) < 0) {
		free(pf->s);
		free(pf);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		pf->s[i].fd = -1;
	pf->dfd = dfd;
	pf->names = names;
	pf->n = n;
	pf->depth = depth;
	fill(pf, 0);
	return pf;
}

int bbx_pf_take(struct bbx_pf *pf, size_t i, void **buf, size_t *len,
		uint64_t *dev, uint64_t *ino)
{
	struct slot *s;

	if (i >= pf->n)
		return -EINVAL;
	fill(pf, i);
	s = &pf->s[i];
	if (i >= pf->next)
		return -EINVAL; /* taken out of order */
	while (s->fd >= 0 && s->busy)
		if (reap(pf) < 0) {
			if (!s->busy)
				break;
			return -EIO; /* ring broken: the caller reads plainly */
		}
	if (s->fd >= 0) /* not busy yet not finished: queueing failed */
		finish(s, -EAGAIN);
	fill(pf, i + 1);
	if (s->err || !s->buf)
		return s->err ? s->err : -ENODATA;
	*buf = s->buf;
	*len = s->len;
	*dev = s->dev;
	*ino = s->ino;
	s->buf = NULL;
	return 0;
}

void bbx_pf_free(struct bbx_pf *pf)
{
	if (!pf)
		return;
	/* drain what is in flight before its buffers go */
	for (size_t i = 0; i < pf->n; i++)
		while (pf->s[i].fd >= 0 && pf->s[i].busy)
			if (reap(pf) < 0)
				break;
	io_uring_queue_exit(&pf->ring);
	for (size_t i = 0; i < pf->n; i++) {
		if (pf->s[i].fd >= 0)
			close(pf->s[i].fd);
		free(pf->s[i].buf);
	}
	free(pf->s);
	free(pf);
}

#else /* !BB_HAVE_URING */

struct bbx_pf *bbx_pf_init(int dfd, char *const *names, size_t n, unsigned depth)
{
	(void)dfd, (void)names, (void)n, (void)depth;
	return NULL;
}

int bbx_pf_take(struct bbx_pf *pf, size_t i, void **buf, size_t *len,
		uint64_t *dev, uint64_t *ino)
{
	(void)pf, (void)i, (void)buf, (void)len, (void)dev, (void)ino;
	return -ENOSYS;
}

void bbx_pf_free(struct bbx_pf *pf)
{
	(void)pf;
}

#endif
