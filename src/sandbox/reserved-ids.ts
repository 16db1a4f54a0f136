import { readFileSync, renameSync, writeFileSync } from "node:fs";
import * as z from "zod";
import { SandboxStateFileError } from "./state-file-error.js";

/** Ids a run takes at once: one small write per this many new records. */
const BLOCK = 1000;
/** Ids are 8 base-36 digits, as the seeded ones. */
const SPACE = 36n ** 8n;
// About 0.618 of the space (consecutive ids land far apart), odd and not a multiple of 3, so
// coprime with 36⁸: n ↦ n·M + C (mod 36⁸) is a bijection, and counter ids look as scattered as
// seeded ones without two ever being equal.
const M = 1_743_541_249_867n;
const C = 1_234_567_890_123n;

const fileSchema = z.object({ next: z.number().int().min(0) });

/**
 * Record ids (`ord_…`) that never repeat across runs over the same `file`, a crash included:
 * each is drawn from a counter whose next block is written to `file` before the first id of that
 * block is given out, so a run always starts past every id an earlier run could have given. An id
 * `taken` accepts (one a record the sandbox holds has) is never given either.
 */
export function reservedIds(file: string, taken: (id: string) => boolean): (prefix: string) => string {
  let next = readNext(file);
  let reservedUntil = next;
  const draw = (prefix: string) => {
    if (next >= reservedUntil) {
      reservedUntil = next + BLOCK;
      writeFileSync(`${file}.tmp`, `${JSON.stringify({ next: reservedUntil })}\n`);
      renameSync(`${file}.tmp`, file);
    }
    const n = BigInt(next++);
    return `${prefix}_${((n * M + C) % SPACE).toString(36).padStart(8, "0")}`;
  };
  return (prefix) => {
    // An id a kept record has is passed over: the counter's file may have been lost or replaced apart from the records.
    let id = draw(prefix);
    while (taken(id)) id = draw(prefix);
    return id;
  };
}

function readNext(file: string): number {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return 0;
    throw err;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const parsed = fileSchema.safeParse(json);
  if (!parsed.success) throw new SandboxStateFileError(`${file} is not the sandbox's id counter`);
  return parsed.data.next;
}
