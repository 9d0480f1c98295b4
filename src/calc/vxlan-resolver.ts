// VXLANResolver, as Felix's: a node's VXLAN tunnel endpoint once both its tunnel address
// (host config IPv4VXLANTunnelAddr) and its host address (the Node's bgp.ipv4Address, the
// parent device's IP) are known; the MAC is VXLANTunnelMACAddr, else derived from the
// node's name (0x66 then the first five bytes of its SHA-1). A changed VTEP is withdrawn
// and sent again; a VTEP that loses either half is withdrawn.
import { createHash } from 'node:crypto';

import { hostAddress } from '../model/net.js';
import type { ResourceOf } from '../model/schemas.js';
import type { VXLANTunnelEndpoint } from '../proto/messages.js';

export interface VtepCallbacks {
  onVtepUpdate(vtep: VXLANTunnelEndpoint): void;
  onVtepRemove(node: string): void;
}

/** Felix's default VTEP MAC for a node ("-v6" appended to the name for IPv6). */
export function vtepMac(nodeName: string, v6 = false): string {
  const sha = createHash('sha1')
    .update(v6 ? `${nodeName}-v6` : nodeName)
    .digest();
  return [0x66, ...sha.subarray(0, 5)].map((b) => b.toString(16).padStart(2, '0')).join(':');
}

interface NodeVtepInfo {
  hostV4?: string | undefined;
  hostV6?: string | undefined;
  tunnelV4?: string | undefined;
  tunnelV6?: string | undefined;
  macV4?: string | undefined;
  macV6?: string | undefined;
}

const CONFIG_FIELDS: Record<string, keyof NodeVtepInfo> = {
  IPv4VXLANTunnelAddr: 'tunnelV4',
  VXLANTunnelMACAddr: 'macV4',
  IPv6VXLANTunnelAddr: 'tunnelV6',
  VXLANTunnelMACAddrV6: 'macV6',
};

export class VxlanResolver {
  readonly #cb: VtepCallbacks;
  readonly #nodes = new Map<string, NodeVtepInfo>();
  readonly #sent = new Map<string, string>();

  constructor(cb: VtepCallbacks) {
    this.#cb = cb;
  }

  onNodeUpdate(name: string, node: ResourceOf<'Node'> | undefined): void {
    const info = this.#info(name);
    const host = (text: string | undefined) => (text ? hostAddress(text) : undefined);
    info.hostV4 = node?.spec.bgp ? host(node.spec.bgp.ipv4Address) : undefined;
    info.hostV6 = node?.spec.bgp ? host(node.spec.bgp.ipv6Address) : undefined;
    this.#send(name);
  }

  /** Host config keys (every node's, not only this one's). */
  onHostConfigUpdate(hostname: string, name: string, value: string | undefined): void {
    const field = CONFIG_FIELDS[name];
    if (!field) return;
    this.#info(hostname)[field] = value || undefined;
    this.#send(hostname);
  }

  #info(name: string): NodeVtepInfo {
    let i = this.#nodes.get(name);
    if (!i) this.#nodes.set(name, (i = {}));
    return i;
  }

  #send(name: string): void {
    const i = this.#nodes.get(name) ?? {};
    const v4 = !!(i.tunnelV4 && i.hostV4);
    const v6 = !!(i.tunnelV6 && i.hostV6);
    const sent = this.#sent.get(name);
    if (!v4 && !v6) {
      if (sent) {
        this.#sent.delete(name);
        this.#cb.onVtepRemove(name);
      }
      if (!Object.values(i).some(Boolean)) this.#nodes.delete(name);
      return;
    }
    const vtep: VXLANTunnelEndpoint = {
      node: name,
      mac: v4 ? (i.macV4 ?? vtepMac(name)) : '',
      ipv4Addr: v4 ? (i.tunnelV4 as string) : '',
      parentDeviceIp: v4 ? (i.hostV4 as string) : '',
      macV6: v6 ? (i.macV6 ?? vtepMac(name, true)) : '',
      ipv6Addr: v6 ? (i.tunnelV6 as string) : '',
      parentDeviceIpv6: v6 ? (i.hostV6 as string) : '',
    };
    const text = JSON.stringify(vtep);
    if (sent === text) return;
    if (sent) this.#cb.onVtepRemove(name);
    this.#sent.set(name, text);
    this.#cb.onVtepUpdate(vtep);
  }
}
