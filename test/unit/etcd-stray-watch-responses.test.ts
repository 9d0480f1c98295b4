import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { describe, it } from 'node:test';

import { WatchManager } from 'etcd3/lib/watch.js';

// Loading the client installs the guard, as the agent does.
import '../../src/datastore/etcdv3/client.js';
import { strayWatchResponses } from '../../src/datastore/etcdv3/stray-watch-responses.js';

type Manager = {
  watchers: Array<EventEmitter & { id: string | null }>;
  expectedClosers: Set<unknown>;
  initialBackoff: { next(): unknown };
  handleResponse(res: object): void;
  handleCreatedResponse(res: object): void;
};

function manager(watchers: Manager['watchers']): Manager {
  const m = Object.create(WatchManager.prototype) as Manager;
  m.watchers = watchers;
  m.expectedClosers = new Set();
  m.initialBackoff = { next: () => ({}) };
  return m;
}

function watcher(id: string | null): EventEmitter & { id: string | null } {
  return Object.assign(new EventEmitter(), { id });
}

describe('etcd3 watch responses for a watch nobody holds', () => {
  it('are dropped and counted, not thrown from the stream (an unhandled rejection stops node)', () => {
    const before = strayWatchResponses();
    const m = manager([watcher('1')]);
    assert.doesNotThrow(() => m.handleResponse({ watch_id: '7', canceled: false, events: [] }));
    assert.doesNotThrow(() => m.handleCreatedResponse({ watch_id: '0', created: true, canceled: true }));
    assert.equal(strayWatchResponses(), before + 2);
  });

  it('still reach a watch that holds the ID, and a refused creation still fails the pending watch', () => {
    const held = watcher('3');
    const pending = watcher(null);
    const m = manager([held, pending]);
    const got: object[] = [];
    held.on('data', (r) => got.push(r));
    const res = { watch_id: '3', canceled: false, events: [] };
    m.handleResponse(res);
    assert.deepEqual(got, [res]);
    const errors: Error[] = [];
    pending.on('error', (e) => errors.push(e));
    m.handleCreatedResponse({ watch_id: '0', created: true, canceled: true, cancel_reason: 'permission denied' });
    assert.equal(errors.length, 1);
    assert.match(String(errors[0]), /permission denied/);
    assert.deepEqual(m.watchers, [held]);
  });
});
