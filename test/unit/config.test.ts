// Configuration: Felix's value syntax, source precedence, fallback on bad values,
// local-only parameters and restart detection.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { ConfigError, type ConfigProblem, ConfigResolver, loadLocalConfig } from '../../src/config/config.js';
import { formatValue, PARAM_NAMES, PARAMS } from '../../src/config/params.js';
import * as p from '../../src/config/parsers.js';

describe('config: value parsers', () => {
  it('booleans as Felix spells them', () => {
    for (const t of ['true', 'TRUE', '1', 'yes', 'Y', 't', true]) assert.equal(p.parseBool(t), true, String(t));
    for (const f of ['false', '0', 'no', 'N', 'f', false]) assert.equal(p.parseBool(f), false, String(f));
    assert.throws(() => p.parseBool('maybe'), /expected a boolean/);
  });

  it('seconds as numbers or Go durations', () => {
    assert.equal(p.parseSeconds('90'), 90);
    assert.equal(p.parseSeconds(2.5), 2.5);
    assert.equal(p.parseSeconds('90s'), 90);
    assert.equal(p.parseSeconds('1m30s'), 90);
    assert.equal(p.parseSeconds('1h'), 3600);
    assert.equal(p.parseSeconds('500ms'), 0.5);
    assert.equal(p.parseSeconds('0'), 0);
    for (const bad of ['', 'abc', '10x', '1m30', '-5s', 's']) assert.throws(() => p.parseSeconds(bad), p.ParseError, bad);
  });

  it('integers with bounds', () => {
    assert.equal(p.parseInt32('9099', 1, 65535), 9099);
    assert.equal(p.parseInt32(9099, 1, 65535), 9099);
    assert.throws(() => p.parseInt32('70000', 1, 65535), /\[1, 65535\]/);
    assert.throws(() => p.parseInt32('12.5'), /integer/);
  });

  it('enums case-insensitively, returning the canonical spelling', () => {
    assert.equal(PARAMS.ChainInsertMode.parse('append'), 'Append');
    assert.equal(PARAMS.DefaultEndpointToHostAction.parse('ACCEPT'), 'Accept');
    assert.equal(PARAMS.LogSeverityScreen.parse('warn'), 'Warning');
    assert.equal(PARAMS.LogSeverityScreen.parse('DEBUG'), 'Debug');
    assert.throws(() => PARAMS.ChainInsertMode.parse('middle'), /one of Insert, Append/);
  });

  it('failsafe ports: protocol, CIDR (IPv6 in brackets), none, and the FelixConfiguration form', () => {
    assert.deepEqual(p.parseFailsafePorts('22, udp:68 ,tcp:10.0.0.5/8:6443,sctp:[fd00::/8]:9999'), [
      { protocol: 'tcp', port: 22 },
      { protocol: 'udp', port: 68 },
      { protocol: 'tcp', net: '10.0.0.0/8', port: 6443 },
      { protocol: 'sctp', net: 'fd00::/8', port: 9999 },
    ]);
    assert.deepEqual(p.parseFailsafePorts('none'), []);
    assert.deepEqual(p.parseFailsafePorts([{ protocol: 'TCP', port: 22 }, { protocol: 'UDP', port: 53, net: '10.1.0.0/16' }]), [
      { protocol: 'tcp', port: 22 },
      { protocol: 'udp', net: '10.1.0.0/16', port: 53 },
    ]);
    assert.throws(() => p.parseFailsafePorts('icmp:22'), /protocol/);
    assert.throws(() => p.parseFailsafePorts('tcp:70000'), /65535/);
    assert.throws(() => p.parseFailsafePorts('tcp:10.0.0.300/8:22'), /CIDR/);
    assert.equal(formatValue('FailsafeInboundHostPorts', p.parseFailsafePorts('tcp:[fd00::/8]:22,udp:53')), 'tcp:[fd00::/8]:22,udp:53');
  });

  it('mark masks, endpoints, interface matchers, host names', () => {
    assert.equal(p.parseMarkMask('0xffff0000'), 0xffff0000);
    assert.equal(p.parseMarkMask('4294901760'), 0xffff0000);
    assert.equal(formatValue('IptablesMarkMask', 0xffff0000), '0xffff0000');
    assert.throws(() => p.parseMarkMask('0'), /non-zero/);
    assert.throws(() => p.parseMarkMask('0x1ffffffff'), /32-bit/);
    assert.deepEqual(p.parseEndpoints('http://127.0.0.1:2379, https://etcd.example:2379'), ['http://127.0.0.1:2379', 'https://etcd.example:2379']);
    assert.throws(() => p.parseEndpoints('127.0.0.1:2379'), /scheme|invalid endpoint/);
    assert.throws(() => p.parseEndpoints('http://127.0.0.1'), /port/);
    assert.deepEqual(p.parseInterfaceMatchers('kube-ipvs0,/^veth/'), ['kube-ipvs0', '/^veth/']);
    assert.throws(() => p.parseInterfaceMatchers('/(/'), /regular expression/);
    assert.throws(() => p.parseHostname('bad host'), /host name/);
  });

  it('every default parses', () => {
    for (const n of PARAM_NAMES) assert.doesNotThrow(() => PARAMS[n].parse(PARAMS[n].default()), n);
  });
});

describe('config: sources and precedence', () => {
  const ini = `[global]\nHealthPort = 9100\nhealthhost = 0.0.0.0\nLogSeverityScreen = Debug\nChainInsertMode = Append\n`;

  it('flag > env > file > node > global > default, env names case-insensitive', () => {
    const c = new ConfigResolver({
      flags: { FelixHostname: 'node1' },
      env: { FELIX_HEALTHPORT: '9200', felix_ipv6support: 'false', FELIX_NOTAPARAM: 'x', PATH: '/bin' },
      file: { path: '/etc/calico/felix.cfg', text: ini },
    });
    assert.equal(c.config.HealthPort, 9200);
    assert.equal(c.sourceOf('HealthPort'), 'env FELIX_HEALTHPORT');
    assert.equal(c.config.Ipv6Support, false);
    assert.equal(c.config.HealthHost, '0.0.0.0');
    assert.equal(c.sourceOf('HealthHost'), '/etc/calico/felix.cfg');
    assert.equal(c.config.FelixHostname, 'node1');
    assert.equal(c.sourceOf('FelixHostname'), 'flag for FelixHostname');

    c.setDatastoreConfig(
      { chainInsertMode: 'Insert', maxIpsetSize: 2000, iptablesRefreshInterval: '30s', prometheusMetricsEnabled: true },
      { maxIpsetSize: 3000 },
    );
    assert.equal(c.config.ChainInsertMode, 'Append', 'the file beats the datastore');
    assert.equal(c.config.MaxIpsetSize, 3000);
    assert.equal(c.sourceOf('MaxIpsetSize'), 'FelixConfiguration node.node1');
    assert.equal(c.config.IptablesRefreshInterval, 30);
    assert.equal(c.config.PrometheusMetricsEnabled, true);
    assert.equal(c.sourceOf('PrometheusMetricsEnabled'), 'FelixConfiguration default');
    assert.equal(c.config.RouteRefreshInterval, 90);
    assert.equal(c.sourceOf('RouteRefreshInterval'), 'default');
  });

  it('a bad value is reported once, naming parameter and source, and the next source is used', () => {
    const problems: ConfigProblem[] = [];
    const c = new ConfigResolver({
      env: { FELIX_HEALTHPORT: 'ninety' },
      file: { path: 'felix.cfg', text: '[global]\nHealthPort = 9100\n' },
      onProblem: (x) => problems.push(x),
    });
    assert.equal(c.config.HealthPort, 9100);
    assert.equal(problems.length, 1);
    assert.equal(problems[0]?.param, 'HealthPort');
    assert.equal(problems[0]?.source, 'env FELIX_HEALTHPORT');
    assert.match(problems[0]?.reason ?? '', /expected an integer/);
    c.setDatastoreConfig({ healthPort: 'x' }, undefined);
    c.setDatastoreConfig({ healthPort: 'x' }, undefined);
    assert.equal(problems.length, 1, 'the datastore value is shadowed by the file; never parsed');
    c.setDatastoreConfig({ maxIpsetSize: -5 }, undefined);
    c.setDatastoreConfig({ maxIpsetSize: -5 }, undefined);
    assert.equal(problems.length, 2, 'reported once');
    assert.equal(c.config.MaxIpsetSize, 1048576);
  });

  it('datastore-connection parameters come only from flags, env and the file', () => {
    const problems: ConfigProblem[] = [];
    const c = new ConfigResolver({ onProblem: (x) => problems.push(x) });
    c.setDatastoreConfig({ datastoreType: 'etcdv3', etcdEndpoints: 'http://10.0.0.1:2379', felixHostname: 'x' }, undefined);
    assert.equal(c.config.DatastoreType, 'file');
    assert.equal(c.config.EtcdEndpoints[0], 'http://127.0.0.1:2379');
    assert.deepEqual(problems.map((x) => x.param).sort(), ['DatastoreType', 'EtcdEndpoints', 'FelixHostname']);
  });

  it('reports which changes need a restart (LogSeverityScreen does not)', () => {
    const c = new ConfigResolver({ flags: { FelixHostname: 'n1' } });
    const first = c.setDatastoreConfig({ healthPort: 9300 }, undefined);
    assert.deepEqual(first.changed, ['HealthPort']);
    assert.deepEqual(c.setDatastoreConfig({ healthPort: 9300 }, undefined), { changed: [], needsRestart: [] });
    assert.deepEqual(c.setDatastoreConfig({ healthPort: 9300, logSeverityScreen: 'Debug' }, undefined), { changed: ['LogSeverityScreen'], needsRestart: [] });
    assert.deepEqual(c.setDatastoreConfig({ healthPort: 9300, logSeverityScreen: 'Debug' }, { failsafeInboundHostPorts: [] }), {
      changed: ['FailsafeInboundHostPorts'],
      needsRestart: ['FailsafeInboundHostPorts'],
    });
    assert.deepEqual(c.setDatastoreConfig(undefined, undefined).needsRestart.sort(), ['FailsafeInboundHostPorts', 'HealthPort']);
  });

  it('a named config file must exist; the default one may be missing', () => {
    assert.throws(() => loadLocalConfig({ env: {}, configFile: '/nonexistent/felix.cfg' }), ConfigError);
    assert.doesNotThrow(() => loadLocalConfig({ env: {} }));
  });

  it('reads keys before any section and ignores other sections', () => {
    const c = new ConfigResolver({ file: { path: 'f', text: 'HealthPort = 9500\n[other]\nHealthHost = 1.2.3.4\n' } });
    assert.equal(c.config.HealthPort, 9500);
    assert.equal(c.config.HealthHost, 'localhost');
  });
});
