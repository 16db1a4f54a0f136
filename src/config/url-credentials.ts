/**
 * The password of a `postgres://` URL exactly as node-postgres reads it (pg-connection-string
 * 2.x `parse`): when the URL holds a `%` that does not start a two-hex-digit escape (or a space),
 * pg re-encodes the whole URL with encodeURI, so such a `%` is a literal `%`, then
 * percent-decodes the password. Throws URIError when even that is not valid percent-encoding
 * (an escape of bytes that are not UTF-8, such as `%ff`), as pg itself would.
 */
export function postgresUrlPassword(url: string): string {
  const normalized = / |%[^a-f0-9]|%[a-f0-9][^a-f0-9]/i.test(url) ? encodeURI(url).replace(/%25(\d\d)/g, "%$1") : url;
  return decodeURIComponent(new URL(normalized, "postgres://base").password);
}

/** The user name and password of a URL percent-decoded strictly, as ioredis does; throws URIError where ioredis would. */
export function decodedUrlCredentials(url: string): { username: string; password: string } {
  const { username, password } = new URL(url);
  return { username: decodeURIComponent(username), password: decodeURIComponent(password) };
}

/** Whether `fn` throws a URIError for this value (a `%` that is not percent-encoding). */
export function failsToDecode(fn: () => unknown): boolean {
  try {
    fn();
    return false;
  } catch (err) {
    if (err instanceof URIError) return true;
    throw err;
  }
}
