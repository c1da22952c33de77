// SPDX-License-Identifier: MIT
//
// cxx_terminate.cpp - a C++ program that dies of an uncaught exception,
// for cxx_terminate.sh.  It installs a terminate handler of its own first
// (which says so on stderr and aborts), then blackbox::init() with the
// crash handler, which installs <blackbox.hpp>'s in front of it.
//
// Usage: cxx_terminate runtime_error | int | none
//   runtime_error  throw std::runtime_error("config missing: foo")
//   int            throw 42 (no what())
//   none           std::terminate() with no exception
#include <blackbox.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <stdexcept>

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
	app::loader<int>::load(argv[1]);
}
