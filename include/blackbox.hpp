// SPDX-License-Identifier: MIT
//
// blackbox.hpp - libblackbox for C++17: the recorder's writers, state table,
// events and dump in namespace blackbox, header-only over <blackbox.h>.
//
//   blackbox::init();                                  // or init(size), init(opts)
//   blackbox::write("cache warm");                     // a text record
//   blackbox::write("user", name);                     // key = std::string_view
//   blackbox::write("status", 200);                    // typed: i64, u64, f64, bool
//   blackbox::event("request", {{"path", path}, {"status", 200}, {"ms", 1.5}});
//   blackbox::set("config", version);                  // state table
//   blackbox::dump(std::cerr);
//
// Every call returns what the C call it wraps returns: 0 (or a count) on
// success, a negative errno on failure (blackbox.h lists them), and is
// noexcept: nothing here throws or allocates on the write path, and each
// call is exactly the C call for the same record.  Strings are
// std::string_view and need no terminator (the C calls that take a
// length), except event names and event field keys, which are
// NUL-terminated (const char *: literals, as a schema's names are).  A
// std::string_view without data (default constructed) is the empty
// string; a NULL const char * is -EINVAL, as in C.  Overloads: a string
// literal or const char * is text (never bool); a signed integer is i64
// and an unsigned one u64 (char types included: they are integers here);
// float and double are f64; bool is a boolean; any other pointer (int *,
// void *, nullptr) does not compile (a static_assert says so): pass the
// value it points to, or the address as std::uintptr_t.
//
// Builds with -fno-exceptions and -fno-rtti include it as well (the
// terminate handler then keeps the exception's type, not its what()).
//
// Zero cost: with GCC or Clang on x86-64, write(key, value) for text, i64,
// u64 and f64 values takes <blackbox/inline.h>'s inline path, as
// bb_write_kvn() and bb_write_kv_i64() do in C (tests/perf checks that the
// instruction counts are the C call's), and event() takes bb_write_event()'s
// when the optimiser sees the field list as constants.
//
// Uncaught exceptions: with the crash handler on (BB_OPT_CRASH_HANDLER in
// the options, or BLACKBOX_CRASH_HANDLER=1 in the environment), init()
// installs a std::terminate handler (install_terminate_handler()) that
// records the exception's type and what() before the process dies.
//
// The man page is blackbox.hpp(3).
#ifndef BLACKBOX_HPP
#define BLACKBOX_HPP

#if !defined(__cplusplus) || __cplusplus < 201703L
#error "<blackbox.hpp> needs C++17; C and older C++ use <blackbox.h>"
#endif

#include <blackbox.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <ostream>
#include <string_view>
#include <type_traits>
#include <typeinfo>

#include <cxxabi.h>
#include <sys/mman.h>
#include <unistd.h>

// The write path's wrappers are always inlined: each call is the C call's
// inline path, written in the caller, as in C (a plain inline function
// around it can be left out of line by the optimiser, which then adds a
// call).
#define BB__CXX_INLINE inline __attribute__((always_inline))

namespace blackbox {

// The options of bb_init_opts(): value-initialise (blackbox::options o{};)
// and set what you need, as in C.
using options = ::bb_options;

namespace detail {

template <class T>
inline constexpr bool is_signed_int =
	std::is_integral_v<T> && std::is_signed_v<T> && !std::is_same_v<T, bool>;
template <class T>
inline constexpr bool is_unsigned_int =
	std::is_integral_v<T> && std::is_unsigned_v<T> && !std::is_same_v<T, bool>;
// A pointer that is not text: as a value it would silently become a bool.
template <class T>
inline constexpr bool is_nontext_ptr =
	(std::is_pointer_v<T> &&
	 !std::is_same_v<std::remove_cv_t<std::remove_pointer_t<T>>, char>) ||
	std::is_null_pointer_v<T>;
template <class T>
inline constexpr bool never = false;
#define BB__CXX_NO_POINTER                                                              \
	"blackbox: a pointer is not a value (it would be recorded as true); pass what it " \
	"points to, or its address as reinterpret_cast<std::uintptr_t>(p)"

BB__CXX_INLINE int kv_i64(std::string_view key, std::int64_t v) noexcept
{
#if defined(BB__HAVE_KV_FAST)
	return bb__kvn_typed(key.data(), key.size(), BB__KV_I64, static_cast<std::uint64_t>(v));
#else
	return bb_write_kvn_i64(key.data(), key.size(), v);
#endif
}

BB__CXX_INLINE int kv_u64(std::string_view key, std::uint64_t v) noexcept
{
#if defined(BB__HAVE_KV_FAST)
	return bb__kvn_typed(key.data(), key.size(), BB__KV_U64, v);
#else
	return bb_write_kvn_u64(key.data(), key.size(), v);
#endif
}

BB__CXX_INLINE int kv_f64(std::string_view key, double v) noexcept
{
#if defined(BB__HAVE_KV_FAST)
	std::uint64_t bits;

	std::memcpy(&bits, &v, sizeof(bits));
	return bb__kvn_typed(key.data(), key.size(), BB__KV_F64, bits);
#else
	return bb_write_kvn_f64(key.data(), key.size(), v);
#endif
}

} // namespace detail

// ---- the box ----------------------------------------------------------------

inline int install_terminate_handler() noexcept;

namespace detail {

// Is the crash handler asked for: BB_OPT_CRASH_HANDLER, or (unless
// BB_OPT_NO_ENV) BLACKBOX_CRASH_HANDLER set to anything but "" and "0",
// blackbox.h's rule; read as the library reads it, with secure_getenv()
// where glibc has it (a set-uid program ignores the environment).
inline bool crash_handler_on(const options &o) noexcept
{
	const char *e;

	if (o.flags & BB_OPT_CRASH_HANDLER)
		return true;
	if (o.flags & BB_OPT_NO_ENV)
		return false;
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
	e = ::secure_getenv("BLACKBOX_CRASH_HANDLER");
#else
	e = std::getenv("BLACKBOX_CRASH_HANDLER");
#endif
	return e && *e && std::strcmp(e, "0") != 0;
}

} // namespace detail

// bb_init_opts(); with the crash handler on, also the terminate handler.
// Not AS-safe.
inline int init(const options &o) noexcept
{
	int ret = bb_init_opts(&o);

	if (ret == 0 && detail::crash_handler_on(o))
		install_terminate_handler();
	return ret;
}

// bb_init(@size): 0 = BLACKBOX_SIZE or BB_DEFAULT_SIZE.
inline int init(std::size_t size = 0) noexcept
{
	options o{};

	o.size = size;
	return init(o);
}

inline int close() noexcept { return bb_close(); }

// bb_thread_init(): the calling thread's slot and alternate signal stack
// before its first record (blackbox.h).  Not AS-safe.
inline int thread_init() noexcept { return bb_thread_init(); }

// ---- records ----------------------------------------------------------------

BB__CXX_INLINE int write(std::string_view s) noexcept { return bb_write_strn(s.data(), s.size()); }
BB__CXX_INLINE int write(const char *s) noexcept { return s ? write(std::string_view(s)) : -EINVAL; }
BB__CXX_INLINE int write(double v) noexcept { return bb_write_f64(v); }
BB__CXX_INLINE int write(bool v) noexcept { return bb_write_bool(v); }
template <class T, std::enable_if_t<detail::is_signed_int<T>, int> = 0>
BB__CXX_INLINE int write(T v) noexcept { return bb_write_i64(v); }
template <class T, std::enable_if_t<detail::is_unsigned_int<T>, int> = 0>
BB__CXX_INLINE int write(T v) noexcept { return bb_write_u64(v); }
template <class T, std::enable_if_t<detail::is_nontext_ptr<T>, int> = 0>
int write(T) noexcept
{
	static_assert(detail::never<T>, BB__CXX_NO_POINTER);
	return -EINVAL;
}

// key = value.  Text, i64, u64 and f64 take the inline path when the key
// (and text) are at most 64 bytes.
BB__CXX_INLINE int write(std::string_view key, std::string_view value) noexcept
{
	return bb_write_kvn(key.data(), key.size(), value.data(), value.size());
}
BB__CXX_INLINE int write(std::string_view key, const char *value) noexcept
{
	return value ? write(key, std::string_view(value)) : -EINVAL;
}
BB__CXX_INLINE int write(std::string_view key, double v) noexcept { return detail::kv_f64(key, v); }
BB__CXX_INLINE int write(std::string_view key, bool v) noexcept
{
	return bb_write_kvn_bool(key.data(), key.size(), v);
}
template <class T, std::enable_if_t<detail::is_signed_int<T>, int> = 0>
BB__CXX_INLINE int write(std::string_view key, T v) noexcept { return detail::kv_i64(key, v); }
template <class T, std::enable_if_t<detail::is_unsigned_int<T>, int> = 0>
BB__CXX_INLINE int write(std::string_view key, T v) noexcept { return detail::kv_u64(key, v); }
template <class T, std::enable_if_t<detail::is_nontext_ptr<T>, int> = 0>
int write(std::string_view, T) noexcept
{
	static_assert(detail::never<T>, BB__CXX_NO_POINTER);
	return -EINVAL;
}

// bb_write_kv_important(): a text record that chatty traffic never evicts.
BB__CXX_INLINE int write_important(std::string_view key, std::string_view value) noexcept
{
	return bb_write_kvn_important(key.data(), key.size(), value.data(), value.size());
}

// ---- events -----------------------------------------------------------------

// One field of an event: a NUL-terminated key and a typed value.  The same
// bytes as struct bb_field, so that a list of them is passed to
// bb_write_event() as it is.  Holds pointers to its key and text: use it
// in the call, as event() does.
struct field {
	::bb_field f;

	BB__CXX_INLINE field(const char *key, std::string_view v) noexcept : f()
	{
		f.key = key;
		f.type = BB_TYPE_STRN;
		f.v.strn.s = v.data();
		f.v.strn.n = v.size();
	}
	BB__CXX_INLINE field(const char *key, const char *v) noexcept
		: field(key, std::string_view(v ? v : ""))
	{
		if (!v) {
			// As in C: a NULL text is bb_write_event()'s -EINVAL.
			f.type = BB_TYPE_STR;
			f.v.s = nullptr;
		}
	}
	BB__CXX_INLINE field(const char *key, double v) noexcept : f()
	{
		f.key = key;
		f.type = BB_TYPE_F64;
		f.v.f64 = v;
	}
	BB__CXX_INLINE field(const char *key, bool v) noexcept : f()
	{
		f.key = key;
		f.type = BB_TYPE_BOOL;
		f.v.b = v;
	}
	template <class T, std::enable_if_t<detail::is_signed_int<T>, int> = 0>
	BB__CXX_INLINE field(const char *key, T v) noexcept : f()
	{
		f.key = key;
		f.type = BB_TYPE_I64;
		f.v.i64 = v;
	}
	template <class T, std::enable_if_t<detail::is_unsigned_int<T>, int> = 0>
	BB__CXX_INLINE field(const char *key, T v) noexcept : f()
	{
		f.key = key;
		f.type = BB_TYPE_U64;
		f.v.u64 = v;
	}
	template <class T, std::enable_if_t<detail::is_nontext_ptr<T>, int> = 0>
	field(const char *, T) noexcept : f()
	{
		static_assert(detail::never<T>, BB__CXX_NO_POINTER);
	}
};

static_assert(std::is_standard_layout_v<field> && sizeof(field) == sizeof(::bb_field),
	      "blackbox::field is a struct bb_field");

namespace detail {

// The fields of @fs as the struct bb_field array they are (standard
// layout, the bb_field first and alone: pointer-interconvertible).
BB__CXX_INLINE const ::bb_field *fields(std::initializer_list<field> fs) noexcept
{
	// An empty list may have no array (begin() NULL): no fields.
	return fs.size() ? &fs.begin()->f : nullptr;
}

} // namespace detail

// bb_write_event(@name, fields): up to BB_EVENT_MAX_FIELDS.
BB__CXX_INLINE int event(const char *name, std::initializer_list<field> fs) noexcept
{
	return bb_write_event(name, detail::fields(fs), fs.size());
}

BB__CXX_INLINE int event_important(const char *name, std::initializer_list<field> fs) noexcept
{
	return bb_write_event_important(name, detail::fields(fs), fs.size());
}

// A span of this thread's work (bb_span_begin(3)): begun when constructed,
// ended when destroyed, so spans nest with the C++ scopes they cover and an
// exception that unwinds a scope ends its span.  Not copyable or movable:
// a span ends on the thread, and at the depth, that began it.
//
//   blackbox::span s("db.query", {{"table", "orders"}});
//   blackbox::span r("request", {{"id", id}}, blackbox::span_ctx{flow});
class span {
public:
	BB__CXX_INLINE span(const char *name, std::initializer_list<field> fs = {}) noexcept
	{
		(void)bb_span_begin(name, detail::fields(fs), fs.size());
	}
	BB__CXX_INLINE span(const char *name, std::initializer_list<field> fs,
			    const ::bb_span_ctx &ctx) noexcept
	{
		(void)bb_span_begin_ctx(name, detail::fields(fs), fs.size(), &ctx);
	}
	BB__CXX_INLINE ~span() { (void)bb_span_end(); }
	span(const span &) = delete;
	span &operator=(const span &) = delete;
};

// A span's correlation: a flow id (spans of any threads with the same one
// are one flow) and/or a W3C trace context (struct bb_span_ctx).
using span_ctx = ::bb_span_ctx;

// ---- state table ------------------------------------------------------------

BB__CXX_INLINE int set(std::string_view key, std::string_view value) noexcept
{
	return bb_setn(key.data(), key.size(), value.data(), value.size());
}
BB__CXX_INLINE int set(std::string_view key, const char *value) noexcept
{
	return value ? set(key, std::string_view(value)) : -EINVAL;
}
BB__CXX_INLINE int set(std::string_view key, double v) noexcept
{
	return bb_setn_f64(key.data(), key.size(), v);
}
BB__CXX_INLINE int set(std::string_view key, bool v) noexcept
{
	return bb_setn_bool(key.data(), key.size(), v);
}
template <class T, std::enable_if_t<detail::is_signed_int<T>, int> = 0>
BB__CXX_INLINE int set(std::string_view key, T v) noexcept
{
	return bb_setn_i64(key.data(), key.size(), v);
}
template <class T, std::enable_if_t<detail::is_unsigned_int<T>, int> = 0>
BB__CXX_INLINE int set(std::string_view key, T v) noexcept
{
	return bb_setn_u64(key.data(), key.size(), v);
}
template <class T, std::enable_if_t<detail::is_nontext_ptr<T>, int> = 0>
int set(std::string_view, T) noexcept
{
	static_assert(detail::never<T>, BB__CXX_NO_POINTER);
	return -EINVAL;
}
BB__CXX_INLINE int unset(std::string_view key) noexcept { return bb_unsetn(key.data(), key.size()); }

// ---- dump -------------------------------------------------------------------

// bb_dump() into @os: the box as text, through an anonymous file
// (memfd_create(2)) read back 4 KiB at a time; no heap allocation.
// Returns bb_dump()'s value, a negative errno of memfd_create, lseek or
// read, or -EIO when the stream fails.  Not AS-safe (the stream).
inline int dump(std::ostream &os) noexcept
{
	char buf[4096];
	int fd = ::memfd_create("blackbox-dump", MFD_CLOEXEC);
	int ret;

	if (fd < 0)
		return -errno;
	ret = bb_dump(fd);
	if (ret == 0 && ::lseek(fd, 0, SEEK_SET) < 0)
		ret = -errno;
	while (ret == 0) {
		ssize_t n = ::read(fd, buf, sizeof(buf));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			ret = -errno;
		if (n <= 0)
			break;
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
		// The stream may throw if the caller asked it to (exceptions()).
		try {
			os.write(buf, n);
		} catch (...) {
			ret = -EIO;
		}
#else
		os.write(buf, n);   // -fno-exceptions: a stream cannot throw
#endif
		if (!os)
			ret = -EIO;
	}
	::close(fd);
	return ret;
}

// ---- crashes ----------------------------------------------------------------

// Heartbeats and snapshots (bb_watchdog(3)): see blackbox.h.
// watchdog(): not AS-safe; heartbeat() (inline) and snapshot(): AS-safe.
inline int watchdog(std::chrono::milliseconds timeout) noexcept
{
	if (timeout.count() < 0 || timeout.count() > static_cast<long long>(BB_WATCHDOG_MAX_MS))
		return -EINVAL;
	return bb_watchdog(static_cast<unsigned>(timeout.count()));
}
inline int heartbeat() noexcept { return bb_heartbeat(); }
inline int snapshot(const char *reason) noexcept { return bb_snapshot(reason); }

// bb_crash_record(@reason): see blackbox.h.  AS-safe.
inline int crash_record(const char *reason) noexcept { return bb_crash_record(reason); }

namespace detail {

inline std::terminate_handler previous_terminate = nullptr;

// The mark that ends a text cut to fit: what the reader sees in the text
// and the JSON output alike.
inline constexpr char cut_mark[] = "...[cut]";

// Append @s to @buf (capacity @cap, NUL kept) at *@len; a text that does
// not fit is cut and ends with cut_mark, which leaves @buf full (later
// appends add nothing).  Returns false when it was cut.
inline bool append(char *buf, std::size_t cap, std::size_t *len, const char *s) noexcept
{
	std::size_t n = std::strlen(s), room = cap - 1 - *len, m = sizeof(cut_mark) - 1;

	if (n <= room) {
		std::memcpy(buf + *len, s, n);
		*len += n;
		buf[*len] = '\0';
		return true;
	}
	n = room > m ? room - m : 0;
	// back to a UTF-8 character's first byte, as bb_crash_record() cuts
	while (n && (static_cast<unsigned char>(s[n]) & 0xc0) == 0x80)
		n--;
	std::memcpy(buf + *len, s, n);
	*len += n;
	room -= n;
	m = m < room ? m : room;
	std::memcpy(buf + *len, cut_mark, m);
	*len += m;
	buf[*len] = '\0';
	return false;
}

// Nested exceptions (std::throw_with_nested) kept at most, after the outer
// one: ": caused by <type>: <what>" each.
inline constexpr int nested_max = 4;

#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
// Append what @e wraps (std::nested_exception), down to @depth levels.
inline void append_nested(char *buf, std::size_t cap, std::size_t *len, const std::exception &e,
			  int depth) noexcept
{
	if (depth <= 0)
		return;
	try {
		std::rethrow_if_nested(e);
	} catch (const std::exception &inner) {
		append(buf, cap, len, "; caused by: ");
		append(buf, cap, len, inner.what());
		append_nested(buf, cap, len, inner, depth - 1);
	} catch (...) {
		append(buf, cap, len, "; caused by: an exception that is no std::exception");
	}
}
#endif

// The terminate handler: the current exception's type (demangled) and,
// for a std::exception, what() and the exceptions it nests (up to
// nested_max), as an important record ("terminate", up to 4 KiB) and as
// the crash record's reason (up to BB_CRASH_REASON_MAX bytes); a text cut
// to fit ends with cut_mark.  Once per process: when the box has a crash
// record already (the same handler of another shared object, which
// included this header too, ran first), it records nothing more.  Then
// the previous handler (by default std::abort(), whose SIGABRT the crash
// handler also records: the box says why and how the process died).
[[noreturn]] inline void on_terminate() noexcept
{
	char type[256] = "";
	char text[4096] = "";
	char reason[BB_CRASH_REASON_MAX + 1] = "uncaught exception ";
	std::size_t tl = 0, rl = std::strlen(reason);
	std::type_info *ti = abi::__cxa_current_exception_type();

	if (ti) {
		int st = -1;
		// __cxa_demangle allocates its result (malloc): the process is
		// ending, not in a signal handler, and a failure leaves the
		// mangled name.
		char *dm = abi::__cxa_demangle(ti->name(), nullptr, nullptr, &st);
		std::size_t n = 0;

		append(type, sizeof(type), &n, st == 0 && dm ? dm : ti->name());
		std::free(dm);
#if defined(__cpp_exceptions) || defined(__EXCEPTIONS)
		append(text, sizeof(text), &tl, type);
		if (std::exception_ptr ep = std::current_exception()) {
			try {
				std::rethrow_exception(ep);
			} catch (const std::exception &e) {
				append(text, sizeof(text), &tl, ": ");
				append(text, sizeof(text), &tl, e.what());
				append_nested(text, sizeof(text), &tl, e, nested_max);
			} catch (...) {
			}
		}
#else
		append(text, sizeof(text), &tl, type);
#endif  // -fno-exceptions: this file cannot catch, the type alone is kept
	} else {
		append(text, sizeof(text), &tl, "std::terminate without an active exception");
		rl = 0;
	}
	append(reason, sizeof(reason), &rl, text);
	// The crash record first: -EEXIST says another handler (or the
	// program) recorded the death already, and the record is kept once.
	if (bb_crash_record(reason) != -EEXIST)
		bb_write_kvn_important("terminate", 9, text, tl);
	if (previous_terminate)
		previous_terminate();
	std::abort();
}

} // namespace detail

// Install the terminate handler (std::set_terminate), keeping the one it
// replaces, which it calls after recording.  init() calls it when the
// crash handler is on; once is enough (a second call changes nothing).
// Returns 0.  Not AS-safe.
inline int install_terminate_handler() noexcept
{
	if (std::get_terminate() != &detail::on_terminate)
		detail::previous_terminate = std::set_terminate(&detail::on_terminate);
	return 0;
}

} // namespace blackbox

#undef BB__CXX_INLINE
#undef BB__CXX_NO_POINTER

#endif // BLACKBOX_HPP
