// The agent in iptables mode (NFTablesMode Disabled), through each iptables backend (the
// -nft tools and -legacy), with real packets: policy enforced through iptables-restore and IP sets over netlink, the
// rule
// hashes those of `palisade plan --dataplane iptables`, the nftables-mode table of an
// earlier run removed, Calico 3.32's ARP table there as in nftables mode, edits and drift
// repaired, --cleanup removing only what is ours (the ARP table too);
// a foreign iptables rule and a foreign IP set untouched throughout.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, it } from 'node:test';

import { Lab, type Workload } from '../helpers/lab.js';
import { BIN, cleanEnv, LabAgent, labWorkloadEndpoint, writeResources } from '../helpers/lab-agent.js';
import { ROOT_SKIP } from '../helpers/netns.js';
import { tempDirs } from '../helpers/temp.js';

const tempDir = tempDirs('iptmode');
const V3 = 'projectcalico.org/v3';
for (const flavour of ['nft', 'legacy'] as const) {
  const ENV = {
    FELIX_NFTABLESMODE: 'Disabled',
    FELIX_IPTABLESBACKEND: flavour,
    FELIX_IPTABLESREFRESHINTERVAL: '2',
    FELIX_IPSETSREFRESHINTERVAL: '2',
  };
  const IPT = `iptables-${flavour}`;

  describe(`e2e: iptables mode (${IPT})`, { skip: ROOT_SKIP }, () => {
    let lab: Lab;
    let fe: Workload, be: Workload, other: Workload;
    let dir: string;
    let agent: LabAgent;
    const sh = (cmd: string, args: string[]) => lab.sh(lab.host, cmd, args);
    const hashes = (text: string) => new Set([...text.matchAll(/cali:([\w-]{16})/g)].map((m) => m[1]));
    const foreign = () =>
      `${sh(`${IPT}-save`, ['-t', 'filter'])
        .split('\n')
        .filter((l) => l.includes('192.0.2.3'))
        .join('\n')}\n${sh('ipset', ['save', 'KUBE-foreign'])}`;
    const wep = (w: Workload, app: string) => labWorkloadEndpoint(w, { app });
    const resources = (port: number, partners = ['198.51.100.0/24']) => [
      { apiVersion: V3, kind: 'Profile', metadata: { name: 'kns.e2e' }, spec: { egress: [{ action: 'Allow' }] } },
      {
        apiVersion: V3,
        kind: 'GlobalNetworkSet',
        metadata: { name: 'partners', labels: { role: 'partner' } },
        spec: { nets: partners },
      },
      {
        apiVersion: V3,
        kind: 'NetworkPolicy',
        metadata: { name: 'be', namespace: 'e2e' },
        spec: {
          selector: "app == 'be'",
          ingress: [
            { action: 'Allow', protocol: 'TCP', source: { selector: "app == 'fe'" }, destination: { ports: [port] } },
            {
              action: 'Allow',
              protocol: 'TCP',
              source: { selector: "role == 'partner'", namespaceSelector: 'global()' },
              destination: { ports: [port] },
            },
          ],
        },
      },
      wep(fe, 'fe'),
      wep(be, 'be'),
      wep(other, 'other'),
    ];

    before(async () => {
      lab = new Lab('palisade-iptmode');
      fe = lab.addWorkload('fe', '10.74.0.10', 1);
      be = lab.addWorkload('be', '10.74.0.11', 2);
      other = lab.addWorkload('other', '10.74.0.12', 3);
      await lab.listen(be, [8080, 9090]);
      sh(IPT, ['-A', 'INPUT', '-s', '192.0.2.3/32', '-j', 'ACCEPT']);
      sh('ipset', ['create', 'KUBE-foreign', 'hash:ip']);
      sh('ipset', ['add', 'KUBE-foreign', '192.0.2.4']);
      // What an earlier run in nftables mode left: removed when the agent starts in iptables mode.
      sh('nft', ['add table ip calico']);
      dir = tempDir();
      writeResources(dir, resources(8080));
      agent = new LabAgent(lab, dir, ENV);
      await agent.applied();
    });
    after(async () => {
      await agent?.stop();
      lab?.destroy();
    });

    it('enforces policy through iptables and IP sets, with the rules plan renders, and removes the nftables-mode table', async () => {
      assert.ok(
        (await lab.until(() => lab.tcp(fe, be.ip, 8080, 300), 5000)) >= 0,
        `fe cannot reach be:\n${agent.log.slice(-2000)}`,
      );
      assert.equal(lab.tcp(other, be.ip, 8080), false, 'other reaches be');
      assert.equal(lab.tcp(fe, be.ip, 9090), false, 'the port is not open');
      const saved = sh(`${IPT}-save`, []);
      assert.match(saved, /^-A FORWARD -m comment --comment "?cali:[\w-]+"? -j cali-FORWARD$/m);
      assert.match(saved, new RegExp(`^:cali-tw-${be.iface} - `, 'm'));
      assert.match(sh('ipset', ['list']), new RegExp(`^Name: cali40s:[\\s\\S]*?${fe.ip.replace(/\./g, '\\.')}`, 'm'));
      const plan = spawnSync(
        process.execPath,
        [BIN, 'plan', '--datastore-dir', dir, '--hostname', 'node1', '--dataplane', 'iptables'],
        { encoding: 'utf8', env: cleanEnv },
      );
      assert.equal(plan.status, 0, plan.stderr);
      const planned = hashes(plan.stdout);
      // (The plan's ARP table, nftables input in either mode, is checked against the kernel's too.)
      const arp = sh('nft', ['list', 'table', 'arp', 'calico-arp']);
      const programmed = hashes(`${saved}${sh(`ip6tables-${flavour}-save`, [])}${arp}`);
      assert.deepEqual(
        [...planned].filter((h) => !programmed.has(h)),
        [],
        'every rule plan renders is programmed',
      );
      assert.equal(
        spawnSync('ip', ['netns', 'exec', lab.host, 'nft', 'list', 'table', 'ip', 'calico']).status,
        1,
        'the nftables-mode table is gone',
      );
      // Calico 3.32's ARP table (the lab names no release: the newest) is there in this mode too.
      assert.match(
        sh('nft', ['list', 'table', 'arp', 'calico-arp']),
        new RegExp(`oifname "${be.iface}" arp operation reply arp saddr ip ${be.ip.replaceAll('.', '\\.')} counter`),
      );
    });

    it('follows a policy edit, and repairs a flushed chain, a deleted hook, an emptied IP set and a foreign rule put in our chain', async () => {
      const before = foreign();
      writeResources(dir, resources(9090));
      assert.ok((await lab.until(() => lab.tcp(fe, be.ip, 9090, 300), 5000)) >= 0, 'the edit never landed');
      assert.equal(lab.tcp(fe, be.ip, 8080), false);
      const set = sh('ipset', ['list', '-n'])
        .split('\n')
        .find((n) => n.startsWith('cali40s:')) as string;
      sh(IPT, ['-F', `cali-tw-${be.iface}`]);
      sh(IPT, ['-D', 'FORWARD', '1']);
      sh('ipset', ['flush', set]);
      // Someone slips an allow rule into the top of another endpoint's ingress chain.
      sh(IPT, ['-I', `cali-tw-${fe.iface}`, '1', '-s', other.ip, '-j', 'ACCEPT']);
      assert.ok(
        (await lab.until(() => lab.tcp(fe, be.ip, 9090, 300) && !lab.tcp(other, be.ip, 9090, 200), 2000 + 3000)) >= 0,
        `not repaired within one refresh:\n${sh(`${IPT}-save`, ['-t', 'filter']).slice(0, 3000)}`,
      );
      assert.match(
        sh(`${IPT}-save`, ['-t', 'filter']),
        /^-A FORWARD -m comment --comment "?cali:[\w-]+"? -j cali-FORWARD$/m,
      );
      assert.ok(
        (await lab.until(
          () => !sh(`${IPT}-save`, ['-t', 'filter']).includes(`-A cali-tw-${fe.iface} -s ${other.ip}/32 -j ACCEPT`),
          5000,
        )) >= 0,
        'the foreign rule in our chain stayed',
      );
      // Only an IP set's members change: the set alone is updated, no rule is rewritten.
      const rules = sh(`${IPT}-save`, ['-t', 'filter'])
        .split('\n')
        .filter((l) => l.startsWith('-A cali-'))
        .join('\n');
      writeResources(dir, resources(9090, ['198.51.100.0/24', `${other.ip}/32`]));
      assert.ok(
        (await lab.until(() => lab.tcp(other, be.ip, 9090, 300), 5000)) >= 0,
        'the network set change never landed',
      );
      assert.equal(
        sh(`${IPT}-save`, ['-t', 'filter'])
          .split('\n')
          .filter((l) => l.startsWith('-A cali-'))
          .join('\n'),
        rules,
        'rules were rewritten for a member change',
      );
      assert.equal(foreign(), before, 'foreign state changed');
    });

    // Felix accepts what policy allowed at the end of FORWARD, after other programs' rules
    // there (kube-proxy's drop of invalid conntrack state, Docker's chains), and keeps those
    // rules last (docs/compatibility.md D4). Before, palisade accepted at the top.
    it("accepts allowed forwarded traffic only after other programs' FORWARD rules, keeping its own rules last", async () => {
      assert.ok((await lab.until(() => lab.tcp(other, be.ip, 9090, 300), 5000)) >= 0, 'policy allows other -> be');
      const drop = ['-s', `${other.ip}/32`, '-d', `${be.ip}/32`, '-j', 'DROP'];
      sh(IPT, ['-A', 'FORWARD', ...drop]);
      const forward = () =>
        sh(`${IPT}-save`, ['-t', 'filter'])
          .split('\n')
          .filter((l) => l.startsWith('-A FORWARD '));
      assert.ok(
        (await lab.until(() => !lab.tcp(other, be.ip, 9090, 200), 2000 + 3000)) >= 0,
        `the foreign drop appended after our rules was not put before them:\n${forward().join('\n')}`,
      );
      assert.ok(lab.tcp(fe, be.ip, 9090, 300), 'fe -> be still allowed');
      const rules = forward();
      assert.match(rules[0] as string, /-j cali-FORWARD$/, 'our jump first');
      assert.match(rules.at(-3) as string, new RegExp(`-s ${other.ip}/32 -d ${be.ip}/32 -j DROP$`));
      assert.match(rules.at(-2) as string, /--mark 0x10000\/0x10000 -j ACCEPT$/, 'then our accept');
      assert.match(rules.at(-1) as string, /-j MARK --set-xmark 0x10000\/0x10000$/, 'and our mark last');
      sh(IPT, ['-D', 'FORWARD', ...drop]);
      assert.ok((await lab.until(() => lab.tcp(other, be.ip, 9090, 300), 5000)) >= 0, 'allowed again');
    });

    it('agent --cleanup removes our chains, hooks and IP sets, and nothing else', async () => {
      const before = foreign();
      await agent.stop();
      const r = spawnSync(
        'ip',
        [
          'netns',
          'exec',
          lab.host,
          process.execPath,
          BIN,
          'agent',
          '--cleanup',
          '--datastore-dir',
          dir,
          '--hostname',
          'node1',
        ],
        { encoding: 'utf8', env: { ...cleanEnv, ...ENV } },
      );
      assert.equal(r.status, 0, r.stderr);
      assert.doesNotMatch(sh(`${IPT}-save`, []), /cali/);
      assert.doesNotMatch(sh('ipset', ['list', '-n']), /cali/);
      assert.doesNotMatch(sh('nft', ['list', 'tables']), /calico-arp/);
      assert.equal(foreign(), before);
    });
  });
}
