/* SPDX-License-Identifier: MIT */
/*
 * bench/baselines.c - the shared part of the benchmark programs
 * (see baselines.h).
 */
#include "baselines.h"

#include <blackbox.h>
#include <blackbox/format.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

double bt_ns_per_tick = 1.0;
double bt_resolution_ns = 1.0;
char bt_timer_desc[160] = "clock_gettime(CLOCK_MONOTONIC)";

const char bt_key[] = "req";
const char bt_val[] = "GET /index";
const char bt_line[] = "req=GET /index\n";

/* ---- timer --------------------------------------------------------------- */

int bt_timer_init(void)
{
#if BT_HAVE_RDTSC
	double r[5];

	/* Five 40 ms windows; the median ratio.  A window's error is the two
	 * clock reads' jitter (< 1 us) over 40 ms: < 0.003%, unless the
	 * thread is preempted between a TSC read and its clock read, which
	 * the median discards. */
	for (int i = 0; i < 5; i++) {
		struct timespec d = { 0, 40 * 1000 * 1000 };
		uint64_t n0 = bt_mono_ns(), t0 = __rdtsc();
		uint64_t n1, t1;

		nanosleep(&d, NULL);
		n1 = bt_mono_ns();
		t1 = __rdtsc();
		r[i] = (double)(n1 - n0) / (double)(t1 - t0);
	}
	bt_ns_per_tick = bt_quantile(r, 5, 0.5);
	/* Resolution: the smallest step between two successive reads (a
	 * virtual machine may advance the TSC in coarse steps, which would
	 * quantise every single-call figure). */
	{
		uint64_t step = UINT64_MAX, prev = __rdtsc();

		for (int i = 0; i < 100000; i++) {
			uint64_t t = __rdtsc();

			if (t > prev && t - prev < step)
				step = t - prev;
			prev = t;
		}
		bt_resolution_ns = (double)step * bt_ns_per_tick;
	}
	snprintf(bt_timer_desc, sizeof(bt_timer_desc),
		 "fenced rdtsc/rdtscp, TSC %.3f GHz calibrated against CLOCK_MONOTONIC, "
		 "resolution %.1f ns", 1.0 / bt_ns_per_tick, bt_resolution_ns);
#endif
	return 0;
}

/* ---- baselines ----------------------------------------------------------- */

int bt_ctx_open(struct bt_ctx *c)
{
	char path[] = "/tmp/bb-bench.XXXXXX";
	int fd2;

	memset(c, 0, sizeof(*c));
	c->fd = mkstemp(path);
	if (c->fd < 0)
		return -errno;
	unlink(path);   /* the file lives as long as its descriptors */
	fd2 = dup(c->fd);
	if (fd2 < 0 || !(c->f = fdopen(fd2, "w"))) {
		int e = -errno;

		if (fd2 >= 0)
			close(fd2);
		close(c->fd);
		return e;
	}
	return 0;
}

void bt_ctx_reset(struct bt_ctx *c)
{
	fflush(c->f);
	if (ftruncate(c->fd, 0) < 0 || lseek(c->fd, 0, SEEK_SET) < 0)
		c->err = c->err ? c->err : -errno;
	fseek(c->f, 0, SEEK_SET);
}

void bt_ctx_close(struct bt_ctx *c)
{
	if (c->f)
		fclose(c->f);
	if (c->fd >= 0)
		close(c->fd);
	c->f = NULL;
	c->fd = -1;
}

void bt_base_write(struct bt_ctx *c)
{
	if (write(c->fd, bt_line, BT_LINE_LEN) != (ssize_t)BT_LINE_LEN && !c->err)
		c->err = -errno;
}

void bt_base_fprintf_flush(struct bt_ctx *c)
{
	fprintf(c->f, "%s=%s\n", bt_key, bt_val);
	fflush(c->f);
}

void bt_base_fprintf(struct bt_ctx *c)
{
	fprintf(c->f, "%s=%s\n", bt_key, bt_val);
}

/* ---- best batches -------------------------------------------------------- */

struct bt_stat3 bt_best(int (*fn)(void), unsigned long nbatch, unsigned long calls,
			const char *prog)
{
	double *s = malloc(sizeof(*s) * nbatch);
	struct bt_stat3 r;

	if (!s) {
		perror("malloc");
		exit(1);
	}
	for (unsigned long b = 0, warm = nbatch / 10; b < warm + nbatch; b++) {
		uint64_t t0 = bt_tick_begin();
		int bad = fn();
		uint64_t t1 = bt_tick_end();

		if (bad) {
			fprintf(stderr, "%s: a write failed\n", prog);
			exit(1);
		}
		if (b >= warm)
			s[b - warm] = (double)(t1 - t0) * bt_ns_per_tick / (double)calls;
	}
	r.p50 = bt_quantile(s, nbatch, 0.5);   /* sorts s */
	r.min = s[0];
	r.p10 = bt_quantile(s, nbatch, 0.1);
	free(s);
	return r;
}

/* ---- statistics ---------------------------------------------------------- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest rank: the smallest value with at least p * n values <= it. */
static size_t rank(size_t n, double p)
{
	double k = p * (double)n;
	size_t i = (size_t)k;

	if ((double)i < k)
		i++;
	return i ? i - 1 : 0;
}

double bt_quantile(double *v, size_t n, double p)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	return v[rank(n, p)];
}

uint32_t bt_quantile_u32(uint32_t *v, size_t n, double p)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_u32);
	return v[rank(n, p)];
}

double bt_median(const double *v, size_t n)
{
	double c[64];

	if (!n)
		return 0;
	if (n > 64)
		n = 64;
	memcpy(c, v, n * sizeof(*c));
	return bt_quantile(c, n, 0.5);
}

/* ---- command line ------------------------------------------------------ */

unsigned long bt_parse_ul(const char *s, unsigned long lo, unsigned long hi,
			  void (*usage)(void))
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (end == s || *end || errno || *s == '-' || v < lo || v > hi)
		usage();
	return v;
}

void bt_batch_setup(int argc, char **argv, const char *prog, unsigned long *nbatch,
		    unsigned long *ncalls, unsigned long *nround, void (*usage)(void))
{
	int c;

	while ((c = getopt(argc, argv, nround ? "b:n:r:" : "b:n:")) != -1) {
		switch (c) {
		case 'b': *nbatch = bt_parse_ul(optarg, 10, 10000000, usage); break;
		case 'n': *ncalls = bt_parse_ul(optarg, 1, 100000000, usage); break;
		case 'r': *nround = bt_parse_ul(optarg, 1, 1000, usage); break;
		default: usage();
		}
	}
	if (optind != argc)
		usage();
	if (bt_timer_init() < 0) {
		fprintf(stderr, "%s: cannot calibrate the timer\n", prog);
		exit(1);
	}
}

unsigned bt_parse_list(char *s, unsigned long *out, unsigned max, unsigned long lo,
		       unsigned long hi, void (*usage)(void))
{
	unsigned n = 0;

	for (char *tok = strtok(s, ","); tok; tok = strtok(NULL, ",")) {
		if (n == max)
			usage();
		out[n++] = bt_parse_ul(tok, lo, hi, usage);
	}
	if (!n)
		usage();
	return n;
}

/* ---- threads ------------------------------------------------------------- */

int bt_ncpu(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : (int)n;
}

void bt_pin(unsigned idx)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET((int)(idx % (unsigned)bt_ncpu()), &set);
	/* Best effort: a cpuset may forbid it; the figures are then noisier.
	 * Pinning also keeps a thread's TSC reads on one CPU. */
	(void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

/* ---- the box ------------------------------------------------------------- */

int bt_box_read(struct bt_box *b)
{
	char path[4096];
	struct stat st;
	const struct bb_header *h;
	void *map;
	int fd, ret;

	memset(b, 0, sizeof(*b));
	ret = bb_path(path, sizeof(path));
	if (ret < 0)
		return ret;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || st.st_size < (off_t)sizeof(*h)) {
		close(fd);
		return -EINVAL;
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (map == MAP_FAILED)
		return -errno;
	h = map;
	b->box_size = h->box_size;
	b->ring_size = h->ring_size;
	b->ring_count = h->ring_count;
	b->max_record = h->max_record;
	b->dropped = h->dropped_busy + h->dropped_nested + h->dropped_toobig;
	b->truncated = h->truncated;
	b->clock = h->clock;
	b->clock_requested = h->clock_requested;
	b->crc = !!(h->flags & BB_HF_CRC32C);
	/* The box is our own and the writers are quiescent when this runs
	 * (joined or parked at a barrier): plain reads see their stores.
	 * Still, bound every offset by the mapping, as any reader must. */
	for (uint32_t i = 0; i < h->ring_count; i++) {
		uint64_t off = h->ring_table_offset + (uint64_t)i * h->ring_desc_size;
		const struct bb_ring_desc *d;

		if (h->ring_desc_size < sizeof(*d) || off + sizeof(*d) > (uint64_t)st.st_size)
			break;
		d = (const void *)((const char *)map + off);
		b->bytes += d->head;
		b->held += d->head - d->tail;
		if (d->kind == BB_RING_PRIVATE) {
			b->private_used += d->head > 0;
			b->private_full += d->head >= h->ring_size;
		}
	}
	if (h->version_major >= 3 && h->seg_count &&
	    h->seg_table_offset + (uint64_t)h->seg_count * sizeof(struct bb_seg_desc) <=
	    (uint64_t)st.st_size) {
		const struct bb_seg_desc *sd = (const void *)((const char *)map + h->seg_table_offset);
		uint32_t *logs = calloc(h->seg_count, sizeof(*logs));
		uint64_t *heads = calloc(h->seg_count, sizeof(*heads));
		uint32_t nlogs = 0;

		b->seg_count = h->seg_count;
		b->seg_size = h->seg_size;
		b->overflow = h->overflow;
		b->private_full = h->seg_next >= h->seg_count;
		for (uint32_t i = 0; logs && heads && i < h->seg_count; i++) {
			uint32_t st_ = BB_SEG_STATE(sd[i].own), log = BB_SEG_LOG(sd[i].own), k;

			if (st_ != BB_SEG_OPEN && st_ != BB_SEG_SEALED)
				continue;
			b->held += sd[i].head - sd[i].start;
			for (k = 0; k < nlogs && logs[k] != log; k++)
				;
			if (k == nlogs)
				logs[nlogs++] = log;
			if (sd[i].head > heads[k])
				heads[k] = sd[i].head;
		}
		for (uint32_t k = 0; k < nlogs; k++)
			b->bytes += heads[k];
		b->private_used = nlogs;
		free(logs);
		free(heads);
	}
	munmap(map, (size_t)st.st_size);
	return 0;
}

const char *bt_clock_name(unsigned clock)
{
	switch (clock) {
	case BB_CLOCK_MONOTONIC: return "monotonic";
	case BB_CLOCK_REALTIME:  return "realtime";
	case BB_CLOCK_BOOTTIME:  return "boottime";
	case BB_CLOCK_TSC:       return "tsc";
	default:                 return "?";
	}
}

void bt_print_machine(FILE *out)
{
	char line[256], model[160] = "?";
	struct utsname u;
	double load[3] = { 0, 0, 0 };
	time_t now = time(NULL);
	struct tm tm;
	FILE *f = fopen("/proc/cpuinfo", "r");

	if (f) {
		while (fgets(line, sizeof(line), f)) {
			char *colon = strchr(line, ':');

			if (!strncmp(line, "model name", 10) && colon) {
				snprintf(model, sizeof(model), "%s", colon + 2);
				model[strcspn(model, "\n")] = '\0';
				break;
			}
		}
		fclose(f);
	}
	uname(&u);
	getloadavg(load, 3);
	gmtime_r(&now, &tm);
	strftime(line, sizeof(line), "%Y-%m-%d %H:%M UTC", &tm);
	fprintf(out, "machine: %s, %d CPUs, %s %s %s, load %.2f %.2f %.2f, %s\n",
		model, bt_ncpu(), u.sysname, u.release, u.machine,
		load[0], load[1], load[2], line);
	fprintf(out, "library: %s; timer: %s\n", bb_version(), bt_timer_desc);
}
