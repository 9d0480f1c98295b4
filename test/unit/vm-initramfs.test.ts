// The test VM's initramfs takes the modules its init needs from the kernel's modules.dep:
// each after its dependencies (modprobe's order: a module's list read backwards), each
// once, a module the kernel builds in (not in modules.dep) left out. Debian's generic
// kernel has virtio itself as modules, its cloud kernel builds it in: a fixed list of 9p
// modules booted the one and not the other.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { moduleClosure } from '../helpers/vm.js';

const DEP = [
  'kernel/fs/9p/9p.ko.xz: kernel/net/9p/9pnet.ko.xz kernel/fs/fscache/fscache.ko.xz kernel/fs/netfs/netfs.ko.xz',
  'kernel/net/9p/9pnet.ko.xz:',
  'kernel/fs/fscache/fscache.ko.xz: kernel/fs/netfs/netfs.ko.xz',
  'kernel/fs/netfs/netfs.ko.xz:',
  'kernel/net/9p/9pnet_virtio.ko.xz: kernel/net/9p/9pnet.ko.xz kernel/drivers/virtio/virtio.ko.xz kernel/drivers/virtio/virtio_ring.ko.xz',
  'kernel/drivers/virtio/virtio.ko.xz: kernel/drivers/virtio/virtio_ring.ko.xz',
  'kernel/drivers/virtio/virtio_ring.ko.xz:',
  '',
].join('\n');

describe('test VM initramfs modules', () => {
  it('orders the closure dependencies first, once each, leaving out what is built in', () => {
    const mods = moduleClosure(DEP, [
      'kernel/drivers/virtio/virtio_pci',
      'kernel/net/9p/9pnet_virtio',
      'kernel/fs/9p/9p',
    ]);
    assert.deepEqual(mods, [
      'kernel/drivers/virtio/virtio_ring.ko.xz',
      'kernel/drivers/virtio/virtio.ko.xz',
      'kernel/net/9p/9pnet.ko.xz',
      'kernel/net/9p/9pnet_virtio.ko.xz',
      'kernel/fs/netfs/netfs.ko.xz',
      'kernel/fs/fscache/fscache.ko.xz',
      'kernel/fs/9p/9p.ko.xz',
    ]);
    for (const [i, m] of mods.entries()) {
      const needs =
        DEP.split('\n')
          .find((l) => l.startsWith(`${m}:`))
          ?.split(':')[1]
          ?.trim()
          .split(/\s+/) ?? [];
      for (const d of needs.filter(Boolean)) assert.ok(mods.indexOf(d) < i, `${d} after ${m}`);
    }
    assert.deepEqual(moduleClosure('garbage\n:\n::x\n', ['kernel/fs/9p/9p']), []);
  });
});
