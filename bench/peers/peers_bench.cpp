// SPDX-License-Identifier: MIT
/*
 * peers_bench - libblackbox beside the fastest in-process loggers, in one
 * run (BENCHMARKS.md "The fastest loggers side by side").
 *
 * Every logger makes the same record per call: a key, a short string known
 * only at run time, and an integer ("req", "GET /index", i).  libblackbox
 * writes it as bb_write_event("req", { path: "GET /index", n: i }); its
 * literal and typed records (bb_write_kv of two literals, bb_write_kv_i64)
 * are shown beside it.  The peers log the format "{} {} {}" (NanoLog:
 * "%s %s %d") to a file through their usual asynchronous front end: the
 * call stores the arguments in a per-thread queue, a background thread
 * formats and writes.  spdlog (Debian) is synchronous: its call formats
 * into a buffered file (the row "spdlog, file") and, for the cost of the
 * formatting alone, into a null sink.
 *
 * Each row: B batches of N calls, pinned to the last CPU, timed with the
 * fenced TSC of bench/baselines.h; min, 10th percentile and median per call,
 * and the ratio to a bare clock_gettime() and rdtsc of the same run.  An
 * asynchronous logger's queue is drained between batches (its backend is
 * given time), so a batch measures the front end, never a full queue.
 *
 * After SIGKILL: a child makes K records (sequence numbers) and kills
 * itself with SIGKILL right after the last call; the parent counts the
 * records it can read afterwards (libblackbox: from the box, with the
 * reader API; the others: lines of their file).  NanoLog is built into a
 * binary of its own, run after this one (its thread starts at load time and
 * polls): timed in its process, not killed.
 *
 * Built by bench/peers/run.sh, which compiles in the peers it finds in
 * PEERS_DIR (fetched sources, never in this repository) and says which are
 * missing.  HAVE_SPDLOG, HAVE_QUILL, HAVE_FMTLOG, HAVE_NANOLOG select them.
 *
 * Usage: peers_bench [-b BATCHES] [-n CALLS] [-k KILL_RECORDS]
 */
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include <blackbox.h>
#include <blackbox/format.h>
#include <blackbox/reader.h>

extern "C" {
#include "baselines.h"
}

#if HAVE_SPDLOG
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/null_sink.h>
#include <spdlog/spdlog.h>
#endif
#if HAVE_QUILL
#include "quill/Backend.h"
#include "quill/Frontend.h"
#include "quill/LogMacros.h"
#include "quill/Logger.h"
#include "quill/sinks/FileSink.h"
#endif
#if HAVE_FMTLOG
#define FMTLOG_HEADER_ONLY
#include "fmtlog.h"
#endif
#ifndef HAVE_NANOLOG
#define HAVE_NANOLOG 0
#endif
#if HAVE_NANOLOG
#include <array>   /* NanoLogCpp17.h uses std::array without including it */
#include "NanoLogCpp17.h"
#endif

static unsigned long nbatch = 300, ncalls = 1000, nkill = 100000;
static const char *volatile dyn_value = "GET /index";
static struct bt_ctx ctx;
static std::string dir;

struct row {
	const char *name;
	void (*setup)(const char *file);
	int (*batch)(void);
	void (*drain)(void);
	bool async;
};

/* ---- libblackbox --------------------------------------------------------- */

static void bb_setup(const char *)
{
	struct bb_options o = {};

	o.dir = dir.c_str();
	o.flags = BB_OPT_NO_ENV;
	if (bb_init_opts(&o)) {
		std::fprintf(stderr, "peers_bench: bb_init_opts failed\n");
		std::exit(1);
	}
}

static inline int bb_record(unsigned long i)
{
	/* The C call's fields, as BB_STR() and BB_I64() make them in C
	 * (C++17 has no designated initializers): the inline path. */
	struct bb_field f[2] = {};

	f[0].key = "path";
	f[0].type = BB_TYPE_STR;
	f[0].v.s = dyn_value;
	f[1].key = "n";
	f[1].type = BB_TYPE_I64;
	f[1].v.i64 = (int64_t)i;
	return bb_write_event("req", f, 2);
}

BT_OP(op_clock, ncalls, bt_base_clock(&ctx))
BT_OP(op_tick, ncalls, bt_base_rdtsc(&ctx))
BT_OP(op_bb_event, ncalls, bad |= bb_record(i))
BT_OP(op_bb_kv, ncalls, bad |= bb_write_kv("req", "GET /index"))
BT_OP(op_bb_kv_i64, ncalls, bad |= bb_write_kv_i64("n", (int64_t)i))

/* ---- spdlog -------------------------------------------------------------- */
#if HAVE_SPDLOG
static std::shared_ptr<spdlog::logger> sp_log;

static void sp_setup_file(const char *file)
{
	sp_log = spdlog::basic_logger_st("peers", file, true);
	sp_log->set_level(spdlog::level::info);
}

static void sp_setup_null(const char *)
{
	sp_log = std::make_shared<spdlog::logger>("null",
		std::make_shared<spdlog::sinks::null_sink_st>());
}

BT_OP(op_spdlog, ncalls, sp_log->info("{} {} {}", "req", (const char *)dyn_value, i))
#endif

/* ---- Quill --------------------------------------------------------------- */
#if HAVE_QUILL
static quill::Logger *q_log;

static void q_setup(const char *file)
{
	quill::Backend::start();
	auto sink = quill::Frontend::create_or_get_sink<quill::FileSink>(file,
		[]() {
			quill::FileSinkConfig cfg;

			cfg.set_open_mode('w');
			return cfg;
		}(),
		quill::FileEventNotifier{});
	q_log = quill::Frontend::create_or_get_logger("peers", std::move(sink));
}

static void q_drain(void)
{
	q_log->flush_log();
}

BT_OP(op_quill, ncalls, LOG_INFO(q_log, "{} {} {}", "req", (const char *)dyn_value, i))
#endif

/* ---- fmtlog -------------------------------------------------------------- */
#if HAVE_FMTLOG
static void f_setup(const char *file)
{
	fmtlog::setLogFile(file, true);
	fmtlog::setFlushDelay(1000000);
	fmtlog::startPollingThread(1000000);
}

static void f_drain(void)
{
	/* The polling thread drains the queue; wait for it. */
	std::this_thread::sleep_for(std::chrono::milliseconds(5));
}

BT_OP(op_fmtlog, ncalls, logi("{} {} {}", "req", (const char *)dyn_value, i))
#endif

/* ---- NanoLog ------------------------------------------------------------- */
#if HAVE_NANOLOG
static void n_setup(const char *file)
{
	NanoLog::setLogFile(file);
	NanoLog::preallocate();
}

static void n_drain(void)
{
	NanoLog::sync();
}

BT_OP(op_nanolog, ncalls, NANO_LOG(NOTICE, "%s %s %lu", "req", (const char *)dyn_value, i))
#endif

static void nodrain(void)
{
}

static const struct row rows[] = {
#if HAVE_NANOLOG
	/* NanoLog starts its background thread when the program loads, and
	 * polls with it: its binary (HAVE_NANOLOG) has no other row, and
	 * measures in the process itself (a fork child has no such thread). */
	{ "NanoLog, file (async, binary)", n_setup, op_nanolog, n_drain, true },
#else
	{ "libblackbox event (key, string, int)", bb_setup, op_bb_event, nodrain, false },
	{ "libblackbox bb_write_kv literals", bb_setup, op_bb_kv, nodrain, false },
	{ "libblackbox bb_write_kv_i64", bb_setup, op_bb_kv_i64, nodrain, false },
#if HAVE_SPDLOG
	{ "spdlog 1.10, file (sync, buffered)", sp_setup_file, op_spdlog, nodrain, false },
	{ "spdlog 1.10, null sink (format only)", sp_setup_null, op_spdlog, nodrain, false },
#endif
#if HAVE_QUILL
	{ "Quill, file (async)", q_setup, op_quill, q_drain, true },
#endif
#if HAVE_FMTLOG
	{ "fmtlog, file (async)", f_setup, op_fmtlog, f_drain, true },
#endif
#endif
};

/* min / p10 / median per call of @r over nbatch batches, its queue drained
 * between batches. */
static struct bt_stat3 measure(const struct row *r)
{
	double *v = (double *)std::calloc(nbatch, sizeof(double));
	struct bt_stat3 s;

	for (unsigned long w = 0; w < nbatch / 10 + 1; w++) {   /* warm-up */
		r->batch();
		r->drain();
	}
	for (unsigned long b = 0; b < nbatch; b++) {
		uint64_t t0 = bt_tick_begin();
		int bad = r->batch();
		uint64_t t1 = bt_tick_end();

		if (bad) {
			std::fprintf(stderr, "peers_bench: %s failed\n", r->name);
			std::exit(1);
		}
		v[b] = (double)(t1 - t0) * bt_ns_per_tick / (double)ncalls;
		r->drain();
	}
	s.min = bt_quantile(v, nbatch, 0.0);
	s.p10 = bt_quantile(v, nbatch, 0.1);
	s.p50 = bt_quantile(v, nbatch, 0.5);
	std::free(v);
	return s;
}

/* Lines of @file holding "req GET /index" (the peers' records). */
static unsigned long count_lines(const char *file)
{
	FILE *f = std::fopen(file, "r");
	char line[512];
	unsigned long n = 0;

	if (!f)
		return 0;
	while (std::fgets(line, sizeof(line), f))
		n += std::strstr(line, "req GET /index") != nullptr;
	std::fclose(f);
	return n;
}

static int count_box_cb(const struct bb_record *rec, void *arg)
{
	if (rec->tag == BB_TAG_EVENT)
		++*(unsigned long *)arg;
	return 0;
}

/* The events the box of @pid left in dir. */
static unsigned long count_box(pid_t pid)
{
	struct bb_reader *r;
	unsigned long n = 0;

	if (bb_reader_open_pid(pid, dir.c_str(), 0, &r, nullptr, 0))
		return 0;
	bb_reader_walk(r, 0, count_box_cb, &n);
	bb_reader_close(r);
	return n;
}

/* Fork: the child sets @r up, makes nkill records, SIGKILLs itself. */
static void after_kill(const struct row *r, const char *file)
{
	pid_t pid;
	int st;

	std::fflush(stdout);
	pid = fork();

	if (pid == 0) {
		r->setup(file);
		for (unsigned long i = 0; i < nkill / ncalls; i++)
			r->batch();
		raise(SIGKILL);
		_exit(1);
	}
	waitpid(pid, &st, 0);
	if (r->setup == bb_setup)
		std::printf("  %-40s %lu of %lu records readable after SIGKILL (the box)\n",
			    r->name, count_box(pid), nkill / ncalls * ncalls);
	else
		std::printf("  %-40s %lu of %lu records in its file after SIGKILL\n", r->name,
			    count_lines(file), nkill / ncalls * ncalls);
}

int main(int argc, char **argv)
{
	char tmpl[] = "/tmp/bb-peers.XXXXXX";
	int c;

	while ((c = getopt(argc, argv, "b:n:k:")) != -1) {
		switch (c) {
		case 'b': nbatch = std::strtoul(optarg, nullptr, 10); break;
		case 'n': ncalls = std::strtoul(optarg, nullptr, 10); break;
		case 'k': nkill = std::strtoul(optarg, nullptr, 10); break;
		default:
			std::fprintf(stderr, "usage: peers_bench [-b BATCHES] [-n CALLS] [-k KILL_RECORDS]\n");
			return 2;
		}
	}
	if (!nbatch || !ncalls || nkill < ncalls) {
		std::fprintf(stderr, "peers_bench: need BATCHES, CALLS > 0 and KILL_RECORDS >= CALLS\n");
		return 2;
	}
	if (!mkdtemp(tmpl))
		return 1;
	dir = tmpl;
	bt_timer_init();
	bt_pin((unsigned)bt_ncpu() - 1);
	bt_print_machine(stdout);
	std::printf("peers_bench: %lu batches of %lu calls, pinned to CPU %d; ns per call "
		    "(min / p10 / median over batches)\n", nbatch, ncalls, bt_ncpu() - 1);
#if !HAVE_SPDLOG && !HAVE_NANOLOG
	std::printf("peers_bench: spdlog absent (install libspdlog-dev)\n");
#endif
#if !HAVE_QUILL && !HAVE_NANOLOG
	std::printf("peers_bench: Quill absent (fetch github:odygrd/quill into PEERS_DIR)\n");
#endif
#if !HAVE_FMTLOG && !HAVE_NANOLOG
	std::printf("peers_bench: fmtlog absent (fetch github:MengRao/fmtlog into PEERS_DIR)\n");
#endif
#if !HAVE_NANOLOG && !defined(NANOLOG_BUILT)
	std::printf("peers_bench: NanoLog absent (fetch github:PlatformLab/NanoLog into PEERS_DIR, "
		    "make -C runtime)\n");
#endif
	/* Each logger in a child of its own: their threads and files never
	 * share a process (nor the pinned CPU) with the next one's. */
	for (const struct row &r : rows) {
		int fd[2];
		pid_t pid;

		if (pipe(fd))
			return 1;
		std::fflush(stdout);   /* the child must not print it again */
		pid = HAVE_NANOLOG ? 0 : fork();
		if (pid == 0) {
			std::string file = dir + "/timed.log";
			struct bt_stat3 clk, tck, s;

			close(fd[0]);
			bt_pin((unsigned)bt_ncpu() - 1);
			r.setup(file.c_str());
			clk = bt_best(op_clock, nbatch, ncalls, "peers_bench");
			tck = bt_best(op_tick, nbatch, ncalls, "peers_bench");
			s = measure(&r);
			std::printf("  %-40s %7.2f %7.2f %7.2f   %.2fx clock  %.2fx rdtsc\n", r.name,
				    s.min, s.p10, s.p50, s.min / clk.min, s.min / tck.min);
			std::fflush(stdout);
			if (HAVE_NANOLOG) {
				close(fd[0]);
				continue;
			}
			_exit(0);
		}
		close(fd[1]);
		close(fd[0]);
		waitpid(pid, nullptr, 0);
	}
	if (HAVE_NANOLOG) {
		std::printf("  %-40s after SIGKILL: not measured (its logging thread "
			    "does not exist in a fork child)\n", rows[0].name);
		return 0;
	}
	std::printf("\nafter SIGKILL right after the last of %lu calls:\n", nkill / ncalls * ncalls);
	std::fflush(stdout);
	for (const struct row &r : rows) {
		std::string file = dir + "/kill." + std::to_string(&r - rows) + ".log";

		if (std::strstr(r.name, "null sink") || r.batch == op_bb_kv || r.batch == op_bb_kv_i64)
			continue;
		after_kill(&r, file.c_str());
	}
	std::fflush(stdout);
	std::string rm = "rm -rf '" + dir + "'";
	if (std::system(rm.c_str()))
		return 1;
	return 0;
}
