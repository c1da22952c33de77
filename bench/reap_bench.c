/* SPDX-License-Identifier: MIT */
/*
 * reap-bench - how bb-reap scales with the number of boxes.
 *
 * Usage: reap-bench BB-REAP [-s SIZE] [-u OWNERS] [-m MODES] [-a DIR] [-c HOW] [N...]
 *   -s SIZE    box size given to bb_init (default: one 4 KiB segment and
 *              the smallest box it needs; 0: the default box)
 *   -u OWNERS  spread the boxes over this many owner uids (needs root)
 *   -m MODES   comma-separated, of: dry, young, reap, archive, packaged
 *              (default dry,young,reap,archive)
 *   -a DIR     where the archive directories go (default /var/tmp)
 *   -c HOW     --compress=HOW for archive and packaged (default: bb-reap's)
 *   N          numbers of boxes (default 1000 5000 10000)
 *
 * Makes one real box with a child that calls bb_init_opts() and _exit()s,
 * then for each N fills a fresh directory on tmpfs (/dev/shm, like
 * production) with N copies, each claiming a pid above pid_max, so every
 * owner is certainly gone (bench/boxfill.h: zero pages are left as holes,
 * so that ten thousand default boxes fit in memory).  It then times whole
 * runs of the bb-reap binary:
 *
 *   dry      --dry-run --min-age 0   every box opened, validated, judged
 *   young    --min-age 1h            same, all kept as too young
 *   reap     --min-age 0             judged and unlinked
 *   archive  --min-age 0 --archive   judged, copied, unlinked (no quota)
 *   packaged --min-age 0 --archive --keep 64 --max-archive-bytes 256M,
 *            the packaged unit's quotas
 *
 * and prints milliseconds per run and per 1,000 boxes, the archives made
 * and the bytes they hold.  Output of bb-reap goes to /dev/null; a run
 * that does not exit 0 (or 1 when --journal is not in play: never) aborts
 * the benchmark.  Benchmark, not a test: nothing is asserted.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "boxfill.h"

static bool has(const char *modes, const char *m)
{
	size_t n = strlen(m);

	for (const char *p = modes; (p = strstr(p, m)); p += n)
		if ((p == modes || p[-1] == ',') && (p[n] == ',' || !p[n]))
			return true;
	return false;
}

static void line(unsigned n, const char *mode, double t, const char *arch)
{
	uint64_t blocks = 0, bytes = 0;
	unsigned files = arch ? bf_count(arch) : 0;

	if (arch)
		bf_usage(arch, &blocks, &bytes);
	printf("%8u %-9s %10.1f %14.2f", n, mode, t, t * 1000 / n);
	if (arch)
		printf(" %9u %12.1f", files, (double)bytes / (1 << 20));
	printf("\n");
	fflush(stdout);
}

int main(int argc, char **argv)
{
	static const unsigned def[] = { 1000, 5000, 10000 };
	const char *modes = "dry,young,reap,archive", *archbase = "/var/tmp", *how = NULL;
	char compress[64] = "";
	long size = -1, owners = 1;
	char *reap;
	size_t len;
	void *box;
	int opt, nn;

	if (argc < 2) {
		fprintf(stderr, "usage: reap-bench BB-REAP [-s SIZE] [-u OWNERS] [-m MODES] "
			"[-a DIR] [-c HOW] [N...]\n");
		return 2;
	}
	reap = argv[1];
	optind = 2;
	while ((opt = getopt(argc, argv, "s:u:m:a:c:")) != -1) {
		switch (opt) {
		case 'c': how = optarg; break;
		case 's': size = strtol(optarg, NULL, 0); break;
		case 'u': owners = strtol(optarg, NULL, 0); break;
		case 'm': modes = optarg; break;
		case 'a': archbase = optarg; break;
		default: return 2;
		}
	}
	nn = argc > optind ? argc - optind : 3;
	if (how)
		snprintf(compress, sizeof(compress), "--compress=%s", how);
	box = size < 0 ? bf_template(0, 4096, 20, &len) : bf_template((size_t)size, 0, 20, &len);
	printf("box size %zu bytes, %ld owner%s; times are whole bb-reap runs (process start "
	       "included)\n", len, owners, owners == 1 ? "" : "s");
	printf("%8s %-9s %10s %14s %9s %12s\n", "boxes", "mode", "ms/run", "ms/1000 boxes",
	       "archives", "archive MiB");
	for (int k = 0; k < nn; k++) {
		unsigned n = argc > optind ? (unsigned)strtoul(argv[optind + k], NULL, 10) : def[k];
		char dir[] = "/dev/shm/reap-bench.XXXXXX", arch[4096];
		char *dry[] = { reap, "--dir", dir, "--min-age", "0", "--dry-run", NULL };
		char *young[] = { reap, "--dir", dir, "--min-age", "1h", NULL };
		char *reaprun[] = { reap, "--dir", dir, "--min-age", "0", NULL };
		char *archrun[] = { reap, "--dir", dir, "--min-age", "0", "--archive", arch,
				    how ? compress : NULL, NULL };
		char *pkgrun[] = { reap, "--dir", dir, "--min-age", "0", "--archive", arch,
				   "--keep", "64", "--max-archive-bytes", "256M",
				   how ? compress : NULL, NULL };
		double best_dry = 1e18, best_young = 1e18, t;

		snprintf(arch, sizeof(arch), "%s/reap-bench-arch.XXXXXX", archbase);
		if (!n || !mkdtemp(dir) || !mkdtemp(arch)) {
			perror("mkdtemp");
			return 1;
		}
		bf_fill(dir, n, box, len, 0, (unsigned)owners);
		for (int rep = 0; rep < 3 && (has(modes, "dry") || has(modes, "young")); rep++) {
			if (has(modes, "dry")) {
				t = bf_run(dry, NULL);
				best_dry = t < best_dry ? t : best_dry;
			}
			if (has(modes, "young")) {
				t = bf_run(young, NULL);
				best_young = t < best_young ? t : best_young;
			}
		}
		if (bf_count(dir) != n) {
			fprintf(stderr, "reap-bench: a read-only run removed boxes\n");
			return 1;
		}
		if (has(modes, "dry"))
			line(n, "dry", best_dry, NULL);
		if (has(modes, "young"))
			line(n, "young", best_young, NULL);
		if (has(modes, "reap")) {
			t = bf_run(reaprun, NULL);
			if (bf_count(dir) != 0) {
				fprintf(stderr, "reap-bench: %u boxes left after reaping\n",
					bf_count(dir));
				return 1;
			}
			line(n, "reap", t, NULL);
			bf_fill(dir, n, box, len, 0, (unsigned)owners);
		}
		if (has(modes, "archive")) {
			t = bf_run(archrun, NULL);
			line(n, "archive", t, arch);
			if (bf_count(dir) != 0) {
				fprintf(stderr, "reap-bench: archive run left %u boxes\n", bf_count(dir));
				return 1;
			}
			bf_rm_tree(arch);
			if (mkdir(arch, 0711) < 0) {
				perror(arch);
				return 1;
			}
			bf_fill(dir, n, box, len, 0, (unsigned)owners);
		}
		if (has(modes, "packaged")) {
			t = bf_run(pkgrun, NULL);
			line(n, "packaged", t, arch);
			if (bf_count(dir) != 0) {
				fprintf(stderr, "reap-bench: packaged run left %u boxes\n",
					bf_count(dir));
				return 1;
			}
		}
		bf_rm_tree(dir);
		bf_rm_tree(arch);
	}
	free(box);
	return 0;
}
