/* SPDX-License-Identifier: MIT */
/*
 * Description: the journal contract has one table.  Every BB_* field name
 * that bb-reap writes or bb-extract reads is in BB_JOURNAL_FIELDS
 * (tools/common/journal-fields.h) and is spelled only there: a string
 * literal "BB_..." in a source of extractor/, reaper/ or tools/ (but an
 * environment variable's name, the first argument of a call to a function
 * whose name has "env" in it) fails the test, with its file and line; so
 * does a field of the table that bb-reap(8) does not describe, or a name
 * journald would refuse.
 *
 * Usage: journal_fields SOURCE_ROOT.  Runs without root or network.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "journal-fields.h"

#define NAME_OF(id, name) name,
static const char *const table[] = { BB_JOURNAL_FIELDS(NAME_OF) };
#undef NAME_OF
#define NTABLE (sizeof(table) / sizeof(table[0]))

static int failures;

static bool name_char(int c)
{
	return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static bool in_table(const char *name, size_t n)
{
	for (size_t i = 0; i < NTABLE; i++)
		if (strlen(table[i]) == n && !memcmp(table[i], name, n))
			return true;
	return false;
}

/* The constant a name of the table has: BB_PID -> BBJ_PID. */
static const char *constant_of(const char *name, size_t n, char *buf, size_t len)
{
	snprintf(buf, len, "BBJ_%.*s", (int)(n - 3), name + 3);
	return buf;
}

/* A whole file, NUL-terminated (a source file: its size is what stat says). */
static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	char *buf;

	if (!f)
		return NULL;
	if (fstat(fileno(f), &st) < 0 || st.st_size < 0 || st.st_size > (64 << 20) ||
	    !(buf = malloc((size_t)st.st_size + 1))) {
		fclose(f);
		return NULL;
	}
	*len = fread(buf, 1, (size_t)st.st_size, f);
	fclose(f);
	buf[*len] = '\0';
	return buf;
}

/*
 * The string literals of C source @s (comments and character constants
 * skipped), each with the identifier of the call it is the first argument
 * of ("" otherwise), to @fn.  Returns the literals seen.
 */
typedef void (*literal_fn)(const char *lit, size_t n, const char *callee, unsigned line,
			   void *arg);

static size_t scan_literals(const char *s, size_t len, literal_fn fn, void *arg)
{
	char ident[64] = "", callee[64] = "";
	unsigned line = 1;
	size_t seen = 0;
	int last = 0;     /* the last character of code that is not blank */

	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (c == '\n') {
			line++;
			continue;
		}
		if (c == '/' && i + 1 < len && s[i + 1] == '/') {
			while (i < len && s[i] != '\n')
				i++;
			line++;
			continue;
		}
		if (c == '/' && i + 1 < len && s[i + 1] == '*') {
			for (i += 2; i + 1 < len && !(s[i] == '*' && s[i + 1] == '/'); i++)
				line += s[i] == '\n';
			i++;
			continue;
		}
		if (c == '\'') {
			for (i++; i < len && s[i] != '\''; i++)
				i += s[i] == '\\';
			last = '\'';
			continue;
		}
		if (c == '"') {
			size_t start = ++i;

			for (; i < len && s[i] != '"' && s[i] != '\n'; i++)
				i += s[i] == '\\';
			fn(s + start, i - start, last == '(' ? callee : "", line, arg);
			seen++;
			last = '"';
			continue;
		}
		if (isspace((unsigned char)c))
			continue;
		if (isalpha((unsigned char)c) || c == '_') {
			size_t k = 0;

			for (; i < len && (isalnum((unsigned char)s[i]) || s[i] == '_'); i++)
				if (k + 1 < sizeof(ident))
					ident[k++] = s[i];
			ident[k] = '\0';
			i--;
			last = 'a';
			continue;
		}
		if (c == '(')
			snprintf(callee, sizeof(callee), "%s", last == 'a' ? ident : "");
		last = (unsigned char)c;
	}
	return seen;
}

struct check {
	const char *file;
	size_t      bad;
};

/* A literal "BB_NAME..." that is a field name: NAME is [A-Z0-9_] with at
 * least one character, and ends the literal or is followed by '='. */
static void check_literal(const char *lit, size_t n, const char *callee, unsigned line,
			  void *arg)
{
	struct check *c = arg;
	char buf[96];
	size_t k = 3;

	if (n < 4 || memcmp(lit, "BB_", 3) || !name_char(lit[3]) || strstr(callee, "env"))
		return;
	while (k < n && name_char(lit[k]))
		k++;
	if (k < n && lit[k] != '=')
		return;
	c->bad++;
	if (!c->file)
		return;
	if (in_table(lit, k))
		fprintf(stderr, "%s:%u: \"%.*s\" spelled out: use %s (journal-fields.h)\n",
			c->file, line, (int)k, lit, constant_of(lit, k, buf, sizeof(buf)));
	else
		fprintf(stderr, "%s:%u: \"%.*s\" is not in BB_JOURNAL_FIELDS "
			"(tools/common/journal-fields.h): add it there, and to bb-reap(8)\n",
			c->file, line, (int)k, lit);
}

/* The scanner finds what it must and nothing else. */
static void self_test(void)
{
	static const struct {
		const char *src;
		size_t bad;
	} cases[] = {
		{ "add(e, \"BB_NEW\", \"%d\", 1);", 1 },
		{ "get(j, \"BB_PID\", buf, sizeof(buf));", 1 },
		{ "match(j, \"BB_BOOT_ID=\" id);", 1 },
		{ "static const char *f[] = { \"MESSAGE\", \"BB_X\" };", 1 },
		{ "getenv(\"BB_EXTRACT_SYMBOL_TEST\");", 0 },
		{ "env_ms(\"BB_EXTRACT_SYMBOL_TIMEOUT_MS\", 5);", 0 },
		{ "/* \"BB_PID\" */ // \"BB_UID\"\nx = 1;", 0 },
		{ "c = '\"'; s = \"BB_%s\"; memcmp(p, \"BB_\", 3);", 0 },
		{ "s = \"a \\\"BB_PID\\\" b\";", 0 },
		{ "add(e, BBJ_PID, \"%ld\", 1L);", 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct check c = { NULL, 0 };

		scan_literals(cases[i].src, strlen(cases[i].src), check_literal, &c);
		if (c.bad != cases[i].bad) {
			fprintf(stderr, "self-test: %zu field literals found in `%s`, not %zu\n",
				c.bad, cases[i].src, cases[i].bad);
			failures++;
		}
	}
}

struct tally {
	size_t files, literals, uses;
};

static void scan_tree(const char *root, const char *rel, struct tally *t)
{
	char path[4096];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	if (!(d = opendir(path))) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		failures++;
		return;
	}
	while ((de = readdir(d))) {
		char sub[2048];
		const char *dot = strrchr(de->d_name, '.');
		struct stat st;
		struct check c;
		size_t len;
		char *s;

		if (de->d_name[0] == '.' ||
		    snprintf(sub, sizeof(sub), "%s/%s", rel, de->d_name) >= (int)sizeof(sub))
			continue;
		snprintf(path, sizeof(path), "%s/%s", root, sub);
		if (lstat(path, &st) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			scan_tree(root, sub, t);
			continue;
		}
		if (!S_ISREG(st.st_mode) || !dot ||
		    (strcmp(dot, ".c") && strcmp(dot, ".h") && strcmp(dot, ".cc")) ||
		    !strcmp(sub, "tools/common/journal-fields.h"))
			continue;
		if (!(s = slurp(path, &len))) {
			fprintf(stderr, "%s: %s\n", path, strerror(errno));
			failures++;
			continue;
		}
		c = (struct check){ sub, 0 };
		t->files++;
		t->literals += scan_literals(s, len, check_literal, &c);
		failures += (int)c.bad;
		for (const char *p = s; (p = strstr(p, "BBJ_")); p += 4)
			t->uses++;
		free(s);
	}
	closedir(d);
}

/* Each field of the table is a word of bb-reap(8). */
static void check_man(const char *root)
{
	char path[4096];
	size_t len;
	char *s;

	snprintf(path, sizeof(path), "%s/docs/man/bb-reap.8", root);
	if (!(s = slurp(path, &len))) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		failures++;
		return;
	}
	for (size_t i = 0; i < NTABLE; i++) {
		size_t n = strlen(table[i]);
		bool found = false;

		for (const char *p = s; !found && (p = strstr(p, table[i])); p += n)
			found = (p == s || !name_char(p[-1])) && !name_char(p[n]);
		if (!found) {
			fprintf(stderr, "%s: bb-reap(8) does not describe %s\n", path, table[i]);
			failures++;
		}
	}
	free(s);
}

/* What journald accepts as a field name, and each name once. */
static void check_table(void)
{
	for (size_t i = 0; i < NTABLE; i++) {
		size_t n = strlen(table[i]);

		if (n < 4 || n > 64 || memcmp(table[i], "BB_", 3) ||
		    strspn(table[i], "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != n) {
			fprintf(stderr, "journal-fields.h: \"%s\" is not a BB_ field name "
				"journald accepts\n", table[i]);
			failures++;
		}
		for (size_t k = 0; k < i; k++)
			if (!strcmp(table[i], table[k])) {
				fprintf(stderr, "journal-fields.h: \"%s\" twice\n", table[i]);
				failures++;
			}
	}
}

int main(int argc, char **argv)
{
	struct tally ex = { 0 }, re = { 0 }, to = { 0 };

	if (argc != 2) {
		fprintf(stderr, "usage: %s SOURCE_ROOT\n", argv[0]);
		return 2;
	}
	self_test();
	check_table();
	check_man(argv[1]);
	scan_tree(argv[1], "extractor", &ex);
	scan_tree(argv[1], "reaper", &re);
	scan_tree(argv[1], "tools", &to);
	/* the scan read the tools, and both name fields by the table */
	if (!ex.files || !re.files || !to.files || !ex.uses || !re.uses) {
		fprintf(stderr, "scanned %zu, %zu, %zu files; BBJ_ constants used %zu times in "
			"extractor/, %zu in reaper/: a tool no longer uses the table?\n",
			ex.files, re.files, to.files, ex.uses, re.uses);
		failures++;
	}
	printf("%zu fields; %zu files, %zu string literals scanned; %d problems\n", NTABLE,
	       ex.files + re.files + to.files, ex.literals + re.literals + to.literals,
	       failures);
	return failures ? 1 : 0;
}
