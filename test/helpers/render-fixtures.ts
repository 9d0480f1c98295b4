// Dataplane-rendering fixtures: a proto Rule with every list empty, and a desired state
// built by running the real calc graph on v3 resources.
import { defaultConfig } from '../../src/config/params.js';
import { DesiredState } from '../../src/dataplane/desired-state.js';
import type { Rule } from '../../src/proto/messages.js';
import { Harness, type Res } from './calc-fixtures.js';

export function protoRule(fields: Partial<Rule> = {}): Rule {
  return {
    action: 'allow',
    srcNet: [],
    srcPorts: [],
    srcNamedPortIpSetIds: [],
    srcIpSetIds: [],
    dstNet: [],
    dstPorts: [],
    dstNamedPortIpSetIds: [],
    dstIpSetIds: [],
    dstIpPortSetIds: [],
    notSrcNet: [],
    notSrcPorts: [],
    notSrcNamedPortIpSetIds: [],
    notSrcIpSetIds: [],
    notDstNet: [],
    notDstPorts: [],
    notDstNamedPortIpSetIds: [],
    notDstIpSetIds: [],
    ...fields,
  };
}

/** The desired state for node1 after the calc graph has taken these resources. */
export function stateOf(...resources: Res[]): DesiredState {
  const h = new Harness();
  h.put(...resources);
  const state = new DesiredState();
  state.apply(h.flush());
  return state;
}

export const config = defaultConfig;

/**
 * An IP pool's own RouteUpdate (no types), as the calc graph sends one: what tells the
 * managers a pool's encapsulation.
 */
export function poolRoute(dst: string, ipPoolType: 'VXLAN' | 'IPIP' | 'NONE') {
  return {
    type: 'RouteUpdate' as const,
    route: {
      types: 0,
      ipPoolType,
      dst,
      dstNodeName: '',
      dstNodeIp: '',
      sameSubnet: false,
      natOutgoing: false,
      localWorkload: false,
      tunnelType: { ipip: false, vxlan: false, wireguard: false },
      borrowed: false,
    },
  };
}
