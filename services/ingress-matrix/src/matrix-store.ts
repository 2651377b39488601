import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import type { IFilterInfo, IStorageProvider } from "matrix-bot-sdk";

interface Stored {
  syncToken?: string | null;
  filter?: IFilterInfo;
  kvStore: Record<string, string>;
}

/**
 * matrix-bot-sdk's storage (the sync token, and the encrypted rooms told) in a JSON file of the
 * shape its SimpleFsStorageProvider writes, so a store of before carries on; without a file, in
 * memory. Each change is written aside and renamed over the file: SimpleFsStorageProvider rewrites
 * the file in place, and a crash in between left it empty — the sync position lost, so what was
 * said while the ingress was down was never taken — or half written, which it cannot start from.
 */
export class SyncStore implements IStorageProvider {
  private readonly data: Stored = { kvStore: {} };

  constructor(private readonly file?: string) {
    if (!file) return;
    mkdirSync(dirname(file), { recursive: true });
    const text = existsSync(file) ? readFileSync(file, "utf8") : "";
    try {
      // A blank file (left by SimpleFsStorageProvider's crash) is read as it read it: nothing stored.
      if (text.trim()) Object.assign(this.data, JSON.parse(text));
    } catch (err) {
      throw new Error(`the matrix store ${file} is not JSON (${(err as Error).message}): fix or remove it`, { cause: err });
    }
  }

  setSyncToken(syncToken: string | null): void {
    this.save({ syncToken });
  }

  getSyncToken(): string | null {
    return this.data.syncToken ?? null;
  }

  setFilter(filter: IFilterInfo): void {
    this.save({ filter });
  }

  getFilter(): IFilterInfo {
    return this.data.filter!;
  }

  storeValue(key: string, value: string): void {
    this.save({ kvStore: { ...this.data.kvStore, [key]: value } });
  }

  readValue(key: string): string | undefined {
    return this.data.kvStore[key];
  }

  private save(change: Partial<Stored>): void {
    Object.assign(this.data, change);
    if (!this.file) return;
    writeFileSync(`${this.file}.tmp`, JSON.stringify(this.data));
    renameSync(`${this.file}.tmp`, this.file);
  }
}
