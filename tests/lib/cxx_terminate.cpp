// SPDX-License-Identifier: MIT
//
// cxx_terminate.cpp - a C++ program that dies of an uncaught exception,
// for cxx_terminate.sh.  It installs a terminate handler of its own first
// (which says so on stderr and aborts), then blackbox::init() with the
// crash handler, which installs <blackbox.hpp>'s in front of it.
//
// Usage: cxx_terminate runtime_error | int | none | nested | long
//   runtime_error  throw std::runtime_error("config missing: foo")
//   int            throw 42 (no what())
//   none           std::terminate() with no exception
//   nested         "reading config" thrown with nested "open: ENOENT",
//                  itself nested in "starting"
//   long           a std::runtime_error whose what() is 1 MiB of 'x'
//   recorded       bb_crash_record("own panic") first, then a throw: the
//                  box's crash is recorded already (as it is when another
//                  shared object's copy of the handler ran first), so the
//                  handler adds no record
#include <blackbox.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>

namespace app {

[[noreturn]] void own_terminate() noexcept
{
	std::fputs("the program's own terminate handler ran\n", stderr);
	std::abort();
}

template <class T>
struct loader {
	[[noreturn]] static void load(const char *mode)
	{
		if (!std::strcmp(mode, "int"))
			throw T(42);
		if (!std::strcmp(mode, "none"))
			std::terminate();
		if (!std::strcmp(mode, "nested")) {
			try {
				try {
					throw std::runtime_error("open: ENOENT");
				} catch (...) {
					std::throw_with_nested(std::runtime_error("reading config"));
				}
			} catch (...) {
				std::throw_with_nested(std::logic_error("starting"));
			}
		}
		if (!std::strcmp(mode, "long"))
			throw std::runtime_error(std::string(1u << 20, 'x'));
		throw std::runtime_error("config missing: foo");
	}
};

} // namespace app

int main(int argc, char **argv)
{
	blackbox::options o{};

	if (argc != 2)
		return 2;
	std::set_terminate(app::own_terminate);
	o.flags = BB_OPT_CRASH_HANDLER;
	if (blackbox::init(o) != 0)
		return 1;
	blackbox::write("loading", argv[1]);
	if (!std::strcmp(argv[1], "recorded"))
		blackbox::crash_record("own panic");
	app::loader<int>::load(argv[1]);
}
