/* SPDX-License-Identifier: MIT */
/*
 * bb-extract - read a libblackbox box, live or post mortem.
 *
 * Built only on the reader API (blackbox/reader.h): it never parses the
 * box layout itself.  Records of all rings come merged in timestamp order
 * and go out as text, JSON Lines or a CBOR sequence; the verification
 * report (what was intact, torn, overwritten, corrupt, dropped) goes to
 * stderr for text and into a final summary object otherwise.
 *
 * Exit status: see usage() and bb-extract(1).
 */
#include <blackbox.h>
#include <blackbox/reader.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "extract.h"
#include "resolve.h"
#include "sandbox.h"

/* Poll period of --follow. */
#define FOLLOW_POLL_NS (50 * 1000 * 1000)

/* Where a box comes from: a pid, a path, or an entry of a directory. */
struct src {
	enum { SRC_PID, SRC_PATH, SRC_DIRENT } kind;
	pid_t pid;
	const char *path;   /* SRC_PATH */
	const char *dir;    /* SRC_PID, SRC_DIRENT (NULL = default) */
	int dirfd;          /* SRC_DIRENT */
	const char *name;   /* SRC_DIRENT */
};

static volatile sig_atomic_t stop_requested;

static void on_signal(int sig)
{
	(void)sig;
	stop_requested = 1;
}

/*
 * "bb-extract: <what>: <message>" on stderr.  Messages quote file names
 * and strings from boxes (comm, thread names, the reader's messages): the
 * whole line goes through the library's terminal escaper, so none of them
 * reaches the terminal raw.
 */
void bbx_msg(const char *what, const char *fmt, ...)
{
	char line[8192], safe[4 * sizeof(line) + 1];
	va_list ap;
	int n;

	n = snprintf(line, sizeof(line), "%s: %s%s", PROG, what ? what : "",
		     what ? ": " : "");
	if (n < 0 || (size_t)n >= sizeof(line))
		n = 0;
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	bb_escape_text(line, strlen(line), safe, sizeof(safe));
	fprintf(stderr, "%s\n", safe);
}

/* A name from a box or a path (at most 8 KiB: the longest path is 4 KiB),
 * escaped into the output: 4 bytes per input byte at most. */
void bbx_put_escaped(struct bbx_out *o, const char *s, size_t n)
{
	if (n > 8192)
		n = 8192;
	bbx_out_commit(o, bb_escape_text(s, n, bbx_out_reserve(o, 4 * n + 1), 4 * n + 1));
}

static void usage(FILE *f)
{
	fprintf(f,
"Usage: %s [OPTION]... PID\n"
"       %s [OPTION]... --path FILE\n"
"       %s [OPTION]... --all | --list\n"
"       %s [OPTION]... --journal | --journal-directory DIR  --list | PID\n"
"Read the flight-recorder box of process PID (the box it maps now, or the\n"
"newest one it left), of a box file, or of every box in the directory.\n"
"The crash record (if any) comes first, then the state table, then the\n"
"records of all rings merged in timestamp order.\n"
"\n"
"  -p, --path FILE   read the box file FILE (e.g. a --save copy)\n"
"  -d, --dir DIR     look for boxes in DIR instead of %s\n"
"  -l, --list        list every box: pid, comm, state, size, rings, records,\n"
"                    dropped, age\n"
"  -a, --all         extract every box in the directory\n"
"  -j, --json        JSON Lines: one object per record, then {\"summary\":...}\n"
"  -c, --cbor        RFC 8742 CBOR sequence: one map per record, then summary\n"
"  -s, --save FILE   write a consistent copy of the box to FILE (never\n"
"                    overwrites an existing file)\n"
"  -f, --follow      print new records as they are committed until the owner\n"
"                    is gone (or SIGINT); report records lost in between\n"
"  -q, --quiet       no verification report on stderr unless damage is found\n"
"      --any-owner   accept a box file owned by another uid than its header's\n"
"      --journal     read the boxes bb-reap --journal put into the local\n"
"                    journal: --list them, or extract PID's\n"
"      --journal-directory DIR  the same from the journal files in DIR\n"
"                    (a collector's systemd-journal-remote output)\n"
"      --machine ID  with PID: the box of that machine (_MACHINE_ID)\n"
"      --boot ID     with PID: the box of that boot (BB_BOOT_ID)\n"
"      --no-symbols  crash frames as module+offset only (no symboliser runs)\n"
"      --debug-dir DIR  look for debug files in DIR first (DIR/.build-id/xx/\n"
"                    yyyy.debug, DIR/<module's directory>/<debuglink>); again\n"
"                    for more directories\n"
"      --debuginfod  let the symboliser ask the debuginfod servers of\n"
"                    DEBUGINFOD_URLS for missing debug files (off by default)\n"
"      --uring       write output with io_uring when the kernel allows it\n"
"      --no-uring    write output with write(2) (the default; also\n"
"                    BB_EXTRACT_NO_URING=1)\n"
"  -h, --help        this help\n"
"  -V, --version     version\n"
"\n"
"Options may stand before or after PID.\n"
"\n"
"Exit status:\n"
"  0  read cleanly: every record printed is intact (a record torn by the\n"
"     owner's death and records overwritten while reading are reported,\n"
"     they are the ring's normal contract, not damage)\n"
"  1  output or --save failed (write error, file exists, out of memory)\n"
"  2  usage error\n"
"  3  box damaged: corrupt records (CRC mismatches included), corrupt state\n"
"     slots, a corrupt crash area or malformed values were skipped; the\n"
"     output is partial (a complete crash record is not damage)\n"
"  4  box not found, not readable, not a valid box, or it changed size\n"
"     while being read\n"
"  5  PID: boxes of different owners claim it and none can be trusted over\n"
"     the others; they are named: read one with --path\n",
		PROG, PROG, PROG, PROG, BB_DEFAULT_DIR);
}

static void usage_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));

static void usage_error(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", PROG);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nTry '%s --help'.\n", PROG);
	exit(EXIT_USAGE);
}

/* ---- opening -------------------------------------------------------- */

static int src_open(const struct src *s, unsigned flags, struct bb_reader **r,
		    char *err, size_t errlen)
{
	switch (s->kind) {
	case SRC_PID:
		return bb_reader_open_pid(s->pid, s->dir, flags, r, err, errlen);
	case SRC_PATH:
		return bb_reader_open_path(s->path, flags, r, err, errlen);
	default:
		return bb_reader_openat(s->dirfd, s->name, flags, r, err, errlen);
	}
}

static void src_label(const struct src *s, char *buf, size_t len)
{
	switch (s->kind) {
	case SRC_PID:
		snprintf(buf, len, "pid %d", (int)s->pid);
		break;
	case SRC_PATH:
		snprintf(buf, len, "%s", s->path);
		break;
	default:
		snprintf(buf, len, "%s/%s", s->dir ? s->dir : BB_DEFAULT_DIR, s->name);
	}
}

/*
 * Open a box and decide how to read it: the live mapping while its owner
 * is alive (or for --follow), otherwise a snapshot (BB_OPEN_SNAPSHOT), so
 * a post-mortem read sees an immutable copy that nobody can truncate or
 * rewrite under us.  Returns 0 and *live, or a negative errno after
 * saying what is wrong (unless @quiet_enodata and the box is still being
 * created).
 */
static int open_box(const struct src *s, const struct opts *o, bool follow,
		    struct bb_reader **out, int *live, bool quiet_enodata)
{
	unsigned flags = o->any_owner ? BB_OPEN_ANY_OWNER : 0;
	char err[8192] = "", label[4200];
	struct bb_reader *r, *snap;
	int ret;

	ret = src_open(s, flags, &r, err, sizeof(err));
	if (ret < 0) {
		if (ret == -ENODATA && quiet_enodata)
			return ret;
		src_label(s, label, sizeof(label));
		if (ret == -ENOTUNIQ)
			bbx_msg(NULL, "%s", err); /* names every claim */
		else if (ret == -ESRCH && s->kind == SRC_PID && !err[0])
			bbx_msg(label, "no box of this process in %s",
			    s->dir ? s->dir : BB_DEFAULT_DIR);
		else if (err[0]) /* the reader's message names the file */
			bbx_msg(NULL, "%s%s", err, ret == -EPERM && !o->any_owner
			    ? " (--any-owner reads it anyway)" : "");
		else
			bbx_msg(label, "%s", strerror(-ret));
		return ret;
	}
	*live = bb_reader_liveness(r);
	if (*live != BB_OWNER_ALIVE && !follow &&
	    src_open(s, flags | BB_OPEN_SNAPSHOT, &snap, err, sizeof(err)) == 0) {
		const struct bb_box_info *a = bb_reader_info(r), *b = bb_reader_info(snap);

		/* the same file (not a newer box of the pid, not a replacement) */
		if (a->file_dev == b->file_dev && a->file_ino == b->file_ino) {
			bb_reader_close(r);
			r = snap;
		} else {
			bb_reader_close(snap);
		}
	}
	*out = r;
	return 0;
}

/* ---- extraction ----------------------------------------------------- */

static int walk(struct ctx *c, unsigned flags)
{
	bb_record_fn fn = c->opt->fmt == FMT_TEXT ? bbx_text_record : bbx_struct_record;
	int ret = bb_reader_walk(c->r, BB_WALK_MERGE | flags, fn, c);

	if (ret == -ENOMEM)
		bbx_msg(c->info->path, "out of memory");
	else if (ret == -ESTALE)
		bbx_msg(c->info->path, "box changed size while being read");
	else if (ret < 0 && ret != c->out->err)
		bbx_msg(c->info->path, "%s", strerror(-ret));
	return ret;
}

static void sleep_poll(void)
{
	struct timespec ts = { 0, FOLLOW_POLL_NS };

	nanosleep(&ts, NULL); /* a signal cuts it short: fine */
}

/* --follow: walk again every poll period until the owner is gone. */
static int follow(struct ctx *c)
{
	struct bb_ring_stats tot;
	uint64_t seen;
	int ret, live;

	bb_reader_total_stats(c->r, &tot);
	seen = tot.overwritten;
	for (;;) {
		if (bbx_out_flush(c->out))
			return c->out->err;
		live = bb_reader_liveness(c->r);
		sleep_poll();
		/* after the owner is gone (or on SIGINT) one last walk drains */
		ret = walk(c, BB_WALK_FOLLOW);
		if (ret)
			return ret;
		bb_reader_total_stats(c->r, &tot);
		if (tot.overwritten != seen) {
			/* stats count laps (gaps), not records: the records
			 * in a gap were overwritten before anyone read them */
			c->lapped += tot.overwritten - seen;
			bbx_msg(c->info->path, "records lost: the writer overwrote "
			    "them before they could be read");
			seen = tot.overwritten;
		}
		if (live != BB_OWNER_ALIVE || stop_requested)
			return 0;
	}
}

/* Extract one open box.  Returns an exit code. */
int bbx_extract(const struct opts *o, struct bbx_out *out, struct bb_reader *r, int live,
		bool with_pid)
{
	struct ctx c = { .opt = o, .out = out, .r = r, .with_pid = with_pid };
	struct bb_ring_stats tot;
	int ret, code;

	c.info = bb_reader_info(r);
	bbx_em_init(&c.em, out, o->fmt == FMT_CBOR);
	if (with_pid && o->fmt == FMT_TEXT) {
		char head[4400];
		int n = snprintf(head, sizeof(head), "== %s: pid %d (%s), %s ==",
				 c.info->path, (int)c.info->pid, c.info->comm,
				 bbx_state_name(live));

		/* path and comm are anyone's bytes */
		bbx_put_escaped(out, head, n > 0 ? (size_t)n : 0);
		bbx_out_char(out, '\n');
	}
	ret = bbx_preamble(&c);
	if (!ret)
		ret = walk(&c, o->follow ? BB_WALK_FOLLOW : 0);
	if (!ret && o->follow)
		ret = follow(&c);
	free(c.scratch);
	if (ret == -ENOMEM)
		return EXIT_FAILURE_;
	if (ret < 0 && ret != out->err) /* the box, not the output: said already */
		return bbx_out_flush(out), EXIT_NOBOX;
	if (o->follow)
		live = bb_reader_liveness(r);
	bb_reader_total_stats(r, &tot);
	code = bbx_is_damaged(&c, &tot) ? EXIT_DAMAGED : EXIT_CLEAN;
	if (o->fmt == FMT_TEXT) {
		if (bbx_out_flush(out) == 0)
			bbx_summary_text(&c, live);
	} else {
		bbx_summary_struct(&c, live, code);
	}
	return code;
}

int bbx_save(const struct opts *o, struct bb_reader *r)
{
	const struct bb_box_info *in = bb_reader_info(r);
	int fd, ret;

	fd = open(o->save, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0) {
		bbx_msg(o->save, "%s%s", strerror(errno),
		    errno == EEXIST ? " (never overwritten)" : "");
		return EXIT_FAILURE_;
	}
	ret = bb_reader_save(r, fd);
	if (!ret && fsync(fd) < 0)
		ret = -errno;
	if (close(fd) < 0 && !ret)
		ret = -errno;
	if (ret) {
		bbx_msg(o->save, "cannot save %s: %s", in->path, ret == -ESTALE ?
		    "box changed size while being read" : strerror(-ret));
		unlink(o->save);
		return EXIT_FAILURE_;
	}
	if (!o->quiet)
		bbx_msg(in->path, "saved to %s", o->save);
	return EXIT_CLEAN;
}

static int do_all(const struct opts *o, struct bbx_out *out)
{
	const char *dir = o->dir ? o->dir : BB_DEFAULT_DIR;
	struct bb_box_entry *v = NULL;
	int code, worst = EXIT_CLEAN, dfd, opened = 0, failed = 0;
	size_t n = 0;

	code = bbx_scan(o, &v, &n);
	if (code)
		return code;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		bbx_msg(dir, "%s", strerror(errno));
		bb_reader_scan_free(v);
		return EXIT_NOBOX;
	}
	/* by pid and creation time (the scan's order) */
	for (size_t i = 0; i < n && !stop_requested; i++) {
		struct src src = { .kind = SRC_DIRENT, .dirfd = dfd,
				   .name = v[i].name, .dir = o->dir };
		struct bb_reader *r;
		int live;

		if (v[i].error) {
			bbx_say_not_a_box(&v[i]);
			failed += v[i].error != -ENODATA;
			continue;
		}
		if (open_box(&src, o, false, &r, &live, true) < 0) {
			failed++;
			continue;
		}
		opened++;
		code = bbx_extract(o, out, r, live, true);
		bb_reader_close(r);
		if (code == EXIT_FAILURE_ || out->err) {
			close(dfd);
			bb_reader_scan_free(v);
			return EXIT_FAILURE_;
		}
		if (code > worst)
			worst = code;
	}
	close(dfd);
	bb_reader_scan_free(v);
	if (!opened && failed)
		return EXIT_NOBOX;
	if (!opened && !o->quiet)
		bbx_msg(dir, "no boxes");
	return worst;
}

/* ---- main ----------------------------------------------------------- */

static pid_t parse_pid(const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v <= 0 || v > INT_MAX)
		usage_error("'%s' is not a process id", s);
	return (pid_t)v;
}

/* --debug-dir: an existing directory, made absolute (libdw reads a relative
 * entry as a subdirectory of each module's), without ':' (its separator). */
static void add_debug_dir(struct opts *o, const char *dir)
{
	struct stat st;
	char *abs;

	if (o->ndebug_dirs == DEBUG_DIRS_MAX)
		usage_error("--debug-dir given more than %d times", DEBUG_DIRS_MAX);
	if (stat(dir, &st) || !S_ISDIR(st.st_mode))
		usage_error("--debug-dir '%s': not a directory", dir);
	abs = realpath(dir, NULL);
	if (!abs)
		usage_error("--debug-dir '%s': %s", dir, strerror(errno));
	if (strchr(abs, ':'))
		usage_error("--debug-dir '%s': a ':' cannot be searched", abs);
	o->debug_dirs[o->ndebug_dirs++] = abs;
}

static void parse_args(int argc, char **argv, struct opts *o)
{
	enum { OPT_ANY_OWNER = 256, OPT_NO_URING, OPT_URING, OPT_NO_SYMBOLS, OPT_DEBUG_DIR,
	       OPT_DEBUGINFOD, OPT_JOURNAL, OPT_JOURNAL_DIR, OPT_MACHINE, OPT_BOOT };
	static const struct option lopts[] = {
		{ "path",      required_argument, NULL, 'p' },
		{ "dir",       required_argument, NULL, 'd' },
		{ "list",      no_argument,       NULL, 'l' },
		{ "all",       no_argument,       NULL, 'a' },
		{ "json",      no_argument,       NULL, 'j' },
		{ "cbor",      no_argument,       NULL, 'c' },
		{ "save",      required_argument, NULL, 's' },
		{ "follow",    no_argument,       NULL, 'f' },
		{ "quiet",     no_argument,       NULL, 'q' },
		{ "any-owner", no_argument,       NULL, OPT_ANY_OWNER },
		{ "no-uring",  no_argument,       NULL, OPT_NO_URING },
		{ "uring",     no_argument,       NULL, OPT_URING },
		{ "no-symbols", no_argument,      NULL, OPT_NO_SYMBOLS },
		{ "debug-dir", required_argument, NULL, OPT_DEBUG_DIR },
		{ "debuginfod", no_argument,      NULL, OPT_DEBUGINFOD },
		{ "journal",   no_argument,       NULL, OPT_JOURNAL },
		{ "journal-directory", required_argument, NULL, OPT_JOURNAL_DIR },
		{ "machine",   required_argument, NULL, OPT_MACHINE },
		{ "boot",      required_argument, NULL, OPT_BOOT },
		{ "help",      no_argument,       NULL, 'h' },
		{ "version",   no_argument,       NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int ch, nsrc;

	/* "-" first: non-options come back in order as 1, whatever
	 * POSIXLY_CORRECT says, so a pid may stand anywhere */
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "-p:d:lajcs:fqhV", lopts, NULL)) != -1) {
		switch (ch) {
		case 1:
			if (o->pid)
				usage_error("more than one pid ('%s')", optarg);
			o->pid = parse_pid(optarg);
			break;
		case 'p': o->path = optarg; break;
		case 'd': o->dir = optarg; break;
		case 'l': o->list = true; break;
		case 'a': o->all = true; break;
		case 'j':
			if (o->fmt == FMT_CBOR)
				usage_error("--json and --cbor exclude each other");
			o->fmt = FMT_JSON;
			break;
		case 'c':
			if (o->fmt == FMT_JSON)
				usage_error("--json and --cbor exclude each other");
			o->fmt = FMT_CBOR;
			break;
		case 's': o->save = optarg; break;
		case 'f': o->follow = true; break;
		case 'q': o->quiet = true; break;
		case OPT_ANY_OWNER: o->any_owner = true; break;
		case OPT_NO_URING: o->uring = false; break;
		case OPT_URING: o->uring = true; break;
		case OPT_NO_SYMBOLS: o->no_symbols = true; break;
		case OPT_DEBUG_DIR: add_debug_dir(o, optarg); break;
		case OPT_DEBUGINFOD: o->debuginfod = true; break;
		case OPT_JOURNAL: o->journal = true; break;
		case OPT_JOURNAL_DIR: o->journal_dir = optarg; break;
		case OPT_MACHINE: o->machine = optarg; break;
		case OPT_BOOT: o->boot = optarg; break;
		case 'h':
			usage(stdout);
			exit(EXIT_CLEAN);
		case 'V':
			printf("%s (libblackbox) %d.%d.%d, box format %d.%d\n", PROG,
			       BB_VERSION_MAJOR, BB_VERSION_MINOR, BB_VERSION_PATCH,
			       BB_FORMAT_MAJOR, BB_FORMAT_MINOR);
			exit(EXIT_CLEAN);
		default:
			if (optopt && strchr("pds", optopt))
				usage_error("option '-%c' needs an argument", optopt);
			if (optopt >= 256 || optopt == 0)
				usage_error("unknown or incomplete option '%s'",
					    argv[optind - 1]);
			usage_error("unknown option '-%c'", optopt);
		}
	}
	for (; optind < argc; optind++) { /* after "--" */
		if (o->pid)
			usage_error("more than one pid ('%s')", argv[optind]);
		o->pid = parse_pid(argv[optind]);
	}

	if (o->journal || o->journal_dir) {
#ifndef BB_HAVE_JOURNAL
		usage_error("--journal: built without libsystemd");
#endif
		if (o->journal && o->journal_dir)
			usage_error("give one of --journal and --journal-directory");
		if (o->path || o->all || o->follow || o->dir)
			usage_error("--journal reads entries: give --list or a PID, without "
				    "--path, --all, --follow or --dir");
	} else if (o->machine || o->boot) {
		usage_error("--machine and --boot choose among journal entries: give --journal "
			    "or --journal-directory");
	}
	nsrc = !!o->pid + !!o->path + o->list + o->all;
	if (nsrc == 0)
		usage_error("nothing to read: give a PID, --path FILE, --list or --all");
	if (nsrc > 1)
		usage_error("give only one of PID, --path, --list, --all");
	if (o->follow && (o->list || o->all))
		usage_error("--follow reads one box: give a PID or --path");
	if (o->save && (o->list || o->all || o->follow))
		usage_error("--save copies one box: give a PID or --path, without --follow");
	if (o->fmt == FMT_CBOR && !o->save && isatty(STDOUT_FILENO))
		usage_error("refusing to write CBOR to a terminal (redirect or pipe it)");
}

int main(int argc, char **argv)
{
	/*
	 * write(2) by default: bench/extract_bench.sh measured io_uring no
	 * faster for output to a file on a 2-CPU machine (its io-wq worker
	 * competes with formatting for the other CPU); --uring opts in.
	 */
	struct opts o = { .fmt = FMT_TEXT, .uring = false };
	struct bbx_out out;
	struct bb_reader *r = NULL;
	struct sigaction sa;
	const char *env = getenv("BB_EXTRACT_NO_URING");
	int code, live = 0;

#ifdef BB_HAVE_LIBDW
	/* the symbolising child: bb-extract started again by bbx_sandbox_start() */
	if (argc == 2 && !strcmp(argv[1], BBX_SANDBOX_CHILD_ARG))
		return bbx_resolve_main();
#endif
	if (env && *env && strcmp(env, "0"))
		o.uring = false;
	parse_args(argc, argv, &o);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

#ifdef BB_HAVE_JOURNAL
	if (o.journal || o.journal_dir)
		return bbx_journal_main(&o);
#endif
	if (!o.list && !o.all) {
		struct src src = { .kind = o.path ? SRC_PATH : SRC_PID,
				   .pid = o.pid, .path = o.path, .dir = o.dir };

		int ret = open_box(&src, &o, o.follow, &r, &live, false);

		if (ret < 0)
			return ret == -ENOTUNIQ ? EXIT_AMBIGUOUS : EXIT_NOBOX;
		if (o.save) {
			code = bbx_save(&o, r);
			bb_reader_close(r);
			return code;
		}
	}
	/* --follow output is small and must appear at once: plain writes */
	if (bbx_out_open(&out, STDOUT_FILENO, o.uring && !o.follow) < 0) {
		bbx_msg(NULL, "out of memory");
		bb_reader_close(r);
		return EXIT_FAILURE_;
	}
	if (o.list)
		code = bbx_list(&o, &out);
	else if (o.all)
		code = do_all(&o, &out);
	else
		code = bbx_extract(&o, &out, r, live, false);
	bb_reader_close(r);
	if (bbx_out_close(&out) < 0) {
		if (out.err != -EPIPE)
			bbx_msg("standard output", "%s", strerror(-out.err));
		return EXIT_FAILURE_;
	}
	return code;
}
