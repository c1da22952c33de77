/* SPDX-License-Identifier: MIT */
/*
 * options.c - bb-reap's command line (bb-reap(8)).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <blackbox.h>
#include <blackbox/reader.h>

#include "reap.h"

static void usage(FILE *f)
{
	fprintf(f,
"Usage: bb-reap [OPTION]...\n"
"Remove blackbox boxes whose owner process is gone.\n"
"\n"
"  -d, --dir DIR              box directory (default $BLACKBOX_DIR, else %s)\n"
"  -m, --min-age SECONDS      leave boxes whose owner showed a sign of life\n"
"                             less than SECONDS ago (default %u; a systemd\n"
"                             time span: 30s, 1min, 2h, 1d, 1h 30min; 0 reaps\n"
"                             at once)\n"
"  -a, --archive DIR          copy each box into DIR before removing it;\n"
"                             the copy belongs to the box file's owner\n"
"  -k, --keep N               keep each owner's N newest archives, remove\n"
"                             older ones of that owner\n"
"  -b, --max-archive-bytes B  per owner: remove an owner's oldest archives\n"
"                             while they hold more than B bytes; a box\n"
"                             larger than B goes without a copy\n"
"                             (suffixes k, M, G, T)\n"
"      --compress=zstd|none   archives compressed (name.box.zst) or not\n"
"                             (default: %s)\n"
"      --journal[=summary|box] send one journal entry for each box whose\n"
"                             owner died (crashed, killed, orphaned), once\n"
"                             per box; =box attaches the box itself\n"
"                             (default: summary)\n"
"      --journal-content=root|all  whose records, state table and box go\n"
"                             into entries: root's boxes only (default), or\n"
"                             every user's (the journal's readers see them)\n"
"      --journal-box-max B    attach no box larger than B (default 8M)\n"
"      --journal-box-budget B per owner: attach at most B bytes of boxes\n"
"                             in 24 hours (default 64M)\n"
"      --journal-records N    the last N records as JSON (default %u)\n"
"      --journal-rate N       per owner: at most N entries an hour\n"
"                             (default %u; a later run reports the rest\n"
"                             if they are still there)\n"
"      --journal-reported FILE   what was reported (default %s)\n"
"  -w, --watch                keep running: reap each box as soon as its\n"
"                             owner dies (and --min-age has passed)\n"
"      --rescan SECONDS       --watch: a full pass this often besides\n"
"                             (default %u; a systemd time span: 15min, 1h)\n"
"  -n, --dry-run              report what would be done, touch nothing\n"
"  -v, --verbose              also log the boxes and files left alone\n"
"  -j, --json                 one JSON object per decision on stdout\n"
"  -h, --help                 this text\n"
"  -V, --version              version\n"
"\n"
"Exit status: 0 success (also when nothing was reaped), 1 something could\n"
"not be handled (see the log), 2 usage error.  See bb-reap(8).\n",
		BB_DEFAULT_DIR, REAP_DEFAULT_MIN_AGE, REAP_COMPRESS_DEFAULT ? "zstd" : "none",
		REAP_JOURNAL_RECORDS, REAP_JOURNAL_RATE, REAP_REPORTED_DEFAULT,
		REAP_DEFAULT_RESCAN);
}

/* The decimal digits at *@p (at least one) into @v, *@p moved past
 * them: 0, -EINVAL or -ERANGE. */
static int parse_digits(const char **p, uint64_t *v)
{
	const char *d = *p;

	if (*d < '0' || *d > '9')
		return -EINVAL;
	for (*v = 0; *d >= '0' && *d <= '9'; d++) {
		if (*v > (UINT64_MAX - (uint64_t)(*d - '0')) / 10)
			return -ERANGE;
		*v = *v * 10 + (uint64_t)(*d - '0');
	}
	*p = d;
	return 0;
}

/* Strict unsigned parse: digits, then an optional suffix from @units. */
int reap_parse_num(const char *s, const char *suffixes, const uint64_t *mult,
		   uint64_t *out)
{
	uint64_t v, m = 1;
	const char *p = s;
	int r = parse_digits(&p, &v);

	if (r)
		return r;
	if (*p) {
		const char *u = strchr(suffixes, *p);

		if (!u || p[1])
			return -EINVAL;
		m = mult[u - suffixes];
	}
	if (m > 1 && v > UINT64_MAX / m)
		return -ERANGE;
	*out = v * m;
	return 0;
}

/*
 * A duration as systemd writes time spans (systemd.time(7)), in whole
 * seconds: one or more <number><unit>, spaces allowed between them and
 * before a unit, the units s, sec, second(s), m, min, minute(s), h, hr,
 * hour(s), d, day(s), w, week(s); a bare number is seconds.  So a unit
 * file's "1min" or "1h 30min" means what systemd would read in it.
 * 0, -EINVAL or -ERANGE.
 */
int reap_parse_span(const char *s, uint64_t *out)
{
	static const struct { const char *name; uint64_t secs; } units[] = {
		{ "s", 1 }, { "sec", 1 }, { "second", 1 }, { "seconds", 1 },
		{ "m", 60 }, { "min", 60 }, { "minute", 60 }, { "minutes", 60 },
		{ "h", 3600 }, { "hr", 3600 }, { "hour", 3600 }, { "hours", 3600 },
		{ "d", 86400 }, { "day", 86400 }, { "days", 86400 },
		{ "w", 604800 }, { "week", 604800 }, { "weeks", 604800 },
	};
	uint64_t total = 0;
	const char *p = s;
	bool any = false;

	for (;;) {
		uint64_t v, m = 1;
		size_t n;
		int r;

		while (*p == ' ')
			p++;
		if (!*p)
			break;
		if ((r = parse_digits(&p, &v)))
			return r;
		while (*p == ' ')
			p++;
		for (n = 0; p[n] >= 'a' && p[n] <= 'z'; n++)
			;
		if (n) {
			size_t i;

			for (i = 0; i < sizeof(units) / sizeof(units[0]); i++)
				if (strlen(units[i].name) == n && !memcmp(p, units[i].name, n))
					break;
			if (i == sizeof(units) / sizeof(units[0]))
				return -EINVAL;
			m = units[i].secs;
			p += n;
		} else if (*p) {
			return -EINVAL; /* a number runs into something not a unit */
		}
		if (v > UINT64_MAX / m || total > UINT64_MAX - v * m)
			return -ERANGE;
		total += v * m;
		any = true;
	}
	if (!any)
		return -EINVAL;
	*out = total;
	return 0;
}

enum { OPT_JOURNAL = 256, OPT_JBOX_MAX, OPT_JBUDGET, OPT_JRECORDS, OPT_JRATE, OPT_JREPORTED,
       OPT_JCONTENT, OPT_COMPRESS, OPT_RESCAN };

static const uint64_t bmult[] = {
	UINT64_C(1) << 10, UINT64_C(1) << 10, UINT64_C(1) << 20, UINT64_C(1) << 20,
	UINT64_C(1) << 30, UINT64_C(1) << 30, UINT64_C(1) << 40, UINT64_C(1) << 40,
};

/* --min-age, --keep, --max-archive-bytes.  0, or -1 after saying why. */
static int parse_age_and_archive(int ch, const char *arg, struct reap_opts *o)
{
	uint64_t v;

	switch (ch) {
	case 'm':
		/* bounded so that min_age_s * 1e9 fits in an int64_t */
		if (reap_parse_span(arg, &v) || v > INT64_MAX / 1000000000) {
			fprintf(stderr, "bb-reap: --min-age: invalid duration '%s'\n", arg);
			return -1;
		}
		o->min_age_s = v;
		return 0;
	case 'k':
		if (reap_parse_num(arg, "", NULL, &v) || v < 1 || v > LONG_MAX) {
			fprintf(stderr, "bb-reap: --keep: expected a count >= 1, not '%s'\n", arg);
			return -1;
		}
		o->keep = (long)v;
		return 0;
	default: /* 'b' */
		if (reap_parse_num(arg, "kKmMgGtT", bmult, &v) || v == 0) {
			fprintf(stderr, "bb-reap: --max-archive-bytes: invalid size '%s'\n", arg);
			return -1;
		}
		o->max_bytes = v;
		return 0;
	}
}

/* --journal and its --journal-* options.  0, or -1 after saying why. */
static int parse_journal(int ch, const char *arg, struct reap_opts *o)
{
	uint64_t v;

	switch (ch) {
	case OPT_JOURNAL:
		if (!arg || !strcmp(arg, "summary")) {
			o->journal = REAP_JOURNAL_SUMMARY;
		} else if (!strcmp(arg, "box")) {
			o->journal = REAP_JOURNAL_BOX;
		} else {
			fprintf(stderr, "bb-reap: --journal: 'summary' or 'box', not '%s'\n", arg);
			return -1;
		}
		return 0;
	case OPT_JCONTENT:
		if (!strcmp(arg, "root")) {
			o->journal_content = REAP_CONTENT_ROOT;
		} else if (!strcmp(arg, "all")) {
			o->journal_content = REAP_CONTENT_ALL;
		} else {
			fprintf(stderr, "bb-reap: --journal-content: 'root' or 'all', not '%s'\n",
				arg);
			return -1;
		}
		return 0;
	case OPT_JBOX_MAX:
	case OPT_JBUDGET:
		if (reap_parse_num(arg, "kKmMgGtT", bmult, &v) ||
		    (ch == OPT_JBOX_MAX && v > REAP_JOURNAL_BOX_CAP)) {
			fprintf(stderr, "bb-reap: %s: invalid size '%s'%s\n",
				ch == OPT_JBOX_MAX ? "--journal-box-max" : "--journal-box-budget",
				arg, ch == OPT_JBOX_MAX ? " (at most 256M)" : "");
			return -1;
		}
		*(ch == OPT_JBOX_MAX ? &o->journal_box_max : &o->journal_budget) = v;
		return 0;
	case OPT_JRECORDS:
	case OPT_JRATE:
		if (reap_parse_num(arg, "", NULL, &v) || v > 100000) {
			fprintf(stderr, "bb-reap: %s: expected a count up to 100000, not '%s'\n",
				ch == OPT_JRECORDS ? "--journal-records" : "--journal-rate", arg);
			return -1;
		}
		*(ch == OPT_JRECORDS ? &o->journal_records : &o->journal_rate) = (unsigned)v;
		return 0;
	default: /* OPT_JREPORTED */
		o->journal_reported = arg;
		return 0;
	}
}

/* --compress, --rescan.  0, or -1 after saying why. */
static int parse_more(int ch, const char *arg, struct reap_opts *o)
{
	uint64_t v;

	if (ch == OPT_COMPRESS) {
		if (!strcmp(arg, "none")) {
			o->compress = false;
		} else if (!strcmp(arg, "zstd")) {
#ifndef BB_HAVE_ZSTD
			fprintf(stderr, "bb-reap: --compress=zstd: built without libzstd\n");
			return -1;
#endif
			o->compress = true;
		} else {
			fprintf(stderr, "bb-reap: --compress: 'zstd' or 'none', not '%s'\n", arg);
			return -1;
		}
		return 0;
	}
	/* OPT_RESCAN */
	if (reap_parse_span(arg, &v) || v < 1 || v > 365 * 86400) {
		fprintf(stderr, "bb-reap: --rescan: invalid duration '%s'\n", arg);
		return -1;
	}
	o->rescan_s = v;
	return 0;
}

/* What no single option can check.  0, or -1 after saying why. */
static int check_opts(const struct reap_opts *o)
{
	if (!*o->dir || (o->archive && !*o->archive)) {
		fprintf(stderr, "bb-reap: empty directory name\n");
		return -1;
	}
	if ((o->keep >= 0 || o->max_bytes) && !o->archive) {
		fprintf(stderr, "bb-reap: --keep and --max-archive-bytes need --archive\n");
		return -1;
	}
#ifndef BB_HAVE_JOURNAL
	if (o->journal) {
		fprintf(stderr, "bb-reap: --journal: built without libsystemd\n");
		return -1;
	}
#endif
	if (o->journal_reported && !*o->journal_reported) {
		fprintf(stderr, "bb-reap: --journal-reported: empty file name\n");
		return -1;
	}
	return 0;
}

int reap_parse_opts(int argc, char **argv, struct reap_opts *o)
{
	static const struct option lo[] = {
		{ "journal", optional_argument, NULL, OPT_JOURNAL },
		{ "journal-box-max", required_argument, NULL, OPT_JBOX_MAX },
		{ "journal-box-budget", required_argument, NULL, OPT_JBUDGET },
		{ "journal-records", required_argument, NULL, OPT_JRECORDS },
		{ "journal-rate", required_argument, NULL, OPT_JRATE },
		{ "journal-reported", required_argument, NULL, OPT_JREPORTED },
		{ "journal-content", required_argument, NULL, OPT_JCONTENT },
		{ "compress", required_argument, NULL, OPT_COMPRESS },
		{ "watch", no_argument, NULL, 'w' },
		{ "rescan", required_argument, NULL, OPT_RESCAN },
		{ "dir", required_argument, NULL, 'd' },
		{ "min-age", required_argument, NULL, 'm' },
		{ "archive", required_argument, NULL, 'a' },
		{ "keep", required_argument, NULL, 'k' },
		{ "max-archive-bytes", required_argument, NULL, 'b' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *env = secure_getenv("BLACKBOX_DIR");
	int ch;

	/* the library's BLACKBOX_DIR (bb_init(3)) is the default of --dir;
	 * secure_getenv: never a set-uid caller's choice */
	*o = (struct reap_opts){ .dir = env && *env ? env : BB_DEFAULT_DIR, .min_age_s = REAP_DEFAULT_MIN_AGE,
				 .keep = -1, .journal_box_max = REAP_JOURNAL_BOX_MAX,
				 .journal_records = REAP_JOURNAL_RECORDS,
				 .journal_rate = REAP_JOURNAL_RATE,
				 .journal_budget = REAP_JOURNAL_BUDGET,
				 .compress = REAP_COMPRESS_DEFAULT, .rescan_s = REAP_DEFAULT_RESCAN };
	while ((ch = getopt_long(argc, argv, "d:m:a:k:b:wnvjhV", lo, NULL)) != -1) {
		switch (ch) {
		case 'd': o->dir = optarg; break;
		case 'w': o->watch = true; break;
		case OPT_COMPRESS: case OPT_RESCAN:
			if (parse_more(ch, optarg, o) < 0)
				return -1;
			break;
		case 'a': o->archive = optarg; break;
		case 'n': o->dry_run = true; break;
		case 'v': o->verbose = true; break;
		case 'j': o->json = true; break;
		case 'm': case 'k': case 'b':
			if (parse_age_and_archive(ch, optarg, o) < 0)
				return -1;
			break;
		case OPT_JOURNAL: case OPT_JBOX_MAX: case OPT_JBUDGET:
		case OPT_JRECORDS: case OPT_JRATE: case OPT_JREPORTED: case OPT_JCONTENT:
			if (parse_journal(ch, optarg, o) < 0)
				return -1;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		case 'V':
			printf("bb-reap (libblackbox) %d.%d.%d\n", BB_VERSION_MAJOR,
			       BB_VERSION_MINOR, BB_VERSION_PATCH);
			exit(0);
		default:
			return -1;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "bb-reap: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	return check_opts(o);
}
