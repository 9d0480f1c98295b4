// A `palisade typha` server for tests: on the loopback, any free port, Typha's timers,
// limits no test reaches unless it says otherwise.
import type { Logger } from '../../src/log.js';
import { DEFAULT_TIMERS } from '../../src/typha/server/connection.js';
import { TyphaServer, type TyphaServerOptions } from '../../src/typha/server/server.js';
import type { SnapshotCache } from '../../src/typha/server/snapshot-cache.js';

export function loopbackTyphaServer(
  cache: SnapshotCache,
  log: Logger,
  over: Partial<TyphaServerOptions> = {},
): TyphaServer {
  return new TyphaServer({
    cache,
    log,
    version: 'test',
    host: '127.0.0.1',
    port: 0,
    timers: DEFAULT_TIMERS,
    maxMessageKvs: 100,
    maxInboundBytes: 1 << 20,
    maxConns: 10_000,
    dropIntervalMs: 1000,
    shutdownTimeoutMs: 300_000,
    shutdownMaxDropIntervalMs: 1000,
    ...over,
  });
}
