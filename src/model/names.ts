// Label keys and prefixes Calico uses when it converts v3 resources for Felix.
export const LABEL_NAMESPACE = 'projectcalico.org/namespace';
export const LABEL_ORCHESTRATOR = 'projectcalico.org/orchestrator';
export const LABEL_SERVICE_ACCOUNT = 'projectcalico.org/serviceaccount';
/** Namespace labels as seen from rule namespaceSelectors. */
export const NAMESPACE_LABEL_PREFIX = 'pcns.';
/** Service-account labels as seen from serviceAccount selectors. */
export const SERVICE_ACCOUNT_LABEL_PREFIX = 'pcsa.';
export const DEFAULT_TIER = 'default';
export const API_VERSION = 'projectcalico.org/v3';
