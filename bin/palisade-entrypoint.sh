#!/bin/sh
# The image's entrypoint: node with V8's platform pool sized to the cores less one, 1 to
# 4 (Node's own default is 4 on any machine). The pool runs V8's optimizing compiler and
# the collector's helpers. On a 2-core node its four threads took 4 ms turns with the
# event loop's thread while the other core committed to the kernel: in a sched_switch
# trace of a 100,000-rule cold apply, the loop waited ~20 ms, runnable, behind four
# TurboFan jobs (docs/dataplane.md, "V8's platform pool"). The benches
# run with the same flag (bench/lib/netns.ts).
#
# V8 12 and later (Node 22 on; the image has Node 24) size the young generation by the
# heap's limit, up to semi-spaces of 64 MB: on Node 24 the initial sync of 250,000
# endpoints then peaked at 390 MB RSS instead of 283, and under churn a scavenge held the
# loop for up to 117 ms. Semi-spaces of at most 8 MB, as SEMI_SPACE_MB in
# src/agent/runtime-setup.ts (docs/dataplane.md, "The young generation on Node 24").
n=$(nproc 2>/dev/null || echo 5)
p=$((n - 1))
[ "$p" -gt 4 ] && p=4
[ "$p" -lt 1 ] && p=1
v8=$(node -p 'process.versions.v8.split(".")[0]' 2>/dev/null)
case "$v8" in
'' | *[!0-9]*) semi='' ;;
*) if [ "$v8" -ge 12 ]; then semi='--max-semi-space-size=8'; else semi=''; fi ;;
esac
# shellcheck disable=SC2086 # $semi is one flag or none
exec node --v8-pool-size="$p" $semi "$(dirname "$0")/palisade.js" "$@"
