import { LRUCache } from "lru-cache";

/**
 * A set that forgets its oldest entries: message ids seen lately (platform retries, gateway
 * replays). An id is only ever added once and `has` does not refresh it, so the least recently
 * used is the oldest added.
 */
export class RecentIds {
  private readonly ids: LRUCache<string, true>;
  constructor(capacity = 10_000) {
    this.ids = new LRUCache({ max: capacity });
  }

  /** True the first time an id is seen (within the last `capacity` ids). */
  add(id: string): boolean {
    if (this.ids.has(id)) return false;
    this.ids.set(id, true);
    return true;
  }

  has(id: string): boolean {
    return this.ids.has(id);
  }

  /** Forgets an id (its handling failed, so a retry may try again). */
  delete(id: string): void {
    this.ids.delete(id);
  }
}

/** A map that forgets its least recently set entries (reading one does not keep it). */
export class RecentMap<V extends {}> {
  private readonly map: LRUCache<string, V>;
  constructor(capacity = 10_000) {
    this.map = new LRUCache({ max: capacity });
  }

  set(key: string, value: V): void {
    this.map.set(key, value);
  }

  get(key: string): V | undefined {
    return this.map.peek(key);
  }

  /**
   * The value of `key`, or else what `load` resolves with, kept: a platform lookup (a user's name,
   * a room's members) asked once. A `load` that rejects keeps nothing.
   */
  async remember(key: string, load: () => Promise<V>): Promise<V> {
    const known = this.map.peek(key);
    if (known !== undefined) return known;
    const value = await load();
    this.map.set(key, value);
    return value;
  }

  delete(key: string): void {
    this.map.delete(key);
  }
}
