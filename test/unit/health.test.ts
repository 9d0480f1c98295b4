// Felix's health semantics: live/ready only while every reporter reported in time.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { get } from 'node:http';
import { request } from 'node:https';
import { type AddressInfo, connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { describe, it } from 'node:test';

import { HealthAggregator, serveHealth } from '../../src/health/health.js';
import type { ServerTls } from '../../src/health/http.js';
import { createLogger } from '../../src/log.js';
import { AgentMetrics, serveMetrics } from '../../src/metrics/metrics.js';
import { tempDirs } from '../helpers/temp.js';

const tempDir = tempDirs('health');

describe('health aggregator', () => {
  it('is ready only when every ready-reporter is, and not live once a reporter goes stale', () => {
    let now = 0;
    const h = new HealthAggregator(() => now);
    h.register('calc_graph', { live: true, ready: true, timeoutMs: 60_000 });
    h.register('int_dataplane', { live: true, ready: true, timeoutMs: 90_000 });
    h.register('other', { live: false, ready: false, timeoutMs: 1 });
    assert.equal(h.live(), false, 'nobody reported yet');
    h.report('calc_graph', { live: true, ready: false });
    h.report('int_dataplane', { live: true, ready: false });
    assert.equal(h.live(), true);
    assert.equal(h.ready(), false);
    h.report('calc_graph', { ready: true });
    h.report('int_dataplane', { ready: true });
    assert.equal(h.ready(), true);
    now = 70_000;
    h.report('int_dataplane', { live: true });
    assert.equal(h.live(), false, 'calc_graph is stale');
    assert.deepEqual(
      h.detail().find((d) => d.name === 'calc_graph'),
      { name: 'calc_graph', live: true, ready: true, stale: true },
    );
    h.report('calc_graph', { live: true });
    assert.equal(h.live(), true);
    assert.throws(() => h.report('nope', {}), /unknown reporter/);
  });
});

describe('health and metrics servers against hostile requests', () => {
  /** Sends raw bytes, returns the status line of the answer ('' if none). */
  const raw = (port: number, text: string) =>
    new Promise<string>((resolve) => {
      const s = connect(port, '127.0.0.1', () => s.end(text));
      let got = '';
      s.on('data', (d: Buffer) => (got += d.toString()));
      s.on('close', () => resolve(got.split('\r\n')[0] ?? ''));
      s.on('error', () => resolve(got.split('\r\n')[0] ?? ''));
    });

  it('answers 4xx to malformed requests and keeps serving (a bad target once killed the agent)', async () => {
    const log = createLogger({ severity: 'Fatal' });
    const h = new HealthAggregator();
    h.register('x', { live: true, ready: true, timeoutMs: 60_000 });
    h.report('x', { live: true, ready: true });
    const health = await serveHealth(h, '127.0.0.1', 0, log);
    const metrics = await serveMetrics(new AgentMetrics(), '127.0.0.1', 0, log);
    try {
      for (const server of [health, metrics]) {
        const port = (server.address() as AddressInfo).port;
        assert.match(await raw(port, 'GET http://[/ HTTP/1.1\r\nHost: x\r\n\r\n'), /^HTTP\/1\.1 400/);
        assert.match(await raw(port, 'GET //[::1 HTTP/1.1\r\nHost: x\r\n\r\n'), /^HTTP\/1\.1 (400|404)/);
        assert.match(await raw(port, 'NOT HTTP AT ALL\r\n\r\n'), /^HTTP\/1\.1 400/);
        assert.match(
          await raw(port, `GET /${'a'.repeat(100_000)} HTTP/1.1\r\nHost: x\r\n\r\n`),
          /^HTTP\/1\.1 (404|414|431|400)/,
        );
      }
      const hp = (health.address() as AddressInfo).port;
      assert.match(
        await raw(hp, 'GET /liveness HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n'),
        /^HTTP\/1\.1 204/,
        'still serving',
      );
    } finally {
      health.close();
      metrics.close();
    }
  });
});

describe("metrics over TLS, with Felix's client-certificate policies", () => {
  /** A CA, a server certificate for 127.0.0.1 and a client certificate, made by openssl. */
  function pki(dir: string) {
    const ssl = (...args: string[]) => {
      const r = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
    };
    writeFileSync(join(dir, 'san.cnf'), 'subjectAltName=IP:127.0.0.1\n');
    ssl(
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      'ca.key',
      '-out',
      'ca.crt',
      '-days',
      '1',
      '-subj',
      '/CN=test-ca',
    );
    for (const who of ['server', 'client']) {
      ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${who}.key`, '-out', `${who}.csr`, '-subj', `/CN=${who}`);
      ssl(
        'x509',
        '-req',
        '-in',
        `${who}.csr`,
        '-CA',
        'ca.crt',
        '-CAkey',
        'ca.key',
        '-CAcreateserial',
        '-out',
        `${who}.crt`,
        '-days',
        '1',
        ...(who === 'server' ? ['-extfile', 'san.cnf'] : []),
      );
    }
    ssl(
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      'other.key',
      '-out',
      'other.crt',
      '-days',
      '1',
      '-subj',
      '/CN=stranger',
    );
    const f = (n: string) => readFileSync(join(dir, n));
    return {
      ca: f('ca.crt'),
      cert: f('server.crt'),
      key: f('server.key'),
      clientCert: f('client.crt'),
      clientKey: f('client.key'),
      otherCert: f('other.crt'),
      otherKey: f('other.key'),
    };
  }

  const get = (port: number, ca: Buffer, client?: { cert: Buffer; key: Buffer }) =>
    new Promise<number>((resolve) => {
      const req = request({ host: '127.0.0.1', port, path: '/metrics', ca, ...(client ?? {}) }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', () => resolve(0));
      req.end();
    });

  it('serves only over TLS and applies NoClientCert, RequireAndVerifyClientCert, RequireAnyClientCert, VerifyClientCertIfGiven', async () => {
    const p = pki(tempDir());
    const log = createLogger({ severity: 'Fatal' });
    const expect: Array<[ServerTls['clientAuth'], number, number, number]> = [
      // policy, without a client cert, with the CA-signed one, with a stranger's
      ['NoClientCert', 200, 200, 200],
      ['RequireAndVerifyClientCert', 403, 200, 403],
      ['RequireAnyClientCert', 403, 200, 200],
      ['VerifyClientCertIfGiven', 200, 200, 403],
    ];
    for (const [clientAuth, none, good, stranger] of expect) {
      const s = await serveMetrics(new AgentMetrics(), '127.0.0.1', 0, log, {
        cert: p.cert,
        key: p.key,
        ca: p.ca,
        clientAuth,
      });
      const port = (s.address() as AddressInfo).port;
      try {
        assert.equal(await get(port, p.ca), none, `${clientAuth} without a certificate`);
        assert.equal(
          await get(port, p.ca, { cert: p.clientCert, key: p.clientKey }),
          good,
          `${clientAuth} with a signed certificate`,
        );
        assert.equal(
          await get(port, p.ca, { cert: p.otherCert, key: p.otherKey }),
          stranger,
          `${clientAuth} with a stranger's certificate`,
        );
      } finally {
        s.close();
      }
    }
  });
});

describe('health server under hostile clients', () => {
  it('keeps answering while 300 slowloris clients hold connections; refuses oversized headers with 431', async () => {
    const log = createLogger({ severity: 'Fatal' });
    const h = new HealthAggregator();
    h.register('x', { live: true, ready: true, timeoutMs: 60_000 });
    h.report('x', { live: true, ready: true });
    const server = await serveHealth(h, '127.0.0.1', 0, log);
    const port = (server.address() as AddressInfo).port;
    const slow: Socket[] = [];
    try {
      for (let i = 0; i < 300; i++) {
        const s = connect(port, '127.0.0.1');
        s.on('error', () => {});
        s.write('GET /liveness HTTP/1.1\r\nHost: x\r\nX-Slow: ');
        slow.push(s);
      }
      await new Promise((r) => setTimeout(r, 300));
      const status = await new Promise<number>((resolve) => {
        get({ host: '127.0.0.1', port, path: '/liveness' }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        }).on('error', () => resolve(0));
      });
      assert.equal(status, 204, 'a normal client is still served');
      const big = await new Promise<string>((resolve) => {
        const s = connect(port, '127.0.0.1', () =>
          s.end(`GET /liveness HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(64 * 1024)}\r\n\r\n`),
        );
        let got = '';
        s.on('data', (d: Buffer) => (got += d.toString()));
        s.on('close', () => resolve(got.split('\r\n')[0] ?? ''));
        s.on('error', () => resolve(got.split('\r\n')[0] ?? ''));
      });
      assert.match(big, /^HTTP\/1\.1 (431|400)/);
    } finally {
      for (const s of slow) s.destroy();
      server.close();
    }
  });
});
