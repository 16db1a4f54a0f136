import { afterEach, describe, expect, inject, it, vi } from "vitest";
import type { TestProject } from "vitest/node";
import setup from "../global-setup.js";
import { redisAnswers } from "../../src/redis/local-server.js";

afterEach(() => vi.unstubAllEnvs());

/** Runs the suite's global setup with `env` stubbed; answers what it provided and its teardown. */
async function runSetup(env: Record<string, string | undefined>) {
  for (const [name, value] of Object.entries(env)) vi.stubEnv(name, value);
  // No PostgreSQL server of its own for this run of the setup (the run's, where it makes no schema): only its Redis is looked at.
  vi.stubEnv("TEST_DATABASE_URL", inject("databaseUrl"));
  const provided = new Map<string, unknown>();
  const project = { provide: (key: string, value: unknown) => void provided.set(key, value) } as Pick<TestProject, "provide">;
  const warn = vi.spyOn(console, "warn").mockImplementation(() => undefined);
  try {
    const teardown = await setup(project);
    return { redisUrl: provided.get("redisUrl") as string, teardown };
  } finally {
    warn.mockRestore();
  }
}

describe("the tests' Redis", () => {
  it("is a server of the run's own when REDIS_URL is set (the dev stack's export block), never that Redis", async () => {
    const devRedis = "redis://127.0.0.1:6390";
    const { redisUrl, teardown } = await runSetup({ REDIS_URL: devRedis, TEST_REDIS_URL: undefined });
    try {
      expect(redisUrl).not.toBe(devRedis);
      expect(await redisAnswers(redisUrl)).toBe(true);
    } finally {
      await teardown();
    }
    expect(await redisAnswers(redisUrl)).toBe(false);
  });

  it("is TEST_REDIS_URL when set, not REDIS_URL", async () => {
    const { redisUrl, teardown } = await runSetup({ REDIS_URL: "redis://127.0.0.1:6390", TEST_REDIS_URL: "redis://127.0.0.1:6391" });
    await teardown();
    expect(redisUrl).toBe("redis://127.0.0.1:6391");
  });
});
