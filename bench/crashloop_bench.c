/* SPDX-License-Identifier: MIT */
/*
 * crashloop-bench - a service that crashes at start, restarted in a loop:
 * what its boxes cost the box directory, and what bb_init() costs it.
 *
 * Usage: crashloop-bench [RESTARTS] [DIR]   (default 1000, /dev/shm)
 *
 * RESTARTS times, one after the other: fork a child that calls bb_init()
 * with the defaults (the default box, the default crash-loop budget, the
 * box in DIR through BLACKBOX_DIR unless DIR is /dev/shm), writes a
 * record and dies of SIGSEGV (not dumpable: no core).  The child times its
 * bb_init() (CLOCK_MONOTONIC) and sends it up a pipe.  Prints, every tenth
 * of the run and at its end: restarts so far, the bytes this uid's boxes
 * hold in DIR (st_blocks) and the most they held, the boxes there, and
 * bb_init()'s median and worst time.  At the end: the boxes of the loop
 * still there and the deaths they count (the state key
 * blackbox.budget_removed plus one per box): every restart when the count
 * is complete.  Run it against an older libblackbox with LD_LIBRARY_PATH
 * for "before".  Removes the loop's boxes when done.  Benchmark, not a
 * test: nothing is asserted.
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <blackbox.h>
#include <blackbox/reader.h>

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

/* The uid's box files in @dir: bytes held, how many. */
static unsigned usage(const char *dir, unsigned long long *bytes)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	struct stat st;
	unsigned n = 0;

	*bytes = 0;
	while (d && (e = readdir(d)))
		if (!strncmp(e->d_name, BB_NAME_PREFIX, strlen(BB_NAME_PREFIX)) &&
		    fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    st.st_uid == geteuid()) {
			*bytes += (unsigned long long)st.st_blocks * 512;
			n++;
		}
	if (d)
		closedir(d);
	return n;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The budget's count, as bb-extract shows the slot ("key=N"). */
static int removed_cb(const struct bb_state_entry *e, void *arg)
{
	static const char key[] = "blackbox.budget_removed=";
	char text[128];

	if (e->status == BB_SLOT_OK &&
	    bb_format_value(BB_TAG_KV, 0, e->value, e->value_len, text, sizeof(text)) > 0 &&
	    !strncmp(text, key, sizeof(key) - 1))
		*(uint64_t *)arg = strtoull(text + sizeof(key) - 1, NULL, 10);
	return 0;
}

int main(int argc, char **argv)
{
	unsigned runs = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 1000;
	const char *dir = argc > 2 ? argv[2] : BB_DEFAULT_DIR;
	pid_t *pids = calloc(runs ? runs : 1, sizeof(*pids));
	double *t = calloc(runs ? runs : 1, sizeof(*t)), t0;
	unsigned long long bytes, most = 0, deaths = 0;
	unsigned boxes = 0, kept = 0;
	struct dirent *e;
	DIR *d;

	if (!runs || !pids || !t)
		return 2;
	if (strcmp(dir, BB_DEFAULT_DIR))
		setenv("BLACKBOX_DIR", dir, 1);
	printf("%9s %14s %14s %7s %12s %12s\n", "restarts", "uid's bytes", "most bytes", "boxes",
	       "init med us", "init max us");
	t0 = now_us();
	for (unsigned i = 0; i < runs; i++) {
		int p[2], st;

		if (pipe(p) < 0)
			return 1;
		pids[i] = fork();
		if (pids[i] == 0) {
			double a = now_us(), b;
			int r = bb_init(0);

			b = now_us() - a;
			if (write(p[1], &b, sizeof(b)) < 0 || r < 0)
				_exit(3);
			bb_write_kv_u64("restart", i);
			prctl(PR_SET_DUMPABLE, 0);
			raise(SIGSEGV);
			_exit(4);
		}
		close(p[1]);
		if (read(p[0], &t[i], sizeof(t[i])) != (ssize_t)sizeof(t[i]))
			t[i] = -1;
		close(p[0]);
		waitpid(pids[i], &st, 0);
		if (!WIFSIGNALED(st)) {
			fprintf(stderr, "restart %u: bb_init failed (status %#x)\n", i, st);
			break;
		}
		boxes = usage(dir, &bytes);
		most = bytes > most ? bytes : most;
		if ((i + 1) % (runs / 10 ? runs / 10 : 1) == 0 || i + 1 == runs) {
			double *s = malloc((i + 1) * sizeof(*s));

			memcpy(s, t, (i + 1) * sizeof(*s));
			qsort(s, i + 1, sizeof(*s), cmp_double);
			printf("%9u %14llu %14llu %7u %12.0f %12.0f\n", i + 1, bytes, most, boxes,
			       s[i / 2], s[i]);
			free(s);
			fflush(stdout);
		}
	}
	printf("%u restarts in %.1f s\n", runs, (now_us() - t0) / 1e6);
	/* the loop's boxes: what they count, then gone */
	d = opendir(dir);
	while (d && (e = readdir(d))) {
		char path[4096];
		struct bb_reader *r;
		bool ours = false;

		if (strncmp(e->d_name, BB_NAME_PREFIX, strlen(BB_NAME_PREFIX)))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (bb_reader_open_path(path, BB_OPEN_SNAPSHOT, &r, NULL, 0))
			continue;
		for (unsigned i = 0; i < runs && !ours; i++)
			ours = bb_reader_info(r)->pid == pids[i];
		if (ours) {
			uint64_t n = 0;

			bb_reader_state(r, removed_cb, &n, NULL);
			deaths += 1 + n;
			kept++;
			unlink(path);
		}
		bb_reader_close(r);
	}
	if (d)
		closedir(d);
	printf("%u boxes of the loop kept, %llu deaths counted of %u\n", kept, deaths, runs);
	free(pids);
	free(t);
	return 0;
}
