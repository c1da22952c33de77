/* SPDX-License-Identifier: MIT */
/*
 * crash_util.h - helpers of test_crash.c and test_state.c: the record CRC
 * computed independently of the library (bit by bit), and starting
 * tests/lib/child with its stdout on a pipe.
 */
#ifndef BB_TESTS_CRASH_UTIL_H
#define BB_TESTS_CRASH_UTIL_H

#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

/* CRC32C (reflected 0x82f63b78) continued over @n bytes, no final xor. */
static inline uint32_t tcrc32c(uint32_t c, const uint8_t *p, size_t n)
{
	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1u)));
	}
	return c;
}

/* Does the record (or slot, or crash area) of @len bytes at @rec carry the
 * FORMAT.md §11 checksum for the committed seq @seq in its last 4 bytes? */
static inline bool trecord_crc_ok(uint32_t seq, const uint8_t *rec, uint32_t len)
{
	uint8_t q[4] = { (uint8_t)seq, (uint8_t)(seq >> 8), (uint8_t)(seq >> 16), (uint8_t)(seq >> 24) };
	const uint8_t *t = rec + len - 4;
	uint32_t c = tcrc32c(0xffffffffu, q, 4);

	c = tcrc32c(c, rec + 4, len - 8) ^ 0xffffffffu;
	return c == ((uint32_t)t[0] | (uint32_t)t[1] << 8 | (uint32_t)t[2] << 16 | (uint32_t)t[3] << 24);
}

/* Fork and exec $BB_TEST_CHILD @mode @arg with BLACKBOX_CRASH_HANDLER set
 * to @handler (NULL: unset); returns its pid, its stdout in *@out_fd. */
static inline pid_t tspawn(const char *mode, const char *arg, const char *handler, int *out_fd)
{
	const char *exe = getenv("BB_TEST_CHILD");
	int p[2];
	pid_t pid;

	cr_assert_not_null(exe, "BB_TEST_CHILD not set");
	cr_assert_eq(pipe(p), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		if (handler)
			setenv("BLACKBOX_CRASH_HANDLER", handler, 1);
		else
			unsetenv("BLACKBOX_CRASH_HANDLER");
		dup2(p[1], 1);
		close(p[0]);
		execl(exe, exe, mode, arg, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	*out_fd = p[0];
	return pid;
}

#endif /* BB_TESTS_CRASH_UTIL_H */
