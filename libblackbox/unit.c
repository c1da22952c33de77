/* SPDX-License-Identifier: MIT */
/*
 * unit.c - the systemd unit a box's owner ran in (format 2.1,
 * docs/FORMAT.md §12).
 *
 * Writer side (bb_init): the owner's cgroup path in systemd's hierarchy and
 * $INVOCATION_ID, copied into the header as they are.  One read of
 * /proc/self/cgroup and a secure_getenv(); nothing is parsed beyond
 * picking the line, and nothing here can make bb_init fail: what cannot be
 * had is left empty.
 *
 * The reader's side is in reader_unit.c.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <blackbox/format.h>
#include <blackbox/reader.h>

#include "internal.h"
#include "unit.h"

/*
 * Which line of /proc/self/cgroup is systemd's: "0::<path>" on the unified
 * hierarchy (cgroup v2, also in hybrid mode, where systemd keeps the
 * name=systemd tree as a copy), "<n>:name=systemd:<path>" on a legacy one,
 * whose "0::" line (if the kernel shows one) is then "/".  Only complete
 * lines count: a line cut by the buffer is not a path.
 */
void bb__unit_record(struct bb_header *h)
{
	char buf[4096];
	const char *unified = NULL, *legacy = NULL, *path;
	size_t ulen = 0, llen = 0, plen;
	ssize_t n = bb__read_file("/proc/self/cgroup", buf, sizeof(buf));
	const char *id = secure_getenv("INVOCATION_ID");

	if (id && bb__id128_hex(id, strlen(id))) {
		for (size_t i = 0; i < 32; i++)
			h->invocation_id[i] = (char)(id[i] >= 'A' && id[i] <= 'F' ? id[i] + 32 : id[i]);
	}
	for (char *line = buf, *nl; n > 0 && (nl = memchr(line, '\n', (size_t)(buf + n - line)));
	     line = nl + 1) {
		char *c1 = memchr(line, ':', (size_t)(nl - line)), *c2;

		if (!c1 || !(c2 = memchr(c1 + 1, ':', (size_t)(nl - c1 - 1))))
			continue;
		if (c1 - line == 1 && line[0] == '0' && c2 == c1 + 1) {
			unified = c2 + 1;
			ulen = (size_t)(nl - unified);
		} else {
			/* the controller list is comma-separated */
			for (const char *p = c1 + 1; p < c2;) {
				const char *e = memchr(p, ',', (size_t)(c2 - p));

				if (!e)
					e = c2;
				if (e - p == 12 && !memcmp(p, "name=systemd", 12)) {
					legacy = c2 + 1;
					llen = (size_t)(nl - legacy);
				}
				p = e + 1;
			}
		}
	}
	if (unified && (!legacy || !(ulen == 1 && unified[0] == '/'))) {
		path = unified;
		plen = ulen;
		h->cgroup_hierarchy = BB_CGROUP_UNIFIED;
	} else if (legacy) {
		path = legacy;
		plen = llen;
		h->cgroup_hierarchy = BB_CGROUP_LEGACY;
	} else {
		return;
	}
	if (!plen || path[0] != '/' || plen >= sizeof(h->cgroup) || memchr(path, '\0', plen)) {
		h->cgroup_hierarchy = BB_CGROUP_NONE;
		return;
	}
	memcpy(h->cgroup, path, plen);
}

