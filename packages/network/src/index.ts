export { parseAllowEntries } from './allow-entries.js';
export {
  CLAUDE_API_DESTINATION,
  claudeInstallEgressRules,
  cloneEgressRule,
  INSTALL_REGISTRIES,
  type InstallDestinations,
  installEgressRules,
} from './egress-defaults.js';
export {
  assertInternalNetwork,
  createEgressNetwork,
  createEgressNetworks,
  egressNames,
  type InternalNetworkInspect,
  internalNetworkProblems,
} from './egress-network.js';
export {
  ALWAYS_BLOCKED_RANGES,
  allowlistEnforcement,
  describeEgressRule,
  type EgressRule,
  egressBlockedRanges,
  hostBlockedRanges,
  parseEgressRule,
  parseEgressRules,
} from './egress-rules.js';
export {
  FirewallCommandError,
  FirewallUnavailableError,
  InvalidAllowEntryError,
  InvalidCredentialError,
  InvalidNetworkLabelsError,
  InvalidNetworkPolicyError,
  InvalidSandboxIdError,
  SandboxNetworkMismatchError,
} from './errors.js';
export {
  type AppliedAllowlist,
  applyAllowlist,
  describeComparison,
  type FirewallVerification,
  listFirewallRules,
  rangesByFamily,
  removeFirewallRules,
  verifyFirewallRules,
} from './firewall.js';
export { compareRuleSets, type FirewallRule, type RuleSetComparison } from './firewall-rules.js';
export {
  CREDENTIAL_CERTS_SCRIPT,
  CREDENTIAL_DOMAINS_ENV,
  CREDENTIALS_CONF_PATH,
  type CredentialTarget,
  checkCredentialTargets,
  checkCredentialValue,
  credentialHeader,
  GATEWAY_CA_PATH,
  GATEWAY_HOSTS_ENV,
  GATEWAY_HOSTS_PATH,
  type GatewayCredential,
  type GatewayHostPin,
  MAX_CREDENTIAL_BYTES,
  parseGatewayHostPins,
  renderCredentialSecrets,
  renderGatewayHosts,
  UPSTREAM_CA_PATH,
} from './gateway-credentials.js';
export {
  blockedRanges,
  deriveHostRanges,
  firewallBlockedRanges,
  type HostRanges,
} from './host-ranges.js';
export { assertFirewallUsable } from './iptables.js';
export {
  assertSandboxId,
  bridgeName,
  parseRuleTag,
  ruleTag,
  sandboxNetworkName,
} from './names.js';
export {
  ALLOWLIST_WARNING,
  DEFAULT_NETWORK_POLICY,
  NETWORK_POLICIES,
  type NetworkPolicy,
  NetworkPolicySchema,
  policyInstallsDependencies,
  policyNeedsSandboxNetwork,
  resolveNetworkPolicy,
} from './policy.js';
export {
  createSandboxNetwork,
  listSandboxNetworks,
  type NetworkRemovalResult,
  removeSandboxNetworks,
  type SandboxNetwork,
} from './sandbox-network.js';
export {
  GATEWAY_PORT,
  type GatewayConfigInput,
  type GatewayLogEntry,
  parseGatewayLog,
  renderSquidConfig,
} from './squid-config.js';
