/**
 * The secret a sender signs with, given SIGNING_SECRET's comma-separated list: the first one, since
 * a rotation lists the new secret first (`SIGNING_SECRET=new,old`). The service accepts every
 * secret of the list; a sender (the dev sandbox, `trigger`) must sign with one of them, never
 * with the list itself. Undefined when the list is absent or starts with an empty entry.
 */
export function newestSigningSecret(list: string | undefined): string | undefined {
  const first = list?.split(",")[0]?.trim();
  // An empty first entry means "no secret", as an absent list does.
  return first === "" ? undefined : first;
}
