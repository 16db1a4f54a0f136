export type { Config } from "./config.js";
export { ConfigError, loadConfig, secretsOf } from "./load.js";
export { ROLES, type Role } from "./schema.js";
export { newestSigningSecret } from "./newest-signing-secret.js";
