/* SPDX-License-Identifier: MIT */
/*
 * reader_unit.c - the systemd unit a box's owner ran in (format 2.1,
 * docs/FORMAT.md §12).
 *
 * The reader's side (bb_init's is unit.c): the unit names derived from the
 * header's cgroup path by the rules systemd itself applies to a process's
 * cgroup (the unit is the first component after the leading slices; a user
 * manager's unit the first one after user@UID.service or a session scope
 * and their slices), each name checked the way systemd checks unit names.  The header is untrusted: a path that
 * does not give a valid name gives "".
 */
#include <stdbool.h>
#include <string.h>

#include <blackbox/format.h>
#include <blackbox/reader.h>

#include "internal.h"
#include "unit.h"

/* 32 hex digits: what systemd puts in $INVOCATION_ID. */
bool bb__id128_hex(const char *s, size_t n)
{
	if (n != 32)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')))
			return false;
	}
	return true;
}

static bool unit_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == ':' || c == '-' || c == '_' || c == '.' || c == '\\';
}

/*
 * A unit name as systemd accepts one (plain or instance, never a template):
 * at most 255 bytes of [A-Za-z0-9:_.\\-], one optional '@' with something
 * on both sides, and a known type suffix after the last '.'.
 */
bool bb__unit_name_valid(const char *s, size_t n)
{
	static const char *const types[] = {
		"service", "socket", "target", "device", "mount", "automount", "swap",
		"timer", "path", "slice", "scope",
	};
	const char *dot = NULL, *at = NULL;

	if (n < 3 || n > 255)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '@') {
			if (at)
				return false;
			at = s + i;
		} else if (!unit_char(s[i])) {
			return false;
		}
		if (s[i] == '.')
			dot = s + i;
	}
	if (!dot || dot == s || (at && (at == s || dot <= at + 1)))
		return false;
	for (size_t k = 0; k < sizeof(types) / sizeof(types[0]); k++)
		if ((size_t)(s + n - dot - 1) == strlen(types[k]) &&
		    !memcmp(dot + 1, types[k], strlen(types[k])))
			return true;
	return false;
}

/* The next component of @p (after any '/'): its start, *@n its length. */
static const char *component(const char *p, size_t *n)
{
	p += strspn(p, "/");
	*n = strcspn(p, "/");
	return p;
}

/* A component is escaped by systemd with a leading '_' when it could clash
 * with the kernel's own names; the name is what follows. */
static const char *unescape(const char *p, size_t *n)
{
	if (*n && p[0] == '_') {
		(*n)--;
		return p + 1;
	}
	return p;
}

static bool ends_with(const char *p, size_t n, const char *suffix)
{
	size_t k = strlen(suffix);

	return n >= k && !memcmp(p + n - k, suffix, k);
}

static const char *skip_slices(const char *p)
{
	for (;;) {
		size_t n;
		const char *c = component(p, &n), *u = unescape(c, &n);

		if (!ends_with(u, n, ".slice") || !bb__unit_name_valid(u, n))
			return c;
		p = c + n + (size_t)(u - c);
	}
}

/* The unit at the start of @p, slices skipped: "" when there is none. */
static void unit_at(const char *p, char *out, size_t outlen)
{
	size_t n;
	const char *c = component(skip_slices(p), &n), *u = unescape(c, &n);

	out[0] = '\0';
	if (!bb__unit_name_valid(u, n) || ends_with(u, n, ".slice") || n >= outlen)
		return;
	memcpy(out, u, n);
	out[n] = '\0';
}

static bool all_of(const char *p, size_t n, bool digits_only)
{
	if (!n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((p[i] >= '0' && p[i] <= '9') ||
		      (!digits_only && ((p[i] >= 'a' && p[i] <= 'z') || (p[i] >= 'A' && p[i] <= 'Z')))))
			return false;
	return true;
}

/* After the slices: "user@<uid>.service" or "session-<id>.scope", then
 * what follows it; NULL when neither is there. */
static const char *skip_user_prefix(const char *p)
{
	size_t n;
	const char *c = component(skip_slices(p), &n);

	if (n > 13 && !memcmp(c, "user@", 5) && ends_with(c, n, ".service") &&
	    all_of(c + 5, n - 13, true) && n - 13 <= 10)
		return c + n;
	if (n > 14 && !memcmp(c, "session-", 8) && ends_with(c, n, ".scope") &&
	    all_of(c + 8, n - 14, false))
		return c + n;
	return NULL;
}

void bb__unit_from_cgroup(const char *path, char *unit, size_t unitlen, char *user_unit,
			  size_t userlen)
{
	const char *t;

	unit[0] = user_unit[0] = '\0';
	if (path[0] != '/')
		return;
	unit_at(path, unit, unitlen);
	t = skip_user_prefix(path);
	if (t)
		unit_at(t, user_unit, userlen);
}

void bb__unit_info(struct bb_box_info *in, const struct bb_header *h)
{
	size_t n;

	in->cgroup[0] = in->unit[0] = in->user_unit[0] = in->invocation_id[0] = '\0';
	in->cgroup_hierarchy = BB_CGROUP_NONE;
	if (h->version_major == 2 && h->version_minor < 1)
		return; /* 2.0: reserved bytes, whatever they hold (2.1 and 3.x have the unit) */
	n = strnlen(h->invocation_id, sizeof(h->invocation_id));
	if (bb__id128_hex(h->invocation_id, n)) {
		for (size_t i = 0; i < n; i++) {
			char c = h->invocation_id[i];

			in->invocation_id[i] = (char)(c >= 'A' && c <= 'F' ? c + 32 : c);
		}
		in->invocation_id[n] = '\0';
	}
	if (h->cgroup_hierarchy != BB_CGROUP_UNIFIED && h->cgroup_hierarchy != BB_CGROUP_LEGACY)
		return;
	n = strnlen(h->cgroup, sizeof(h->cgroup));
	if (!n || n == sizeof(h->cgroup) || h->cgroup[0] != '/')
		return;
	memcpy(in->cgroup, h->cgroup, n + 1);
	in->cgroup_hierarchy = h->cgroup_hierarchy;
	bb__unit_from_cgroup(in->cgroup, in->unit, sizeof(in->unit), in->user_unit,
			     sizeof(in->user_unit));
}
