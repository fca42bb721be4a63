#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# run_fuzzer.sh FUZZER SEED_CORPUS_DIR SECONDS: a bounded libFuzzer run on a
# scratch copy of the seeds; non-zero on any crash, leak or trap.
set -eu
fuzzer=$1 seeds=$2 seconds=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
cp -r "$seeds"/. "$work"/
"$fuzzer" -max_total_time="$seconds" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
  -artifact_prefix="$work/" -print_final_stats=1 "$work" 2>&1 | tail -25
