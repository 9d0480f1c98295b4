// Configuration: Felix's parameter catalogue and value syntax, source precedence
// (including selector-scoped FelixConfiguration), Felix's fallbacks (default on a bad
// value, fatal for die-on-fail, "none"), local-only parameters, reports of unsupported and
// unknown settings, and restart detection.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { FELIX_PARAMS, felixParam, suggest } from '../../src/config/catalogue.js';
import {
  ConfigError,
  type ConfigProblem,
  ConfigResolver,
  type DatastoreParams,
  loadLocalConfig,
} from '../../src/config/config.js';
import { goInt, parseFelixValue, zeroValue } from '../../src/config/felix-types.js';
import { formatValue, PARAM_NAMES, PARAMS, type ParamDef } from '../../src/config/params.js';

const ds = (
  global: Record<string, string> = {},
  node: Record<string, string> = {},
  selector: Record<string, string> = {},
  selectorName?: string,
): DatastoreParams => ({
  global: new Map(Object.entries(global)),
  node: new Map(Object.entries(node)),
  selector: new Map(Object.entries(selector)),
  selectorName,
});

describe("config: Felix's parameter catalogue", () => {
  it('knows every Felix parameter, with type, default and flags', () => {
    assert.equal(FELIX_PARAMS.length, 218);
    assert.deepEqual(felixParam('failsafeinboundhostports'), {
      name: 'FailsafeInboundHostPorts',
      type: 'port-list',
      default: 'tcp:22,udp:68,tcp:179,tcp:2379,tcp:2380,tcp:5473,tcp:6443,tcp:6666,tcp:6667',
      local: false,
      nonZero: false,
      dieOnFail: true,
      field: { json: 'failsafeInboundHostPorts', kind: 'ports' },
    });
    assert.equal(felixParam('EtcdEndpoints')?.local, true);
    assert.equal(felixParam('EtcdEndpoints')?.field, undefined, 'local parameters have no FelixConfiguration field');
    assert.deepEqual(felixParam('IpInIpMtu')?.field, { json: 'ipipMTU', kind: 'plain' });
    assert.deepEqual(felixParam('ReportingIntervalSecs')?.field, { json: 'reportingInterval', kind: 's' });
    assert.deepEqual(felixParam('IptablesLockProbeIntervalMillis')?.field, {
      json: 'iptablesLockProbeInterval',
      kind: 'ms',
    });
  });

  it("every Felix default passes Felix's own type (or is empty: the zero value)", () => {
    for (const p of FELIX_PARAMS) {
      if (p.default === '') continue;
      assert.doesNotThrow(() => parseFelixValue(p.type, p.default), `${p.name} ${p.type} ${p.default}`);
    }
  });

  it("palisade's defaults are Felix's, except where it says it differs", () => {
    for (const name of PARAM_NAMES) {
      const def = PARAMS[name] as ParamDef;
      const f = felixParam(name);
      if (!f || name === 'FelixHostname' || def.differs) continue;
      assert.equal(def.default(), f.default, name);
      assert.equal(!!def.local, f.local, `${name} local`);
    }
    assert.equal(PARAMS.IptablesRefreshInterval.default(), '180');
    assert.equal(PARAMS.IpsetsRefreshInterval.default(), '90');
    assert.equal(PARAMS.NftablesRefreshInterval.default(), '180');
    assert.equal(PARAMS.DatastoreType.default(), 'etcdv3');
  });

  it('suggests the nearest names for a misspelling', () => {
    assert.deepEqual(
      suggest('FailsafeInboundHostPort', ['FailsafeInboundHostPorts', 'FailsafeOutboundHostPorts', 'HealthPort']).slice(
        0,
        1,
      ),
      ['FailsafeInboundHostPorts'],
    );
    assert.deepEqual(suggest('zzzzzzzzzz', ['HealthPort']), []);
  });
});

describe("config: Felix's value types", () => {
  it('booleans and integers as Go parses them', () => {
    for (const t of ['true', 'TRUE', '1', 'yes', 'Y', 't']) assert.equal(parseFelixValue('bool', t), true, t);
    for (const f of ['false', '0', 'no', 'N', 'f']) assert.equal(parseFelixValue('bool', f), false, f);
    assert.throws(() => parseFelixValue('bool', 'maybe'), /invalid boolean/);
    assert.equal(goInt('0x10'), 16n);
    assert.equal(goInt('010'), 8n);
    assert.equal(goInt('-0b11'), -3n);
    assert.equal(goInt('0x_ff'), 255n);
    assert.equal(goInt('1_000'), undefined);
    assert.equal(parseFelixValue('int(0:65535)', '9099'), 9099);
    assert.throws(() => parseFelixValue('int(0:65535)', '70000'), /at most 65535/);
    assert.throws(() => parseFelixValue('int', '12.5'), /invalid int/);
    assert.equal(parseFelixValue('int(-1)', '40'), 40);
    assert.throws(() => parseFelixValue('int(1:2147483646)', '0'), /at least 1/);
  });

  it('seconds and millis are plain floats (FelixConfiguration durations are converted before)', () => {
    assert.equal(parseFelixValue('seconds', '90'), 90);
    assert.equal(parseFelixValue('seconds', '2.5'), 2.5);
    assert.equal(parseFelixValue('millis', '50'), 50);
    for (const bad of ['90s', '1m', '', 'abc'])
      assert.throws(() => parseFelixValue('seconds', bad), /invalid float/, bad);
  });

  it('enums case-insensitively, to the canonical spelling; interface lists; marks', () => {
    assert.equal(parseFelixValue('oneof(Enabled,Disabled,Auto)', 'auto'), 'Auto');
    assert.throws(() => parseFelixValue('oneof(insert,append)', 'middle'), /unknown option/);
    assert.deepEqual(parseFelixValue('iface-list', 'cali,tap'), ['cali', 'tap']);
    assert.throws(() => parseFelixValue('iface-list', 'cali, tap'), /interface name/);
    assert.deepEqual(parseFelixValue('iface-list-regexp', 'kube-ipvs0,/^veth/'), ['kube-ipvs0', '/^veth/']);
    assert.throws(() => parseFelixValue('iface-list-regexp', '/(/'), /regex/);
    assert.throws(
      () => parseFelixValue('iface-list-regexp', 'eth0.100'),
      /regex/,
      'Felix refuses dots outside a regex',
    );
    assert.equal(parseFelixValue('mark-bitmask', '0xffff0000'), 0xffff0000);
    assert.equal(parseFelixValue('mark-bitmask', '4294901760'), 0xffff0000);
    assert.throws(() => parseFelixValue('mark-bitmask', '0x1'), /2 bits/);
    assert.throws(() => parseFelixValue('mark-bitmask', '0x1ffffffff'), /32-bit/);
  });

  it('port lists: protocol (tcp/udp only), CIDR (IPv6 in brackets), port', () => {
    assert.deepEqual(parseFelixValue('port-list', '22, udp:68 ,tcp:10.0.0.5/8:6443,udp:[fd00::/8]:9999'), [
      { protocol: 'tcp', port: 22 },
      { protocol: 'udp', port: 68 },
      { protocol: 'tcp', net: '10.0.0.0/8', port: 6443 },
      { protocol: 'udp', net: 'fd00::/8', port: 9999 },
    ]);
    assert.throws(() => parseFelixValue('port-list', 'sctp:22'), /unknown protocol: sctp/);
    assert.throws(() => parseFelixValue('port-list', 'tcp:70000'), /0-65535/);
    assert.throws(() => parseFelixValue('port-list', 'tcp:10.0.0.300/8:22'), /CIDR/);
    assert.equal(
      formatValue('FailsafeInboundHostPorts', parseFelixValue('port-list', 'tcp:[fd00::/8]:22,udp:53')),
      'tcp:[fd00::/8]:22,udp:53',
    );
  });

  it('endpoints, addresses, host names, the rest', () => {
    assert.deepEqual(parseFelixValue('endpoint-list', 'http://127.0.0.1:2379, http://etcd.example:2379'), [
      'http://127.0.0.1:2379',
      'http://etcd.example:2379',
    ]);
    assert.throws(() => parseFelixValue('endpoint-list', 'http://a:1,https://b:2'), /same scheme/);
    assert.throws(() => parseFelixValue('endpoint-list', 'http://a:1/path'), /unsupported URL part/);
    assert.throws(() => parseFelixValue('hostname', 'bad host'), /invalid hostname/);
    assert.throws(() => parseFelixValue('ipv4', 'fd00::1'), /not an IPv4/);
    assert.equal(parseFelixValue('ipv6', 'fd00::1'), 'fd00::1');
    assert.throws(() => parseFelixValue('log-rate', '5/week'), /log rate/);
    assert.equal(parseFelixValue('log-rate', '10/second'), '10/second');
    assert.throws(() => parseFelixValue('route-table-ranges', '1-254'), /reserved/);
    assert.equal(parseFelixValue('dscp', 'ef'), 'EF');
    assert.deepEqual(zeroValue('port-list'), []);
    assert.equal(zeroValue('bool'), false);
  });
});

describe('config: sources and precedence', () => {
  const ini = `[global]\nHealthPort = 9100\nhealthhost = 0.0.0.0\nLogSeverityScreen = Debug\nChainInsertMode = Append\n`;

  it('flag > env > file > node > selector > global > default, names case-insensitive', () => {
    const c = new ConfigResolver({
      flags: { FelixHostname: 'node1' },
      env: { FELIX_HEALTHPORT: '9200', felix_ipv6support: 'false', PATH: '/bin' },
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
      ds(
        {
          ChainInsertMode: 'Insert',
          MaxIpsetSize: '2000',
          IptablesRefreshInterval: '30',
          PrometheusMetricsEnabled: 'true',
          RouteRefreshInterval: '10',
        },
        { MaxIpsetSize: '3000' },
        { MaxIpsetSize: '2500', RouteRefreshInterval: '20' },
        'edge',
      ),
    );
    assert.equal(c.config.ChainInsertMode, 'Append', 'the file beats the datastore');
    assert.equal(c.config.MaxIpsetSize, 3000);
    assert.equal(c.sourceOf('MaxIpsetSize'), 'FelixConfiguration node.node1');
    assert.equal(c.config.RouteRefreshInterval, 20);
    assert.equal(
      c.sourceOf('RouteRefreshInterval'),
      'FelixConfiguration edge',
      'the selector-scoped resource beats default',
    );
    assert.equal(c.config.IptablesRefreshInterval, 30);
    assert.equal(c.config.PrometheusMetricsEnabled, true);
    assert.equal(c.sourceOf('PrometheusMetricsEnabled'), 'FelixConfiguration default');
    assert.equal(c.config.InterfaceRefreshInterval, 90);
    assert.equal(c.sourceOf('InterfaceRefreshInterval'), 'default');
  });

  it('a bad value is reported once, naming parameter and source, and the default is used, as Felix does', () => {
    const problems: ConfigProblem[] = [];
    const c = new ConfigResolver({
      env: { FELIX_HEALTHPORT: 'ninety' },
      file: { path: 'felix.cfg', text: '[global]\nHealthPort = 9100\n' },
      onProblem: (x) => problems.push(x),
    });
    assert.equal(c.config.HealthPort, 9099, 'Felix takes the default, not the next source');
    assert.match(c.sourceOf('HealthPort'), /default \(env FELIX_HEALTHPORT is invalid\)/);
    assert.equal(problems.length, 1);
    assert.deepEqual(
      { ...problems[0], reason: undefined },
      { kind: 'invalid', param: 'HealthPort', source: 'env FELIX_HEALTHPORT', value: 'ninety', reason: undefined },
    );
    assert.match(problems[0]?.reason ?? '', /invalid int; using the default/);
    c.setDatastoreConfig(ds({ MaxIpsetSize: '-5' }));
    c.setDatastoreConfig(ds({ MaxIpsetSize: '-5' }));
    assert.equal(problems.length, 2, 'reported once');
    assert.equal(c.config.MaxIpsetSize, 1048576);
    assert.equal(c.fatal.length, 0);
  });

  it('a bad value of a die-on-fail parameter, or "none" for a non-zero one, is fatal, as Felix refuses to start', () => {
    const c = new ConfigResolver({ env: { FELIX_DEFAULTENDPOINTTOHOSTACTION: 'Allow' } });
    assert.equal(c.fatal.length, 1);
    assert.equal(c.fatal[0]?.param, 'DefaultEndpointToHostAction');
    assert.equal(c.fatal[0]?.kind, 'fatal');
    const d = new ConfigResolver({});
    d.setDatastoreConfig(ds({ FailsafeInboundHostPorts: 'sctp:22' }));
    assert.equal(d.fatal[0]?.param, 'FailsafeInboundHostPorts');
    d.setDatastoreConfig(ds({ InterfacePrefix: 'none' }));
    assert.match(d.fatal[0]?.reason ?? '', /cannot be "none"/);
    d.setDatastoreConfig(ds({}));
    assert.equal(d.fatal.length, 0, 'fixed when the value goes');
  });

  it('"none" sets the zero value; an empty value is no value', () => {
    const c = new ConfigResolver({
      env: { FELIX_FAILSAFEINBOUNDHOSTPORTS: 'none', FELIX_HEALTHHOST: '', FELIX_INTERFACEEXCLUDE: 'NONE' },
    });
    assert.deepEqual(c.config.FailsafeInboundHostPorts, []);
    assert.equal(c.config.HealthHost, 'localhost');
    assert.deepEqual(c.config.InterfaceExclude, []);
  });

  it('datastore-connection parameters come only from flags, env and the file', () => {
    const problems: ConfigProblem[] = [];
    const c = new ConfigResolver({ onProblem: (x) => problems.push(x) });
    c.setDatastoreConfig(
      ds({
        DatastoreType: 'etcdv3',
        EtcdEndpoints: 'http://10.0.0.1:2379',
        FelixHostname: 'x',
        TyphaAddr: '10.0.0.1:5473',
      }),
    );
    assert.equal(c.config.DatastoreType, 'etcdv3');
    assert.deepEqual(c.config.EtcdEndpoints, ['http://127.0.0.1:2379']);
    assert.deepEqual(
      problems
        .filter((x) => x.kind === 'local-only')
        .map((x) => x.param)
        .sort(),
      ['DatastoreType', 'EtcdEndpoints', 'FelixHostname', 'TyphaAddr'],
    );
  });

  it('EtcdEndpoints defaults to EtcdScheme://EtcdAddr; DatastoreDir alone means the file datastore', () => {
    const c = new ConfigResolver({ env: { FELIX_ETCDADDR: '10.0.0.9:2379', FELIX_ETCDSCHEME: 'https' } });
    assert.deepEqual(c.config.EtcdEndpoints, ['https://10.0.0.9:2379']);
    assert.equal(c.config.DatastoreType, 'etcdv3');
    const f = new ConfigResolver({ flags: { DatastoreDir: '/tmp/x' } });
    assert.equal(f.config.DatastoreType, 'file');
    assert.match(f.sourceOf('DatastoreType'), /implied by DatastoreDir/);
    const e = new ConfigResolver({ flags: { DatastoreDir: '/tmp/x' }, env: { FELIX_DATASTORETYPE: 'etcdv3' } });
    assert.equal(e.config.DatastoreType, 'etcdv3');
  });

  it('reports Felix parameters palisade does not implement, set to non-defaults, once, with their source; defaults stay quiet', () => {
    const problems: ConfigProblem[] = [];
    const c = new ConfigResolver({
      env: { FELIX_XDPENABLED: 'false', FELIX_BPFENABLED: 'false', FELIX_IPV6SUPPORT: 'true' },
      onProblem: (x) => problems.push(x),
    });
    c.setDatastoreConfig(ds({ BPFEnabled: 'true', NftablesRefreshInterval: '30', ClusterGUID: 'abc' }));
    c.setDatastoreConfig(ds({ BPFEnabled: 'true', NftablesRefreshInterval: '30', ClusterGUID: 'abc' }));
    const unsupported = problems.filter((x) => x.kind === 'unsupported');
    assert.deepEqual(
      unsupported.map((x) => [x.param, x.source, x.value]),
      [['XDPEnabled', 'env FELIX_XDPENABLED', 'false']],
      'BPFEnabled=false from env (the default) wins over the datastore: nothing to report',
    );
    assert.match(unsupported[0]?.reason ?? '', /not supported by palisade; ignored/);
    assert.deepEqual(c.ignored, [{ param: 'XDPEnabled', value: 'false', source: 'env FELIX_XDPENABLED' }]);
    assert.deepEqual(c.fatal, [], 'BPFEnabled=false wins: nothing refused');
    assert.equal(c.config.NftablesRefreshInterval, 30, 'NftablesRefreshInterval is implemented');
    // Set where it wins, it is refused, not ignored (issue 52).
    const refused: ConfigProblem[] = [];
    const r = new ConfigResolver({ env: { FELIX_BPFENABLED: 'true' }, onProblem: (x) => refused.push(x) });
    r.setDatastoreConfig(ds({ PolicySyncPathPrefix: '/var/run/nodeagent', WireguardEnabled: 'true' }));
    assert.deepEqual(
      r.fatal.map((x) => [x.param, x.source]),
      [
        ['BPFEnabled', 'env FELIX_BPFENABLED'],
        ['PolicySyncPathPrefix', 'FelixConfiguration default'],
      ],
      'WireguardEnabled is implemented: not refused',
    );
    assert.equal(r.config.WireguardEnabled, true);
    assert.deepEqual(r.ignored, []);
  });

  it('RouteTableRanges: checked as Felix does (a bad range is refused), taken when good (WireGuard tables)', () => {
    const problems: ConfigProblem[] = [];
    const c = new ConfigResolver({
      env: { FELIX_ROUTETABLERANGES: '100-200,300-400' },
      onProblem: (x) => problems.push(x),
    });
    assert.deepEqual(problems, []);
    assert.equal(c.config.RouteTableRanges, '100-200,300-400');
    const bad: ConfigProblem[] = [];
    new ConfigResolver({ env: { FELIX_ROUTETABLERANGES: '300-100' }, onProblem: (x) => bad.push(x) });
    assert.ok(
      bad.some((x) => x.param === 'RouteTableRanges' && x.kind !== 'unsupported'),
      JSON.stringify(bad),
    );
  });

  it('an unknown name is a warning with a did-you-mean', () => {
    const problems: ConfigProblem[] = [];
    const c = new ConfigResolver({ env: { FELIX_HEALTHPROT: '1' }, onProblem: (x) => problems.push(x) });
    c.setDatastoreConfig(ds({ FailsafeInboundHostPort: 'tcp:22' }));
    assert.deepEqual(
      problems.map((x) => [x.kind, x.param, x.source]),
      [
        ['unknown', 'HEALTHPROT', 'env FELIX_HEALTHPROT'],
        ['unknown', 'FailsafeInboundHostPort', 'FelixConfiguration default'],
      ],
    );
    assert.match(problems[0]?.reason ?? '', /did you mean HealthPort/);
    assert.match(problems[1]?.reason ?? '', /did you mean FailsafeInboundHostPorts/);
  });

  it('reports which changes need a restart (only LogSeverityScreen applies live)', () => {
    const c = new ConfigResolver({ flags: { FelixHostname: 'n1' } });
    const first = c.setDatastoreConfig(ds({ HealthPort: '9300' }));
    assert.deepEqual(first.changed, ['HealthPort']);
    assert.deepEqual(c.setDatastoreConfig(ds({ HealthPort: '9300' })), { changed: [], needsRestart: [] });
    assert.deepEqual(c.setDatastoreConfig(ds({ HealthPort: '9300', LogSeverityScreen: 'Debug' })), {
      changed: ['LogSeverityScreen'],
      needsRestart: [],
    });
    assert.deepEqual(
      c.setDatastoreConfig(
        ds({ HealthPort: '9300', LogSeverityScreen: 'Debug' }, { FailsafeInboundHostPorts: 'none' }),
      ),
      {
        changed: ['FailsafeInboundHostPorts'],
        needsRestart: ['FailsafeInboundHostPorts'],
      },
    );
    assert.deepEqual(c.setDatastoreConfig(ds()).needsRestart.sort(), ['FailsafeInboundHostPorts', 'HealthPort']);
    assert.deepEqual(
      c.setDatastoreConfig(ds({ BPFEnabled: 'true' })),
      { changed: [], needsRestart: [] },
      'an ignored parameter needs no restart',
    );
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

describe('config: ServiceLoopPrevention and the outgoing-NAT parameters (issue 55)', () => {
  const at = (env: Record<string, string>) => new ConfigResolver({ env });
  it('ServiceLoopPrevention is honoured: nothing said at its default, Reject and Disabled taken', () => {
    assert.deepEqual(at({}).defaultsNotHonoured(), []);
    assert.equal(at({}).config.ServiceLoopPrevention, 'Drop');
    for (const v of ['Reject', 'Disabled']) {
      const c = at({ FELIX_SERVICELOOPPREVENTION: v.toLowerCase() });
      assert.equal(c.config.ServiceLoopPrevention, v);
      assert.deepEqual(c.ignored, []);
    }
  });

  it('NATPortRange as Felix reads it: min:max, one port, none', () => {
    assert.deepEqual(at({ FELIX_NATPORTRANGE: '32768:65000' }).config.NATPortRange, { first: 32768, last: 65000 });
    assert.deepEqual(at({ FELIX_NATPORTRANGE: '40000' }).config.NATPortRange, { first: 40000, last: 40000 });
    assert.equal(at({}).config.NATPortRange, undefined);
    const bad = at({ FELIX_NATPORTRANGE: '9:8' });
    assert.equal(bad.config.NATPortRange, undefined);
    assert.deepEqual(
      bad.problems.map((p) => [p.kind, p.param]),
      [['invalid', 'NATPortRange']],
    );
  });

  it('NATOutgoingAddress: one IPv4 address or, beyond Felix, a range; anything else refused', () => {
    assert.equal(at({ FELIX_NATOUTGOINGADDRESS: '192.0.2.9' }).config.NATOutgoingAddress, '192.0.2.9');
    assert.equal(
      at({ FELIX_NATOUTGOINGADDRESS: '192.0.2.9-192.0.2.12' }).config.NATOutgoingAddress,
      '192.0.2.9-192.0.2.12',
    );
    for (const v of ['192.0.2.12-192.0.2.9', 'fd00::1', '192.0.2.1-192.0.2.2-192.0.2.3', 'nat.example']) {
      const c = at({ FELIX_NATOUTGOINGADDRESS: v });
      assert.equal(c.config.NATOutgoingAddress, '', v);
      assert.deepEqual(
        c.problems.map((p) => p.param),
        ['NATOutgoingAddress'],
        v,
      );
    }
  });

  it('NATOutgoingExclusions and IptablesNATOutgoingInterfaceFilter are taken, not reported', () => {
    const c = at({
      FELIX_NATOUTGOINGEXCLUSIONS: 'IPPoolsAndHostIPs',
      FELIX_IPTABLESNATOUTGOINGINTERFACEFILTER: 'eth+',
    });
    assert.equal(c.config.NATOutgoingExclusions, 'IPPoolsAndHostIPs');
    assert.equal(c.config.IptablesNATOutgoingInterfaceFilter, 'eth+');
    assert.deepEqual(c.ignored, []);
  });
});
