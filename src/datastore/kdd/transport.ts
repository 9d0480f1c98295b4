// HTTP(S) to the Kubernetes API: JSON GETs, and watches read as JSON lines from a chunked
// response. Authentication is a bearer token and/or a client certificate, the server
// checked against its CA; or whatever `authorize` adds to each request (the kubeconfig's
// auth, from @kubernetes/client-node, see kubeconfig.ts), asked again per request so
// expiring credentials are renewed.
import http from 'node:http';
import https from 'node:https';

export interface KubeTransport {
  get(path: string): Promise<unknown>;
  /**
   * Streams a watch; resolves when it ends (or is aborted). `onEvent` may call `abort`;
   * `handle.abort` is set as soon as the request is made, to end it from outside.
   */
  watch(
    path: string,
    onEvent: (event: unknown, abort: () => void) => void,
    handle?: { abort?: () => void },
  ): Promise<void>;
}

export interface KubeEndpoint {
  /** https://host:port (or http:// for tests). */
  server: string;
  ca?: Buffer | undefined;
  cert?: Buffer | undefined;
  key?: Buffer | undefined;
  token?: string | undefined;
  timeoutMs?: number | undefined;
  /** Adds authentication (headers, agent) to a request's options. */
  authorize?: ((opts: https.RequestOptions) => Promise<void>) | undefined;
}

export class KubeApiError extends Error {
  readonly code = 'EKUBEAPI';
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
  }
}

/** Largest response accepted for one GET (a page of a list). */
const MAX_BODY = 256 << 20;
/** Longest line in a watch stream (one object). */
const MAX_LINE = 16 << 20;

export class HttpKubeTransport implements KubeTransport {
  readonly #e: KubeEndpoint;

  constructor(e: KubeEndpoint) {
    this.#e = e;
  }

  async #request(
    path: string,
    onResponse: (res: http.IncomingMessage) => void,
    onError: (e: Error) => void,
  ): Promise<http.ClientRequest> {
    const url = new URL(path, this.#e.server);
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.#e.token) headers.authorization = `Bearer ${this.#e.token}`;
    const opts: https.RequestOptions = {
      method: 'GET',
      headers,
      ...(this.#e.ca ? { ca: this.#e.ca } : {}),
      ...(this.#e.cert ? { cert: this.#e.cert } : {}),
      ...(this.#e.key ? { key: this.#e.key } : {}),
    };
    if (this.#e.authorize) {
      await this.#e.authorize(opts);
      opts.headers = { ...(opts.headers as Record<string, string>), accept: 'application/json' };
    }
    const req = (url.protocol === 'https:' ? https : http).request(url, opts, onResponse);
    req.on('error', onError);
    req.end();
    return req;
  }

  async get(path: string): Promise<unknown> {
    let req: http.ClientRequest | undefined;
    const done = new Promise<unknown>((resolve, reject) => {
      void this.#request(
        path,
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (d: Buffer) => {
            size += d.length;
            if (size > MAX_BODY) req?.destroy(new KubeApiError(`GET ${path}: response over ${MAX_BODY} bytes`, 0));
            else chunks.push(d);
          });
          res.on('end', () => {
            let body: unknown;
            try {
              body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
            } catch {
              reject(new KubeApiError(`GET ${path}: HTTP ${res.statusCode}, not JSON`, res.statusCode ?? 0));
              return;
            }
            if ((res.statusCode ?? 0) >= 300)
              reject(
                new KubeApiError(
                  `GET ${path}: HTTP ${res.statusCode}: ${(body as { message?: string }).message ?? ''}`,
                  res.statusCode ?? 0,
                ),
              );
            else resolve(body);
          });
          res.on('error', reject);
        },
        reject,
      ).then((r) => {
        req = r;
        r.setTimeout(this.#e.timeoutMs ?? 60_000, () => r.destroy(new KubeApiError(`GET ${path}: timed out`, 0)));
      }, reject);
    });
    return done;
  }

  watch(
    path: string,
    onEvent: (event: unknown, abort: () => void) => void,
    handle?: { abort?: () => void },
  ): Promise<void> {
    return new Promise((resolve, reject) => {
      let aborted = false;
      let req: http.ClientRequest | undefined;
      const stop = () => {
        aborted = true;
        req?.destroy();
        resolve();
      };
      if (handle) handle.abort = stop;
      void this.#request(
        path,
        (res) => {
          if ((res.statusCode ?? 0) >= 300) {
            res.resume();
            reject(new KubeApiError(`watch ${path}: HTTP ${res.statusCode}`, res.statusCode ?? 0));
            return;
          }
          let pending = '';
          res.on('data', (d: Buffer) => {
            pending += d.toString('utf8');
            if (pending.length > MAX_LINE) {
              req?.destroy();
              reject(new KubeApiError(`watch ${path}: a line over ${MAX_LINE} bytes`, 0));
              return;
            }
            let nl: number;
            while (!aborted && (nl = pending.indexOf('\n')) >= 0) {
              const line = pending.slice(0, nl).trim();
              pending = pending.slice(nl + 1);
              if (!line) continue;
              let event: unknown;
              try {
                event = JSON.parse(line);
              } catch {
                req?.destroy();
                reject(new KubeApiError(`watch ${path}: a line that is not JSON`, 0));
                return;
              }
              try {
                onEvent(event, stop);
              } catch (e) {
                req?.destroy();
                reject(e as Error);
                return;
              }
            }
          });
          res.on('end', () => resolve());
          res.on('close', () => resolve());
          res.on('error', (e) => (aborted ? resolve() : reject(e)));
        },
        (e) => (aborted ? resolve() : reject(e)),
      ).then((r) => {
        req = r;
        if (aborted) r.destroy();
      }, reject);
    });
  }
}
