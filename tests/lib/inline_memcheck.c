/* SPDX-License-Identifier: MIT */
/*
 * inline_memcheck.c - run under valgrind's memcheck by memcheck.sh: the
 * inline paths read strings known only at run time in aligned 16-byte
 * blocks (<blackbox/inline.h>, bb__strlen_upto()), past the terminator
 * but never past the block that holds it.  memcheck accepts such a read
 * (a naturally aligned load with some bytes addressable, --partial-loads-ok
 * is the default) and must find nothing to report when strings fill heap
 * blocks of exactly their size, at every alignment: the test fails on any
 * memcheck error.  Exits non-zero if a write fails.
 */
#include <blackbox.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
	int bad = 0;

	if (bb_init(0)) {
		fprintf(stderr, "bb_init failed\n");
		return 1;
	}
	bad |= bb_write_kv("first", "claims the ring");
	for (size_t len = 0; len <= 80; len++)
		for (size_t off = 0; off < 16; off++) {
			/* A block of off + len + 1 bytes: the string ends at
			 * the block's last byte, beyond it is a redzone. */
			char *blk = malloc(off + len + 1), *s = blk + off;
			struct bb_field f[2];

			if (!blk)
				return 1;
			memset(blk, 'a' + (int)(off % 26), off + len);
			s[len] = '\0';
			f[0].key = s;
			f[0].type = BB_TYPE_STR;
			f[0].v.s = s;
			f[1].key = "n";
			f[1].type = BB_TYPE_I64;
			f[1].v.i64 = (int64_t)len;
			bad |= bb_write_kv(s, "v");
			bad |= bb_write_kv("k", s);
			bad |= bb_write_kv_i64(s, (int64_t)off);
			bad |= bb_write_event(s, f, 2);
			free(blk);
		}
	bad |= bb_close();
	return bad ? 1 : 0;
}
