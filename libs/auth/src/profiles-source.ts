import { type AuthProfile, loadAuthProfiles } from "@mom/config";
import { statSync } from "node:fs";

/**
 * data/auth-profiles.json as the runner sees it: read again when the file changes (so `mom auth
 * add` needs no restart); a file that became invalid keeps the last good profiles and is reported.
 */
export class ProfilesSource {
  private stamp = "";
  private current: AuthProfile[] = [];
  private checkedAt = 0;

  constructor(
    private readonly file: string,
    private readonly onError: (err: Error) => void = () => {},
    /** Every model call asks; the file is looked at again at most this often. */
    private readonly recheckMs = 1000,
  ) {
    // Stamped before it is read: a write in between then shows as a change on the next check.
    this.stamp = this.stampOf();
    this.current = loadAuthProfiles(file).profiles;
  }

  profiles(): AuthProfile[] {
    const now = Date.now();
    if (now - this.checkedAt < this.recheckMs) return this.current;
    this.checkedAt = now;
    const stamp = this.stampOf();
    if (stamp !== this.stamp) {
      this.stamp = stamp;
      try {
        this.current = loadAuthProfiles(this.file).profiles;
      } catch (err) {
        this.onError(err as Error);
      }
    }
    return this.current;
  }

  private stampOf(): string {
    // Asked before every model call: a missing file must not cost a thrown error each time.
    try {
      const s = statSync(this.file, { throwIfNoEntry: false });
      return s ? `${s.mtimeMs}:${s.size}:${s.ino}` : "absent";
    } catch {
      return "unreadable";
    }
  }
}
