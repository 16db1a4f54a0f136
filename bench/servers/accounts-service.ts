// The whole service for the accounts rows (ROLE from the environment, `all` by default), as
// `serve` builds it, printing READY <url> once it listens. Its own file, so its processes are told
// apart from the other parts' edges (bench/servers/edge.ts) by their command line.
import { loadConfig } from "../../src/config/config.js";
import { serviceFromConfig } from "../../src/bin/serve.js";

const config = loadConfig({ ...process.env, ROLE: process.env.ROLE ?? "all", HOST: "127.0.0.1", PORT: "0" });
const { service } = await serviceFromConfig(config);
void service.start().then((url) => console.error(`READY ${url}`));
// Its memory by part every 5 s (the bench reads the lines: RSS alone cannot tell the JS heap from native memory).
setInterval(() => console.error(`MEM ${JSON.stringify(process.memoryUsage())}`), 5000).unref();
process.once("SIGTERM", () => void service.stop().then(() => process.exit(0)));
// At once (a CPU profile is written on the way out): the bench's profiled runs stop it so.
process.once("SIGINT", () => process.exit(0));
