// `palisade <command>`: the command-line entry point. Commands grow with the project;
// each lives in src/commands/ and is wired here.

import { AGENT_USAGE, runAgent } from './commands/agent.js';
import { CONFIG_USAGE, runConfig } from './commands/config.js';
import { DEMO_USAGE, runDemo } from './commands/demo.js';
import { PLAN_USAGE, runPlan } from './commands/plan.js';
import { runSelector, SELECTOR_USAGE } from './commands/selector.js';
import { EXPLAIN_USAGE, runExplain } from './commands/explain.js';
import { runStatus, STATUS_USAGE } from './commands/status.js';
import { runSync, SYNC_USAGE } from './commands/sync.js';
import { runTypha, TYPHA_USAGE } from './commands/typha.js';
import { BGP_USAGE, runBgp } from './commands/bgp.js';
import { VERSION } from './version.js';

const USAGE = `palisade ${VERSION}: a Calico-Felix-compatible node network-policy agent

Usage: palisade <command> [options]

Commands:
  demo       build a throwaway lab, run the agent in it and show real traffic
             being allowed and denied (needs root)
  agent      run the node agent: program this node's policy (nftables, routes)
  sync       read the datastore and print the dataplane messages the calc graph
             computes for this node (programs nothing)
  plan       print the complete ruleset palisade would program on this host
             (nftables, or ipset + iptables-restore input); touches nothing
  typha      serve Typha's protocol: one datastore connection fanned out to every
             node's agent (or Felix)
  bgp        calico-node's BGP side: render BIRD's configuration from the datastore
             (as confd) and run BIRD
  explain    why a flow (pod or IP to pod or IP, port) is allowed or denied: tiers,
             policies, the deciding rule and its cali: hash, the labels that matched
  status     show the running agent: health, sync state, counts, the last apply,
             drift repairs (from its health and metrics endpoints; --watch)
  config     print the effective configuration and the source of each value
  selector   parse a Calico selector, print its canonical form, UID and IP-set name,
             and evaluate it against labels
  version    print the version
  help       print this help

Examples:
  sudo palisade demo
  palisade agent --datastore-dir examples/ --hostname node1
  palisade sync --datastore-dir examples/ --hostname node1 --once
  palisade plan --datastore-dir examples/ --hostname node1 --dataplane nftables
  palisade bgp --datastore-dir examples/ --hostname node1 --once
  palisade explain --datastore-dir examples/ --from demo/frontend --to demo/backend --port 8080
  palisade status --watch
  palisade config --local
  palisade selector "app == 'web' && tier in {'fe', 'be'}" --labels app=web,tier=fe
  palisade selector --demo
  palisade version

Run "palisade help <command>" for a command's options.

Exit codes: 0 success, 1 the command failed (e.g. the selector did not match with
--check), 2 bad usage or invalid input, 129 a configuration change needs a restart.`;

interface Command {
  run: (args: string[]) => Promise<number> | number;
  usage: string;
}

const COMMANDS: Readonly<Record<string, Command>> = {
  selector: { run: runSelector, usage: SELECTOR_USAGE },
  sync: { run: runSync, usage: SYNC_USAGE },
  config: { run: runConfig, usage: CONFIG_USAGE },
  plan: { run: runPlan, usage: PLAN_USAGE },
  agent: { run: runAgent, usage: AGENT_USAGE },
  demo: { run: runDemo, usage: DEMO_USAGE },
  bgp: { run: runBgp, usage: BGP_USAGE },
  typha: { run: runTypha, usage: TYPHA_USAGE },
  status: { run: runStatus, usage: STATUS_USAGE },
  explain: { run: runExplain, usage: EXPLAIN_USAGE },
  version: {
    run: () => {
      console.log(VERSION);
      return 0;
    },
    usage: 'Usage: palisade version\n\nPrints the version.',
  },
};

const wantsHelp = (args: readonly string[]) => {
  // Options end at "--": what follows is an operand, even if it reads "-h".
  const end = args.indexOf('--');
  return (end < 0 ? args : args.slice(0, end)).some((a) => a === '--help' || a === '-h');
};

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  if (command === '--version' || command === '-v') return COMMANDS.version?.run([]) ?? 0;
  if (command === undefined || command === 'help' || command === '--help' || command === '-h') {
    const topic = rest[0];
    if (topic !== undefined && !COMMANDS[topic]) {
      console.error(`palisade help: unknown command "${topic}"\n\n${USAGE}`);
      return 2;
    }
    console.log(topic ? COMMANDS[topic]?.usage : USAGE);
    return command === undefined ? 2 : 0;
  }
  const cmd = COMMANDS[command];
  if (!cmd) {
    console.error(`palisade: unknown command "${command}"\n\n${USAGE}`);
    return 2;
  }
  // Every command answers --help the same way, before its own option parsing.
  if (wantsHelp(rest)) {
    console.log(cmd.usage);
    return 0;
  }
  return cmd.run(rest);
}

const code = await main(process.argv.slice(2));
process.exitCode = code;
