#!/bin/sh
# The test's warm.sh: proves the build ran it (builtins only).
echo warmed >/cache/warmed
