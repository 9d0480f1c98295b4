#!/bin/sh
# The image's entrypoint: node with V8's platform pool sized to the cores less one, 1 to
# 4 (Node's own default is 4 on any machine). The pool runs V8's optimizing compiler and
# the collector's helpers. On a 2-core node its four threads took 4 ms turns with the
# event loop's thread while the other core committed to the kernel: in a sched_switch
# trace of a 100,000-rule cold apply, the loop waited ~20 ms, runnable, behind four
# TurboFan jobs (docs/dataplane.md, "V8's platform pool"). The benches, the demo and the
# e2e tests' agents run with the same flags (imageNodeFlags in src/agent/runtime-setup.ts).
#
# V8 sizes the young generation itself: 16 MB semi-spaces in Node 20's V8 11, and from
# V8 12 (Node 22 on; the image has Node 24) by the heap's limit, up to 64 MB. On Node 24
# the initial sync of 250,000 endpoints then peaked at 390 MB RSS instead of 283, and
# under churn a scavenge held the loop for up to 117 ms; on Node 20 scavenges held a
# 100,000-rule cold apply's loop for 17-21 ms. Semi-spaces of at most 8 MB on every
# version, as SEMI_SPACE_MB in src/agent/runtime-setup.ts (docs/dataplane.md, "The young
# generation").
#
# No allocation-site pretenuring: the initial sync's objects all survive, so V8 learns to
# allocate an endpoint's model, a datastore key or a member delta straight into the old
# space, and under churn those objects, dead within a tick, are left for full collections
# to find, scattered over pages they rarely compact (docs/dataplane.md, "No allocation-site
# pretenuring"; NO_PRETENURING_FLAG in src/agent/runtime-setup.ts).
n=$(nproc 2>/dev/null || echo 5)
p=$((n - 1))
[ "$p" -gt 4 ] && p=4
[ "$p" -lt 1 ] && p=1
exec node --v8-pool-size="$p" --max-semi-space-size=8 --no-allocation-site-pretenuring "$(dirname "$0")/palisade.js" "$@"
