export * from "../../src/redis/local-server.js";
