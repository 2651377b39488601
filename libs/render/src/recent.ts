/** A set that forgets its oldest entries: message ids seen lately (platform retries, gateway replays). */
export class RecentIds {
  private readonly ids = new Set<string>();
  constructor(private readonly capacity = 10_000) {}

  /** True the first time an id is seen (within the last `capacity` ids). */
  add(id: string): boolean {
    if (this.ids.has(id)) return false;
    this.ids.add(id);
    if (this.ids.size > this.capacity) this.ids.delete(this.ids.values().next().value!);
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

/** A map that forgets its least recently set entries. */
export class RecentMap<V> {
  private readonly map = new Map<string, V>();
  constructor(private readonly capacity = 10_000) {}

  set(key: string, value: V): void {
    this.map.delete(key);
    this.map.set(key, value);
    if (this.map.size > this.capacity) this.map.delete(this.map.keys().next().value!);
  }

  get(key: string): V | undefined {
    return this.map.get(key);
  }

  delete(key: string): void {
    this.map.delete(key);
  }
}
