import type { Logger } from "pino";

/** Per-request values the routes leave for the request log line. */
export interface AppEnv {
  Variables: {
    eventId?: string;
    eventType?: string;
    duplicate?: boolean;
  };
}

export interface AppDeps {
  logger: Logger;
}
