// Typha's messages (typha/pkg/syncproto) as palisade reads and writes them: each travels
// as a gob `Envelope{Message any}` whose concrete type is registered under its legacy
// name `github.com/projectcalico/typha/pkg/syncproto.<Msg>`. The schemas mirror the Go
// structs field for field (gob matches fields by name and zero-fills the ones not sent,
// which is how old and new peers tolerate each other); toMessage() turns a decoded
// envelope into a typed message, refusing what is not one.
import type { GobInterface } from './gob/decoder.js';
import { GobEncoder, type Schema } from './gob/encoder.js';
import { decodeTime, encodeTime, type GoTime } from './gob/time.js';
import { GobError } from './gob/wire.js';

export const SYNCPROTO = 'github.com/projectcalico/typha/pkg/syncproto.';
export const DEFAULT_PORT = 5473;

export type SyncerType = 'felix' | 'bgp' | 'tunnel-ip-allocation' | 'node-status';
/** api.SyncStatus */
export const SYNC_STATUS = ['wait-for-datastore', 'resync-in-progress', 'in-sync'] as const;
export type SyncStatus = (typeof SYNC_STATUS)[number];
/** api.UpdateType: 1 new, 2 updated, 3 deleted (0: unknown). */
export type UpdateType = 0 | 1 | 2 | 3;

export interface SerializedUpdate {
  key: string;
  /** JSON of the v1 model value; empty for a deletion. */
  value: Buffer;
  revision: string;
  v3ResourceVersion: string;
  /** time.Duration, nanoseconds. */
  ttlNanos: number;
  updateType: UpdateType;
}

export type TyphaMessage =
  | {
      type: 'ClientHello';
      hostname: string;
      info: string;
      version: string;
      syncerType: string;
      supportsDecoderRestart: boolean;
      supportedCompressionAlgorithms: string[];
      supportsModernPolicyKeys: boolean;
      clientConnId: bigint;
    }
  | {
      type: 'ServerHello';
      version: string;
      syncerType: string;
      supportsNodeResourceUpdates: boolean;
      serverConnId: bigint;
    }
  | { type: 'DecoderRestart'; message: string; compressionAlgorithm: string }
  | { type: 'ACK' }
  | { type: 'SyncStatus'; status: SyncStatus }
  | { type: 'Ping'; timestamp: GoTime }
  | { type: 'Pong'; pingTimestamp: GoTime; pongTimestamp: GoTime }
  | { type: 'KVs'; kvs: SerializedUpdate[] };

const S = (t: 'string' | 'bool' | 'uint' | 'int' | 'bytes' | 'interface'): Schema => ({ t });
const TIME: Schema = { t: 'gob', name: 'Time' };
const UPDATE: Schema = {
  t: 'struct',
  name: 'SerializedUpdate',
  fields: [
    ['Key', S('string')],
    ['Value', S('bytes')],
    ['Revision', S('interface')],
    ['V3ResourceVersion', S('string')],
    ['TTL', S('int')],
    ['UpdateType', S('uint')],
  ],
};

/** The registered concrete types, by their short names. */
export const SCHEMAS: Record<TyphaMessage['type'], Schema> = {
  ClientHello: {
    t: 'struct',
    name: 'MsgClientHello',
    fields: [
      ['Hostname', S('string')],
      ['Info', S('string')],
      ['Version', S('string')],
      ['SyncerType', S('string')],
      ['SupportsDecoderRestart', S('bool')],
      ['SupportedCompressionAlgorithms', { t: 'slice', name: '[]syncproto.CompressionAlgorithm', elem: S('string') }],
      ['SupportsModernPolicyKeys', S('bool')],
      ['ClientConnID', S('uint')],
    ],
  },
  ServerHello: {
    t: 'struct',
    name: 'MsgServerHello',
    fields: [
      ['Version', S('string')],
      ['SyncerType', S('string')],
      ['SupportsNodeResourceUpdates', S('bool')],
      ['ServerConnID', S('uint')],
    ],
  },
  DecoderRestart: {
    t: 'struct',
    name: 'MsgDecoderRestart',
    fields: [
      ['Message', S('string')],
      ['CompressionAlgorithm', S('string')],
    ],
  },
  ACK: { t: 'struct', name: 'MsgACK', fields: [] },
  SyncStatus: { t: 'struct', name: 'MsgSyncStatus', fields: [['SyncStatus', S('uint')]] },
  Ping: { t: 'struct', name: 'MsgPing', fields: [['Timestamp', TIME]] },
  Pong: {
    t: 'struct',
    name: 'MsgPong',
    fields: [
      ['PingTimestamp', TIME],
      ['PongTimestamp', TIME],
    ],
  },
  KVs: {
    t: 'struct',
    name: 'MsgKVs',
    fields: [['KVs', { t: 'slice', name: '[]syncproto.SerializedUpdate', elem: UPDATE }]],
  },
};
export const ENVELOPE: Schema = { t: 'struct', name: 'Envelope', fields: [['Message', S('interface')]] };

const nameOf = (type: TyphaMessage['type']) => `${SYNCPROTO}Msg${type}`;

/** A gob encoder that knows Typha's registered types; one per connection direction. */
export function typhaEncoder(): GobEncoder {
  return new GobEncoder(Object.entries(SCHEMAS).map(([type, s]) => [nameOf(type as TyphaMessage['type']), s]));
}

/** The bytes of one message (type definitions first, the first time each is needed). */
export function encodeMessage(enc: GobEncoder, m: TyphaMessage): Buffer {
  return enc.encode({ Message: { name: nameOf(m.type), value: fieldsOf(m) } }, ENVELOPE);
}

function fieldsOf(m: TyphaMessage): Record<string, unknown> {
  switch (m.type) {
    case 'ClientHello':
      return {
        Hostname: m.hostname,
        Info: m.info,
        Version: m.version,
        SyncerType: m.syncerType,
        SupportsDecoderRestart: m.supportsDecoderRestart,
        SupportedCompressionAlgorithms: m.supportedCompressionAlgorithms,
        SupportsModernPolicyKeys: m.supportsModernPolicyKeys,
        ClientConnID: m.clientConnId,
      };
    case 'ServerHello':
      return {
        Version: m.version,
        SyncerType: m.syncerType,
        SupportsNodeResourceUpdates: m.supportsNodeResourceUpdates,
        ServerConnID: m.serverConnId,
      };
    case 'DecoderRestart':
      return { Message: m.message, CompressionAlgorithm: m.compressionAlgorithm };
    case 'ACK':
      return {};
    case 'SyncStatus':
      return { SyncStatus: SYNC_STATUS.indexOf(m.status) };
    case 'Ping':
      return { Timestamp: encodeTime(m.timestamp) };
    case 'Pong':
      return { PingTimestamp: encodeTime(m.pingTimestamp), PongTimestamp: encodeTime(m.pongTimestamp) };
    case 'KVs':
      return {
        KVs: m.kvs.map((u) => ({
          Key: u.key,
          Value: u.value,
          Revision: u.revision ? { name: 'string', value: u.revision } : null,
          V3ResourceVersion: u.v3ResourceVersion,
          TTL: u.ttlNanos,
          UpdateType: u.updateType,
        })),
      };
  }
}

// ---- decoding: what the peer sent, checked field by field ----

const str = (v: unknown, what: string): string => {
  if (v === undefined) return '';
  if (typeof v !== 'string') throw new GobError(`${what} is not a string`);
  return v;
};
const bool = (v: unknown, what: string): boolean => {
  if (v === undefined) return false;
  if (typeof v !== 'boolean') throw new GobError(`${what} is not a bool`);
  return v;
};
const uint = (v: unknown, what: string): bigint => {
  if (v === undefined) return 0n;
  // A peer may define a field under the expected name with another type (a float, say).
  if (!(typeof v === 'bigint' || (typeof v === 'number' && Number.isInteger(v))) || v < 0)
    throw new GobError(`${what} is not an unsigned integer`);
  return BigInt(v);
};
const small = (v: unknown, what: string, max: number): number => {
  const n = Number(uint(v, what));
  if (n > max) throw new GobError(`${what} ${n} is out of range`);
  return n;
};
const time = (v: unknown, what: string): GoTime => {
  if (v === undefined) return { unix: -62135596800, nanos: 0 };
  if (!Buffer.isBuffer(v)) throw new GobError(`${what} is not a time.Time`);
  return decodeTime(v);
};
const fields = (v: unknown, what: string): Record<string, unknown> => {
  if (!v || typeof v !== 'object' || Array.isArray(v) || Buffer.isBuffer(v) || v instanceof Map)
    throw new GobError(`${what} is not a struct`);
  return v as Record<string, unknown>;
};

function update(v: unknown): SerializedUpdate {
  const f = fields(v, 'a SerializedUpdate');
  const rev = f.Revision as GobInterface | null | undefined;
  let revision = '';
  if (rev) {
    // Typha's revisions are strings (etcd and Kubernetes resource versions alike).
    if (rev.name !== 'string' || typeof rev.value !== 'string') throw new GobError(`a revision of type ${rev.name}`);
    revision = rev.value;
  }
  const value = f.Value;
  if (value !== undefined && !Buffer.isBuffer(value)) throw new GobError('a SerializedUpdate value is not bytes');
  const ttl = f.TTL ?? 0;
  if (typeof ttl !== 'number' || !Number.isInteger(ttl)) throw new GobError('a TTL out of range');
  return {
    key: str(f.Key, 'a key'),
    value: value ?? Buffer.alloc(0),
    revision,
    v3ResourceVersion: str(f.V3ResourceVersion, 'a v3 resource version'),
    ttlNanos: ttl,
    updateType: small(f.UpdateType, 'an update type', 3) as UpdateType,
  };
}

/** A decoded Envelope as a typed message; GobError for anything else. */
export function toMessage(envelope: unknown): TyphaMessage {
  const msg = fields(envelope, 'an Envelope').Message as GobInterface | null | undefined;
  if (!msg) throw new GobError('an Envelope without a message');
  if (!msg.name.startsWith(`${SYNCPROTO}Msg`)) throw new GobError(`an unknown message type ${msg.name}`);
  const type = msg.name.slice(SYNCPROTO.length + 3);
  const f = fields(msg.value, type);
  switch (type) {
    case 'ClientHello': {
      const algs = f.SupportedCompressionAlgorithms ?? [];
      if (!Array.isArray(algs) || !algs.every((a) => typeof a === 'string'))
        throw new GobError('SupportedCompressionAlgorithms is not a list of strings');
      return {
        type,
        hostname: str(f.Hostname, 'Hostname'),
        info: str(f.Info, 'Info'),
        version: str(f.Version, 'Version'),
        syncerType: str(f.SyncerType, 'SyncerType'),
        supportsDecoderRestart: bool(f.SupportsDecoderRestart, 'SupportsDecoderRestart'),
        supportedCompressionAlgorithms: algs as string[],
        supportsModernPolicyKeys: bool(f.SupportsModernPolicyKeys, 'SupportsModernPolicyKeys'),
        clientConnId: uint(f.ClientConnID, 'ClientConnID'),
      };
    }
    case 'ServerHello':
      return {
        type,
        version: str(f.Version, 'Version'),
        syncerType: str(f.SyncerType, 'SyncerType'),
        supportsNodeResourceUpdates: bool(f.SupportsNodeResourceUpdates, 'SupportsNodeResourceUpdates'),
        serverConnId: uint(f.ServerConnID, 'ServerConnID'),
      };
    case 'DecoderRestart':
      return {
        type,
        message: str(f.Message, 'Message'),
        compressionAlgorithm: str(f.CompressionAlgorithm, 'CompressionAlgorithm'),
      };
    case 'ACK':
      return { type };
    case 'SyncStatus':
      return { type, status: SYNC_STATUS[small(f.SyncStatus, 'SyncStatus', 2)] as SyncStatus };
    case 'Ping':
      return { type, timestamp: time(f.Timestamp, 'Timestamp') };
    case 'Pong':
      return {
        type,
        pingTimestamp: time(f.PingTimestamp, 'PingTimestamp'),
        pongTimestamp: time(f.PongTimestamp, 'PongTimestamp'),
      };
    case 'KVs': {
      const kvs = f.KVs ?? [];
      if (!Array.isArray(kvs)) throw new GobError('KVs is not a list');
      return { type, kvs: kvs.map(update) };
    }
  }
  throw new GobError(`an unknown message type ${msg.name}`);
}
