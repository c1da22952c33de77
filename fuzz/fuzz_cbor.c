/* SPDX-License-Identifier: MIT */
/*
 * fuzz_cbor.c - libFuzzer target holding the project's CBOR decoder
 * (shared/cbor.h) and the text renderer built on it to libcbor: every
 * input is one value, decoded both ways (tests/helpers/cbor_diff.h); any
 * disagreement, crash or out-of-bounds read is a finding.  fuzz/run.sh
 * builds and runs it after fuzz_reader.
 */
#include "../tests/helpers/cbor_diff.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char why[512];
	bool ok;

	if (bbt_cbor_diff(data, size, &ok, why, sizeof(why))) {
		fprintf(stderr, "fuzz_cbor: %s\n", why);
		__builtin_trap();
	}
	return 0;
}
