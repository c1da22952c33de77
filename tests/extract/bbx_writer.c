/* SPDX-License-Identifier: MIT */
/*
 * Description: a process with a box, driven by the bb-extract tests and
 * bench/extract_bench.sh.  It writes verifiable records from several
 * threads, says "ready <pid>" on stdout, then ends as told.
 *
 *   bbx_writer [-t THREADS] [-n ITER] [-s SIZE] [-c SEGMENTS] [-R SEGSIZE] MODE
 *
 * Every iteration i of thread th (named "w<th>") writes 12 records:
 *   kv   v = "t<th>-<i>"        kv  i = -i        kv u = i
 *   kv   f = i + 0.5            kv  b = i odd
 *   str  "s<th>-<i>"            i64 -i            u64 i
 *   f64  i * 0.25               bool i odd        bytes be32(th << 24 | i)
 *   event tick {th, seq = i, pad = (i % 40) x ('a' + i % 26)}
 * Before the threads start, main writes kv "esc" values that need escaping
 * (quotes, control characters, UTF-8, invalid UTF-8) and kv "marker" =
 * "before-exec" or "after-exec".
 *
 * MODE: what to do once every thread wrote ITER iterations:
 *   wait   sleep until killed            _exit  _exit(0): box stays
 *   exit   exit(0): atexit removes box   abort  abort(): box stays
 *   exec   exec itself in mode "wait" as a new image (same pid, new box)
 *   spin   threads never stop (ITER only delays "ready"); sleep until killed
 *   stdin  one line a command: "w TEXT" writes str TEXT and answers "ok",
 *          "b N" writes N records u64 2^40 + i (i = 0 .. N-1: all the same
 *          size) as fast as it can and answers "ok", "B N" the same
 *          from a new thread (its first write after the command),
 *          "q" _exit(0), "x" exit(0); EOF _exit(0)
 *   deadlock  threads "lock-a" and "lock-b" each take a mutex, write kv
 *          "holding" = "a, want b" (or "b, want a") as their last record
 *          and take the other's mutex: stuck for good; a thread "idle"
 *          calls bb_thread_init() and never writes; "ready" once all
 *          three got there
 *   cancel  crash handler on; state "stage" = "loading config"; a thread
 *          "worker" writes kv "doing" = "read" and blocks in a read;
 *          main calls bb_crash_record("cancel test") (the worker's stack
 *          is taken), then cancels and joins the worker (its log is
 *          retired after the crash), says "ready" and sleeps until killed
 * BLACKBOX_DIR (environment) says where the box goes.
 */
#include <blackbox.h>

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static unsigned long iters = 100;
static bool spin;
static atomic_ulong progress[64];

static void die(const char *what, int err)
{
	fprintf(stderr, "bbx_writer: %s: %s\n", what, strerror(err < 0 ? -err : err));
	_exit(99);
}

static void check(int ret, const char *what)
{
	if (ret < 0 && ret != -EBUSY)
		die(what, ret);
}

/* deadlock: two threads, each holding the mutex the other wants */
static pthread_mutex_t lock_a = PTHREAD_MUTEX_INITIALIZER, lock_b = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t stuck;

static void *deadlock_main(void *arg)
{
	bool a = arg != NULL;
	int ret;

	pthread_setname_np(pthread_self(), a ? "lock-a" : "lock-b");
	pthread_mutex_lock(a ? &lock_a : &lock_b);
	check(bb_write_kv("holding", a ? "a, want b" : "b, want a"), "holding");
	pthread_barrier_wait(&stuck);
	pthread_mutex_lock(a ? &lock_b : &lock_a);   /* never returns */
	ret = EDEADLK;
	die("deadlock", ret);
	return NULL;
}

static void *idle_main(void *arg)
{
	int ret;

	(void)arg;
	pthread_setname_np(pthread_self(), "idle");
	if ((ret = bb_thread_init()) != 0)
		die("bb_thread_init", ret);
	pthread_barrier_wait(&stuck);
	for (;;)
		pause();
	return NULL;
}

/* cancel: a worker blocked in a read, cancelled after the crash record */
static int cancel_pipe[2];

static void *cancel_main(void *arg)
{
	char c;

	(void)arg;
	pthread_setname_np(pthread_self(), "worker");
	check(bb_write_kv("doing", "read"), "doing");
	pthread_barrier_wait(&stuck);
	if (read(cancel_pipe[0], &c, 1) >= 0)   /* nobody writes: cancelled here */
		die("read", EIO);
	return NULL;
}

/* "B N": N records u64 2^40 + i from a thread of its own */
static void *burst_main(void *arg)
{
	unsigned long n = *(unsigned long *)arg;

	for (unsigned long i = 0; i < n; i++)
		check(bb_write_u64((UINT64_C(1) << 40) + i), "u64");
	return NULL;
}

static void iteration(unsigned th, unsigned long i)
{
	char v[48], pad[48];
	unsigned char b[4];
	unsigned k, n = (unsigned)(i % 40);
	struct bb_field f[3];

	snprintf(v, sizeof(v), "t%u-%lu", th, i);
	check(bb_write_kv("v", v), "kv");
	check(bb_write_kv_i64("i", -(int64_t)i), "kv_i64");
	check(bb_write_kv_u64("u", i), "kv_u64");
	check(bb_write_kv_f64("f", (double)i + 0.5), "kv_f64");
	check(bb_write_kv_bool("b", i & 1), "kv_bool");
	snprintf(v, sizeof(v), "s%u-%lu", th, i);
	check(bb_write_str(v), "str");
	check(bb_write_i64(-(int64_t)i), "i64");
	check(bb_write_u64(i), "u64");
	check(bb_write_f64((double)i * 0.25), "f64");
	check(bb_write_bool(i & 1), "bool");
	b[0] = (unsigned char)th;
	b[1] = (unsigned char)(i >> 16);
	b[2] = (unsigned char)(i >> 8);
	b[3] = (unsigned char)i;
	check(bb_write_bytes(b, sizeof(b)), "bytes");
	for (k = 0; k < n; k++)
		pad[k] = (char)('a' + i % 26);
	pad[n] = '\0';
	f[0] = BB_U64("th", th);
	f[1] = BB_U64("seq", i);
	f[2] = BB_STR("pad", pad);
	check(bb_write_event("tick", f, 3), "event");
}

static void *thread_main(void *arg)
{
	unsigned th = (unsigned)(uintptr_t)arg;
	unsigned long i;
	char name[16];

	snprintf(name, sizeof(name), "w%u", th);
	pthread_setname_np(pthread_self(), name);
	for (i = 0; spin || i < iters; i++) {
		iteration(th, i);
		atomic_store(&progress[th], i + 1);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned threads = 2, t;
	struct bb_options bo = { 0 };
	pthread_t tid[64];
	const char *mode;
	char line[4096];
	int opt, ret;

	while ((opt = getopt(argc, argv, "t:n:s:c:R:")) != -1) {
		switch (opt) {
		case 't': threads = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'n': iters = strtoul(optarg, NULL, 0); break;
		case 's': bo.size = strtoull(optarg, NULL, 0); break;
		case 'c': bo.segment_count = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'R': bo.segment_size = strtoull(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: bbx_writer [-t N] [-n N] [-s SIZE] "
				"[-c SEGMENTS] [-R SEGSIZE] MODE\n");
			return 2;
		}
	}
	if (optind != argc - 1 || threads < 1 || threads > 64)
		return 2;
	mode = argv[optind];
	spin = !strcmp(mode, "spin");
	bo.dir = getenv("BLACKBOX_DIR");
	if (!strcmp(mode, "cancel"))
		bo.flags |= BB_OPT_CRASH_HANDLER;
	ret = bb_init_opts(&bo);
	if (ret < 0)
		die("bb_init", ret);

	check(bb_write_kv("marker", strcmp(mode, "after-exec") ? "before-exec" : "after-exec"),
	      "marker");
	check(bb_write_kv("esc", "quote\" back\\ nl\n tab\t bell\a"), "esc");
	check(bb_write_kv("esc", "utf8 \xc3\xbcn\xc3\xaf" "c\xc3\xb8" "de \xe2\x9c\x93"), "esc");
	check(bb_write_kv("esc", "bad \xff\xfe utf8 \xc3"), "esc");

	if (!strcmp(mode, "deadlock")) {
		pthread_t th[3];

		pthread_barrier_init(&stuck, NULL, 4);
		if ((ret = pthread_create(&th[0], NULL, deadlock_main, &stuck)) ||
		    (ret = pthread_create(&th[1], NULL, deadlock_main, NULL)) ||
		    (ret = pthread_create(&th[2], NULL, idle_main, NULL)))
			die("pthread_create", ret);
		pthread_barrier_wait(&stuck);
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		for (;;)
			pause();
	}

	if (!strcmp(mode, "cancel")) {
		pthread_t th;
		struct timespec settle = { 0, 100 * 1000 * 1000 };

		check(bb_set("stage", "loading config"), "set");
		pthread_barrier_init(&stuck, NULL, 2);
		if (pipe(cancel_pipe) || (ret = pthread_create(&th, NULL, cancel_main, NULL)))
			die("pthread_create", errno);
		pthread_barrier_wait(&stuck);
		nanosleep(&settle, NULL);   /* into its read */
		check(bb_crash_record("cancel test"), "bb_crash_record");
		if ((ret = pthread_cancel(th)) || (ret = pthread_join(th, NULL)))
			die("cancel", ret);
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		for (;;)
			pause();
	}

	if (!strcmp(mode, "stdin")) {
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		while (fgets(line, sizeof(line), stdin)) {
			line[strcspn(line, "\n")] = '\0';
			if (!strncmp(line, "w ", 2)) {
				check(bb_write_str(line + 2), "str");
				printf("ok\n");
				fflush(stdout);
			} else if (!strncmp(line, "b ", 2)) {
				unsigned long n = strtoul(line + 2, NULL, 10);

				for (unsigned long i = 0; i < n; i++)
					check(bb_write_u64((UINT64_C(1) << 40) + i), "u64");
				printf("ok\n");
				fflush(stdout);
			} else if (!strncmp(line, "B ", 2)) {
				unsigned long n = strtoul(line + 2, NULL, 10);
				pthread_t bt;

				if ((ret = pthread_create(&bt, NULL, burst_main, &n)) ||
				    (ret = pthread_join(bt, NULL)))
					die("burst thread", ret);
				printf("ok\n");
				fflush(stdout);
			} else if (!strcmp(line, "q")) {
				_exit(0);
			} else if (!strcmp(line, "x")) {
				exit(0);
			}
		}
		_exit(0);
	}

	for (t = 0; t < threads; t++)
		if ((ret = pthread_create(&tid[t], NULL, thread_main,
					  (void *)(uintptr_t)t)))
			die("pthread_create", ret);
	if (spin) {
		/* ready once every thread has written a good amount */
		for (t = 0; t < threads; t++)
			while (atomic_load(&progress[t]) < iters)
				usleep(1000);
	} else {
		for (t = 0; t < threads; t++)
			pthread_join(tid[t], NULL);
	}

	if (!strcmp(mode, "exec")) {
		char *nargv[] = { argv[0], "-t", "1", "-n", "10", "after-exec", NULL };

		fflush(stdout);
		execv("/proc/self/exe", nargv);
		die("exec", errno);
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	if (!strcmp(mode, "_exit"))
		_exit(0);
	if (!strcmp(mode, "exit"))
		exit(0);
	if (!strcmp(mode, "abort"))
		abort();
	for (;;)
		pause(); /* wait, spin, after-exec: until killed */
}
