// Felix's WireGuard collector (felix/wireguard/metrics_linux.go), with its names, types,
// labels and help: per device wireguard_meta, per peer the bytes each way and the latest
// handshake. Read from the kernel at scrape time, at most once a second (Felix's rate
// limit), one generic-netlink dump per device on the addon's worker thread. Unlike Felix,
// which lists every WireGuard device on the host, only palisade's own devices are read.
import { hostname } from 'node:os';

import { Counter, Gauge, type Registry } from 'prom-client';

import type { Logger } from '../log.js';
import type { WgDevice } from '../native/wg.js';

export interface WireguardDeviceReading {
  iface: string;
  device: WgDevice;
}

/** Reads the devices palisade runs (none while WireGuard is off or unusable). */
export type WireguardReader = () => Promise<WireguardDeviceReading[]>;

const RATE_LIMIT_MS = 1000;
const PEER_LABELS = ['hostname', 'public_key', 'peer_key', 'peer_endpoint'] as const;

type PeerLabel = (typeof PEER_LABELS)[number];
type Peer = WgDevice['peers'][number];

export class WireguardMetrics {
  readonly meta: Gauge;
  readonly bytesRcvd: Counter<PeerLabel>;
  readonly bytesSent: Counter<PeerLabel>;
  readonly latestHandshake: Gauge<PeerLabel>;
  #last: WireguardDeviceReading[] = [];
  #lastAt = -Infinity;
  #pending: Promise<WireguardDeviceReading[]> | undefined;
  #failed = '';

  constructor(
    registry: Registry,
    readonly read: WireguardReader,
    readonly log: Logger,
    readonly host: string = hostname(),
    readonly now: () => number = Date.now,
  ) {
    const collector = this;
    this.meta = new Gauge({
      name: 'wireguard_meta',
      help: 'wireguard interface and runtime metadata',
      labelNames: ['hostname', 'public_key', 'iface', 'listen_port'],
      registers: [registry],
      async collect() {
        this.reset();
        for (const r of await collector.readings())
          this.set(
            {
              hostname: collector.host,
              public_key: r.device.publicKey ?? '',
              iface: r.iface,
              listen_port: String(r.device.listenPort),
            },
            1,
          );
      },
    });
    const perPeer = (name: string, help: string, value: (p: Peer) => number) => ({
      name,
      help,
      labelNames: PEER_LABELS,
      registers: [registry],
      async collect(this: Gauge<PeerLabel> | Counter<PeerLabel>) {
        this.reset();
        for (const r of await collector.readings())
          for (const p of r.device.peers) {
            const labels = {
              hostname: collector.host,
              public_key: r.device.publicKey ?? '',
              peer_key: p.publicKey,
              peer_endpoint: p.endpoint,
            };
            if (this instanceof Gauge) this.set(labels, value(p));
            else this.inc(labels, value(p));
          }
      },
    });
    this.bytesRcvd = new Counter(
      perPeer('wireguard_bytes_rcvd', 'wireguard interface incoming bytes count from peer', (p) => p.rxBytes ?? 0),
    );
    this.bytesSent = new Counter(
      perPeer('wireguard_bytes_sent', 'wireguard interface outgoing bytes count to peer', (p) => p.txBytes ?? 0),
    );
    this.latestHandshake = new Gauge(
      perPeer(
        'wireguard_latest_handshake_seconds',
        'wireguard interface latest handshake unix timestamp in seconds to a peer',
        (p) => p.lastHandshakeSec ?? 0,
      ),
    );
  }

  /** The devices as last read, read again when older than the rate limit; a failed read is none (said once). */
  readings(): Promise<WireguardDeviceReading[]> {
    if (this.now() - this.#lastAt < RATE_LIMIT_MS) return Promise.resolve(this.#last);
    this.#pending ??= this.read()
      .then((r) => {
        this.#failed = '';
        return r;
      })
      .catch((e: Error) => {
        if (this.#failed !== e.message)
          this.log.warn({ error: e.message }, 'cannot read the WireGuard devices for metrics');
        this.#failed = e.message;
        return [];
      })
      .then((r) => {
        this.#last = r;
        this.#lastAt = this.now();
        this.#pending = undefined;
        return r;
      });
    return this.#pending;
  }
}
