/* SPDX-License-Identifier: MIT */
/*
 * libblackbox/watchdog.c - heartbeats and snapshots (FORMAT.md §14):
 * bb_watchdog(), the out-of-line bb_heartbeat() (the inline one is
 * bb__heartbeat(), <blackbox/inline.h>) and bb_snapshot().  The dump a
 * watcher asks for with the crash stacks' signal is crash.c's
 * (bb__dump_request()).
 */
#include <errno.h>
#include <string.h>

#include "internal.h"
#include "writer.h"

/* Declared in <blackbox/inline.h> under its versioned name. */
BB_EXPORT __thread struct bb__beat bb__beat __attribute__((tls_model("initial-exec")));

/* The slot of this thread in @box, or NULL (no slot yet, or another box's). */
static struct bb_thread_slot *bb__my_slot(struct bb__box *box)
{
	const struct bb__tls *t = &bb__tls;

	if (t->f.gen != box->f.gen || t->slot == BB_SEG_NONE || t->slot >= box->nslots)
		return NULL;
	return &box->slots[t->slot];
}

BB_EXPORT int bb_watchdog(unsigned timeout_ms)
{
	struct bb__box *box;
	struct bb_thread_slot *s;
	uint32_t cur;
	int ret;

	if (timeout_ms > BB_WATCHDOG_MAX_MS)
		return -EINVAL;
	if ((ret = bb_thread_init()) < 0 && ret != -ENOMEM)
		return ret;
	/* Acquire pairs with the release store publishing the box. */
	box = BB__LOAD_ACQUIRE(&bb__box);
	if (!box)
		return bb__disabled() ? 0 : -ENODEV;
	if (!(s = bb__my_slot(box)))
		return -ENOSPC;
	if (!timeout_ms) {
		bb__beat.word = NULL;
		/* Relaxed: a watcher that still sees the old deadline may
		 * name the thread once more; nothing else depends on it. */
		BB__STORE_RELAXED(&s->watchdog_ms, 0u);
		return 0;
	}
	BB__STORE_RELAXED(&s->heartbeat, bb__now(&box->f));
	/* Release: a watcher that loads the deadline with acquire sees the
	 * first beat stored above (never the slot's previous thread's). */
	BB__STORE_RELEASE(&s->watchdog_ms, (uint32_t)timeout_ms);
	/* The header's: the smallest deadline of the box, by CAS (several
	 * threads declare at once).  Relaxed: a watcher rereads the slots. */
	cur = BB__LOAD_RELAXED(&box->hdr->watchdog_ms);
	while ((cur == 0 || timeout_ms < cur) &&
	       !__atomic_compare_exchange_n(&box->hdr->watchdog_ms, &cur, (uint32_t)timeout_ms,
					    false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
	bb__beat.gen = box->f.gen;
	bb__beat.word = &s->heartbeat;
	return 0;
}

/* The library's bb_heartbeat(): for targets without the inline path, and
 * for the inline path's every other case (returns what it says). */
BB_EXPORT int (bb_heartbeat)(void)
{
	/* Acquire pairs with the release store publishing the box. */
	struct bb__box *box = BB__LOAD_ACQUIRE(&bb__box);

	if (!box)
		return bb__disabled() ? 0 : -ENODEV;
	if (!bb__beat.word || bb__beat.gen != box->f.gen)
		return -ENOENT;
	/* Relaxed, as bb__heartbeat(). */
	BB__STORE_RELAXED(bb__beat.word, bb__now(&box->f));
	return 0;
}

/* A thread that ends withdraws its deadline: its slot may be the next
 * thread's (bb__thread_exit()). */
void bb__watchdog_thread_exit(struct bb__box *box)
{
	struct bb_thread_slot *s;

	if (!bb__beat.word)
		return;
	bb__beat.word = NULL;
	if (box && (s = bb__my_slot(box)))
		BB__STORE_RELAXED(&s->watchdog_ms, 0u);
}

BB_EXPORT int bb_snapshot(const char *reason)
{
	/* Acquire pairs with the release store publishing the box. */
	struct bb__box *box = BB__LOAD_ACQUIRE(&bb__box);
	struct bb_field f = { .key = "reason", .type = BB_TYPE_STR, .v.s = reason ? reason : "" };
	int ret;

	if (!box)
		return bb__disabled() ? 0 : -ENODEV;
	ret = (bb_write_event_important)("bb.snapshot", &f, 1);
	/* Relaxed: the count orders nothing; the watcher that sees it
	 * change copies the box afterwards, record included or overwritten
	 * by later ones (FORMAT.md §14). */
	__atomic_fetch_add(&box->hdr->snapshot_seq, 1u, __ATOMIC_RELAXED);
	return ret < 0 ? ret : 0;
}
