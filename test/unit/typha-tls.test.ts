// TLS to Typha (src/typha/tls.ts) against a TLS fake Typha with certificates made by the
// openssl CLI: the connection goes through when the server's CN is TyphaCN or one of its
// URI SANs is TyphaURISAN, and fails cleanly for another name, another CA, or a client
// without a certificate; a half TLS configuration is refused before any connection.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import tls from 'node:tls';

import { TyphaConnection } from '../../src/typha/connection.js';
import { encodeMessage, type SyncStatus, typhaEncoder } from '../../src/typha/syncproto.js';
import { typhaTlsOptions, typhaTlsProblem } from '../../src/typha/tls.js';
import { makeTls } from '../helpers/etcd.js';
import { tempDirs } from '../helpers/temp.js';

const tempDir = tempDirs('typha-tls');
const URI = 'spiffe://cluster.local/ns/calico-system/sa/calico-typha';

describe('Typha over TLS', { timeout: 60_000 }, () => {
  it('identifies Typha by TyphaCN or TyphaURISAN, and refuses any other server', async () => {
    const good = makeTls(tempDir(), `URI:${URI}`);
    const other = makeTls(tempDir());
    const server = tls.createServer(
      {
        ca: readFileSync(good.server.caFile),
        cert: readFileSync(good.server.certFile),
        key: readFileSync(good.server.keyFile),
        requestCert: true,
        rejectUnauthorized: true,
      },
      (s) => {
        s.on('error', () => {});
        s.once('data', () => {
          const enc = typhaEncoder();
          s.write(
            Buffer.concat([
              encodeMessage(enc, {
                type: 'ServerHello',
                version: 'tls',
                syncerType: 'felix',
                supportsNodeResourceUpdates: true,
                serverConnId: 1n,
              }),
              encodeMessage(enc, { type: 'SyncStatus', status: 'in-sync' }),
            ]),
          );
          setTimeout(() => s.end(), 50);
        });
      },
    );
    server.on('tlsClientError', () => {});
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const address = `127.0.0.1:${(server.address() as AddressInfo).port}`;
    const attempt = async (cfg: { ca?: string; cert?: string; key?: string; cn?: string; uriSan?: string }) => {
      const statuses: SyncStatus[] = [];
      const options = typhaTlsOptions({
        caFile: cfg.ca ?? good.client.caFile,
        certFile: cfg.cert ?? good.client.certFile,
        keyFile: cfg.key ?? good.client.keyFile,
        cn: cfg.cn ?? '',
        uriSan: cfg.uriSan ?? '',
      });
      const c = new TyphaConnection({
        address,
        hostname: 'node1',
        version: 't',
        info: 't',
        tls: options,
        onUpdates: () => {},
        onStatus: (s) => statuses.push(s),
      });
      try {
        await c.run();
      } catch (e) {
        return statuses.includes('in-sync') ? 'in-sync' : (e as Error).message;
      }
      return statuses.includes('in-sync') ? 'in-sync' : 'closed early';
    };
    try {
      assert.equal(await attempt({ cn: 'palisade-server' }), 'in-sync', 'by CN');
      assert.equal(await attempt({ uriSan: URI }), 'in-sync', 'by URI SAN');
      assert.equal(await attempt({ cn: 'someone-else', uriSan: URI }), 'in-sync', 'either is enough');
      assert.match(
        await attempt({ cn: 'someone-else' }),
        /not the one configured: wanted CN someone-else, got CN palisade-server, URI SANs spiffe/,
      );
      assert.match(await attempt({ uriSan: 'spiffe://x/other' }), /wanted URI SAN spiffe:\/\/x\/other/);
      assert.match(
        await attempt({ cn: 'palisade-server', ca: other.client.caFile }),
        /certificate|self[- ]signed|verify/i,
        'another CA',
      );
      assert.match(
        await attempt({ cn: 'palisade-server', cert: other.client.certFile, key: other.client.keyFile }),
        /Typha|closed|alert|certificate|reset/i,
        'a client the server does not trust',
      );
    } finally {
      server.close();
    }
  });

  it('refuses half a TLS configuration, as Felix does', () => {
    const none = { caFile: '', certFile: '', keyFile: '', cn: '', uriSan: '' };
    assert.equal(typhaTlsProblem(none), undefined);
    assert.match(typhaTlsProblem({ ...none, caFile: '/ca' }) ?? '', /needs all of/);
    assert.match(
      typhaTlsProblem({ ...none, caFile: '/ca', certFile: '/c', keyFile: '/k' }) ?? '',
      /TyphaCN or TyphaURISAN/,
    );
    assert.equal(typhaTlsProblem({ ...none, caFile: '/ca', certFile: '/c', keyFile: '/k', uriSan: URI }), undefined);
  });
});
