/* SPDX-License-Identifier: MIT */
#include "reap.h"
int reap_watch(struct reap_ctx *c) { return reap_run(c); }
