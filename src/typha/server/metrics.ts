// Typha's metrics, under Typha's names (typha_*), served on its Prometheus port.
import { Counter, Gauge, Registry, Summary } from 'prom-client';

export class TyphaMetrics {
  readonly registry = new Registry();
  readonly #r = [this.registry];
  readonly cacheSize = new Gauge({
    name: 'typha_cache_size',
    help: 'Number of keys in the snapshot cache.',
    registers: this.#r,
  });
  readonly breadcrumbSeq = new Gauge({
    name: 'typha_breadcrumb_seq_number',
    help: 'Sequence number of the newest breadcrumb.',
    registers: this.#r,
  });
  readonly breadcrumbSize = new Summary({
    name: 'typha_breadcrumb_size',
    help: 'Updates per breadcrumb.',
    registers: this.#r,
  });
  readonly updatesTotal = new Counter({
    name: 'typha_updates_total',
    help: 'Updates received from the datastore.',
    registers: this.#r,
  });
  readonly updatesSkipped = new Counter({
    name: 'typha_updates_skipped',
    help: 'Updates dropped because they changed nothing.',
    registers: this.#r,
  });
  readonly snapshotsGenerated = new Counter({
    name: 'typha_snapshots_generated',
    help: 'Encoded snapshots built.',
    registers: this.#r,
  });
  readonly snapshotsReused = new Counter({
    name: 'typha_snapshots_reused',
    help: 'Connections served an encoded snapshot built for another.',
    registers: this.#r,
  });
  readonly snapshotRawBytes = new Gauge({
    name: 'typha_snapshot_raw_bytes',
    help: 'Size of the newest encoded snapshot.',
    registers: this.#r,
  });
  readonly snapshotCompressedBytes = new Gauge({
    name: 'typha_snapshot_compressed_bytes',
    help: 'Size of the newest snapshot compressed for snappy clients.',
    registers: this.#r,
  });
  readonly connectionsAccepted = new Counter({
    name: 'typha_connections_accepted',
    help: 'Connections accepted.',
    registers: this.#r,
  });
  readonly connectionsDropped = new Counter({
    name: 'typha_connections_dropped',
    help: 'Connections dropped to stay under the connection limit, or to shut down.',
    registers: this.#r,
  });
  readonly connectionsActive = new Gauge({
    name: 'typha_connections_active',
    help: 'Open connections.',
    registers: this.#r,
  });
  readonly connectionsStreaming = new Gauge({
    name: 'typha_connections_streaming',
    help: 'Connections past their snapshot, following updates.',
    registers: this.#r,
  });
  readonly snapshotSendSecs = new Summary({
    name: 'typha_client_snapshot_send_secs',
    help: 'Seconds to send a client its snapshot.',
    registers: this.#r,
  });
  readonly clientLatency = new Summary({
    name: 'typha_client_latency_secs',
    help: "Seconds from a breadcrumb's creation to its being written to a client.",
    registers: this.#r,
  });
  readonly clientWriteLatency = new Summary({
    name: 'typha_client_write_latency_secs',
    help: 'Seconds a write to a client waited for the socket to drain.',
    registers: this.#r,
  });
  readonly pingLatency = new Summary({
    name: 'typha_ping_latency',
    help: 'Seconds from a ping to its pong.',
    registers: this.#r,
  });
  readonly kvsPerMsg = new Summary({ name: 'typha_kvs_per_msg', help: 'KVs per MsgKVs sent.', registers: this.#r });
}
