// The whole internal model as the datastore holds it, read once: every update the control
// plane's stages produce until the datastore is in sync (`palisade explain` then computes
// any node's view from it).
import { ControlPlane } from '../agent/control-plane.js';
import { SyncTimeoutError } from '../agent/sync-once.js';
import type { ConfigResolver } from '../config/config.js';
import { createSyncer } from '../datastore/index.js';
import type { Logger } from '../log.js';
import type { V1Update } from '../model/v1/values.js';

export async function collectModel(config: ConfigResolver, log: Logger, timeoutS: number): Promise<V1Update[]> {
  const syncer = await createSyncer(config.config, log);
  return new Promise((resolve, reject) => {
    const updates: V1Update[] = [];
    let done = false;
    const finish = (err?: Error) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      void plane.stop().finally(() => (err ? reject(err) : resolve(updates)));
    };
    const plane = new ControlPlane({
      syncer,
      config,
      log,
      onModelUpdate: (u) => updates.push(u),
      onMessages: (msgs) => {
        if (msgs.some((m) => m.type === 'InSync')) finish();
      },
      onRestartNeeded: () => {},
    });
    const timer = setTimeout(
      () => finish(new SyncTimeoutError(`the datastore was not in sync after ${timeoutS} s`)),
      timeoutS * 1000,
    );
    plane.start();
  });
}
