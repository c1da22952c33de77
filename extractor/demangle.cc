// SPDX-License-Identifier: MIT
//
// demangle.cc - bbx_demangle() (demangle.h) with the C++ runtime's
// demangler, abi::__cxa_demangle() (the Itanium C++ ABI's, in libstdc++
// as in libc++), so that names read as the compiler's own messages and
// gdb print them.
#include <cxxabi.h>

#include <cstdlib>

#include "demangle.h"

char *bbx_demangle(const char *name)
{
	int status = 0;
	char *out = abi::__cxa_demangle(name, nullptr, nullptr, &status);

	if (status != 0) {
		std::free(out);
		return nullptr;
	}
	return out;
}
