// The seam between the WireGuard manager and a WireGuard device: make the link, read the
// device, change it, remove it. The kernel's device (rtnetlink for the link, generic
// netlink for the rest, all native) is the one Felix uses; NoWireguardDevice is the
// no-op for tests and `plan`.
import { type Link, linkAddWireguard, linkDelete, linkGet } from '../../native/rtnl.js';
import { type WgChange, type WgDevice, wgGet, wgSet } from '../../native/wg.js';

/** The device cannot exist here (no wireguard module): Felix's "not supported". */
export class WireguardUnsupportedError extends Error {
  readonly code = 'ENOTSUP';
}

/**
 * Another program's device holds the name (Felix's errWrongInterfaceType): not ours to change
 * or delete, so WireGuard cannot run here until it goes (an interface event says when).
 */
export class WireguardNameTakenError extends Error {
  readonly code = 'EEXIST';
}

export interface WireguardDevice {
  /**
   * The link `name`, made when missing (at `mtu`); throws WireguardUnsupportedError when it
   * cannot be, WireguardNameTakenError when a device of another kind has the name.
   */
  ensureLink(name: string, mtu: number): Promise<Link>;
  /** The device's configuration and peers; undefined when there is no such device. */
  get(name: string): Promise<WgDevice | undefined>;
  set(name: string, change: WgChange): Promise<void>;
  /** Removes the link if there is one of WireGuard's kind (another kind is not ours); true if it was there. */
  remove(name: string): Promise<boolean>;
}

const unsupported = (e: unknown) =>
  (e as { code?: string }).code === 'ENOTSUP' || (e as { errno?: number }).errno === 95; // EOPNOTSUPP

export class KernelWireguardDevice implements WireguardDevice {
  async ensureLink(name: string, mtu: number): Promise<Link> {
    const existing = await linkGet(name);
    if (existing) {
      // As Felix (errWrongInterfaceType): another program's device of that name is not ours to change.
      if (existing.kind !== 'wireguard')
        throw new WireguardNameTakenError(
          `${name} exists and is not a WireGuard device (kind ${existing.kind || 'unknown'})`,
        );
      return existing;
    }
    try {
      return await linkAddWireguard(name, mtu);
    } catch (e) {
      if (unsupported(e)) throw new WireguardUnsupportedError('the kernel has no WireGuard (module wireguard)');
      throw e;
    }
  }

  async get(name: string): Promise<WgDevice | undefined> {
    try {
      return await wgGet(name);
    } catch (e) {
      if (unsupported(e)) throw new WireguardUnsupportedError('the kernel has no WireGuard (module wireguard)');
      throw e;
    }
  }

  async set(name: string, change: WgChange): Promise<void> {
    await wgSet(name, change);
  }

  async remove(name: string): Promise<boolean> {
    const link = await linkGet(name);
    if (link?.kind !== 'wireguard') return false;
    await linkDelete(link.index);
    return true;
  }
}

export class NoWireguardDevice implements WireguardDevice {
  ensureLink(): Promise<Link> {
    return Promise.reject(new WireguardUnsupportedError('no WireGuard device (NoWireguardDevice)'));
  }
  get(): Promise<WgDevice | undefined> {
    return Promise.resolve(undefined);
  }
  set(): Promise<void> {
    return Promise.resolve();
  }
  remove(): Promise<boolean> {
    return Promise.resolve(false);
  }
}
