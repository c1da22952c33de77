/* SPDX-License-Identifier: MIT */
/*
 * Description: driver of scan_complexity.sh.  `scan_icount DIR N` fills
 * the empty directory DIR with N small boxes (tests/helpers/synth.h), each
 * claiming its own pid of a gone process, then calls measured_scan()
 * (bb_reader_scan of DIR, the work of `bb-extract --list`) and
 * measured_pid() (bb_reader_open_pid of one of the pids, the work of
 * `bb-extract PID`), which callgrind counts (--toggle-collect).
 */
#include <stdio.h>
#include <stdlib.h>

#include <blackbox/reader.h>

#include "../helpers/synth.h"

#define FIRST_PID 5000000 /* above any pid_max: no such process */

__attribute__((noinline)) int measured_scan(const char *dir);
__attribute__((noinline)) int measured_pid(const char *dir, pid_t pid);

__attribute__((noinline)) int measured_scan(const char *dir)
{
	struct bb_box_entry *v;
	size_t n;
	int r = bb_reader_scan(dir, &v, &n, NULL, 0);

	if (!r)
		bb_reader_scan_free(v);
	return r;
}

__attribute__((noinline)) int measured_pid(const char *dir, pid_t pid)
{
	struct bb_reader *r;
	int rc = bb_reader_open_pid(pid, dir, 0, &r, NULL, 0);

	if (!rc)
		bb_reader_close(r);
	return rc;
}

int main(int argc, char **argv)
{
	struct synth s;
	long n;

	if (argc != 3 || (n = strtol(argv[2], NULL, 10)) <= 0) {
		fprintf(stderr, "usage: scan_icount DIR N\n");
		return 2;
	}
	synth_init(&s, 1, 4096);
	for (long i = 0; i < n; i++) {
		char path[4096];

		synth_hdr(&s)->pid = (int32_t)(FIRST_PID + i);
		synth_hdr(&s)->created_ns = (uint64_t)i + 1;
		snprintf(path, sizeof(path), "%s/blackbox.%ld.1.0", argv[1], FIRST_PID + i);
		if (synth_save(&s, path)) {
			perror(path);
			return 1;
		}
	}
	synth_free(&s);
	if (measured_scan(argv[1]) || measured_pid(argv[1], (pid_t)(FIRST_PID + n / 2))) {
		fprintf(stderr, "scan_icount: scan or open_pid failed\n");
		return 1;
	}
	return 0;
}
