#!/bin/sh
# The image's entrypoint: node with V8's platform pool sized to the cores less one, 1 to
# 4 (Node's own default is 4 on any machine). The pool runs V8's optimizing compiler and
# the collector's helpers. On a 2-core node its four threads took 4 ms turns with the
# event loop's thread while the other core committed to the kernel: in a sched_switch
# trace of a 100,000-rule cold apply, the loop waited ~20 ms, runnable, behind four
# TurboFan jobs (docs/dataplane.md, "V8's platform pool"). The benches
# run with the same flag (bench/lib/netns.ts).
n=$(nproc 2>/dev/null || echo 5)
p=$((n - 1))
[ "$p" -gt 4 ] && p=4
[ "$p" -lt 1 ] && p=1
exec node --v8-pool-size="$p" "$(dirname "$0")/palisade.js" "$@"
