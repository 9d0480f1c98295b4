// The dual-stack lab's cluster data, written to either datastore as Calico keeps it: on
// etcd, the v3 resources and IPAM blocks under their keys; on the Kubernetes datastore (a
// real kube-apiserver in the underlay namespace, with Calico's CRDs of the release), Nodes
// with calico-node's annotations, IPPool and IPAMBlock CRDs named as libcalico-go names
// them, Pods with both addresses, and a Kubernetes NetworkPolicy. The agents reach the API
// server through a relay on their own loopback, the address its certificate names.
import { blockName } from '../../src/model/ipam.js';
import { TestEtcd } from './etcd.js';
import { installPalisade, KubeApiServer } from './kube-cluster.js';
import type { Workload } from './lab.js';
import type { MultiNodeLab } from './multinode.js';
import { type Member, putAllowProfile, putWorkload, V3_PREFIX, v3, vxlanNodeBlock } from './multinode-cluster.js';
import { sharedCalico } from './shared-calico.js';

export const block4 = (i: number) => `10.68.${i}.0/26`;
export const block6 = (i: number) => `fd68:0:0:${i}::/122`;

const poolSpecs = (vxlanMode: string, natOutgoing: boolean) =>
  [
    ['pool4', { cidr: '10.68.0.0/16', vxlanMode, ipipMode: 'Never', natOutgoing, blockSize: 26 }],
    ['pool6', { cidr: 'fd68::/48', vxlanMode, ipipMode: 'Never', natOutgoing, blockSize: 122 }],
  ] as const;

export interface DualStackCluster {
  start(mn: MultiNodeLab): Promise<void>;
  pools(vxlanMode: string, natOutgoing?: boolean): Promise<void>;
  /** The node, its blocks and its pod (app=`app`). */
  member(m: Member, app: string): Promise<void>;
  /** A policy on app=db: ingress TCP 5432 from app=api only (undefined: removed). */
  dbPolicy(on: boolean): Promise<void>;
  /** What an agent on `m` needs to reach the datastore. */
  agentEnv(m: Member): Promise<NodeJS.ProcessEnv>;
  /** The WireGuard public key the node published for `family` ("" for none). */
  wireguardKey(node: string, family: 4 | 6): Promise<string>;
  stop(): Promise<void>;
}

export class EtcdDualStack implements DualStackCluster {
  #etcd: TestEtcd | undefined;

  get #e(): TestEtcd {
    return this.#etcd as TestEtcd;
  }

  async start(mn: MultiNodeLab): Promise<void> {
    this.#etcd = new TestEtcd(undefined, mn.underlay, '10.99.0.1');
    await this.#etcd.start();
    putAllowProfile(this.#e);
  }

  async pools(vxlanMode: string, natOutgoing = false): Promise<void> {
    for (const [name, spec] of poolSpecs(vxlanMode, natOutgoing))
      this.#e.put(`${V3_PREFIX}/ippools/${name}`, v3('IPPool', name, spec));
  }

  async member(m: Member, app: string): Promise<void> {
    const name = m.node.name;
    this.#e.put(
      `${V3_PREFIX}/nodes/${name}`,
      v3('Node', name, {
        bgp: { ipv4Address: `${m.node.ip}/24`, ipv6Address: `${m.node.ip6}/64` },
        ipv4VXLANTunnelAddr: `10.68.${m.index}.1`,
        ipv6VXLANTunnelAddr: `fd68:0:0:${m.index}::1`,
      }),
    );
    for (const cidr of [block4(m.index), block6(m.index)])
      this.#e.put(
        `/calico/ipam/v2/assignment/ipv${cidr.includes(':') ? 6 : 4}/block/${cidr.replace('/', '-')}`,
        JSON.stringify(vxlanNodeBlock(cidr, name)),
      );
    putWorkload(this.#e, m, m.pod, app);
  }

  async dbPolicy(on: boolean): Promise<void> {
    const key = `${V3_PREFIX}/networkpolicies/e2e/db`;
    if (!on) {
      this.#e.del(key);
      return;
    }
    const rule = {
      action: 'Allow',
      protocol: 'TCP',
      source: { selector: "app == 'api'" },
      destination: { ports: [5432] },
    };
    this.#e.put(
      key,
      v3(
        'NetworkPolicy',
        'db',
        { selector: "app == 'db'", ingress: [rule], egress: [{ action: 'Allow' }] },
        { namespace: 'e2e' },
      ),
    );
  }

  async agentEnv(): Promise<NodeJS.ProcessEnv> {
    return { FELIX_DATASTORETYPE: 'etcdv3', FELIX_ETCDENDPOINTS: this.#e.endpoint };
  }

  async wireguardKey(node: string, family: 4 | 6): Promise<string> {
    const raw = this.#e.get(`${V3_PREFIX}/nodes/${node}`);
    const status = raw ? (JSON.parse(raw) as { status?: Record<string, string> }).status : undefined;
    return status?.[family === 4 ? 'wireguardPublicKey' : 'wireguardPublicKeyV6'] ?? '';
  }

  async stop(): Promise<void> {
    await this.#etcd?.destroy();
  }
}

export class KddDualStack implements DualStackCluster {
  #api: KubeApiServer | undefined;
  #token = '';
  readonly #dir: string;

  constructor(dir: string) {
    this.#dir = dir;
  }

  get #a(): KubeApiServer {
    return this.#api as KubeApiServer;
  }

  async start(mn: MultiNodeLab): Promise<void> {
    // Listening on the underlay too, so that the nodes' relays reach it.
    this.#api = await KubeApiServer.start(mn.underlay, ['--bind-address=0.0.0.0']);
    await this.#a.installCrds(sharedCalico('v3.31.7', 'crds', 'libcalico-go'));
    await this.#a.put('clusterinformations.crd.projectcalico.org', {
      metadata: { name: 'default' },
      spec: { calicoVersion: 'v3.31.7', datastoreReady: true, clusterType: 'k8s,kdd' },
    });
    await this.#a.put('namespaces', { metadata: { name: 'e2e' } });
    await this.#a.put('serviceaccounts', { metadata: { name: 'default', namespace: 'e2e' } });
    this.#token = await installPalisade(this.#a);
  }

  async pools(vxlanMode: string, natOutgoing = false): Promise<void> {
    for (const [name, spec] of poolSpecs(vxlanMode, natOutgoing))
      await this.#a.put('ippools.crd.projectcalico.org', { metadata: { name }, spec });
  }

  async member(m: Member, app: string): Promise<void> {
    const name = m.node.name;
    const A = 'projectcalico.org/';
    await this.#a.put('nodes', {
      metadata: {
        name,
        annotations: {
          [`${A}IPv4Address`]: `${m.node.ip}/24`,
          [`${A}IPv6Address`]: `${m.node.ip6}/64`,
          [`${A}IPv4VXLANTunnelAddr`]: `10.68.${m.index}.1`,
          [`${A}IPv6VXLANTunnelAddr`]: `fd68:0:0:${m.index}::1`,
        },
      },
    });
    for (const cidr of [block4(m.index), block6(m.index)])
      await this.#a.put('ipamblocks.crd.projectcalico.org', {
        metadata: { name: blockName(cidr) },
        spec: { ...vxlanNodeBlock(cidr, name), strictAffinity: false },
      });
    await this.#a.put('pods', podOf(m.pod, name, app));
  }

  async dbPolicy(on: boolean): Promise<void> {
    if (!on) {
      await this.#a.del('networkpolicies', 'e2e', 'db');
      return;
    }
    await this.#a.put('networkpolicies', {
      metadata: { name: 'db', namespace: 'e2e' },
      spec: {
        podSelector: { matchLabels: { app: 'db' } },
        policyTypes: ['Ingress'],
        ingress: [
          { from: [{ podSelector: { matchLabels: { app: 'api' } } }], ports: [{ protocol: 'TCP', port: 5432 }] },
        ],
      },
    });
  }

  /** One relay per node, however often its agent is started (a second would find the port taken). */
  readonly #relays = new Map<string, Promise<NodeJS.ProcessEnv>>();

  agentEnv(m: Member): Promise<NodeJS.ProcessEnv> {
    const env = this.#relays.get(m.node.name) ?? this.#relay(m);
    this.#relays.set(m.node.name, env);
    return env;
  }

  async #relay(m: Member): Promise<NodeJS.ProcessEnv> {
    const port = Number(/:(\d+)$/.exec(this.#a.url)?.[1]);
    // The API server's certificate names 127.0.0.1: each node reaches it on its own loopback.
    const relay = `require('net').createServer((c)=>{const u=require('net').connect(${port},'10.99.0.1');c.pipe(u).pipe(c);c.on('error',()=>u.destroy());u.on('error',()=>c.destroy());}).listen(${port},'127.0.0.1',()=>console.log('relaying'))`;
    const p = m.node.lab.spawnInHost([process.execPath, '-e', relay], {});
    // A relay that cannot listen exits: said, not waited for.
    await new Promise((resolve, reject) => {
      p.stdout?.once('data', resolve);
      p.once('exit', (code) => reject(new Error(`${m.node.name}: the API relay exited (${code})`)));
    });
    return {
      FELIX_DATASTORETYPE: 'kubernetes',
      KUBECONFIG: this.#a.kubeconfig(this.#dir, this.#token, `kubeconfig-${m.node.name}`),
    };
  }

  async wireguardKey(node: string, family: 4 | 6): Promise<string> {
    const n = await this.#a.get('nodes', undefined, node);
    const notes = (n?.metadata as { annotations?: Record<string, string> } | undefined)?.annotations;
    return notes?.[`projectcalico.org/WireguardPublicKey${family === 6 ? 'V6' : ''}`] ?? '';
  }

  async stop(): Promise<void> {
    await this.#api?.stop();
  }
}

/** A running pod on `node` with both addresses, in the interface Calico's CNI plugin names. */
function podOf(w: Workload, node: string, app: string) {
  return {
    metadata: { name: w.name, namespace: 'e2e', labels: { app } },
    spec: {
      nodeName: node,
      serviceAccountName: 'default',
      containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }],
    },
    status: {
      phase: 'Running',
      podIP: w.ip,
      podIPs: [{ ip: w.ip }, ...(w.ip6 ? [{ ip: w.ip6 }] : [])],
    },
  };
}
