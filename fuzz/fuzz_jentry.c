/* SPDX-License-Identifier: MIT */
/*
 * fuzz_jentry.c - libFuzzer target: the fields of a journal entry as
 * bb-extract --journal shows an entry without its box
 * (extractor/journal-field.c), in text, JSON and CBOR, into /dev/null.
 * The input is an entry's fields, each "NAME=value" of any bytes,
 * separated by NUL bytes: what a host uploading to a collector controls.
 * Every escaped output path is bounded by construction (tools/common/msg.c,
 * out.h): a field longer than the 64 KiB output buffer must come out whole
 * and in bounds.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "emit.h"
#include "journal-field.h"
#include "out.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int null_fd = -1;

static void one_way(const uint8_t *data, size_t size, int how)
{
	struct bbx_out o;
	struct bbx_em em;
	const char *p = (const char *)data, *end = p + size;

	if (bbx_out_open(&o, null_fd, false))
		return;
	bbx_em_init(&em, &o, how == 2);
	if (how)
		bbx_em_map(&em);
	while (p < end) {
		const char *z = memchr(p, '\0', (size_t)(end - p));
		size_t n = (size_t)((z ? z : end) - p);

		bbx_j_show_field(p, n, &o, &em, how == 0);
		p += n + 1;
	}
	if (how) {
		bbx_em_end(&em);
		bbx_em_eol(&em);
	}
	bbx_out_close(&o);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (null_fd < 0)
		null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	for (int how = 0; how < 3; how++) /* text, JSON, CBOR */
		one_way(data, size, how);
	return 0;
}
