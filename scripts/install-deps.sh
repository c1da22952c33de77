#!/bin/sh
# install-deps.sh - the Debian 12 packages the build, the tests and the demo
# need (scripts/packages.txt).  Run as root on a fresh machine.
set -eu
here=$(dirname "$0")
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends $(cat "$here/packages.txt")
