import { existsSync } from "node:fs";
import { chromium, type Browser } from "playwright-core";

export const CHROMIUM_INSTALL_HINT = "Chromium was not found: install Debian's `apt-get install -y chromium` (or set CHROMIUM_PATH)";

/** Debian's headless Chromium, started with no background network traffic (the network is closed). */
export async function launchChromium(): Promise<Browser> {
  const executablePath = process.env.CHROMIUM_PATH ?? ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find((p) => existsSync(p));
  if (!executablePath) throw new Error(CHROMIUM_INSTALL_HINT);
  return chromium.launch({
    executablePath,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}
