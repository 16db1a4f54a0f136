/** An amount rounded to cents, as the API's prices and totals are. */
export const money = (n: number) => Math.round(n * 100) / 100;
