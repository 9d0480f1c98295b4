// Runs the control plane until the datastore is in sync and returns the first complete set
// of dataplane messages (what `palisade plan` renders). Rejects on timeout, or when a
// configuration change would need a restart before that.
import type { ConfigResolver } from '../config/config.js';
import { createSyncer } from '../datastore/index.js';
import type { Logger } from '../log.js';
import type { ToDataplane } from '../proto/messages.js';
import { ControlPlane } from './control-plane.js';

export class SyncTimeoutError extends Error {}

export async function syncOnce(config: ConfigResolver, log: Logger, timeoutS: number): Promise<ToDataplane[]> {
  const syncer = await createSyncer(config.config, log);
  return new Promise((resolve, reject) => {
    const collected: ToDataplane[] = [];
    let done = false;
    const finish = (err?: Error) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      void plane.stop().finally(() => (err ? reject(err) : resolve(collected)));
    };
    const plane = new ControlPlane({
      syncer,
      config,
      log,
      onMessages: (msgs) => {
        for (const m of msgs) collected.push(m);
        if (msgs.some((m) => m.type === 'InSync')) finish();
      },
      onRestartNeeded: (params) => finish(new Error(`configuration changed while starting (${params.join(', ')})`)),
    });
    const timer = setTimeout(
      () => finish(new SyncTimeoutError(`the datastore was not in sync after ${timeoutS} s`)),
      timeoutS * 1000,
    );
    plane.start();
  });
}
