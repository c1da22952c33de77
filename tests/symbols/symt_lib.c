/* SPDX-License-Identifier: MIT */
/*
 * Description: the shared library of symt_prog's "lib" mode: an exported
 * entry point, then a static function that faults (check_symbols.py).
 */
int *volatile symt_lib_null;

__attribute__((noipa)) int symt_lib_other(int x)
{
	__asm__ __volatile__("" ::: "memory");
	return x - 1;
}

static __attribute__((noipa, no_sanitize("undefined"))) int symt_lib_hidden(int x)
{
	__asm__ __volatile__("" ::: "memory");
	*symt_lib_null = x; /* @CRASH_LIB */
	return x;
}

__attribute__((noipa)) int symt_lib_entry(int x)
{
	int r = symt_lib_hidden(x + symt_lib_other(x)); /* @CALL_LIB_HIDDEN */

	__asm__ __volatile__("" ::: "memory");
	return r;
}
