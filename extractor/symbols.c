/* SPDX-License-Identifier: MIT */
/*
 * symbols.c - module+offset for every crash frame, function and file:line
 * through addr2line(1) run once per module with a timeout (symbols.h).
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "symbols.h"

extern char **environ;

#define OUT_MAX (1u << 20) /* addr2line output we read, at most */

/* Append "@what: @why; " to @note. */
static void note_add(char *note, size_t len, const char *what, const char *why)
{
	size_t used;

	if (!note || !len)
		return;
	used = strnlen(note, len);
	if (used + 1 >= len)
		return;
	snprintf(note + used, len - used, "%s: %s; ", what, why);
}

/* ---- build id of a file on disk --------------------------------------- */

static int pread_exact(int fd, void *buf, size_t n, uint64_t off)
{
	ssize_t r = pread(fd, buf, n, (off_t)off);

	return r == (ssize_t)n ? 0 : -1;
}

/*
 * The GNU build id in the PT_NOTE segments of the ELF64 file @fd (the
 * file is untrusted: every size is bounded).  Returns its length (0: none
 * found or not an ELF64 file of our byte order) and copies up to @cap
 * bytes to @id.
 */
static size_t file_build_id(int fd, uint8_t *id, size_t cap)
{
	Elf64_Ehdr eh;

	if (pread_exact(fd, &eh, sizeof(eh), 0) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_phentsize != sizeof(Elf64_Phdr) ||
	    eh.e_phnum > 256)
		return 0;
	for (unsigned i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;
		uint8_t buf[4096];
		size_t len, p = 0;

		if (pread_exact(fd, &ph, sizeof(ph), eh.e_phoff + (uint64_t)i * sizeof(ph)))
			return 0;
		if (ph.p_type != PT_NOTE)
			continue;
		len = ph.p_filesz < sizeof(buf) ? (size_t)ph.p_filesz : sizeof(buf);
		if (pread_exact(fd, buf, len, ph.p_offset))
			continue;
		while (len - p >= sizeof(Elf64_Nhdr)) {
			Elf64_Nhdr nh;
			size_t name, desc;

			memcpy(&nh, buf + p, sizeof(nh));
			p += sizeof(nh);
			name = ((size_t)nh.n_namesz + 3) & ~(size_t)3;
			desc = ((size_t)nh.n_descsz + 3) & ~(size_t)3;
			if (name > len - p || desc > len - p - name)
				break;
			if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
			    !memcmp(buf + p, "GNU", 4)) {
				size_t n = nh.n_descsz < cap ? nh.n_descsz : cap;

				memcpy(id, buf + p + name, n);
				return nh.n_descsz;
			}
			p += name + desc;
		}
	}
	return 0;
}

/* ---- running addr2line ------------------------------------------------- */

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * Run "@prog -f -C -e @path <offsets>" with stdin and stderr on /dev/null;
 * collect its stdout into a malloc'd NUL-terminated buffer.  A child that
 * is still running at the deadline is killed (SIGKILL) and reaped: nothing
 * it does can hang or crash us.  Returns the buffer or NULL; *why says
 * what went wrong.
 */
static char *run_batch(const char *prog, const char *path, const uint64_t *offs, size_t n,
		       int timeout_ms, const char **why)
{
	char **argv = calloc(n + 6, sizeof(*argv)), (*hex)[24] = calloc(n, sizeof(*hex));
	posix_spawn_file_actions_t fa;
	int pfd[2] = { -1, -1 }, status;
	size_t len = 0, cap = 4096;
	char *out = malloc(cap);
	int64_t deadline = now_ms() + timeout_ms;
	bool killed = false;
	pid_t pid;

	*why = "out of memory";
	if (!argv || !hex || !out || pipe2(pfd, O_CLOEXEC)) {
		if (pfd[0] >= 0) {
			close(pfd[0]);
			close(pfd[1]);
		}
		goto fail;
	}
	argv[0] = (char *)prog;
	argv[1] = "-f";
	argv[2] = "-C";
	argv[3] = "-e";
	argv[4] = (char *)path;
	for (size_t i = 0; i < n; i++) {
		snprintf(hex[i], sizeof(hex[i]), "0x%" PRIx64, offs[i]);
		argv[5 + i] = hex[i];
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
	posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
	if (posix_spawnp(&pid, prog, &fa, NULL, argv, environ)) {
		posix_spawn_file_actions_destroy(&fa);
		close(pfd[0]);
		close(pfd[1]);
		*why = "cannot run the symboliser";
		goto fail;
	}
	posix_spawn_file_actions_destroy(&fa);
	close(pfd[1]);
	for (;;) {
		struct pollfd p = { .fd = pfd[0], .events = POLLIN };
		int64_t left = deadline - now_ms();
		ssize_t r;

		if (left <= 0 || len >= OUT_MAX) {
			kill(pid, SIGKILL);
			killed = true;
			break;
		}
		if (poll(&p, 1, (int)left) <= 0)
			continue; /* timeout (checked above) or EINTR */
		if (cap - len < 2048) {
			char *q = realloc(out, cap * 2);

			if (!q) {
				kill(pid, SIGKILL);
				killed = true;
				break;
			}
			out = q;
			cap *= 2;
		}
		r = read(pfd[0], out + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	close(pfd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (killed) {
		*why = "the symboliser timed out and was killed";
		goto fail;
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		*why = "the symboliser failed";
		goto fail;
	}
	out[len] = '\0';
	free(argv);
	free(hex);
	return out;
fail:
	free(argv);
	free(hex);
	free(out);
	return NULL;
}

/* Next line of @*s (NUL-terminated in place), or NULL. */
static char *next_line(char **s)
{
	char *l = *s, *e;

	if (!l || !*l)
		return NULL;
	e = strchr(l, '\n');
	if (e) {
		*e = '\0';
		*s = e + 1;
	} else {
		*s = l + strlen(l);
	}
	return l;
}

/* "function\nfile:line [(discriminator N)]\n" per address, in order. */
static int parse_batch(char *out, struct bbx_frame **fr, size_t n)
{
	char *s = out;

	for (size_t i = 0; i < n; i++) {
		char *fn = next_line(&s), *loc = next_line(&s), *colon, *end;
		unsigned long line;

		if (!fn || !loc)
			return 0;
		if (strcmp(fn, "??") && !(fr[i]->function = strdup(fn)))
			return -ENOMEM;
		if ((end = strstr(loc, " (discriminator")))
			*end = '\0';
		colon = strrchr(loc, ':');
		if (!colon || !strncmp(loc, "??", 2))
			continue;
		*colon = '\0';
		line = strtoul(colon + 1, &end, 10);
		if (!(fr[i]->file = strdup(loc)))
			return -ENOMEM;
		fr[i]->line = *end == '\0' && line < 100000000 ? (unsigned)line : 0;
	}
	return 0;
}

/* Resolve every frame of module @m in one addr2line run. */
static int resolve_module(struct bbx_frame *f, size_t n, const struct bb_module *m,
			  const struct bbx_sym_opts *o, char *note, size_t notelen)
{
	struct bbx_frame **mine = calloc(n, sizeof(*mine));
	uint64_t *offs = calloc(n, sizeof(*offs));
	const char *why = NULL;
	uint8_t id[64];
	size_t k = 0, idlen;
	struct stat st;
	char *out;
	int fd, rc = 0;

	if (!mine || !offs) {
		rc = -ENOMEM;
		goto done;
	}
	for (size_t i = 0; i < n; i++) {
		if (f[i].module != m->path)
			continue;
		mine[k] = &f[i];
		/* a return address points after its call: look up the call */
		offs[k++] = i ? f[i].offset - 1 : f[i].offset;
	}
	if (!m->path[0] || m->path[0] != '/') {
		note_add(note, notelen, m->path[0] ? m->path : "?", "not a file path");
		goto done;
	}
	fd = open(m->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		if (fd >= 0)
			close(fd);
		note_add(note, notelen, m->path, "not readable");
		goto done;
	}
	idlen = file_build_id(fd, id, sizeof(id));
	close(fd);
	if (m->build_id_len && (idlen != m->build_id_len ||
				memcmp(id, m->build_id, idlen < sizeof(id) ? idlen : sizeof(id)))) {
		note_add(note, notelen, m->path,
			 "build id differs from the crashed process's (rebuilt?)");
		goto done;
	}
	out = run_batch(o->addr2line ? o->addr2line : "addr2line", m->path, offs, k,
			o->timeout_ms, &why);
	if (!out) {
		note_add(note, notelen, m->path, why);
		goto done;
	}
	rc = parse_batch(out, mine, k);
	free(out);
done:
	free(mine);
	free(offs);
	return rc;
}

int bbx_symbolise(struct bbx_frame *f, const uint64_t *addrs, size_t n,
		  const struct bb_module *mods, size_t nmods,
		  const struct bbx_sym_opts *o, char *note, size_t notelen)
{
	memset(f, 0, n * sizeof(*f));
	for (size_t i = 0; i < n; i++) {
		const struct bb_module *m = bb_module_find(mods, nmods, addrs[i]);

		f[i].addr = addrs[i];
		if (m) {
			f[i].module = m->path;
			f[i].offset = addrs[i] - m->bias;
		}
	}
	if (!o->symbolise)
		return 0;
	for (size_t j = 0; j < nmods; j++) {
		bool used = false;
		int rc;

		for (size_t i = 0; i < n && !used; i++)
			used = f[i].module == mods[j].path;
		if (!used)
			continue;
		rc = resolve_module(f, n, &mods[j], o, note, notelen);
		if (rc)
			return rc;
	}
	return 0;
}

void bbx_frames_free(struct bbx_frame *f, size_t n)
{
	for (size_t i = 0; f && i < n; i++) {
		free(f[i].function);
		free(f[i].file);
	}
}

const char *bbx_signal_name(int sig)
{
	static char names[65][16];
	const char *abbrev;

	if (sig <= 0 || sig > 64)
		return NULL;
	abbrev = sigabbrev_np(sig);
	if (!abbrev)
		return NULL;
	if (!names[sig][0])
		snprintf(names[sig], sizeof(names[sig]), "SIG%s", abbrev);
	return names[sig];
}

const char *bbx_sigcode_name(int sig, int code)
{
#define C(x) case x: return #x
	switch (code) { /* codes any signal can carry */
	C(SI_USER); C(SI_KERNEL); C(SI_QUEUE); C(SI_TIMER); C(SI_MESGQ);
	C(SI_ASYNCIO); C(SI_TKILL);
	default: break;
	}
	switch (sig) {
	case SIGSEGV:
		switch (code) {
		C(SEGV_MAPERR); C(SEGV_ACCERR); C(SEGV_BNDERR); C(SEGV_PKUERR);
		default: return NULL;
		}
	case SIGBUS:
		switch (code) {
		C(BUS_ADRALN); C(BUS_ADRERR); C(BUS_OBJERR); C(BUS_MCEERR_AR);
		C(BUS_MCEERR_AO);
		default: return NULL;
		}
	case SIGILL:
		switch (code) {
		C(ILL_ILLOPC); C(ILL_ILLOPN); C(ILL_ILLADR); C(ILL_ILLTRP);
		C(ILL_PRVOPC); C(ILL_PRVREG); C(ILL_COPROC); C(ILL_BADSTK);
		default: return NULL;
		}
	case SIGFPE:
		switch (code) {
		C(FPE_INTDIV); C(FPE_INTOVF); C(FPE_FLTDIV); C(FPE_FLTOVF);
		C(FPE_FLTUND); C(FPE_FLTRES); C(FPE_FLTINV); C(FPE_FLTSUB);
		default: return NULL;
		}
	case SIGTRAP:
		switch (code) {
		C(TRAP_BRKPT); C(TRAP_TRACE);
		default: return NULL;
		}
	default:
		return NULL;
	}
#undef C
}
