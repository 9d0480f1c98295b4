// Where the Kubernetes API is and how to authenticate, as Felix finds it: the kubeconfig
// named by KUBECONFIG (or given), else the in-cluster service account (the DaemonSet's
// case: KUBERNETES_SERVICE_HOST, the token and CA under /var/run/secrets), else
// ~/.kube/config. Read and applied by @kubernetes/client-node 1.4 (the last line that
// supports Node 20: 2.x needs Node >= 22.19), so every auth it knows - tokens, client
// certificates, exec plugins, OIDC - works, and its credentials are asked for per
// request so expiring ones are renewed. The library is loaded on first use: it is half a
// second of every start otherwise, for the agents that never talk to Kubernetes.
import type { KubeEndpoint } from './transport.js';

export class KubeConfigError extends Error {
  readonly code = 'EKUBECONFIG';
}

export interface KubeEndpointOptions {
  kubeconfig?: string | undefined;
  env?: NodeJS.ProcessEnv;
  /**
   * Where /var/run/secrets/... is (tests); the in-cluster service account's token is re-read every minute, as client-go
   * does.
   */
  serviceAccountRoot?: string;
}

export async function loadKubeEndpoint(opts: KubeEndpointOptions = {}): Promise<KubeEndpoint & { source: string }> {
  const env = opts.env ?? process.env;
  const { KubeConfig } = await import('@kubernetes/client-node');
  const kc = new KubeConfig();
  let source: string;
  try {
    const file = opts.kubeconfig || env.KUBECONFIG;
    if (file) {
      kc.loadFromFile(file);
      source = `kubeconfig ${file}`;
    } else if (env.KUBERNETES_SERVICE_HOST) {
      kc.loadFromCluster(opts.serviceAccountRoot);
      source = 'in-cluster service account';
    } else {
      kc.loadFromDefault();
      source = 'default kubeconfig';
    }
  } catch (e) {
    throw new KubeConfigError(`cannot load the Kubernetes configuration: ${(e as Error).message}`);
  }
  const cluster = kc.getCurrentCluster();
  if (!cluster?.server) throw new KubeConfigError(`the Kubernetes configuration (${source}) names no cluster server`);
  return { server: cluster.server, authorize: (o) => kc.applyToHTTPSOptions(o), source };
}
