// HTTP(S) to the Kubernetes API: JSON GETs, and watches read as JSON lines from a chunked
// response. Authentication is a bearer token and/or a client certificate, the server
// checked against its CA; or whatever `authorize` adds to each request (the kubeconfig's
// auth, from @kubernetes/client-node, see kubeconfig.ts), asked again per request so
// expiring credentials are renewed.
import http from 'node:http';
import https from 'node:https';

export interface WatchHandle {
  /** Set as soon as the request is made: ends the watch from outside. */
  abort?: () => void;
  /** Called when the server has answered the watch (its status line, before any event). */
  onOpen?: () => void;
}

export interface KubeTransport {
  get(path: string): Promise<unknown>;
  /**
   * A JSON merge patch (RFC 7386) of the object at `path`: only the fields it names
   * change; a metadata.resourceVersion in it makes a changed object a 409 conflict.
   */
  patch?(path: string, body: unknown): Promise<unknown>;
  /**
   * Streams a watch; resolves when it ends (or is aborted). `onEvent` may call `abort`.
   * With `idleMs`, a watch that receives nothing for that long fails (its connection is
   * presumed dead and is closed).
   */
  watch(
    path: string,
    onEvent: (event: unknown, abort: () => void) => void,
    handle?: WatchHandle,
    opts?: { idleMs?: number },
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

/** The server did not answer in time: a timeout, or a watch that went silent. */
export class KubeUnansweredError extends KubeApiError {
  constructor(message: string) {
    super(message, 0);
  }
}

/** Largest response accepted for one GET (a page of a list). */
const MAX_BODY = 256 << 20;
/** Longest line in a watch stream (one object). */
const MAX_LINE = 16 << 20;
/** TCP keepalive's first probe after this much silence: a peer gone without a FIN is found out. */
const KEEPALIVE_MS = 15_000;

export class HttpKubeTransport implements KubeTransport {
  readonly #e: KubeEndpoint;

  constructor(e: KubeEndpoint) {
    this.#e = e;
  }

  async #request(
    path: string,
    onResponse: (res: http.IncomingMessage) => void,
    onError: (e: Error) => void,
    write?: { method: string; contentType: string; body: string },
  ): Promise<http.ClientRequest> {
    const url = new URL(path, this.#e.server);
    const headers: Record<string, string> = { accept: 'application/json' };
    if (write) headers['content-type'] = write.contentType;
    if (this.#e.token) headers.authorization = `Bearer ${this.#e.token}`;
    const opts: https.RequestOptions = {
      method: write?.method ?? 'GET',
      headers,
      ...(this.#e.ca ? { ca: this.#e.ca } : {}),
      ...(this.#e.cert ? { cert: this.#e.cert } : {}),
      ...(this.#e.key ? { key: this.#e.key } : {}),
    };
    if (this.#e.authorize) {
      await this.#e.authorize(opts);
      opts.headers = { ...(opts.headers as Record<string, string>), accept: 'application/json' };
      if (write) opts.headers['content-type'] = write.contentType;
    }
    const req = (url.protocol === 'https:' ? https : http).request(url, opts, onResponse);
    req.on('error', onError);
    req.on('socket', (s) => s.setKeepAlive(true, KEEPALIVE_MS));
    req.end(write?.body);
    return req;
  }

  async patch(path: string, body: unknown): Promise<unknown> {
    return this.get(path, { method: 'PATCH', contentType: 'application/merge-patch+json', body: JSON.stringify(body) });
  }

  async get(path: string, write?: { method: string; contentType: string; body: string }): Promise<unknown> {
    const verb = write?.method ?? 'GET';
    let req: http.ClientRequest | undefined;
    const done = new Promise<unknown>((resolve, reject) => {
      void this.#request(
        path,
        (res) => {
          const chunks: Buffer[] = [];
          let size = 0;
          res.on('data', (d: Buffer) => {
            size += d.length;
            if (size > MAX_BODY) req?.destroy(new KubeApiError(`${verb} ${path}: response over ${MAX_BODY} bytes`, 0));
            else chunks.push(d);
          });
          res.on('end', () => {
            let body: unknown;
            try {
              body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
            } catch {
              reject(new KubeApiError(`${verb} ${path}: HTTP ${res.statusCode}, not JSON`, res.statusCode ?? 0));
              return;
            }
            if ((res.statusCode ?? 0) >= 300)
              reject(
                new KubeApiError(
                  `${verb} ${path}: HTTP ${res.statusCode}: ${(body as { message?: string }).message ?? ''}`,
                  res.statusCode ?? 0,
                ),
              );
            else resolve(body);
          });
          res.on('error', reject);
        },
        reject,
        write,
      ).then((r) => {
        req = r;
        r.setTimeout(this.#e.timeoutMs ?? 60_000, () =>
          r.destroy(new KubeUnansweredError(`${verb} ${path}: timed out`)),
        );
      }, reject);
    });
    return done;
  }

  watch(
    path: string,
    onEvent: (event: unknown, abort: () => void) => void,
    handle?: WatchHandle,
    opts: { idleMs?: number } = {},
  ): Promise<void> {
    return new Promise((resolve, reject) => {
      let aborted = false;
      let req: http.ClientRequest | undefined;
      let idle: NodeJS.Timeout | undefined;
      const stop = () => {
        aborted = true;
        clearTimeout(idle);
        req?.destroy();
        resolve();
      };
      const fail = (e: Error) => {
        clearTimeout(idle);
        req?.destroy();
        reject(e);
      };
      // Re-armed by every chunk: bookmarks keep a quiet watch from idling.
      const arm = () => {
        if (!opts.idleMs || aborted) return;
        clearTimeout(idle);
        idle = setTimeout(
          () =>
            fail(
              new KubeUnansweredError(
                `watch ${path}: nothing received in ${opts.idleMs} ms, not even a bookmark; the connection is presumed dead`,
              ),
            ),
          opts.idleMs,
        );
      };
      if (handle) handle.abort = stop;
      arm();
      void this.#request(
        path,
        (res) => {
          if ((res.statusCode ?? 0) >= 300) {
            clearTimeout(idle);
            res.resume();
            reject(new KubeApiError(`watch ${path}: HTTP ${res.statusCode}`, res.statusCode ?? 0));
            return;
          }
          handle?.onOpen?.();
          arm();
          let pending = '';
          res.on('data', (d: Buffer) => {
            arm();
            pending += d.toString('utf8');
            if (pending.length > MAX_LINE) {
              fail(new KubeApiError(`watch ${path}: a line over ${MAX_LINE} bytes`, 0));
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
                fail(new KubeApiError(`watch ${path}: a line that is not JSON`, 0));
                return;
              }
              try {
                onEvent(event, stop);
              } catch (e) {
                fail(e as Error);
                return;
              }
            }
          });
          const ended = () => {
            clearTimeout(idle);
            resolve();
          };
          res.on('end', ended);
          res.on('close', ended);
          res.on('error', (e) => (aborted ? ended() : fail(e)));
        },
        (e) => (aborted ? resolve() : fail(e)),
      ).then((r) => {
        req = r;
        if (aborted) r.destroy();
      }, fail);
    });
  }
}
