import { accessSync, constants } from "node:fs";
import { join } from "node:path";

const found = new Map<string, boolean>();

/** Whether an executable of this name is on the runner's PATH (looked up once). */
export function hasTool(name: string): boolean {
  let ok = found.get(name);
  if (ok === undefined) {
    ok = (process.env.PATH ?? "/usr/bin:/bin").split(":").some((dir) => {
      try {
        accessSync(join(dir || ".", name), constants.X_OK);
        return true;
      } catch {
        return false;
      }
    });
    found.set(name, ok);
  }
  return ok;
}
