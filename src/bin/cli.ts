#!/usr/bin/env node
import { main } from "./cli-main.js";

// An error exits at once (a Redis client still reconnecting must not hold the process); success
// lets the command's own handles close and keeps the exit code it set.
void main(process.argv.slice(2), process.env).then((code) => {
  if (code !== 0) process.exit(code);
});
