// palisade typha's own parameters (TYPHA_* as Typha names them): defaults, overrides, and
// bad or unsupported values refused with the parameter, its source and Typha's type.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { loadTyphaConfig, TyphaConfigError } from '../../src/typha/server/config.js';

describe('palisade typha: configuration', () => {
  it("Typha's defaults, TYPHA_* in any case, flags over env, unknown and unimplemented names reported", () => {
    const d = loadTyphaConfig({});
    assert.equal(d.port, 5473);
    assert.equal(d.maxConns, 10_000);
    assert.deepEqual(
      [
        d.timers.pingMs,
        d.timers.pongTimeoutMs,
        d.timers.handshakeMs,
        d.timers.writeTimeoutMs,
        d.timers.maxFallBehindMs,
      ],
      [10_000, 60_000, 10_000, 120_000, 300_000],
    );
    const c = loadTyphaConfig(
      {
        typha_serverport: '6000',
        TYPHA_MAXCONNECTIONSUPPERLIMIT: '50',
        TYPHA_LOGFILEPATH: '/x',
        TYPHA_DATASTORETYPE: 'etcdv3',
        TYPHA_NOSUCH: '1',
      },
      { ServerPort: '7000' },
    );
    assert.equal(c.port, 7000, 'the flag wins');
    assert.equal(c.maxConns, 50);
    assert.equal(c.notices.length, 3);
    assert.match(c.notices.join('\n'), /TYPHA_LOGFILEPATH is a Typha parameter palisade typha does not implement/);
    assert.match(
      c.notices.join('\n'),
      /TYPHA_DATASTORETYPE: palisade typha reads the datastore with the agent's settings/,
    );
    assert.match(c.notices.join('\n'), /TYPHA_NOSUCH is not a Typha parameter/);
  });

  it("Kubernetes rebalancing (as upstream's Typha manifest sets it): its service, port and poll interval", () => {
    const c = loadTyphaConfig({
      TYPHA_CONNECTIONREBALANCINGMODE: 'kubernetes',
      TYPHA_K8SNAMESPACE: 'calico-system',
      TYPHA_K8SSERVICEPOLLINTERVALSECS: '10',
    });
    assert.deepEqual(c.rebalance, {
      pollMs: 10_000,
      namespace: 'calico-system',
      serviceName: 'calico-typha',
      portName: 'calico-typha',
      lowerLimit: 400,
      upperLimit: 10_000,
    });
    assert.deepEqual(c.notices, []);
    assert.equal(loadTyphaConfig({}).rebalance, undefined);
  });

  it('refuses bad values and half a TLS setup, saying why', () => {
    const cases: Array<[NodeJS.ProcessEnv, RegExp]> = [
      [{ TYPHA_SERVERPORT: '70000' }, /ServerPort from environment variable TYPHA_SERVERPORT \("70000"\)/],
      [{ TYPHA_SERVERPINGINTERVALSECS: 'soon' }, /ServerPingIntervalSecs/],
      [{ TYPHA_MAXCONNECTIONSUPPERLIMIT: '0' }, /MaxConnectionsUpperLimit/],
      [{ TYPHA_K8SSERVICEPOLLINTERVALSECS: 'often' }, /K8sServicePollIntervalSecs/],
      [{ TYPHA_CONNECTIONREBALANCINGMODE: 'sometimes' }, /ConnectionRebalancingMode/],
      [{ TYPHA_SERVERCERTFILE: '/etc/hostname' }, /TLS needs all of ServerCertFile, ServerKeyFile and CAFile/],
      [{ TYPHA_CAFILE: '/nonexistent/ca.pem' }, /CAFile/],
    ];
    for (const [env, re] of cases)
      assert.throws(
        () => loadTyphaConfig(env),
        (e: Error) => e instanceof TyphaConfigError && re.test(e.message),
        JSON.stringify(env),
      );
  });
});
