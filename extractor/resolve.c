/* SPDX-License-Identifier: MIT */
/*
 * resolve.c - the symbolising child (resolve.h): confine, open the module
 * safely, check its build id against the box's, then for each frame a
 * function name only from a symbol that contains the address, and the
 * inline chain and file:line from DWARF, with elfutils' libdwfl.
 *
 * Everything here runs after bbx_sandbox_confine(): with the box owner's
 * privileges at most, limited, killed by the parent at its deadline.  A
 * hostile file can crash or hang this process; it cannot reach the parent
 * except through the answer, which the parent checks (symwire.c).  Every
 * file this process opens for a module, its debug file and the DWARF
 * supplementary file that one names is opened by open_module(): O_PATH
 * first, regular files only, then O_NONBLOCK, so a FIFO or a device where
 * a file is looked for is refused, never waited on.
 */
#include <dwarf.h>
#include <elfutils/libdwelf.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <gelf.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "resolve.h"
#include "sandbox.h"
#include "symwire.h"

/* ---- the module's file -------------------------------------------------- */

static const char *kind_name(mode_t m)
{
	switch (m & S_IFMT) {
	case S_IFIFO:  return "a FIFO";
	case S_IFCHR:  return "a character device";
	case S_IFBLK:  return "a block device";
	case S_IFDIR:  return "a directory";
	case S_IFSOCK: return "a socket";
	default:       return "not a regular file";
	}
}

/*
 * Open @path for reading only if it is a regular file, without opening
 * anything else even for an instant: an O_PATH descriptor opens no device
 * (no driver's open, no side effect) and never blocks on a FIFO; fstat()
 * tells what it is; only a regular file is then opened for reading,
 * through /proc/self/fd, i.e. that very inode, whatever the path points
 * at by then.  Symbolic links are followed: the loader names libraries by
 * their soname link and /lib is a link on Debian; the build id check that
 * follows is what ties the file to the crashed process.
 * Returns the descriptor, or -1 with @why.
 */
static int open_module(const char *path, char *why, size_t len)
{
	char proc[64];
	struct stat st, st2;
	int pfd, fd;

	pfd = open(path, O_PATH | O_CLOEXEC);
	if (pfd < 0) {
		int e = errno;

		if (e == ENOENT)
			snprintf(why, len, "not found");
		else
			snprintf(why, len, "%s (uid %u)", strerror(e), (unsigned)getuid());
		return -1;
	}
	if (fstat(pfd, &st)) {
		snprintf(why, len, "%s", strerror(errno));
		close(pfd);
		return -1;
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, len, "%s: refused", kind_name(st.st_mode));
		close(pfd);
		return -1;
	}
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
	fd = open(proc, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		/* the uid says who was refused: the box owner's, not ours */
		snprintf(why, len, "%s (uid %u)", strerror(errno), (unsigned)getuid());
		close(pfd);
		return -1;
	}
	close(pfd);
	if (fstat(fd, &st2) || !S_ISREG(st2.st_mode) || st2.st_ino != st.st_ino ||
	    st2.st_dev != st.st_dev) {
		snprintf(why, len, "changed while being opened: refused");
		close(fd);
		return -1;
	}
	return fd;
}

/* ---- debug files ---------------------------------------------------------- */

/*
 * The search for the module's debug file and for the DWARF supplementary
 * file (.gnu_debugaltlink, dwz) that file names: libdwfl asks for both
 * through the find_debuginfo callback.  libdw's own search
 * (dwfl_standard_find_debuginfo) opens each candidate with a plain
 * open(2), which waits forever on a FIFO planted where it looks (beside
 * the module, by the name its debuglink gives); so the candidates are
 * looked for here, in the same places, and opened by open_module().
 */
static struct {
	const struct bbx_symreq *q;
	char    *path;             /* libdwfl's debuginfo_path: ":.debug:DIR...:/usr/lib/debug" */
	dev_t    dev;              /* the module's file */
	ino_t    ino;
	bool     searched;         /* the debug file was looked for */
	char     alt[PATH_MAX];    /* .gnu_debugaltlink of the file whose DWARF is read ... */
	char     alt_dir[PATH_MAX];/* ... the directory of that file ... */
	uint8_t  alt_id[BBX_SYM_BUILD_ID_MAX]; /* ... and the build id it names */
	size_t   alt_id_len;
	bool     alt_searched;     /* the supplementary file was looked for ... */
	bool     alt_found;        /* ... and found */
	char     remark[BBX_SYM_MSG_MAX / 2]; /* candidates refused */
} dbg;

/* snprintf()'s result: whether it all fit in @len bytes. */
static bool fits(int n, size_t len)
{
	return n >= 0 && (size_t)n < len;
}

static void dbg_remark(const char *path, const char *why)
{
	size_t used = strlen(dbg.remark);

	if (used + 3 < sizeof(dbg.remark) &&
	    !fits(snprintf(dbg.remark + used, sizeof(dbg.remark) - used, "%sdebug file %s: %s",
			   used ? "; " : "", path, why), sizeof(dbg.remark) - used))
		dbg.remark[used] = '\0'; /* a cut remark would end in half a path */
}

/* .gnu_debugaltlink of @e (name, then build id) into dbg.alt, dbg.alt_id;
 * dbg.alt stays "" when there is none or it is malformed. */
static void read_altlink(Elf *e, const char *file)
{
	size_t shstrndx, k, idlen;
	Elf_Scn *scn = NULL;
	char dir[PATH_MAX];

	dbg.alt[0] = '\0';
	if (elf_getshdrstrndx(e, &shstrndx))
		return;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(e, shstrndx, sh.sh_name)) ||
		    strcmp(name, ".gnu_debugaltlink"))
			continue;
		if (!(d = elf_getdata(scn, NULL)) || !d->d_buf)
			return;
		k = strnlen(d->d_buf, d->d_size);
		idlen = k < d->d_size ? d->d_size - k - 1 : 0;
		if (!k || k >= sizeof(dbg.alt) || !idlen || idlen > sizeof(dbg.alt_id))
			return;
		memcpy(dbg.alt, d->d_buf, k + 1);
		memcpy(dbg.alt_id, (const char *)d->d_buf + k + 1, idlen);
		dbg.alt_id_len = idlen;
		snprintf(dir, sizeof(dir), "%s", file);
		snprintf(dbg.alt_dir, sizeof(dbg.alt_dir), "%s", dirname(dir));
		return;
	}
}

/*
 * @path as a candidate with build id @id: its descriptor, or -1 (missing,
 * not a regular file, the module itself, another build id).  With
 * @altlink, the supplementary file that the candidate names is noted.
 */
static int try_candidate(const char *path, const uint8_t *id, size_t idlen, bool altlink,
			 char **name)
{
	char why[BBX_SYM_MSG_MAX];
	struct stat st;
	const void *got;
	ssize_t n;
	Elf *e;
	int fd = open_module(path, why, sizeof(why));

	if (fd < 0) {
		if (strcmp(why, "not found") && strncmp(why, "Not a directory", 15))
			dbg_remark(path, why);
		return -1;
	}
	if (fstat(fd, &st) || (st.st_dev == dbg.dev && st.st_ino == dbg.ino) ||
	    !(e = elf_begin(fd, ELF_C_READ_MMAP, NULL))) {
		close(fd);
		return -1;
	}
	n = dwelf_elf_gnu_build_id(e, &got);
	if (n <= 0 || (size_t)n != idlen || memcmp(got, id, idlen)) {
		elf_end(e);
		close(fd);
		return -1;
	}
	if (altlink)
		read_altlink(e, path);
	elf_end(e);
	if (!(*name = strdup(path))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The next entry of the colon-separated dbg.path after *@p, into @buf. */
static bool next_entry(const char **p, char *buf, size_t len)
{
	size_t k;

	if (!*p)
		return false;
	k = strcspn(*p, ":");
	snprintf(buf, len, "%.*s", (int)(k < len ? k : len - 1), *p);
	*p = (*p)[k] ? *p + k + 1 : NULL;
	return true;
}

/* DIR/.build-id/xx/yyyy.debug for each absolute DIR of the path. */
static int by_build_id(const uint8_t *id, size_t idlen, bool altlink, char **name)
{
	static const char hex[] = "0123456789abcdef";
	char h[2 * BBX_SYM_BUILD_ID_MAX + 1], dir[PATH_MAX], path[PATH_MAX + 160];
	const char *p = dbg.path;
	int fd = -1;

	if (idlen < 2)
		return -1;
	for (size_t i = 0; i < idlen; i++) {
		h[2 * i] = hex[id[i] >> 4];
		h[2 * i + 1] = hex[id[i] & 15];
	}
	h[2 * idlen] = '\0';
	while (fd < 0 && next_entry(&p, dir, sizeof(dir))) {
		if (dir[0] != '/')
			continue;
		if (fits(snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s.debug", dir, h, h + 2),
			 sizeof(path)))
			fd = try_candidate(path, id, idlen, altlink, name);
	}
	return fd;
}

/*
 * The debug file by name: @link (the module's .gnu_debuglink, or its
 * name + ".debug") in the module's directory for an empty entry of the
 * path, in that directory's subdirectory for a relative one (".debug"),
 * under an absolute one followed by the module's directory; for the
 * module's path as the box gives it and as it resolves (/lib is a link).
 */
static int by_name(const char *file, const char *link, char **name)
{
	char lk[NAME_MAX + 8], canon[PATH_MAX], dirs[2][PATH_MAX], e[PATH_MAX];
	char path[3 * PATH_MAX];
	int fd = -1;

	snprintf(canon, sizeof(canon), "%s", file);
	snprintf(dirs[0], sizeof(dirs[0]), "%s", dirname(canon));
	dirs[1][0] = '\0';
	if (realpath(file, canon) && strcmp(canon, file)) /* opens no file */
		snprintf(dirs[1], sizeof(dirs[1]), "%s", dirname(canon));
	if (!link) {
		snprintf(canon, sizeof(canon), "%s", file);
		snprintf(lk, sizeof(lk), "%.*s.debug", NAME_MAX, basename(canon));
		link = lk;
	}
	for (int d = 0; d < 2 && fd < 0 && dirs[d][0] == '/'; d++) {
		const char *p = dbg.path;

		while (fd < 0 && next_entry(&p, e, sizeof(e))) {
			int n = !e[0] ? snprintf(path, sizeof(path), "%s/%s", dirs[d], link)
			      : e[0] != '/' ? snprintf(path, sizeof(path), "%s/%s/%s", dirs[d], e,
						       link)
			      : snprintf(path, sizeof(path), "%s%s/%s", e, dirs[d], link);

			if (fits(n, sizeof(path)))
				fd = try_candidate(path, dbg.q->build_id, dbg.q->build_id_len,
						   true, name);
		}
	}
	return fd;
}

/* The supplementary file: by its build id, then by the name the DWARF
 * file gives (absolute, or relative to that file's directory). */
static int find_alt(char **name)
{
	char path[2 * PATH_MAX];
	int fd = by_build_id(dbg.alt_id, dbg.alt_id_len, false, name);

	if (fd < 0 && fits(dbg.alt[0] == '/' ? snprintf(path, sizeof(path), "%s", dbg.alt)
			   : snprintf(path, sizeof(path), "%s/%s", dbg.alt_dir, dbg.alt),
			   sizeof(path)))
		fd = try_candidate(path, dbg.alt_id, dbg.alt_id_len, false, name);
	dbg.alt_found = fd >= 0;
	return fd;
}

/* ---- libdwfl ------------------------------------------------------------ */

static char *debuginfo_path;

/* The module's file is given by descriptor: never look for it elsewhere. */
static int no_find_elf(Dwfl_Module *mod, void **userdata, const char *modname,
		       Dwarf_Addr base, char **file_name, Elf **elfp)
{
	(void)mod; (void)userdata; (void)modname; (void)base; (void)file_name; (void)elfp;
	return -1;
}

/*
 * Debug information: the file itself (libdwfl looks there first), else
 * the search above, each candidate checked against the module's build id
 * (the supplementary file against the build id its link names); then
 * debuginfod, which libdw asks only when DEBUGINFOD_URLS is in the
 * environment, i.e. only with --debuginfod (the parent gives the child no
 * other environment): dwfl_standard_find_debuginfo() without a file name
 * and with an empty path, so that it looks nowhere on disk.  libdwfl asks
 * again for the symbol table after the DWARF search failed: one search
 * (and one download attempt) per module is enough.
 */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
			  Dwarf_Addr base, const char *file_name, const char *debuglink_file,
			  GElf_Word debuglink_crc, char **debuginfo_file_name)
{
	bool alt = dbg.alt[0] && debuglink_file && !strcmp(debuglink_file, dbg.alt);
	char *saved = debuginfo_path;
	int fd;

	(void)file_name;
	(void)debuglink_crc;
	if (alt && !dbg.alt_searched) {
		dbg.alt_searched = true;
		fd = find_alt(debuginfo_file_name);
	} else if (!alt && !dbg.searched) {
		dbg.searched = true;
		fd = by_build_id(dbg.q->build_id, dbg.q->build_id_len, true, debuginfo_file_name);
		if (fd < 0)
			fd = by_name(dbg.q->path, debuglink_file, debuginfo_file_name);
	} else {
		return -1;
	}
	if (fd < 0 && dbg.q->debuginfod) {
		errno = 0; /* libdwfl reads errno as "something went wrong" */
		debuginfo_path = (char *)"";
		fd = dwfl_standard_find_debuginfo(mod, userdata, modname, base, NULL, NULL, 0,
						  debuginfo_file_name);
		debuginfo_path = saved;
		if (alt)
			dbg.alt_found = fd >= 0;
	}
	return fd;
}

static const Dwfl_Callbacks callbacks = {
	.find_elf = no_find_elf,
	.find_debuginfo = find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

/* The source file of an inlined call (DW_AT_call_file), or NULL. */
static const char *call_file(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	Dwarf_Word idx;
	Dwarf_Files *files;
	Dwarf_Die cu;
	size_t nfiles;

	if (dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &a), &idx) ||
	    !dwarf_diecu(die, &cu, NULL, NULL) || dwarf_getsrcfiles(&cu, &files, &nfiles) ||
	    idx >= nfiles)
		return NULL;
	return dwarf_filesrc(files, idx, NULL, NULL);
}

static uint32_t call_line(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	Dwarf_Word v;

	if (dwarf_formudata(dwarf_attr(die, DW_AT_call_line, &a), &v) || v > UINT32_MAX)
		return 0;
	return (uint32_t)v;
}

/*
 * The name of the symbol (.symtab, else .dynsym) that contains @look,
 * into @f.  libdwfl may answer with the nearest symbol below the address
 * when none contains it (a symbol of size 0, an assembly label): that is
 * exactly the neighbour's name a stack must never show, so the answer is
 * taken only if value <= look < value + size.  One frame at a time: the
 * name may be in a static buffer until the frame is written.
 */
static void frame_symbol(Dwfl_Module *mod, Dwarf_Addr look, uint64_t off,
			 struct bbx_symframe *f)
{
	static char plain[BBX_SYM_NAME_MAX + 1];
	GElf_Off soff = 0;
	GElf_Sym sym;
	const char *at, *name = dwfl_module_addrinfo(mod, look, &soff, &sym, NULL, NULL, NULL);

	/* soff = look - value: a value above look wraps to a huge soff */
	if (!name || !*name || sym.st_size == 0 || soff >= sym.st_size || soff > look)
		return;
	/* "__libc_start_main@@GLIBC_2.34": the name without its version */
	if ((at = strchr(name + 1, '@')) && (size_t)(at - name) <= BBX_SYM_NAME_MAX) {
		memcpy(plain, name, (size_t)(at - name));
		plain[at - name] = '\0';
		name = plain;
	}
	f->at.function = name;
	f->has_offset = true;
	f->function_offset = off - (look - soff);
}

/*
 * From DWARF: the line of @look (the line table), the calls inlined at it
 * (innermost first, each with the line it is at, which for the next one
 * out is the DW_AT_call_file:DW_AT_call_line of the inner one) and the
 * out-of-line function they are inlined into with its own line.  That
 * function names the frame only if no symbol did (its ranges contain
 * @look, as dwarf_getscopes found).
 */
static void frame_dwarf(Dwfl_Module *mod, Dwarf_Addr look, uint64_t off,
			struct bbx_symframe *f)
{
	Dwfl_Line *ln = dwfl_module_getsrc(mod, look);
	Dwarf_Die *cu, *scopes = NULL, *chain = NULL, *sub = NULL;
	struct bbx_symloc cur = { NULL, NULL, 0 };
	Dwarf_Addr bias = 0, entry;
	int lineno = 0, n, m = 0;

	if (ln && (cur.file = dwfl_lineinfo(ln, NULL, &lineno, NULL, NULL, NULL)))
		cur.line = lineno > 0 ? (uint32_t)lineno : 0;
	cu = dwfl_module_addrdie(mod, look, &bias);
	n = cu ? dwarf_getscopes(cu, look - bias, &scopes) : 0;
	if (n > 0)
		m = dwarf_getscopes_die(&scopes[0], &chain);
	for (int i = 0; i < m; i++) {
		int tag = dwarf_tag(&chain[i]);

		if (tag == DW_TAG_inlined_subroutine) {
			if (f->ninlined < BBX_SYM_INLINE_MAX) {
				struct bbx_symloc *l = &f->inlined[f->ninlined++];

				l->function = dwarf_diename(&chain[i]);
				l->file = cur.file;
				l->line = cur.file ? cur.line : 0;
			}
			cur.file = call_file(&chain[i]);
			cur.line = call_line(&chain[i]);
		} else if (tag == DW_TAG_subprogram || tag == DW_TAG_entry_point) {
			sub = &chain[i];
			break;
		}
	}
	f->at.file = cur.file;
	f->at.line = cur.file ? cur.line : 0;
	if (!f->at.function && sub && (f->at.function = dwarf_diename(sub)) &&
	    dwarf_entrypc(sub, &entry) == 0 && entry + bias <= look) {
		f->has_offset = true;
		f->function_offset = off - (entry + bias);
	}
	free(scopes);
	free(chain);
}

/* ---- the request -------------------------------------------------------- */

static char answer[BBX_SYM_ANSWER_MAX];

static int reply(struct bbx_wbuf *w)
{
	size_t done = 0;

	while (done < w->len) {
		ssize_t r = write(STDOUT_FILENO, w->p + done, w->len - done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return 1;
		done += (size_t)r;
	}
	return 0;
}

static int refuse(struct bbx_wbuf *w, const char *why)
{
	w->len = 0;
	w->overflow = false;
	bbx_symans_head(w, false, why, 0);
	bbx_symans_end(w);
	return reply(w);
}

/* The frames of @q in @mod (reported at 0: addresses are offsets). */
static int resolve(const struct bbx_symreq *q, Dwfl_Module *mod, bool dwarf,
		   const char *remark, struct bbx_wbuf *w)
{
	static struct bbx_symframe f;
	Dwarf_Addr lo = 0, hi = 0;

	dwfl_module_info(mod, NULL, &lo, &hi, NULL, NULL, NULL, NULL);
	bbx_symans_head(w, true, remark, q->n);
	for (size_t i = 0; i < q->n; i++) {
		/* a return address is after its call: look up the call */
		Dwarf_Addr look = q->ret[i] && q->off[i] ? q->off[i] - 1 : q->off[i];

		memset(&f, 0, sizeof(f));
		if (look >= lo && look < hi) { /* else outside the file's image */
			frame_symbol(mod, look, q->off[i], &f);
			if (dwarf)
				frame_dwarf(mod, look, q->off[i], &f);
		}
		bbx_symans_frame(w, i, &f);
	}
	bbx_symans_end(w);
	return w->overflow ? refuse(w, "answer too long") : reply(w);
}

static int hex_eq(const uint8_t *a, size_t alen, const unsigned char *b, int blen)
{
	return blen > 0 && (size_t)blen == alen && !memcmp(a, b, alen);
}

/* Append "; @what" (or @what) to @remark. */
static void remark_add(char *remark, size_t len, const char *what)
{
	size_t used = strlen(remark);

	if (what[0] && used + 3 < len)
		snprintf(remark + used, len - used, "%s%s", used ? "; " : "", what);
}

static int module(const struct bbx_symreq *q, struct bbx_wbuf *w)
{
	const unsigned char *id = NULL;
	char why[BBX_SYM_MSG_MAX] = "", remark[BBX_SYM_MSG_MAX] = "";
	GElf_Ehdr eh;
	GElf_Addr vaddr, bias;
	Dwarf_Addr dbias;
	Dwfl_Module *mod;
	Dwfl *dwfl;
	Elf *elf;
	struct stat st;
	bool dwarf = true;
	int fd, idlen;

	fd = open_module(q->path, why, sizeof(why));
	if (fd < 0)
		return refuse(w, why);
	memset(&dbg, 0, sizeof(dbg));
	dbg.q = q;
	if (fstat(fd, &st) == 0) {
		dbg.dev = st.st_dev;
		dbg.ino = st.st_ino;
	}
	debuginfo_path = dbg.path = (char *)q->debug_path;
	elf_version(EV_CURRENT);
	dwfl = dwfl_begin(&callbacks);
	if (!dwfl)
		return refuse(w, dwfl_errmsg(-1));
	dwfl_report_begin(dwfl);
	/* base 0: the module's addresses are its file's, the offsets the
	 * parent computed (address - the box's load bias) */
	mod = dwfl_report_elf(dwfl, q->path, q->path, fd, 0, true);
	dwfl_report_end(dwfl, NULL, NULL);
	if (!mod) {
		snprintf(why, sizeof(why), "not an ELF file libdw can read: %s", dwfl_errmsg(-1));
		return refuse(w, why);
	}
	elf = dwfl_module_getelf(mod, &bias);
	if (!elf || !gelf_getehdr(elf, &eh) || (eh.e_type != ET_EXEC && eh.e_type != ET_DYN))
		return refuse(w, "not an executable or shared object");
	idlen = dwfl_module_build_id(mod, &id, &vaddr);
	if (idlen <= 0)
		return refuse(w, "the file has no build id: refused");
	if (!hex_eq(q->build_id, q->build_id_len, id, idlen))
		return refuse(w, "build id differs from the crashed process's (rebuilt?)");
	read_altlink(elf, q->path); /* its own DWARF's, if it has any */
	if (!dwfl_module_getdwarf(mod, &dbias)) {
		remark_add(remark, sizeof(remark), "no DWARF found (symbol table only)");
	} else if (dbg.alt[0] && !dbg.alt_found) {
		/* libdw would look for the supplementary file itself, with a
		 * plain open(2), the first time a name is in it */
		dwarf = false;
		snprintf(why, sizeof(why), "its DWARF names a supplementary file that is not "
			 "found (%.200s): symbol table only", dbg.alt);
		remark_add(remark, sizeof(remark), why);
	}
	remark_add(remark, sizeof(remark), dbg.remark);
	if (q->debuginfod && !dwfl_get_debuginfod_client(dwfl))
		remark_add(remark, sizeof(remark), "libdw cannot use debuginfod here");
	return resolve(q, mod, dwarf, remark, w);
}

int bbx_resolve_main(void)
{
	static char req[BBX_SYM_REQ_MAX];
	struct bbx_wbuf w = { answer, 0, sizeof(answer), false };
	struct bbx_symreq q;
	struct bbx_confine c;
	char why[BBX_SYM_MSG_MAX];
	size_t len = 0;

	for (;;) {
		ssize_t r = read(STDIN_FILENO, req + len, sizeof(req) - len);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || (r > 0 && len + (size_t)r == sizeof(req)))
			return 2;
		if (r == 0)
			break;
		len += (size_t)r;
	}
	if (bbx_symreq_decode(req, len, &q))
		return 2;
	c = (struct bbx_confine){ .uid = q.uid, .gid = q.gid, .drop = q.drop,
				  .cpu_s = q.timeout_ms / 1000 + 1, .network = q.debuginfod };
	if (bbx_sandbox_confine(&c, why, sizeof(why)))
		return refuse(&w, why);
	switch (q.test) {
	case BBX_SYM_TEST_CRASH:
		raise(SIGSEGV);
		return 1;
	case BBX_SYM_TEST_HANG:
		for (;;)
			pause();
	case BBX_SYM_TEST_GARBAGE:
		bbx_symans_head(&w, true, "", q.n);
		bbx_wbuf_str(&w, "not a frame");
		return reply(&w);
	default:
		break;
	}
	return module(&q, &w);
}
