export * from "../../src/local/redis-server.js";
