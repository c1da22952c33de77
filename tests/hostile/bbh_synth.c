/* SPDX-License-Identifier: MIT */
/*
 * Description: a box made by hand (tests/helpers/synth.h), as an attacker
 * crafts one, for the hostile journal suite (tests/hostile/evidence.py):
 * it claims a pid, start time, uid and comm, holds a marker record, and
 * crashed with one frame in each of N modules that it names.
 *
 *   bbh_synth OUT [--pid P] [--start T] [--uid U] [--comm C] [--marker M]
 *             [--modules PATH N] [--build-id HEX] [--offset OFF]
 *
 * --modules PATH N: one module PATH when N is 1, else N modules
 * PATH/000 ... PATH/<N-1>, each with build id HEX (bytes); module i is
 * loaded at bias 16 i and spans 16 bytes from bias + OFF, where frame i
 * is: every frame lies in its own module, at the file's offset OFF, and
 * stays under 64 KiB (3 bytes of CBOR), so that 256 of them fit the 2 KiB
 * crash area.  OUT is created (O_EXCL, 0600) by whoever runs this: the
 * file owner is its uid.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../helpers/synth.h"

#define MODULES_MAX 256

static size_t unhex(const char *h, char *out, size_t max)
{
	size_t n = 0;

	for (; h[0] && h[1] && n < max; h += 2) {
		char b[3] = { h[0], h[1], 0 };

		out[n++] = (char)strtoul(b, NULL, 16);
	}
	out[n] = '\0';
	return n;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "pid", required_argument, NULL, 'p' },
		{ "start", required_argument, NULL, 's' },
		{ "uid", required_argument, NULL, 'u' },
		{ "comm", required_argument, NULL, 'c' },
		{ "marker", required_argument, NULL, 'm' },
		{ "modules", required_argument, NULL, 'M' },
		{ "build-id", required_argument, NULL, 'b' },
		{ "offset", required_argument, NULL, 'o' },
		{ NULL, 0, NULL, 0 },
	};
	static struct synth_mod mods[MODULES_MAX];
	static char paths[MODULES_MAX][4096];
	static uint64_t frames[MODULES_MAX];
	const char *marker = "synthetic", *modpath = NULL, *comm = NULL;
	char bid[65] = "";
	size_t bidlen = 0;
	long pid = -1, uid = -1, nmods = 0;
	unsigned long long start = 0, off = 0x1000;
	struct bb_header *h;
	struct synth s;
	size_t area;
	int ch, tid;

	while ((ch = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (ch) {
		case 'p': pid = strtol(optarg, NULL, 10); break;
		case 's': start = strtoull(optarg, NULL, 10); break;
		case 'u': uid = strtol(optarg, NULL, 10); break;
		case 'c': comm = optarg; break;
		case 'm': marker = optarg; break;
		case 'M':
			modpath = optarg;
			if (optind >= argc)
				return 2;
			nmods = strtol(argv[optind++], NULL, 10);
			break;
		case 'b': bidlen = unhex(optarg, bid, 64); break;
		case 'o': off = strtoull(optarg, NULL, 0); break;
		default: return 2;
		}
	}
	if (optind != argc - 1 || nmods < 0 || nmods > MODULES_MAX)
		return 2;
	synth_init(&s, 1, 4096);
	synth_use_crc(&s);
	h = synth_hdr(&s);
	if (pid > 0)
		h->pid = (int32_t)pid;
	if (start)
		h->starttime = start;
	if (uid >= 0)
		h->uid = (uint32_t)uid;
	if (comm)
		snprintf(h->comm, sizeof(h->comm), "%s", comm);
	synth_str(&s, 0, 10, marker);
	tid = h->pid;
	for (long i = 0; i < nmods; i++) {
		uint64_t bias = (uint64_t)i * 16;

		if (nmods == 1)
			snprintf(paths[i], sizeof(paths[i]), "%s", modpath);
		else
			snprintf(paths[i], sizeof(paths[i]), "%s/%03ld", modpath, i);
		frames[i] = bias + off;
		mods[i] = (struct synth_mod){ paths[i], bias, frames[i], frames[i] + 16, bid, bidlen };
	}
	if (nmods) {
		area = sizeof(struct bb_modules_hdr) + 16;
		for (long i = 0; i < nmods; i++)
			area += strlen(paths[i]) + bidlen + 48;
		synth_modules(&s, (area + 4095) & ~(size_t)4095, 2, mods, (size_t)nmods);
		synth_crash(&s, 20, SIGSEGV, 1, 0, tid, "main", frames, (size_t)nmods);
		h = synth_hdr(&s); /* synth_modules grew the buffer */
		h->phase = BB_PHASE_CRASHED;
		h->phase_signal = SIGSEGV;
	}
	{
		int fd = open(argv[optind], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);

		if (fd < 0 || write(fd, s.buf, s.len) != (ssize_t)s.len) {
			fprintf(stderr, "bbh_synth: %s: %s\n", argv[optind], strerror(errno));
			return 1;
		}
		close(fd);
	}
	synth_free(&s);
	return 0;
}
