export { resolveSecret, resolveCredentialRef, maskSecret, isSecretRef, SecretUnavailable } from "./secret.js";
export { setupTokenProblem } from "./setup-token.js";
export { type Credential, DEFAULT_CREDENTIAL, credentialOrder, authConfigIssues } from "./credential-order.js";
export { type ProviderRefusal, type AuthFailureReason, classifyRefusal, statusFromMessage, cooldownMs, parseRetryAfter, COOLDOWN_POLICY } from "./auth-failure.js";
export { CooldownBoard, type CredentialState } from "./cooldown-board.js";
export { ProfilesSource } from "./profiles-source.js";
export { isPiAuthRef, oauthAccessToken } from "./oauth-profile.js";
export { toolHostOptions } from "./tool-host-options.js";
