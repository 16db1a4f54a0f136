// cluster-key-slot ships no types; it is ioredis's own slot function (installed with ioredis).
declare module "cluster-key-slot" {
  /** The Redis Cluster slot (0–16383) of a key, hash tags honoured. */
  export default function calculateSlot(key: string | Buffer): number;
}
