// etcd3 (1.1.x) throws from its watch stream's 'data' listener when a response names a
// watch it no longer holds: one cancelled while the response was on its way, or the old
// stream's last messages after a reconnect. grpc-js delivers stream data from a promise,
// so the throw becomes an unhandled rejection, which stops node: seen in CI as "Failed to
// find watcher for IWatchResponse" after an etcd restart. A response for a watch nobody
// holds has nobody to tell; it is dropped and counted instead.
import { WatchManager } from 'etcd3/lib/watch.js';

interface WatchResponse {
  watch_id: string;
  created?: boolean;
  canceled?: boolean;
}

interface ManagerInternals {
  watchers: Array<{ id: string | null }>;
  handleResponse(res: WatchResponse): void;
  handleCreatedResponse(res: WatchResponse): void;
}

let dropped = 0;
let installed = false;

/** Responses dropped so far because no watch held their ID (for tests and metrics). */
export function strayWatchResponses(): number {
  return dropped;
}

/** Wraps etcd3's two throwing dispatchers once; they run as before for a held watch. */
export function dropStrayWatchResponses(): void {
  if (installed) return;
  installed = true;
  const proto = WatchManager.prototype as unknown as ManagerInternals;
  const { handleResponse, handleCreatedResponse } = proto;
  proto.handleResponse = function (this: ManagerInternals, res: WatchResponse) {
    if (!this.watchers.some((w) => w.id === res.watch_id)) {
      dropped++;
      return;
    }
    handleResponse.call(this, res);
  };
  // A creation that etcd refused names no ID yet: it belongs to the first pending watch.
  proto.handleCreatedResponse = function (this: ManagerInternals, res: WatchResponse) {
    if (res.canceled && !this.watchers.some((w) => w.id === null)) {
      dropped++;
      return;
    }
    handleCreatedResponse.call(this, res);
  };
}
