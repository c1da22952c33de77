/* SPDX-License-Identifier: MIT */
/*
 * test_cbor.c - the project's CBOR decoder against libcbor (cbor_diff.h):
 * every input of 1 and 2 bytes, every initial byte followed by a sample
 * of two more, then generated values (tests/helpers/cbor_gen.h: every head
 * width, floats of every width, strings of valid and invalid UTF-8,
 * unassigned simple values, tags and indefinite lengths) and values
 * nested up to and past the limit, as written and corrupted (a byte
 * changed, flipped or removed, the end cut).  Plain C: runs
 * without Criterion.  Exit 0 when the two agree on every input.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../helpers/cbor_gen.h"
#include "../helpers/cbor_diff.h"

static unsigned long checked, accepted, failures;

static void check(const uint8_t *d, size_t n)
{
	char why[512];
	bool ok;

	if (bbt_cbor_diff(d, n, &ok, why, sizeof(why))) {
		if (failures++ < 20) {
			fprintf(stderr, "MISMATCH: %s; input", why);
			for (size_t i = 0; i < n && i < 48; i++)
				fprintf(stderr, " %02x", d[i]);
			fprintf(stderr, "%s\n", n > 48 ? " ..." : "");
		}
	}
	checked++;
	accepted += ok;
}

/* @k arrays of one, then a value: nesting up to and past the limit */
static void nested(struct buf *o, unsigned k)
{
	while (k--)
		put(o, 0x81);
	item(o, 0);
}

int main(void)
{
	uint8_t d[4];
	struct buf o;

	for (unsigned a = 0; a < 256; a++) {
		d[0] = (uint8_t)a;
		check(d, 1);
		for (unsigned b = 0; b < 256; b++) {
			d[1] = (uint8_t)b;
			check(d, 2);
		}
		for (unsigned k = 0; k < 2048; k++) {
			d[1] = (uint8_t)rnd();
			d[2] = (uint8_t)rnd();
			check(d, 3);
		}
	}
	for (int i = 0; i < 250000; i++) {
		static const unsigned tags[] = { BB_TAG_STR, BB_TAG_KV, BB_TAG_EVENT, BB_TAG_OWNER };

		o.n = 0;
		if (i % 4 == 3)
			nested(&o, pick(BB__CBOR_MAX_DEPTH + 3));
		else
			value(&o, tags[pick(4)]);
		check(o.b, o.n);
		{
			struct buf x = o;

			damage(&x);
			check(x.b, x.n);
		}
		for (int m = 0; m < 3 && o.n; m++) {
			struct buf x = o;
			size_t at = (size_t)(rnd() % x.n);

			switch (pick(4)) {
			case 0: x.b[at] = (uint8_t)rnd(); break;
			case 1: x.b[at] ^= (uint8_t)(1u << pick(8)); break;
			case 2: /* a byte removed */
				memmove(x.b + at, x.b + at + 1, x.n - at - 1);
				x.n--;
				break;
			default: x.n = at; break;
			}
			check(x.b, x.n);
		}
	}
	printf("test_cbor: %lu inputs, %lu accepted, %lu refused, %lu mismatches\n",
	       checked, accepted, checked - accepted, failures);
	/* the comparison must have seen both sides in numbers */
	if (accepted < 50000 || checked - accepted < 50000) {
		fprintf(stderr, "test_cbor: too few accepted or refused inputs\n");
		return 1;
	}
	return failures ? 1 : 0;
}
