/**
 * `value`, or an Error with `message` when it is undefined: for values an invariant guarantees (an
 * index within bounds, a list that is never empty), where a `!` would let a broken invariant
 * travel on as `undefined`.
 */
export function expectDefined<T>(value: T | undefined, message: string): T {
  if (value === undefined) throw new Error(message);
  return value;
}
