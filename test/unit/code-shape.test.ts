import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { ROOT, sourceFiles } from "../../scripts/imports.js";

// The size limit of the style guide, checked where it can be kept: a function past 120 lines has
// steps that want names. Files have no length cap: a file holds one concept whole (its types,
// errors and helpers), and a cap would split concepts apart. Measured with the compiler the
// project already has, on the source text (comments and blank lines count: they are part of what
// a reader reads).

const SRC = join(ROOT, "src");
const MAX_FUNCTION_LINES = 120;

/** The .ts and .tsx files below a folder, as absolute paths (scripts/imports.ts lists them). */
const filesBelow = (dir: string) => sourceFiles(relative(ROOT, dir)).map((file) => join(ROOT, file));

const isFunction = (node: ts.Node) =>
  ts.isFunctionDeclaration(node) ||
  ts.isFunctionExpression(node) ||
  ts.isArrowFunction(node) ||
  ts.isMethodDeclaration(node) ||
  ts.isConstructorDeclaration(node) ||
  ts.isGetAccessorDeclaration(node) ||
  ts.isSetAccessorDeclaration(node);

/** A function's name as a reader finds it: its own, the variable or property it is assigned to, else anonymous. */
function nameOf(node: ts.Node): string {
  const own = (node as { name?: ts.Node }).name;
  if (own) return own.getText();
  const parent = node.parent;
  if (ts.isVariableDeclaration(parent) || ts.isPropertyAssignment(parent)) return parent.name.getText();
  return "(anonymous)";
}

/** Every function in src/ longer than the limit, as `file:line name (n lines)`. */
function longFunctions(files: string[]): string[] {
  const found: string[] = [];
  for (const file of files) {
    const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node) => {
      if (isFunction(node)) {
        const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
        const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
        const lines = last - first + 1;
        if (lines > MAX_FUNCTION_LINES) found.push(`${relative(ROOT, file)}:${first + 1} ${nameOf(node)} (${lines} lines)`);
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found;
}

describe("the code's shape", () => {
  const files = filesBelow(SRC);

  it(`has no function in src/ over ${MAX_FUNCTION_LINES} lines`, () => {
    expect(longFunctions(files)).toEqual([]);
  });
});

// ---- The tests' shape: no fixed sleep as synchronisation, no wall-clock threshold (the
// developers' guide). A test waits for the condition (test/helpers/wait-for.ts, an event, a
// counter) and asserts behaviour; speed lives in `npm run bench`. Found with the compiler: a call
// of setTimeout/setInterval/sleep/delay/Atomics.wait or an import of node:timers/promises (a
// sleep); a clock read (Date.now(), performance.now(), process.hrtime) in a subtraction with
// something other than a constant (an elapsed time); an upper bound (toBeLessThan*) on a value
// named as a duration (…Ms, seconds, elapsed, took, duration, idle, latency).

const TEST_DIR = join(ROOT, "test");
const CLOCK_CALL = /^(Date\.now|performance\.now|process\.hrtime(\.bigint)?)\(\)$/;
const SLEEPS = new Set(["setTimeout", "setInterval", "sleep", "delay"]);
const DURATION_NAME =
  /(?:^|[^A-Za-z])(ms|seconds|elapsed|took|duration|idle|latency)(?![A-Za-z])|[a-z](Ms|MS|Seconds|Elapsed|Took|Duration|Idle|Latency)(?![a-z])/;
/** Only literals, operators and ALL_CAPS constants: a fixed offset (`Date.now() - 60_000`, `- DAY`). */
const CONSTANT = /^[\d_.\s*+()A-Z]+$/;

interface TimingUse {
  file: string;
  line: number;
  kind: "sleep" | "elapsed" | "threshold";
  text: string;
}

/** Every fixed sleep, elapsed-time measurement and duration threshold in the test tree. */
function timingUses(files: string[]): TimingUse[] {
  const found: TimingUse[] = [];
  for (const file of files) {
    const source = ts.createSourceFile(file, readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
    const add = (node: ts.Node, kind: TimingUse["kind"]) =>
      found.push({
        file: relative(ROOT, file),
        line: source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1,
        kind,
        text: node.getText(source).replace(/\s+/g, " "),
      });
    const visit = (node: ts.Node) => {
      if (ts.isCallExpression(node)) {
        const callee = node.expression;
        if ((ts.isIdentifier(callee) && SLEEPS.has(callee.text)) || callee.getText(source) === "Atomics.wait") add(node, "sleep");
        if (ts.isPropertyAccessExpression(callee) && /^toBeLessThan(OrEqual)?$/.test(callee.name.text)) {
          // expect(subject).toBeLessThan(bound): the subject is the expect call's argument.
          const expectCall = callee.expression;
          const subject = ts.isCallExpression(expectCall) ? expectCall.arguments[0] : undefined;
          if (subject && !ts.isCallExpression(subject) && DURATION_NAME.test(subject.getText(source))) add(node, "threshold");
        }
      }
      if (ts.isImportDeclaration(node) && node.moduleSpecifier.getText(source).includes("timers/promises")) add(node, "sleep");
      if (ts.isBinaryExpression(node) && node.operatorToken.kind === ts.SyntaxKind.MinusToken) {
        const clock = (e: ts.Expression) => CLOCK_CALL.test(e.getText(source));
        const constant = (e: ts.Expression) => CONSTANT.test(e.getText(source));
        if ((clock(node.left) && !constant(node.right)) || (clock(node.right) && !constant(node.left))) add(node, "elapsed");
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return found;
}

/** The legitimate ones, each with its reason: a file, a piece of the flagged code, why it stays. */
const TIMING_ALLOWED: { file: string; text: string; why: string }[] = [
  { file: "test/helpers/wait-for.ts", text: "setTimeout(r, intervalMs)", why: "the poll interval of waiting for a condition" },
  { file: "test/helpers/raw-socket.ts", text: "setInterval(", why: "a slow client's pace (a byte at a time) is the fault under test" },
  {
    file: "test/chaos/retrying-sender.ts",
    text: "setTimeout(r, Math.min(1000, 20 * 2 ** attempt))",
    why: "the upstream's retry backoff, as a real sender does it; nothing waits on it",
  },
  {
    file: "test/chaos/hostile-input.test.ts",
    text: "setTimeout(() => req.end(shot.body.subarray(half)), 30)",
    why: "a slow body's pause between its halves is the fault under test",
  },
  {
    file: "test/integration/upstream-client.test.ts",
    text: "Atomics.wait(",
    why: "the fault: the process stalled between a slot and its request, longer than the safety margin",
  },
  {
    file: "test/chaos/hostile-input.test.ts",
    text: "Date.now() - started",
    why: "slowestShotMs, a figure in the CHAOS line, not asserted",
  },
  {
    file: "test/chaos/hung-handler.test.ts",
    text: "Date.now() - started",
    why: "secondsToHandleAll, a figure in the CHAOS line, not asserted",
  },
  { file: "test/chaos/no-loss.test.ts", text: "Date.now() - started", why: "seconds, a figure in the CHAOS line, not asserted" },
  {
    file: "test/chaos/database-away.test.ts",
    text: "Date.now() - stoppedAt",
    why: "secondsAway, a figure in the CHAOS line, not asserted",
  },
  {
    file: "test/chaos/graceful-shutdown.test.ts",
    text: "Date.now() - signalledAt",
    why: "secondsToExit, a figure in the CHAOS line, not asserted",
  },
  {
    file: "test/integration/sandbox-scale.test.ts",
    text: "Date.now() - Date.parse(states[0]!.createdAt)",
    why: "the age of generated history (older than an hour), not a time the test measures",
  },
  {
    file: "test/unit/shutdown-deadline.test.ts",
    text: "expect(drainMs + EXIT_GRACE_MS).toBeLessThan(fly.kill_timeout * 1000)",
    why: "configured deadlines against fly's kill_timeout, nothing measured",
  },
];

describe("the tests' shape", () => {
  const uses = timingUses(filesBelow(TEST_DIR));
  const allowed = (u: TimingUse) => TIMING_ALLOWED.some((a) => a.file === u.file && u.text.includes(a.text));

  it("has no fixed sleep and no wall-clock threshold outside the allow-list (wait for the condition; speed goes to the bench)", () => {
    expect(uses.filter((u) => !allowed(u)).map((u) => `${u.file}:${u.line} [${u.kind}] ${u.text.slice(0, 160)}`)).toEqual([]);
  });

  it("keeps no allow-list entry that matches nothing any more", () => {
    const stale = TIMING_ALLOWED.filter((a) => !uses.some((u) => a.file === u.file && u.text.includes(a.text)));
    expect(stale).toEqual([]);
  });

  it("finds what it is for: a sleep, an elapsed time, a duration threshold", () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-timing-shape-"));
    try {
      const file = join(dir, "sample.test.ts");
      writeFileSync(
        file,
        [
          "await new Promise((r) => setTimeout(r, 1000));",
          'import { setTimeout as wait } from "node:timers/promises";',
          "const tookMs = performance.now() - started;",
          "expect(idleMs).toBeLessThan(200);",
          // Not timing: a date a minute back, an upper bound on a count, a method named setTimeout.
          "const since = new Date(Date.now() - 60_000);",
          "expect(log.length).toBeLessThan(3);",
          "req.setTimeout(5000, () => req.destroy());",
        ].join("\n"),
      );
      expect(timingUses([file]).map((u) => [u.line, u.kind])).toEqual([
        [1, "sleep"],
        [2, "sleep"],
        [3, "elapsed"],
        [4, "threshold"],
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
