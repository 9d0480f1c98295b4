// Felix's dataplanedefs: the overlay devices' fixed names, which the managers make and the
// static rules name (the tunnel-source MASQ). WireGuard's names are configuration.
export const IPIP_DEVICE = 'tunl0';
export const VXLAN_DEVICE = 'vxlan.calico';
export const VXLAN_DEVICE_V6 = 'vxlan-v6.calico';
