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
 * This file reads the command line and chooses what to do; the work on
 * boxes is in extract.c, --list in list.c, --journal in journal-*.c.
 *
 * Exit status: see usage() and bb-extract(1).
 */
#include <blackbox.h>
#include <blackbox/reader.h>

#include <errno.h>
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

static void on_signal(int sig)
{
	(void)sig;
	bbx_stop_requested = 1;
}

static void usage(FILE *f)
{
	fprintf(f,
"Usage: %s [OPTION]... PID\n"
"       %s [OPTION]... --path FILE\n"
"       %s [OPTION]... --all | --list\n"
"       %s [OPTION]... --journal | --journal-directory DIR  --list | --groups |\n"
"                    PID | --cursor C | --group ID\n"
"Read the flight-recorder box of process PID (the box it maps now, or the\n"
"newest one it left), of a box file, or of every box in the directory.\n"
"The crash record (if any) comes first, then the state table, then the\n"
"records of all rings merged in timestamp order.\n"
"\n"
"  -p, --path FILE   read the box file FILE (e.g. a --save copy)\n"
"  -d, --dir DIR     look for boxes in DIR instead of $BLACKBOX_DIR or %s\n"
"  -l, --list        list every box: pid, comm, state, size, rings, records,\n"
"                    dropped, age\n"
"  -a, --all         extract every box in the directory\n"
"  -j, --json        JSON Lines: one object per record, then {\"summary\":...}\n"
"  -c, --cbor        RFC 8742 CBOR sequence: one map per record, then summary\n"
"      --perfetto    a Perfetto trace (protobuf) of the box: a track per\n"
"                    thread, records as instants, spans as slices, the crash\n"
"                    (open it in ui.perfetto.dev; redirect it to a .pftrace)\n"
"  -s, --save FILE   write a consistent copy of the box to FILE (never\n"
"                    overwrites an existing file)\n"
"      --snapshot    ask the running process PID for a snapshot: bb-reap\n"
"                    --watch archives a copy and sends a journal entry\n"
"  -t, --threads     per thread: tid, name, records, its last record and how\n"
"                    long ago it was written (from now for a live owner,\n"
"                    else from its death); a hung thread shows as an old one\n"
"  -f, --follow      print new records as they are committed until the owner\n"
"                    is gone (or SIGINT); report records lost in between\n"
"  -q, --quiet       no verification report on stderr unless damage is found\n",
		PROG, PROG, PROG, PROG, BB_DEFAULT_DIR);
	fprintf(f,
"      --any-owner   accept a box file owned by another uid than its header's\n"
"      --journal     read the boxes bb-reap --journal put into the local\n"
"                    journal: --list them, or extract PID's\n"
"      --journal-directory DIR  the same from the journal files in DIR\n"
"                    (a collector's systemd-journal-remote output); again\n"
"                    to read several collectors as one\n"
"      --machine ID  with PID: the box of that machine (_MACHINE_ID); with\n"
"                    --list, --groups, --group: that machine's entries\n"
"      --boot ID     with PID: the box of that boot (BB_BOOT_ID)\n"
"      --cursor C    the box of that journal entry (named when entries\n"
"                    disagree, shown by --list --json)\n"
"      --groups      with --journal: the crash groups (one bug each): deaths,\n"
"                    hosts, first and last seen, how it died, top frames,\n"
"                    releases (and those it was not seen in), builds, units\n"
"      --group ID    with --list or --groups: that group's entries only;\n"
"                    alone: extract the newest box of that group\n"
"      --since T, --until T  with --list, --groups, --group: entries from,\n"
"                    until T (YYYY-MM-DD[THH:MM[:SS]] UTC, @EPOCH, -N[smhd])\n"
"      --comm NAME, --unit UNIT, --release R  the same, of that command,\n"
"                    unit, release (BB_RELEASE)\n"
"      --state crashed|oom-kill|orphaned  the same, that died so\n"
"      --wide        --list, --groups: every column (default: 120 at most)\n"
"      --untrusted   with --journal --list: also the entries with our\n"
"                    MESSAGE_ID that root's bb-reap did not send, flagged\n"
"      --no-symbols  crash frames as module+offset only (no symboliser runs)\n"
"      --debug-dir DIR  look for debug files in DIR first (DIR/.build-id/xx/\n"
"                    yyyy.debug, DIR/<module's directory>/<debuglink>); again\n"
"                    for more directories\n"
"      --debuginfod  let the symboliser ask the debuginfod servers of\n"
"                    DEBUGINFOD_URLS for missing debug files (off by default)\n"
"      --raw-names   crash frames' function names as the binary has them\n"
"                    (C++ names mangled)\n"
"      --uring       write output with io_uring when the kernel allows it\n"
"      --no-uring    write output with write(2) (the default)\n"
"  -h, --help        this help\n"
"  -V, --version     version\n"
"\n");
	fprintf(f,
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
"     the others; they are named: read one with --path (journal entries\n"
"     that disagree, or come from several senders: --cursor)\n");
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
	exit(BBX_EXIT_USAGE);
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
static void add_debug_dir(struct bbx_opts *o, const char *dir)
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

enum { OPT_ANY_OWNER = 256, OPT_NO_URING, OPT_URING, OPT_NO_SYMBOLS, OPT_DEBUG_DIR,
       OPT_DEBUGINFOD, OPT_JOURNAL, OPT_JOURNAL_DIR, OPT_MACHINE, OPT_BOOT, OPT_CURSOR,
       OPT_UNTRUSTED, OPT_RAW_NAMES, OPT_GROUPS, OPT_GROUP, OPT_SINCE, OPT_UNTIL, OPT_COMM,
       OPT_UNIT, OPT_STATE, OPT_PERFETTO, OPT_SNAPSHOT, OPT_RELEASE, OPT_WIDE };

/*
 * A point in time for --since / --until, as CLOCK_REALTIME microseconds:
 * "YYYY-MM-DD", "YYYY-MM-DDTHH:MM[:SS]" (UTC; a space for the T, a
 * trailing Z allowed), "@SECONDS" since the epoch, "-N" followed by s, m,
 * h or d: that long ago.
 */
static int64_t parse_time(const char *opt, const char *s)
{
	struct tm tm = { 0 };
	char *end;
	long long v;
	int n = 0;

	errno = 0;
	if (s[0] == '@' || s[0] == '-') {
		static const char units[] = "smhd";
		static const long long mult[] = { 1, 60, 3600, 86400 };
		const char *u;

		v = strtoll(s + 1, &end, 10);
		if (errno || end == s + 1 || v < 0 || v > 100000LL * 86400)
			usage_error("%s '%s': not a time", opt, s);
		if (s[0] == '@' && !*end)
			return v * 1000000;
		if (s[0] == '-' && *end && !end[1] && (u = strchr(units, *end)))
			return (int64_t)time(NULL) * 1000000 - v * mult[u - units] * 1000000;
		usage_error("%s '%s': not a time", opt, s);
		return 0;
	}
	if (sscanf(s, "%4d-%2d-%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &n) != 3)
		usage_error("%s '%s': not a time (YYYY-MM-DD[THH:MM[:SS]], @EPOCH, -N[smhd])",
			    opt, s);
	s += n;
	if (*s == 'T' || *s == ' ') {
		n = 0;
		if (sscanf(s + 1, "%2d:%2d%n", &tm.tm_hour, &tm.tm_min, &n) != 2)
			usage_error("%s: not a time of day after the date", opt);
		s += 1 + n;
		if (*s == ':') {
			n = 0;
			if (sscanf(s + 1, "%2d%n", &tm.tm_sec, &n) != 1)
				usage_error("%s: not seconds after the minutes", opt);
			s += 1 + n;
		}
	}
	if (*s == 'Z')
		s++;
	if (*s || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 ||
	    tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
		usage_error("%s: not a time (YYYY-MM-DD[THH:MM[:SS]], @EPOCH, -N[smhd])", opt);
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	return (int64_t)timegm(&tm) * 1000000;
}

/* One option from getopt_long() (1: a pid) into @o; exits on errors,
 * --help and --version. */
static void set_option(int ch, char **argv, struct bbx_opts *o)
{
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
		if (o->fmt != BBX_FMT_TEXT && o->fmt != BBX_FMT_JSON)
			usage_error("give one of --json, --cbor and --perfetto");
		o->fmt = BBX_FMT_JSON;
		break;
	case 'c':
		if (o->fmt != BBX_FMT_TEXT && o->fmt != BBX_FMT_CBOR)
			usage_error("give one of --json, --cbor and --perfetto");
		o->fmt = BBX_FMT_CBOR;
		break;
	case OPT_PERFETTO:
		if (o->fmt != BBX_FMT_TEXT && o->fmt != BBX_FMT_PERFETTO)
			usage_error("give one of --json, --cbor and --perfetto");
		o->fmt = BBX_FMT_PERFETTO;
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
	case OPT_RAW_NAMES: o->raw_names = true; break;
	case OPT_SNAPSHOT: o->snapshot = true; break;
	case 't': o->threads = true; break;
	case OPT_JOURNAL: o->journal = true; break;
	case OPT_JOURNAL_DIR:
		if (o->njournal_dirs == BBX_JOURNAL_DIRS_MAX)
			usage_error("--journal-directory: at most %d", BBX_JOURNAL_DIRS_MAX);
		o->journal_dirs[o->njournal_dirs++] = optarg;
		o->journal_dir = o->journal_dirs[0];
		break;
	case OPT_MACHINE: o->machine = optarg; break;
	case OPT_BOOT: o->boot = optarg; break;
	case OPT_CURSOR: o->cursor = optarg; break;
	case OPT_UNTRUSTED: o->untrusted = true; break;
	case OPT_GROUPS: o->groups = true; break;
	case OPT_GROUP: o->group = optarg; break;
	case OPT_SINCE: o->since_us = parse_time("--since", optarg); break;
	case OPT_UNTIL: o->until_us = parse_time("--until", optarg); break;
	case OPT_COMM: o->comm = optarg; break;
	case OPT_UNIT: o->unit = optarg; break;
	case OPT_STATE:
		if (strcmp(optarg, "crashed") && strcmp(optarg, "orphaned") &&
		    strcmp(optarg, "oom-kill"))
			usage_error("--state '%s': crashed, oom-kill or orphaned", optarg);
		o->state = optarg;
		break;
	case OPT_RELEASE: o->release = optarg; break;
	case OPT_WIDE: o->wide = true; break;
	case 'h':
		usage(stdout);
		exit(BBX_EXIT_CLEAN);
	case 'V':
		printf("%s (libblackbox) %d.%d.%d, box format %d.%d\n", PROG,
		       BB_VERSION_MAJOR, BB_VERSION_MINOR, BB_VERSION_PATCH,
		       BB_FORMAT_MAJOR, BB_FORMAT_MINOR);
		exit(BBX_EXIT_CLEAN);
	default:
		if (optopt && strchr("pds", optopt))
			usage_error("option '-%c' needs an argument", optopt);
		if (optopt >= 256 || optopt == 0)
			usage_error("unknown or incomplete option '%s'", argv[optind - 1]);
		usage_error("unknown option '-%c'", optopt);
	}
}

/* What no single option can check: the options that go together. */
static void check_args(const struct bbx_opts *o)
{
	int nsrc;

	if (o->journal || o->journal_dir) {
#ifndef BB_HAVE_JOURNAL
		usage_error("--journal: built without libsystemd");
#endif
		if (o->journal && o->journal_dir)
			usage_error("give one of --journal and --journal-directory");
		if (o->path || o->all || o->follow || o->dir)
			usage_error("--journal reads entries: give --list, a PID or --cursor, "
				    "without --path, --all, --follow or --dir");
		if (o->cursor && o->list)
			usage_error("--cursor chooses one entry: give it without --list");
		if (o->untrusted && !o->list)
			usage_error("--untrusted lists entries: give it with --list (only "
				    "bb-reap's entries are ever extracted)");
		if (o->groups && o->list)
			usage_error("give one of --list and --groups");
		if ((o->since_us || o->until_us || o->comm || o->unit || o->state || o->release) &&
		    !(o->list || o->groups || o->group))
			usage_error("--since, --until, --comm, --unit, --state and --release choose "
				    "entries for --list, --groups or --group");
		if (o->wide && !(o->list || o->groups))
			usage_error("--wide widens --list and --groups: give it with one of them");
		if (o->group && (o->pid || o->cursor))
			usage_error("--group chooses a box itself: give it without PID or --cursor");
	} else if (o->machine || o->boot || o->cursor || o->untrusted || o->groups || o->group ||
		   o->since_us || o->until_us || o->comm || o->unit || o->state || o->release ||
		   o->wide) {
		usage_error("--machine, --boot, --cursor, --untrusted, --groups, --group, "
			    "--since, --until, --comm, --unit, --state, --release and --wide choose "
			    "among journal entries: give --journal or --journal-directory");
	}
	nsrc = !!o->pid + !!o->path + (o->list || o->groups) + o->all + (o->cursor && !o->pid) +
	       (o->group && !o->list && !o->groups);
	if (nsrc == 0)
		usage_error("nothing to read: give a PID, --path FILE, --list or --all");
	if (nsrc > 1)
		usage_error("give only one of PID, --path, --list, --all");
	if (o->follow && (o->list || o->all))
		usage_error("--follow reads one box: give a PID or --path");
	if (o->threads && (o->list || o->all || o->follow || o->save))
		usage_error("--threads reads one box: give a PID or --path, without --follow "
			    "or --save");
	if (o->save && (o->list || o->all || o->follow))
		usage_error("--save copies one box: give a PID or --path, without --follow");
	if (o->fmt == BBX_FMT_CBOR && !o->save && isatty(STDOUT_FILENO))
		usage_error("refusing to write CBOR to a terminal (redirect or pipe it)");
	if (o->fmt == BBX_FMT_PERFETTO && (o->list || o->all || o->follow || o->threads || o->save))
		usage_error("--perfetto draws one box: give a PID, --path or a journal entry, "
			    "without --list, --all, --follow, --threads or --save");
	if (o->fmt == BBX_FMT_PERFETTO && isatty(STDOUT_FILENO))
		usage_error("refusing to write a Perfetto trace to a terminal (redirect it to "
			    "a .pftrace file)");
}

static void parse_args(int argc, char **argv, struct bbx_opts *o)
{
	static const struct option lopts[] = {
		{ "path",      required_argument, NULL, 'p' },
		{ "dir",       required_argument, NULL, 'd' },
		{ "list",      no_argument,       NULL, 'l' },
		{ "all",       no_argument,       NULL, 'a' },
		{ "json",      no_argument,       NULL, 'j' },
		{ "cbor",      no_argument,       NULL, 'c' },
		{ "perfetto",  no_argument,       NULL, OPT_PERFETTO },
		{ "save",      required_argument, NULL, 's' },
		{ "follow",    no_argument,       NULL, 'f' },
		{ "quiet",     no_argument,       NULL, 'q' },
		{ "any-owner", no_argument,       NULL, OPT_ANY_OWNER },
		{ "no-uring",  no_argument,       NULL, OPT_NO_URING },
		{ "uring",     no_argument,       NULL, OPT_URING },
		{ "no-symbols", no_argument,      NULL, OPT_NO_SYMBOLS },
		{ "debug-dir", required_argument, NULL, OPT_DEBUG_DIR },
		{ "debuginfod", no_argument,      NULL, OPT_DEBUGINFOD },
		{ "raw-names", no_argument,       NULL, OPT_RAW_NAMES },
		{ "threads",   no_argument,       NULL, 't' },
		{ "snapshot",  no_argument,       NULL, OPT_SNAPSHOT },
		{ "journal",   no_argument,       NULL, OPT_JOURNAL },
		{ "journal-directory", required_argument, NULL, OPT_JOURNAL_DIR },
		{ "machine",   required_argument, NULL, OPT_MACHINE },
		{ "boot",      required_argument, NULL, OPT_BOOT },
		{ "cursor",    required_argument, NULL, OPT_CURSOR },
		{ "untrusted", no_argument,       NULL, OPT_UNTRUSTED },
		{ "groups",    no_argument,       NULL, OPT_GROUPS },
		{ "group",     required_argument, NULL, OPT_GROUP },
		{ "since",     required_argument, NULL, OPT_SINCE },
		{ "until",     required_argument, NULL, OPT_UNTIL },
		{ "comm",      required_argument, NULL, OPT_COMM },
		{ "unit",      required_argument, NULL, OPT_UNIT },
		{ "state",     required_argument, NULL, OPT_STATE },
		{ "release",   required_argument, NULL, OPT_RELEASE },
		{ "wide",      no_argument,       NULL, OPT_WIDE },
		{ "help",      no_argument,       NULL, 'h' },
		{ "version",   no_argument,       NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	/* "-" first: non-options come back in order as 1, whatever
	 * POSIXLY_CORRECT says, so a pid may stand anywhere */
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "-p:d:lajcs:fqthV", lopts, NULL)) != -1)
		set_option(ch, argv, o);
	for (; optind < argc; optind++) { /* after "--" */
		if (o->pid)
			usage_error("more than one pid ('%s')", argv[optind]);
		o->pid = parse_pid(argv[optind]);
	}
	check_args(o);
}

int main(int argc, char **argv)
{
	/*
	 * write(2) by default: bench/extract_bench.sh measured io_uring no
	 * faster for output to a file on a 2-CPU machine (its io-wq worker
	 * competes with formatting for the other CPU); --uring opts in.
	 */
	struct bbx_opts o = { .fmt = BBX_FMT_TEXT, .uring = false };
	struct bbx_out out;
	struct bb_reader *r = NULL;
	struct sigaction sa;
	int code, live = 0;

#ifdef BB_HAVE_LIBDW
	/* the symbolising child: bb-extract started again by bbx_sandbox_start() */
	if (argc == 2 && !strcmp(argv[1], BBX_SANDBOX_CHILD_ARG))
		return bbx_resolve_main();
#endif
	/*
	 * SIGINT and SIGTERM end --follow and --all after the current box,
	 * with the report: caught before anything else, so that a signal
	 * sent as soon as the handler shows in /proc/<pid>/status (SigCgt)
	 * cannot kill a run that has not set it up yet.
	 */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);

	bbx_prog = PROG;
	parse_args(argc, argv, &o);
	/* where the library writes boxes (bb_init(3)) is where they are read,
	 * unless --dir says otherwise; secure_getenv: never a set-uid
	 * caller's choice.  The journal modes read no directory. */
	if (!o.dir && !o.journal && !o.journal_dir) {
		const char *env = secure_getenv("BLACKBOX_DIR");

		if (env && *env)
			o.dir = env;
	}

#ifdef BB_HAVE_JOURNAL
	if (o.journal || o.journal_dir)
		return bbx_journal_main(&o);
#endif
	if (!o.list && !o.all) {
		int ret = bbx_open_one(&o, &r, &live);

		if (ret < 0)
			return ret == -ENOTUNIQ ? BBX_EXIT_AMBIGUOUS : BBX_EXIT_NOBOX;
		if (o.snapshot) {
			code = o.pid ? bbx_snapshot(&o, r, live) : BBX_EXIT_FAILURE;
			if (!o.pid)
				bbx_msg(NULL, "--snapshot takes a PID");
			bb_reader_close(r);
			return code;
		}
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
		return BBX_EXIT_FAILURE;
	}
	if (o.list)
		code = bbx_list(&o, &out);
	else if (o.all)
		code = bbx_all(&o, &out);
	else if (o.threads)
		code = bbx_threads_main(&o, &out, r, live);
	else
		code = bbx_extract(&o, &out, r, live, false);
	bb_reader_close(r);
	if (bbx_out_close(&out) < 0) {
		if (out.err != -EPIPE)
			bbx_msg("standard output", "%s", strerror(-out.err));
		return BBX_EXIT_FAILURE;
	}
	return code;
}
