// SPDX-License-Identifier: MIT
//
// test_inline_cxx.cpp - test_inline.c built as C++: the inline paths of
// <blackbox/inline.h> as g++ and clang++ compile them, checked by the same
// tests as in C (the same bytes as the library, no library call, every
// fallback).
#include "test_inline.c"
