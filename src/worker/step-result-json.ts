import { StepError } from "./step-error.js";

/** Largest step result stored: steps keep ids and small records, not documents. */
export const MAX_STEP_RESULT_BYTES = 256 * 1024;

/**
 * A step's result as the JSON text stored for it, or undefined when the step returned undefined.
 * Refuses (StepError step_result_not_json, naming where) anything JSON would change or drop
 * silently: a BigInt, a function, a symbol, NaN or ±Infinity, a Date or any object that is not a
 * plain object or an array (a Map would be stored as {}), a cycle. An undefined property of a
 * plain object is dropped, as JSON does.
 */
export function stepResultJson(stepName: string, value: unknown): string | undefined {
  if (value === undefined) return undefined;
  checkJson(stepName, value, "result", new Set());
  const json = JSON.stringify(value);
  const bytes = Buffer.byteLength(json);
  if (bytes > MAX_STEP_RESULT_BYTES)
    throw new StepError(
      "step_result_too_large",
      `step "${stepName}" returned ${bytes} bytes of JSON; at most ${MAX_STEP_RESULT_BYTES} are stored (return ids, not whole documents)`,
    );
  return json;
}

function checkJson(stepName: string, value: unknown, path: string, seen: Set<object>): void {
  const refuse = (what: string) => new StepError("step_result_not_json", `step "${stepName}" must return JSON, but ${path} is ${what}`);
  switch (typeof value) {
    case "string":
    case "boolean":
      return;
    case "number":
      if (!Number.isFinite(value)) throw refuse(String(value));
      return;
    case "bigint":
      throw refuse("a BigInt (return it as a string)");
    case "function":
      throw refuse("a function");
    case "symbol":
      throw refuse("a symbol");
    case "undefined":
      throw refuse("undefined (return null)");
  }
  if (value === null) return;
  const object = value as object;
  if (seen.has(object)) throw refuse("a reference back to itself (a cycle)");
  seen.add(object);
  if (Array.isArray(object)) {
    object.forEach((item, i) => checkJson(stepName, item, `${path}[${i}]`, seen));
  } else {
    const proto = Object.getPrototypeOf(object) as unknown;
    if (proto !== Object.prototype && proto !== null) {
      const kind =
        object instanceof Date
          ? "a Date (return date.toISOString())"
          : `a ${(object.constructor as { name?: string } | undefined)?.name ?? "non-plain"} object`;
      throw refuse(kind);
    }
    for (const [k, v] of Object.entries(object)) if (v !== undefined) checkJson(stepName, v, `${path}.${k}`, seen);
  }
  seen.delete(object);
}
