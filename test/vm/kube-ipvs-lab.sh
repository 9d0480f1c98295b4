#!/bin/bash
# Runs inside the test VM (test/e2e/kube-ipvs.test.ts boots it; this machine's kernel has no
# IPVS): one node namespace as kube-proxy's IPVS mode leaves it (kube-ipvs0 holding a
# ClusterIP, an IPVS virtual service NATing to a local pod), four pods, and a palisade agent
# in the rules mode $1 (nftables, iptables-legacy, iptables-nft). Prints one PROBE line per
# connection tried, the IPVS connection count and the agent's errors; the test judges them.
set -u
MODE=$1
case $MODE in
  nftables) MODE_ENV=(FELIX_NFTABLESMODE=Enabled) ;;
  iptables-legacy) MODE_ENV=(FELIX_NFTABLESMODE=Disabled FELIX_IPTABLESBACKEND=legacy) ;;
  iptables-nft) MODE_ENV=(FELIX_NFTABLESMODE=Disabled FELIX_IPTABLESBACKEND=nft) ;;
esac
for m in ip_vs ip_vs_rr dummy veth; do modprobe "$m"; done
DS=$(mktemp -d); RUN=$(mktemp -d)
# b admits only app == allowed; noegress may send nothing: both must hold through the ClusterIP.
cat > "$DS/policy.yaml" <<'Y'
apiVersion: projectcalico.org/v3
kind: Profile
metadata: {name: kns.default}
spec: {ingress: [{action: Allow}], egress: [{action: Allow}]}
---
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: b-only-from-allowed, namespace: default}
spec: {selector: app == 'b', types: [Ingress], ingress: [{action: Allow, source: {selector: app == 'allowed'}}]}
---
apiVersion: projectcalico.org/v3
kind: NetworkPolicy
metadata: {name: no-egress, namespace: default}
spec: {selector: app == 'noegress', types: [Egress]}
Y
ip netns add ipvs-n1; ip -n ipvs-n1 link set lo up
ip netns exec ipvs-n1 sysctl -qw net.ipv4.ip_forward=1
# The node's uplink: a default route, which proxy ARP needs to answer the pods' gateway.
ip -n ipvs-n1 link add eth0 type dummy; ip -n ipvs-n1 addr add 192.168.9.1/24 dev eth0
ip -n ipvs-n1 link set eth0 up; ip -n ipvs-n1 route add default dev eth0
for p in a1:allowed:10.65.0.1 a2:other:10.65.0.3 a3:noegress:10.65.0.4 b:b:10.65.0.2; do
  IFS=: read -r n app ip <<< "$p"
  cat >> "$DS/pods.yaml" <<Y
---
apiVersion: projectcalico.org/v3
kind: WorkloadEndpoint
metadata: {name: node1-k8s-$n-eth0, namespace: default, labels: {app: $app, projectcalico.org/namespace: default, projectcalico.org/orchestrator: k8s}}
spec: {orchestrator: k8s, node: node1, pod: $n, endpoint: eth0, interfaceName: cali$n, ipNetworks: [$ip/32], profiles: [kns.default]}
Y
  ip netns add "ipvs-$n"; ip -n ipvs-n1 link add "cali$n" type veth peer name eth0 netns "ipvs-$n"
  ip -n "ipvs-$n" link set lo up; ip -n "ipvs-$n" addr add "$ip/32" dev eth0; ip -n "ipvs-$n" link set eth0 up
  ip -n "ipvs-$n" route add 169.254.1.1 dev eth0; ip -n "ipvs-$n" route add default via 169.254.1.1 dev eth0
  ip -n ipvs-n1 link set "cali$n" up
done
# kube-proxy's IPVS mode: the ClusterIP on kube-ipvs0, a virtual service masquerading to b.
ip -n ipvs-n1 link add kube-ipvs0 type dummy; ip -n ipvs-n1 addr add 10.96.0.10/32 dev kube-ipvs0
ip netns exec ipvs-n1 sysctl -qw net.ipv4.vs.conntrack=1
ip netns exec ipvs-n1 ipvsadm -A -t 10.96.0.10:80 -s rr
ip netns exec ipvs-n1 ipvsadm -a -t 10.96.0.10:80 -r 10.65.0.2:80 -m
ip netns exec ipvs-b node -e "require('net').createServer((s) => s.end('hi')).listen(80)" &
SERVER=$!
ip netns exec ipvs-n1 env "${MODE_ENV[@]}" FELIX_MTUFILEPATH= FELIX_ENDPOINTSTATUSPATHPREFIX="$RUN" \
  PALISADE_LOG_FORMAT=json node bin/palisade.js agent --datastore-dir "$DS" --hostname node1 > "$RUN/agent.log" 2>&1 &
AGENT=$!
for _ in $(seq 1 480); do grep -q 'Completed first update' "$RUN/agent.log" && break; sleep 0.5; done
grep -q 'enabling felix kube-proxy ipvs support' "$RUN/agent.log" && echo "IPVS-SUPPORT $MODE on"
sleep 2
probe() {
  ip netns exec "ipvs-$1" node -e "
    const s = require('net').connect({ host: '$2', port: 80 });
    const say = (v) => { console.log('PROBE $MODE $1 $2 ' + v); process.exit(0); };
    s.setTimeout(4000, () => say('FAIL'));
    s.on('data', () => say('OK'));
    s.on('error', () => say('FAIL'));"
}
for c in a1 a2 a3; do probe "$c" 10.65.0.2; probe "$c" 10.96.0.10; done
echo "IPVS-CONNS $MODE $(ip netns exec ipvs-n1 ipvsadm -Ln --stats | awk '$1 == "TCP" { print $3 }')"
grep '"level":[56]0' "$RUN/agent.log" | sed "s/^/AGENT-ERROR $MODE /" | head -5
kill "$AGENT" "$SERVER"; wait "$AGENT" 2>/dev/null
for n in n1 a1 a2 a3 b; do ip netns del "ipvs-$n"; done
rm -rf "$DS" "$RUN"
