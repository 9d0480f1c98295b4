// Waits, without blocking the event loop, until `f()` holds; rejects naming `what` after `ms`.
export function until(f: () => boolean, ms = 5000, what = 'the condition'): Promise<void> {
  const t0 = Date.now();
  return new Promise((resolve, reject) => {
    const tick = () =>
      f()
        ? resolve()
        : Date.now() - t0 > ms
          ? reject(new Error(`timed out waiting for ${what}`))
          : setTimeout(tick, 10);
    tick();
  });
}
