#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# run_fuzzer.sh FUZZER SEED_CORPUS_DIR SECONDS: a bounded libFuzzer run on a
# scratch copy of the seeds; exits with the fuzzer's status, so any crash,
# leak, trap or sanitizer report fails the test (libFuzzer would exit 77 by
# default, which meson reads as "skipped").
set -u
fuzzer=$1 seeds=$2 seconds=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
mkdir "$work/corpus"
cp -r "$seeds"/. "$work/corpus"/
"$fuzzer" -max_total_time="$seconds" -max_len=8192 -timeout=10 -rss_limit_mb=2048 \
  -error_exitcode=1 -timeout_exitcode=1 -artifact_prefix="$work/" -print_final_stats=1 "$work/corpus" >"$work/log" 2>&1
status=$?
tail -n 30 "$work/log"
for crash in "$work"/crash-* "$work"/leak-* "$work"/timeout-*; do
  [ -e "$crash" ] || continue
  echo "reproducer $crash (base64):"
  base64 "$crash"
done
exit $status
