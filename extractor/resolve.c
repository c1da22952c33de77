/* SPDX-License-Identifier: MIT */
/*
 * resolve.c - the symbolising child (resolve.h): confine, open the module
 * safely, check its build id against the box's, then for each frame a
 * function name only from a symbol that contains the address, and the
 * inline chain and file:line from DWARF, with elfutils' libdwfl; C++
 * names qualified from DWARF as gdb shows them, or demangled.
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
#include <sys/time.h>
#include <unistd.h>

#include "../shared/grow.h"
#include "../shared/hex.h"
#include "demangle.h"
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
 * Whose debug file may name a module's frames: root's, or the one whose
 * rights parse the box (this process: the box owner, or the caller), and
 * written by no one else (not writable by others, nor by a group other
 * than root's).  A file anyone else could have planted or changed, say in
 * a world-writable --debug-dir, is refused: its names would be believed.
 * NULL, or why not.
 */
static const char *untrusted_debug_file(const struct stat *st, char *why, size_t len)
{
	if (st->st_uid != 0 && st->st_uid != geteuid()) {
		snprintf(why, len, "owned by uid %u, neither root nor uid %u: refused",
			 (unsigned)st->st_uid, (unsigned)geteuid());
		return why;
	}
	if ((st->st_mode & S_IWOTH) || ((st->st_mode & S_IWGRP) && st->st_gid != 0)) {
		snprintf(why, len, "writable by %s: refused",
			 st->st_mode & S_IWOTH ? "others" : "its group");
		return why;
	}
	return NULL;
}

/*
 * @path as a candidate with build id @id: its descriptor, or -1 (missing,
 * not a regular file, the module itself, not trusted (untrusted_debug_file(),
 * said in the remark), another build id).  With @altlink, the
 * supplementary file that the candidate names is noted.
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
	if (fstat(fd, &st) || (st.st_dev == dbg.dev && st.st_ino == dbg.ino)) {
		close(fd);
		return -1;
	}
	if (untrusted_debug_file(&st, why, sizeof(why))) {
		dbg_remark(path, why);
		close(fd);
		return -1;
	}
	if (!(e = elf_begin(fd, ELF_C_READ_MMAP, NULL))) {
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
 * taken only if value <= look < value + size.  Names stay until the
 * answer is written (libdw's, or copies).
 */
static void frame_symbol(Dwfl_Module *mod, Dwarf_Addr look, uint64_t off,
			 struct bbx_symframe *f)
{
	GElf_Off soff = 0;
	GElf_Sym sym;
	const char *at, *name = dwfl_module_addrinfo(mod, look, &soff, &sym, NULL, NULL, NULL);

	/* soff = look - value: a value above look wraps to a huge soff */
	if (!name || !*name || sym.st_size == 0 || soff >= sym.st_size || soff > look)
		return;
	/* "__libc_start_main@@GLIBC_2.34": the name without its version */
	if ((at = strchr(name + 1, '@')) && !(name = strndup(name, (size_t)(at - name))))
		return;
	f->at.function = name;
	f->has_offset = true;
	f->function_offset = off - (look - soff);
}

/* ---- names from DWARF --------------------------------------------------- */

/* Whether @s is a C++ name as the binary has it (Itanium ABI, mangled). */
static bool mangled(const char *s)
{
	return s && s[0] == '_' && s[1] == 'Z';
}

/*
 * The DIE that says where the function @d is declared: through
 * DW_AT_abstract_origin (an inlined call, an out-of-line copy) and
 * DW_AT_specification (a member defined outside its class) to the
 * declaration, in a few steps (a hostile file may make a loop).
 */
static bool declaration(Dwarf_Die *d, Dwarf_Die *decl)
{
	Dwarf_Attribute a;

	*decl = *d;
	for (int i = 0; i < 8; i++) {
		if (!dwarf_attr(decl, DW_AT_abstract_origin, &a) &&
		    !dwarf_attr(decl, DW_AT_specification, &a))
			return true;
		if (!dwarf_formref_die(&a, decl))
			return false;
	}
	return false;
}

/*
 * "ns::Class<int>::" for the namespaces and classes that @decl is
 * declared in, outermost first, into @buf (as gdb names a function from
 * DWARF: the class's name carries its template arguments).  False when a
 * scope has no name to give (a lambda's or another unnamed class, a class
 * local to a function or block) or it does not fit.
 */
static bool scope_prefix(Dwarf_Die *decl, char *buf, size_t len)
{
	Dwarf_Die *sc = NULL;
	int n = dwarf_getscopes_die(decl, &sc);
	size_t used = 0;
	bool ok = n > 0;

	buf[0] = '\0';
	for (int i = n - 1; ok && i >= 1; i--) {
		int tag = dwarf_tag(&sc[i]);
		const char *name = dwarf_diename(&sc[i]);

		if (tag == DW_TAG_compile_unit || tag == DW_TAG_partial_unit ||
		    tag == DW_TAG_type_unit)
			continue;
		if (tag == DW_TAG_namespace && !name)
			name = "(anonymous namespace)";
		else if ((tag != DW_TAG_namespace && tag != DW_TAG_class_type &&
			  tag != DW_TAG_structure_type && tag != DW_TAG_union_type) || !name)
			ok = false;
		if (ok) {
			ok = fits(snprintf(buf + used, len - used, "%s::", name), len - used);
			used += ok ? strlen(buf + used) : 0;
		}
	}
	free(sc);
	return ok;
}

/* Names found for a declaration: a function's scopes are walked once. */
#define NAME_CACHE 256
static struct {
	const void *decl;     /* the declaration's DIE (its bytes: unique) */
	const char *function, *linkage;
} name_cache[NAME_CACHE];

/*
 * The function @d (a subprogram or an inlined call) as gdb shows it: its
 * name qualified by the namespaces and classes it is declared in
 * ("kvsvc::store::ShardedMap<int, kvsvc::Entry>::value_length"), with
 * its linkage name (DW_AT_linkage_name, mangled) in *@linkage.  When the
 * scopes give no name (a lambda's operator(), a local class's member),
 * the linkage name alone, which the demangler turns into the whole name
 * (*@linkage NULL); for a C function, its name.  NULL when it has none.
 */
static const char *dwarf_function(Dwarf_Die *d, const char **linkage)
{
	char prefix[BBX_SYM_NAME_MAX + 1];
	Dwarf_Attribute a;
	Dwarf_Die decl;
	const char *name = dwarf_diename(d), *lk = NULL, *full;
	size_t slot;

	*linkage = NULL;
	if (dwarf_attr_integrate(d, DW_AT_linkage_name, &a) ||
	    dwarf_attr_integrate(d, DW_AT_MIPS_linkage_name, &a))
		lk = dwarf_formstring(&a);
	if (!declaration(d, &decl))
		return lk ? lk : name;
	slot = ((uintptr_t)decl.addr >> 2) % NAME_CACHE;
	if (name_cache[slot].decl == decl.addr) {
		*linkage = name_cache[slot].linkage;
		return name_cache[slot].function;
	}
	full = name;
	if (name && scope_prefix(&decl, prefix, sizeof(prefix))) {
		if (prefix[0] && strlen(prefix) + strlen(name) <= BBX_SYM_NAME_MAX) {
			char *q = malloc(strlen(prefix) + strlen(name) + 1);

			if (q) {
				strcpy(q, prefix);
				strcat(q, name);
			}
			full = q;
		}
		*linkage = full && lk && strcmp(lk, full) ? lk : NULL;
	} else if (lk) {
		full = lk;
	}
	name_cache[slot].decl = decl.addr;
	name_cache[slot].function = full;
	name_cache[slot].linkage = *linkage;
	return full;
}

/* ---- compile units without .debug_aranges --------------------------------- */

/*
 * libdw finds the compile unit of an address through .debug_aranges
 * only, which clang does not emit (nor gcc for an object built without
 * it): without it an address gets no line and no inlined calls.  So the
 * units' own ranges (DW_AT_low_pc and DW_AT_high_pc, or DW_AT_ranges)
 * are read once per module, for an address libdw finds no unit for; at
 * most CU_RANGES_MAX of them (a hostile file may claim any number).
 */
#define CU_RANGES_MAX (1u << 20)

struct cu_range {
	Dwarf_Addr lo, hi;
	Dwarf_Die  cu;
};

static struct {
	struct cu_range *r;
	size_t n;
	bool   built, capped;
} cus;

static int cu_range_cmp(const void *a, const void *b)
{
	const struct cu_range *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static void cu_ranges(Dwarf *dw)
{
	Dwarf_CU *cu = NULL, *next;
	Dwarf_Die die;
	uint8_t type;
	size_t cap = 0;

	cus.built = true;
	while (dwarf_get_units(dw, cu, &next, NULL, &type, &die, NULL) == 0) {
		Dwarf_Addr base, lo, hi;
		ptrdiff_t off = 0;

		cu = next;
		if (type == DW_UT_type || type == DW_UT_split_type)
			continue;
		while ((off = dwarf_ranges(&die, off, &base, &lo, &hi)) > 0) {
			if (lo >= hi)
				continue;
			if (cus.n == CU_RANGES_MAX) {
				cus.capped = true;
				goto sort;
			}
			if (BB__GROW(&cus.r, &cap, cus.n + 1) < 0)
				goto sort;
			cus.r[cus.n++] = (struct cu_range){ lo, hi, die };
		}
	}
sort:
	if (cus.n)
		qsort(cus.r, cus.n, sizeof(*cus.r), cu_range_cmp);
}

/* The compile unit whose ranges hold @mod's address @look, or NULL;
 * *@bias: the DWARF's. */
static Dwarf_Die *cu_by_ranges(Dwfl_Module *mod, Dwarf_Addr look, Dwarf_Addr *bias)
{
	Dwarf *dw = dwfl_module_getdwarf(mod, bias);
	Dwarf_Addr a;
	size_t lo = 0, hi;

	if (!dw || look < *bias)
		return NULL;
	if (!cus.built)
		cu_ranges(dw);
	a = look - *bias;
	hi = cus.n;
	while (lo < hi) { /* the first range starting above a */
		size_t mid = lo + (hi - lo) / 2;

		if (cus.r[mid].lo <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* ranges of two units may overlap: a few below are looked at */
	for (size_t k = 0; lo > 0 && k < 16; lo--, k++)
		if (a < cus.r[lo - 1].hi)
			return &cus.r[lo - 1].cu;
	return NULL;
}

/*
 * From DWARF: the line of @look (the line table), the calls inlined at it
 * (innermost first, each with the line it is at, which for the next one
 * out is the DW_AT_call_file:DW_AT_call_line of the inner one) and the
 * out-of-line function they are inlined into with its own line.  That
 * function names the frame if no symbol did (its ranges contain @look, as
 * dwarf_getscopes found), and for a C++ symbol its qualified name is the
 * frame's (the symbol's is the linkage name).
 */
static void frame_dwarf(Dwfl_Module *mod, Dwarf_Addr look, uint64_t off,
			struct bbx_symframe *f)
{
	Dwarf_Die *cu, *other, *scopes = NULL, *chain = NULL, *sub = NULL;
	struct bbx_symloc cur = { NULL, NULL, NULL, 0 };
	Dwarf_Addr bias = 0, entry;
	Dwarf_Line *dl;
	Dwfl_Line *ln;
	int lineno = 0, n, m = 0;

	/* libdwfl takes the unit of the nearest .debug_aranges entry below
	 * the address: when that unit does not hold it (its own is not in
	 * .debug_aranges), the one whose ranges do */
	cu = dwfl_module_addrdie(mod, look, &bias);
	if ((!cu || dwarf_haspc(cu, look - bias) <= 0) &&
	    (other = cu_by_ranges(mod, look, &bias))) {
		cu = other;
		if ((dl = dwarf_getsrc_die(cu, look - bias)) &&
		    (cur.file = dwarf_linesrc(dl, NULL, NULL)) && dwarf_lineno(dl, &lineno) == 0)
			cur.line = lineno > 0 ? (uint32_t)lineno : 0;
	} else if ((ln = dwfl_module_getsrc(mod, look)) &&
		   (cur.file = dwfl_lineinfo(ln, NULL, &lineno, NULL, NULL, NULL))) {
		cur.line = lineno > 0 ? (uint32_t)lineno : 0;
	}
	n = cu ? dwarf_getscopes(cu, look - bias, &scopes) : 0;
	if (n > 0)
		m = dwarf_getscopes_die(&scopes[0], &chain);
	for (int i = 0; i < m; i++) {
		int tag = dwarf_tag(&chain[i]);

		if (tag == DW_TAG_inlined_subroutine) {
			if (f->ninlined < BBX_SYM_INLINE_MAX) {
				struct bbx_symloc *l = &f->inlined[f->ninlined++];

				l->function = dwarf_function(&chain[i], &l->linkage);
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
	if (sub && !f->at.function) {
		f->at.function = dwarf_function(sub, &f->at.linkage);
		if (f->at.function && dwarf_entrypc(sub, &entry) == 0 && entry + bias <= look) {
			f->has_offset = true;
			f->function_offset = off - (entry + bias);
		}
	} else if (sub && mangled(f->at.function)) {
		const char *lk, *q = dwarf_function(sub, &lk);

		if (q && !mangled(q)) {
			f->at.linkage = f->at.function;
			f->at.function = q;
		}
	}
	free(scopes);
	free(chain);
}

/* ---- demangling ------------------------------------------------------------ */

#ifndef BB_HAVE_DEMANGLE
/* Built without a C++ compiler: names stay as the binary has them. */
char *bbx_demangle(const char *name)
{
	(void)name;
	return NULL;
}
#endif

/* The demangler's time, at most: a second, and half of what is left of
 * the child's (the parent kills it at its deadline). */
#define DEMANGLE_MS 1000

/* A name still as the binary has it that the demangler may be given. */
static bool to_demangle(const struct bbx_symloc *l)
{
	return l->function && !l->linkage && mangled(l->function) &&
	       strlen(l->function) <= BBX_DEMANGLE_IN_MAX;
}

/* @l's name demangled, the mangled one kept as its linkage name; as it
 * is when the demangler gives nothing, or more than a name may be. */
static void demangle_loc(struct bbx_symloc *l)
{
	char *d;

	if (!to_demangle(l) || !(d = bbx_demangle(l->function)))
		return;
	if (strlen(d) > BBX_SYM_NAME_MAX) {
		free(d);
		return;
	}
	l->linkage = l->function;
	l->function = d;
}

/*
 * The answer with the names as the binary has them, should the demangler
 * run out of its time (a name of a few hundred bytes can take it hours):
 * complete, and written by out_of_time() with write(2) and _exit(2) only,
 * async-signal-safe, whatever the demangler was doing.
 */
static char mangled_answer[BBX_SYM_ANSWER_MAX];
static size_t mangled_len;

static void out_of_time(int sig)
{
	size_t done = 0;

	(void)sig;
	while (done < mangled_len) {
		ssize_t r = write(STDOUT_FILENO, mangled_answer + done, mangled_len - done);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			_exit(1);
		done += (size_t)r;
	}
	_exit(0);
}

/* ---- the request -------------------------------------------------------- */

static char answer[BBX_SYM_ANSWER_MAX];
static struct bbx_symframe frames[BBX_SYM_MAX_FRAMES];

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

static int hex_eq(const uint8_t *a, size_t alen, const unsigned char *b, int blen)
{
	return blen > 0 && (size_t)blen == alen && !memcmp(a, b, alen);
}

/* Append "; @what" (or @what) to @remark. */
static void remark_add(char *remark, size_t len, const char *what)
{
	size_t used = strlen(remark), n = strlen(what), s = used ? 2 : 0;

	if (!n || used + s + 1 >= len)
		return;
	memcpy(remark + used, "; ", s);
	used += s;
	if (n > len - used - 1)
		n = len - used - 1; /* cut, as the remark's room says */
	memcpy(remark + used, what, n);
	remark[used + n] = '\0';
}

/* The answer: head with @message, the frames of @q, end. */
static void encode(struct bbx_wbuf *w, const struct bbx_symreq *q, const char *message)
{
	w->len = 0;
	w->overflow = false;
	bbx_symans_head(w, true, message, q->n);
	for (size_t i = 0; i < q->n; i++)
		bbx_symans_frame(w, i, &frames[i]);
	bbx_symans_end(w);
}

/* "@what" after @remark's "; " (as remark_add()), into @buf. */
static void remark_with(char *buf, size_t len, const char *remark, const char *what)
{
	snprintf(buf, len, "%s", remark);
	remark_add(buf, len, what);
}

/*
 * The names still as the binary has them demangled, within the
 * demangler's time (DEMANGLE_MS, @started: when this process started);
 * once it is spent, out_of_time() answers with the names as they are and
 * ends the process.
 */
static void demangle_frames(const struct bbx_symreq *q, int64_t started)
{
	struct sigaction sa;
	struct itimerval t;
	int64_t left = (int64_t)q->timeout_ms - (bbx_now_ms() - started);
	int64_t ms = left / 2 < DEMANGLE_MS ? left / 2 : DEMANGLE_MS;

	if (ms <= 0)
		out_of_time(0);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = out_of_time;
	sigemptyset(&sa.sa_mask);
	memset(&t, 0, sizeof(t));
	t.it_value.tv_sec = ms / 1000;
	t.it_value.tv_usec = (suseconds_t)(ms % 1000) * 1000;
	if (sigaction(SIGALRM, &sa, NULL) || setitimer(ITIMER_REAL, &t, NULL))
		out_of_time(0);
	for (size_t i = 0; i < q->n; i++) {
		demangle_loc(&frames[i].at);
		for (size_t k = 0; k < frames[i].ninlined; k++)
			demangle_loc(&frames[i].inlined[k]);
	}
	/* a SIGALRM due by now is taken here, before the answer is written */
	memset(&t, 0, sizeof(t));
	setitimer(ITIMER_REAL, &t, NULL);
}

/*
 * The frames of @q in @mod (reported at 0: addresses are offsets), with
 * a note on the frames its DWARF (@dwarf) gives no line for, but the
 * entry point's (@entry: _start, from the C runtime, never has one).
 */
static int resolve(const struct bbx_symreq *q, Dwfl_Module *mod, bool dwarf,
		   GElf_Addr entry, const char *remark, int64_t started, struct bbx_wbuf *w)
{
	char msg[BBX_SYM_MSG_MAX + 1], what[128];
	Dwarf_Addr lo = 0, hi = 0;
	size_t examined = 0, nolines = 0, todo = 0;
	int used = 0;

	dwfl_module_info(mod, NULL, &lo, &hi, NULL, NULL, NULL, NULL);
	for (size_t i = 0; i < q->n; i++) {
		/* a return address is after its call: look up the call */
		Dwarf_Addr look = q->ret[i] && q->off[i] ? q->off[i] - 1 : q->off[i];
		struct bbx_symframe *f = &frames[i];

		memset(f, 0, sizeof(*f));
		if (look < lo || look >= hi) /* outside the file's image */
			continue;
		examined++;
		frame_symbol(mod, look, q->off[i], f);
		if (dwarf)
			frame_dwarf(mod, look, q->off[i], f);
		if (dwarf && !f->at.file &&
		    !(entry && f->has_offset && q->off[i] - f->function_offset == entry) &&
		    nolines++ < 4)
			used += snprintf(what + used, sizeof(what) - (size_t)used, "%s+0x%llx",
					 nolines > 1 ? ", " : "", (unsigned long long)q->off[i]);
		todo += to_demangle(&f->at);
		for (size_t k = 0; k < f->ninlined; k++)
			todo += to_demangle(&f->inlined[k]);
	}
	snprintf(msg, sizeof(msg), "%s", remark);
	if (nolines) {
		char part[BBX_SYM_MSG_MAX];

		snprintf(part, sizeof(part), "no line in its debug information for %zu of its "
			 "%zu frames (%s%s)%s", nolines, examined, what, nolines > 4 ? ", ..." : "",
			 cus.capped ? "; more compile unit ranges than are read" : "");
		remark_add(msg, sizeof(msg), part);
	}
	if (todo) {
		char fb[BBX_SYM_MSG_MAX + 1];
		struct bbx_wbuf m = { mangled_answer, 0, sizeof(mangled_answer), false };

		remark_with(fb, sizeof(fb), msg, "C++ names left mangled: the demangler ran out "
			    "of time");
		encode(&m, q, fb);
		if (m.overflow)
			return refuse(w, "answer too long");
		mangled_len = m.len;
		demangle_frames(q, started);
	}
	encode(w, q, msg);
	return w->overflow ? refuse(w, "answer too long") : reply(w);
}

/*
 * The module's file by its build id alone, when the recorded path is
 * missing or holds another build (a collector has the build-id store,
 * not the hosts' /opt/...): DIR/.build-id/xx/yyyy (the executable, as a
 * build-id store or a debuginfod cache keeps it) for each absolute DIR of
 * the path, then DIR/.build-id/xx/yyyy.debug (a debug file has the
 * symbol table and DWARF of the module, which is all a lookup reads),
 * then with --debuginfod the servers' executable.  Every candidate is
 * opened by try_candidate() (regular files only, the build id checked).
 * Returns the descriptor (*@name: the path), or -1.
 */
static int module_by_build_id(const struct bbx_symreq *q, char **name)
{
	static const char *const suffix[] = { "", ".debug" };
	char h[2 * BBX_SYM_BUILD_ID_MAX + 1], dir[PATH_MAX], path[PATH_MAX + 160];
	int fd = -1;

	if (q->build_id_len < 2)
		return -1;
	bb__hex(h, q->build_id, q->build_id_len);
	h[2 * q->build_id_len] = '\0';
	for (size_t s = 0; s < 2 && fd < 0; s++) {
		const char *p = dbg.path;

		while (fd < 0 && next_entry(&p, dir, sizeof(dir)))
			if (dir[0] == '/' &&
			    fits(snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s%s", dir, h,
					  h + 2, suffix[s]), sizeof(path)))
				fd = try_candidate(path, q->build_id, q->build_id_len, false,
						   name);
	}
	if (fd < 0 && q->debuginfod) {
		/* libdwfl's own lookup with an empty path: it looks nowhere on
		 * disk, only asks the servers (the file lands in the owner's
		 * cache); the build id is checked again below */
		static const Dwfl_Callbacks probe = { .debuginfo_path = &debuginfo_path };
		Dwfl *d = dwfl_begin(&probe);
		Dwfl_Module *m;
		void *ud = NULL;
		Elf *e = NULL;
		char *saved = debuginfo_path, *got = NULL;

		debuginfo_path = (char *)"";
		if (d && (m = dwfl_report_module(d, q->path, 0, 1)) &&
		    dwfl_module_report_build_id(m, q->build_id, q->build_id_len, 0) == 0) {
			errno = 0;
			fd = dwfl_build_id_find_elf(m, &ud, q->path, 0, &got, &e);
			if (e)
				elf_end(e);
		}
		debuginfo_path = saved;
		if (fd >= 0) {
			/* the same checks as any candidate, on that very file */
			char proc[64];
			int fd2;

			snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
			fd2 = try_candidate(proc, q->build_id, q->build_id_len, false, name);
			close(fd);
			fd = fd2;
			if (fd >= 0 && got) {
				free(*name);
				*name = got;
				got = NULL;
			}
		}
		free(got);
		if (d)
			dwfl_end(d);
	}
	return fd;
}

/* Whether the file of @fd has the build id of @q. */
static bool has_build_id(int fd, const struct bbx_symreq *q)
{
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	const void *got;
	ssize_t n;
	bool same;

	if (!e)
		return false;
	n = dwelf_elf_gnu_build_id(e, &got);
	same = n > 0 && (size_t)n == q->build_id_len && !memcmp(got, q->build_id, (size_t)n);
	elf_end(e);
	return same;
}

static int module(const struct bbx_symreq *q, int64_t started, struct bbx_wbuf *w)
{
	const unsigned char *id = NULL;
	char why[BBX_SYM_MSG_MAX] = "", remark[BBX_SYM_MSG_MAX] = "";
	static char found_path[PATH_MAX];
	const char *file = q->path;
	char *found = NULL;
	GElf_Ehdr eh;
	GElf_Addr vaddr, bias;
	Dwarf_Addr dbias;
	Dwfl_Module *mod;
	Dwfl *dwfl;
	Elf *elf;
	struct stat st;
	bool dwarf = true;
	int fd, idlen;

	memset(&dbg, 0, sizeof(dbg));
	dbg.q = q;
	debuginfo_path = dbg.path = (char *)q->debug_path;
	elf_version(EV_CURRENT);
	fd = open_module(q->path, why, sizeof(why));
	if (fd < 0 || (q->build_id_len && !has_build_id(fd, q))) {
		/* missing, or another build: the module by its build id */
		int alt = module_by_build_id(q, &found);

		if (alt < 0 && fd < 0)
			return refuse(w, why);
		if (alt >= 0) {
			snprintf(found_path, sizeof(found_path), "%s", found);
			snprintf(remark, sizeof(remark), "%s at the recorded path: found by build id "
				 "as %.300s", fd < 0 ? why : "another build", found_path);
			free(found);
			if (fd >= 0)
				close(fd);
			fd = alt;
			file = found_path;
		}
		/* the candidates refused on the way are not debug files */
		dbg.remark[0] = '\0';
	}
	if (fstat(fd, &st) == 0) {
		dbg.dev = st.st_dev;
		dbg.ino = st.st_ino;
	}
	dwfl = dwfl_begin(&callbacks);
	if (!dwfl)
		return refuse(w, dwfl_errmsg(-1));
	dwfl_report_begin(dwfl);
	/* base 0: the module's addresses are its file's, the offsets the
	 * parent computed (address - the box's load bias) */
	mod = dwfl_report_elf(dwfl, q->path, file, fd, 0, true);
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
		dwarf = false;
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
	return resolve(q, mod, dwarf, eh.e_entry, remark, started, w);
}

int bbx_resolve_main(void)
{
	static char req[BBX_SYM_REQ_MAX];
	struct bbx_wbuf w = { answer, 0, sizeof(answer), false };
	struct bbx_symreq q;
	struct bbx_confine c;
	char why[BBX_SYM_MSG_MAX];
	size_t len = 0;
	int64_t started = bbx_now_ms();

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
	return module(&q, started, &w);
}
