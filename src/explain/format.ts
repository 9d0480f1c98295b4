// An explanation for people: each side's chain, the tiers, policies and profiles reached
// in order with their outcomes, the deciding rule (index, kernel hash, IP sets with the
// selector and the labels behind them), then the verdict.
import type { Explanation, SideExplanation, Step } from './explain.js';

function stepLine(s: Step): string[] {
  const what = s.policy
    ? `tier ${s.tier ?? 'default'}: policy ${s.policy}`
    : s.profile
      ? `profile ${s.profile}`
      : s.tier
        ? `tier ${s.tier}`
        : 'endpoint chain';
  const out = [`    ${what}: ${s.outcome}${s.note ? ` (${s.note})` : ''}`];
  const r = s.rule;
  if (r) {
    out.push(`      rule ${r.index} (${r.action}), kernel rule ${r.kernelIndex} of ${r.chain}, cali:${r.hash}`);
    for (const m of r.ipSets) {
      const labels = m.labels
        ? Object.entries(m.labels)
            .map(([k, v]) => (v === null ? `${k} absent` : `${k}=${v}`))
            .join(', ')
        : '';
      const port = m.namedPort ? ` named port ${m.namedPort}` : '';
      const why = m.selector ? ` = ${m.selector}${port}${labels ? ` (${labels})` : ''}` : port;
      out.push(`      ${m.dir} ${m.address} in ${m.set}${why}`);
    }
  }
  return out;
}

function side(name: string, s: SideExplanation): string[] {
  if (s.skipped) return [`  ${name}: ${s.verdict} (${s.skipped})`];
  const out = [`  ${name} on ${s.node}, ${s.endpoint} (${s.chain}): ${s.verdict.toUpperCase()}`];
  for (const step of s.steps) out.push(...stepLine(step));
  if (!s.steps.length) out.push('    no policy or profile reached');
  return out;
}

export function formatExplanation(e: Explanation): string {
  const f = e.flow;
  const port = f.port !== undefined ? ` port ${f.port}` : '';
  return [
    `${f.from} (${f.src}) -> ${f.to} (${f.dst}) ${f.protocol}${port}: ${e.verdict.toUpperCase()}`,
    ...side('egress', e.egress),
    ...side('ingress', e.ingress),
  ].join('\n');
}
