#!/bin/sh
# demo.sh - set up everything on a fresh Debian 12 (as root), build, and run
# the demo: a multi-threaded instrumented service is started, killed with
# SIGKILL, and its box extracted post mortem.
set -eu
cd "$(dirname "$0")/.."
sh scripts/install-deps.sh
[ -d build ] || meson setup build
ninja -C build
sh examples/demo.sh build
