// A WireGuard device configured over its UAPI socket (the cross-platform protocol of
// wireguard.com/xplatform, which userspace implementations such as wireguard-go serve at
// /var/run/wireguard/<device>.sock, and which wgctrl, Felix's library, speaks to them):
// `get=1` reads the device and its peers, `set=1` changes them, each one request on its
// own connection. The socket is read asynchronously (never blocking the event loop); a
// malformed, truncated or late answer, or a non-zero errno, is a WireguardUapiError.
import { connect } from 'node:net';
import { join } from 'node:path';

import type { WgChange, WgDevice, WgPeer } from '../../native/wg.js';
import { hexToKey, keyToHex } from './keys.js';

/** Where userspace WireGuard implementations listen (wgctrl's and wireguard-go's socketDirectory). */
export const UAPI_DIR = '/var/run/wireguard';
const TIMEOUT_MS = 5_000;
/** An answer larger than this is not a device's (a peer's lines are a few hundred bytes). */
const MAX_ANSWER = 64 * 1024 * 1024;

export class WireguardUapiError extends Error {
  readonly code: string;
  readonly errno: number | undefined;
  constructor(message: string, code = 'EWGUAPI', errno?: number) {
    super(message);
    this.code = code;
    this.errno = errno;
  }
}

export type { WgChange, WgDevice, WgPeer, WgPeerChange } from '../../native/wg.js';

export const uapiSocket = (device: string, dir = UAPI_DIR) => join(dir, `${device}.sock`);

/** The device's configuration and peers. */
export async function uapiGet(socket: string): Promise<WgDevice> {
  return parseGet(await exchange(socket, 'get=1\n\n'));
}

/** Applies `change` in one transaction. */
export async function uapiSet(socket: string, change: WgChange): Promise<void> {
  const answer = await exchange(socket, encodeSet(change));
  const errno = parseErrno(answer.split('\n').filter(Boolean));
  if (errno !== 0) throw new WireguardUapiError(`set on ${socket}: errno=${errno}`, 'EWGSET', errno);
}

/** The `set=1` request for `change` (exported for the tests). */
export function encodeSet(c: WgChange): string {
  const lines = ['set=1'];
  if (c.privateKey !== undefined) lines.push(`private_key=${c.privateKey ? keyToHex(c.privateKey) : ''}`);
  if (c.listenPort !== undefined) lines.push(`listen_port=${uint(c.listenPort, 65535, 'listen_port')}`);
  if (c.fwmark !== undefined) lines.push(`fwmark=${uint(c.fwmark, 0xffffffff, 'fwmark')}`);
  if (c.replacePeers) lines.push('replace_peers=true');
  for (const p of c.peers ?? []) {
    lines.push(`public_key=${keyToHex(p.publicKey)}`);
    if (p.remove) {
      lines.push('remove=true');
      continue;
    }
    if (p.endpoint) lines.push(`endpoint=${noNewline(p.endpoint)}`);
    if (p.persistentKeepalive !== undefined)
      lines.push(`persistent_keepalive_interval=${uint(p.persistentKeepalive, 65535, 'keepalive')}`);
    if (p.allowedIps) {
      lines.push('replace_allowed_ips=true');
      for (const a of p.allowedIps) lines.push(`allowed_ip=${noNewline(a)}`);
    }
  }
  return `${lines.join('\n')}\n\n`;
}

function uint(v: number, max: number, what: string): number {
  if (!Number.isInteger(v) || v < 0 || v > max) throw new WireguardUapiError(`${what} ${v} is out of range`);
  return v;
}

function noNewline(v: string): string {
  if (/[\n=]/.test(v)) throw new WireguardUapiError(`a UAPI value may not hold "=" or a newline: ${JSON.stringify(v)}`);
  return v;
}

/** One request on its own connection; the answer up to its blank line. */
function exchange(socket: string, request: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = connect(socket);
    let text = '';
    let settled = false;
    const fail = (e: Error) => {
      s.destroy();
      if (!settled) reject(e);
      settled = true;
    };
    s.setTimeout(TIMEOUT_MS, () =>
      fail(new WireguardUapiError(`${socket}: no answer in ${TIMEOUT_MS} ms`, 'ETIMEDOUT')),
    );
    s.on('error', (e: NodeJS.ErrnoException) =>
      fail(new WireguardUapiError(`${socket}: ${e.message}`, e.code ?? 'EWGUAPI')),
    );
    s.on('data', (d: Buffer) => {
      text += d.toString('utf8');
      if (text.length > MAX_ANSWER) fail(new WireguardUapiError(`${socket}: an answer over ${MAX_ANSWER} bytes`));
      else if (text.endsWith('\n\n')) {
        settled = true;
        s.end();
        resolve(text);
      }
    });
    s.on('end', () =>
      fail(new WireguardUapiError(`${socket}: the answer ended early: ${JSON.stringify(text.slice(-200))}`)),
    );
    s.write(request);
  });
}

function parseErrno(lines: string[]): number {
  const last = lines.at(-1) ?? '';
  const m = /^errno=(-?\d+)$/.exec(last);
  if (!m) throw new WireguardUapiError(`no errno at the end of the answer: ${JSON.stringify(last.slice(0, 200))}`);
  return Number(m[1]);
}

/** A `get=1` answer: device lines, then each peer from its public_key line, then errno. */
export function parseGet(answer: string): WgDevice {
  const lines = answer.split('\n').filter(Boolean);
  const errno = parseErrno(lines);
  if (errno !== 0) throw new WireguardUapiError(`get: errno=${errno}`, 'EWGGET', errno);
  const dev: WgDevice = { privateKey: '', listenPort: 0, fwmark: 0, peers: [] };
  let peer: WgPeer | undefined;
  for (const line of lines.slice(0, -1)) {
    const eq = line.indexOf('=');
    if (eq <= 0) throw new WireguardUapiError(`not a key=value line: ${JSON.stringify(line.slice(0, 200))}`);
    const [k, v] = [line.slice(0, eq), line.slice(eq + 1)];
    if (k === 'public_key') {
      peer = { publicKey: hexToKey(v), endpoint: '', allowedIps: [], persistentKeepalive: 0 };
      dev.peers.push(peer);
    } else if (!peer) deviceField(dev, k, v);
    else peerField(peer, k, v);
  }
  return dev;
}

const num = (k: string, v: string) => {
  if (!/^\d+$/.test(v)) throw new WireguardUapiError(`${k}=${v.slice(0, 40)}: not a number`);
  return Number(v);
};

function deviceField(dev: WgDevice, k: string, v: string): void {
  if (k === 'private_key') dev.privateKey = hexToKey(v);
  else if (k === 'listen_port') dev.listenPort = num(k, v);
  else if (k === 'fwmark') dev.fwmark = num(k, v);
  // Others (protocol additions) are not ours to read.
}

function peerField(p: WgPeer, k: string, v: string): void {
  if (k === 'endpoint') p.endpoint = v;
  else if (k === 'allowed_ip') p.allowedIps.push(v);
  else if (k === 'persistent_keepalive_interval') p.persistentKeepalive = num(k, v);
  else if (k === 'last_handshake_time_sec') p.lastHandshakeSec = num(k, v);
  else if (k === 'rx_bytes') p.rxBytes = num(k, v);
  else if (k === 'tx_bytes') p.txBytes = num(k, v);
}
