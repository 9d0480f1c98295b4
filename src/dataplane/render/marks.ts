// The packet-mark bits palisade uses, allocated from IptablesMarkMask lowest bit first, in
// Felix's order: accept, pass, drop, then the two scratch bits of multi-block rules.
export interface Marks {
  accept: number;
  pass: number;
  drop: number;
  scratch0: number;
  scratch1: number;
  /**
   * What the top-level chains clear at their start: Felix's allCalicoMarkBits (accept, pass
   * and the scratch bits; not the drop bit). Found by diffing against Felix v3.31.7, which
   * clears 0x1b0000 where palisade cleared 0x1f0000 (docs/compatibility.md).
   */
  all: number;
  /**
   * WireGuard's bit (0 while WireGuard is off), the next after the scratch bits as Felix
   * allocates it: the device marks its own encrypted packets with it, so the routing rule
   * skips them, and host encryption marks incoming packets with it for the RPF check.
   */
  wireguard: number;
  /**
   * Felix's MarkEndpoint: every bit of the mask left after the ones above, which kube-proxy
   * IPVS support numbers each endpoint with (endpoint-marks.ts); 0x1fe00000-style, never 0
   * while IPVS support is on (allocateMarks refuses).
   */
  endpoint: number;
  /** Felix's MarkNonCaliEndpoint: the endpoint bits' lowest, for traffic from no endpoint of ours (0 without IPVS). */
  nonCaliEndpoint: number;
}

/** The mark mask cannot hold the bits the configuration needs: the agent refuses to start (as Felix panics). */
export class MarkMaskError extends Error {
  override name = 'MarkMaskError';
}

export function allocateMarks(mask: number, wireguard = false, ipvs = false): Marks {
  const bits: number[] = [];
  const want = wireguard ? 6 : 5;
  for (let b = 0; b < 32 && bits.length < want; b++) {
    const bit = (1 << b) >>> 0;
    if ((mask & bit) !== 0) bits.push(bit);
  }
  if (bits.length < want)
    throw new MarkMaskError(
      `IptablesMarkMask 0x${mask.toString(16)} has ${bits.length} bits; palisade needs at least ${want}${wireguard ? ' with WireGuard on' : ''}`,
    );
  const [accept, pass, drop, scratch0, scratch1, wg = 0] = bits as [number, number, number, number, number, number?];
  const taken = bits.reduce((a, b) => a | b, 0);
  const endpoint = (mask & ~taken) >>> 0;
  if (ipvs && endpoint === 0)
    throw new MarkMaskError(
      `IptablesMarkMask 0x${mask.toString(16)} leaves no bit for the endpoint mark kube-proxy IPVS support needs (Felix refuses so too)`,
    );
  return {
    accept,
    pass,
    drop,
    scratch0,
    scratch1,
    all: (accept | pass | scratch0 | scratch1) >>> 0,
    wireguard: wg,
    endpoint,
    nonCaliEndpoint: ipvs ? (endpoint & -endpoint) >>> 0 : 0,
  };
}
