/* SPDX-License-Identifier: MIT */
/*
 * modules.c - the module area (docs/FORMAT.md §11 "Module area"): every
 * loaded object's path, load bias, address range and GNU build id, so a
 * reader can turn the crash record's return addresses into module+offset
 * (and, with the binaries at hand, into function and file:line).
 *
 * Gathered when a box is created and by bb_refresh_modules() after
 * dlopen().  Not AS-safe: dl_iterate_phdr() takes the loader lock.
 */
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "writer.h"

_Static_assert(BB__MODULES_SIZE > sizeof(struct bb_modules_hdr) + 16, "module area size");

/* The CBOR array is built here first (its element count is known only at
 * the end), then copied into the box under the seqlock.  Serialised by
 * bb__mod_lock: refreshes are rare and never on a write path. */
#define BB__MOD_CAP (BB__MODULES_SIZE - sizeof(struct bb_modules_hdr))
static uint8_t bb__mod_buf[BB__MOD_CAP];
static pthread_mutex_t bb__mod_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t bb__mod_once = PTHREAD_ONCE_INIT;

/* The child of a fork() creates its own box at its first write, which
 * gathers the modules: the lock may have been held by another thread of
 * the parent at fork time, and no thread of the child will release it. */
static void bb__mod_atfork_child(void)
{
	pthread_mutex_init(&bb__mod_lock, NULL);
}

static void bb__mod_once_init(void)
{
	pthread_atfork(NULL, NULL, bb__mod_atfork_child);
}

struct bb__mod_walk {
	uint8_t *p, *end;
	uint32_t count;
	bool truncated;
	char exe[PATH_MAX];
};

/* The GNU build id from a PT_NOTE segment, or 0 bytes. */
static size_t bb__build_id(const struct dl_phdr_info *info, const ElfW(Phdr) *ph,
			   const uint8_t **id)
{
	const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
	size_t left = ph->p_memsz;

	/* Notes: namesz, descsz, type, then name and desc, each padded to 4
	 * (ELF64 too, in practice; the gABI's 8 applies to no note we read). */
	while (left >= sizeof(ElfW(Nhdr))) {
		const ElfW(Nhdr) *n = (const void *)p;
		size_t nsz = (n->n_namesz + 3u) & ~3u, dsz = (n->n_descsz + 3u) & ~3u;
		size_t total = sizeof(*n) + nsz + dsz;

		if (total > left)
			break;
		if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
		    !memcmp(p + sizeof(*n), "GNU", 4)) {
			*id = p + sizeof(*n) + nsz;
			return n->n_descsz;
		}
		p += total;
		left -= total;
	}
	return 0;
}

static int bb__mod_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct bb__mod_walk *w = arg;
	const char *path = info->dlpi_name;
	uint64_t start = UINT64_MAX, end = 0;
	const uint8_t *id = NULL;
	size_t idlen = 0, plen;
	uint8_t tmp[5 * 9 + 2 * 9];
	uint8_t *q = tmp;

	(void)size;
	for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD) {
			uint64_t a = info->dlpi_addr + ph->p_vaddr;

			if (a < start)
				start = a;
			if (a + ph->p_memsz > end)
				end = a + ph->p_memsz;
		} else if (ph->p_type == PT_NOTE && !idlen) {
			idlen = bb__build_id(info, ph, &id);
		}
	}
	if (start == UINT64_MAX)
		return 0;   /* nothing mapped: not a module we can attribute */
	/* The main program comes first and has an empty name. */
	if ((!path || !*path) && w->count == 0)
		path = w->exe;
	if (!path)
		path = "";
	plen = strlen(path);
	q = bb__cbor_put_head(4, 5, q);
	q = bb__cbor_put_head(3, plen, q);
	if ((size_t)(w->end - w->p) < (size_t)(q - tmp) + plen + 4 * 9 + 9 + idlen) {
		w->truncated = true;
		return 1;   /* stop: later modules do not fit either */
	}
	memcpy(w->p, tmp, (size_t)(q - tmp));
	w->p += q - tmp;
	memcpy(w->p, path, plen);
	w->p += plen;
	w->p = bb__cbor_put_head(0, info->dlpi_addr, w->p);
	w->p = bb__cbor_put_head(0, start, w->p);
	w->p = bb__cbor_put_head(0, end, w->p);
	w->p = bb__cbor_put_head(2, idlen, w->p);
	if (idlen) {
		memcpy(w->p, id, idlen);
		w->p += idlen;
	}
	w->count++;
	return 0;
}

struct bb__main_id {
	uint8_t *out;
	size_t   cap, len;
};

static int bb__main_id_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct bb__main_id *m = arg;
	const uint8_t *id = NULL;
	size_t n = 0;

	(void)size;
	for (ElfW(Half) i = 0; i < info->dlpi_phnum && !n; i++)
		if (info->dlpi_phdr[i].p_type == PT_NOTE)
			n = bb__build_id(info, &info->dlpi_phdr[i], &id);
	m->len = n < m->cap ? n : m->cap;
	if (m->len)
		memcpy(m->out, id, m->len);
	return 1; /* the main program comes first: done */
}

size_t bb__main_build_id(uint8_t *out, size_t cap)
{
	struct bb__main_id m = { out, cap, 0 };

	dl_iterate_phdr(bb__main_id_cb, &m);
	return m.len;
}

void bb__modules_gather(struct bb__box *box)
{
	struct bb_modules_hdr *mh = (struct bb_modules_hdr *)(void *)box->modules;
	uint8_t *out = box->modules + sizeof(*mh);
	struct bb__mod_walk *w;
	ssize_t n;
	uint32_t head, seq, len;

	/* The walk state holds a PATH_MAX buffer: off the stack, and static
	 * storage is already serialised by the lock. */
	static struct bb__mod_walk walk;

	pthread_once(&bb__mod_once, bb__mod_once_init);
	pthread_mutex_lock(&bb__mod_lock);
	w = &walk;
	memset(w, 0, sizeof(*w));
	/* Head room for the array head (at most 5 bytes for < 2^32 items). */
	w->p = bb__mod_buf;
	w->end = bb__mod_buf + BB__MOD_CAP - 5;
	n = readlink("/proc/self/exe", w->exe, sizeof(w->exe) - 1);
	w->exe[n > 0 ? n : 0] = '\0';
	dl_iterate_phdr(bb__mod_cb, w);
	head = bb__cbor_head(w->count);
	len = head + (uint32_t)(w->p - bb__mod_buf);

	/* Seqlock writer (FORMAT.md §11): odd, fence, data, even with
	 * release.  We are the only writer (the lock). */
	/* The odd seq, then a release fence before the data stores below.
	 * Pairs with the reader's acquire fence between its copy and its
	 * re-read of seq: a copy that saw new bytes sees the odd (or a
	 * newer) seq. */
	seq = bb__seqcount_write_begin(&mh->seq);
	bb__cbor_put_head(4, w->count, out);
	memcpy(out + head, bb__mod_buf, (size_t)(w->p - bb__mod_buf));
	mh->len = len;
	mh->ts = bb__now(&box->f);
	mh->count = w->count;
	mh->flags = w->truncated ? BB_MF_TRUNCATED : 0;
	/* Release: every byte above is visible to a reader whose acquire
	 * load sees this even seq. */
	bb__seqcount_write_end(&mh->seq, seq + 1u);
	pthread_mutex_unlock(&bb__mod_lock);
}

BB_EXPORT int bb_refresh_modules(void)
{
	/* Acquire pairs with the release store publishing the box. */
	struct bb__box *box = BB__LOAD_ACQUIRE(&bb__box);

	if (!box) {
		/* Disabled (0), no box (-ENODEV), or the child of a fork whose
		 * new box was just created (-EAGAIN): that gathered them. */
		int ret = bb__nobox();

		return ret == -EAGAIN ? 0 : ret;
	}
	bb__modules_gather(box);
	return 0;
}
