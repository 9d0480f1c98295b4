// TLS to Typha, as Felix's Typha client checks it: the chain must lead to TyphaCAFile, we
// present TyphaCertFile/TyphaKeyFile, and the server is identified by its certificate, not
// by the address dialled: its Common Name must be TyphaCN, or one of its URI SANs
// TyphaURISAN (either is enough; at least one must be configured, as Felix requires).
import { readFileSync } from 'node:fs';
import type { ConnectionOptions, PeerCertificate } from 'node:tls';

export interface TyphaTlsConfig {
  caFile: string;
  certFile: string;
  keyFile: string;
  cn: string;
  uriSan: string;
}

/** Why this configuration cannot make a TLS connection, or undefined (also when TLS is off). */
export function typhaTlsProblem(c: TyphaTlsConfig): string | undefined {
  const files = [c.caFile, c.certFile, c.keyFile].filter(Boolean).length;
  if (files === 0 && !c.cn && !c.uriSan) return undefined;
  if (files !== 3) return 'TLS to Typha needs all of TyphaCAFile, TyphaCertFile and TyphaKeyFile';
  if (!c.cn && !c.uriSan) return 'TLS to Typha needs TyphaCN or TyphaURISAN to identify the server';
  return undefined;
}

/** A certificate's Common Names and URI SANs: how Typha and its clients identify each other. */
export function certIdentity(cert: PeerCertificate): { cns: string[]; uris: string[] } {
  const cns = [cert.subject?.CN ?? []].flat();
  const uris = (cert.subjectaltname ?? '')
    .split(', ')
    .filter((s) => s.startsWith('URI:'))
    .map((s) => s.slice(4));
  return { cns, uris };
}

/** True when the certificate has the CN or the URI SAN wanted (either is enough). */
export function certMatches(cert: PeerCertificate, cn: string, uriSan: string): boolean {
  const { cns, uris } = certIdentity(cert);
  return (!!cn && cns.includes(cn)) || (!!uriSan && uris.includes(uriSan));
}

/** Node's TLS options for it: the CA checks the chain, our check replaces the hostname one. */
export function typhaTlsOptions(c: TyphaTlsConfig): ConnectionOptions {
  return {
    ca: readFileSync(c.caFile),
    cert: readFileSync(c.certFile),
    key: readFileSync(c.keyFile),
    minVersion: 'TLSv1.2',
    checkServerIdentity: (_host: string, cert: PeerCertificate) => {
      if (certMatches(cert, c.cn, c.uriSan)) return undefined;
      const { cns, uris } = certIdentity(cert);
      const wanted = [c.cn && `CN ${c.cn}`, c.uriSan && `URI SAN ${c.uriSan}`].filter(Boolean).join(' or ');
      return new Error(
        `Typha's certificate is not the one configured: wanted ${wanted}, got CN ${cns.join(',') || '(none)'}${uris.length ? `, URI SANs ${uris.join(', ')}` : ''}`,
      );
    },
  };
}
