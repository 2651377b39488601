// One tool call's conversation with the CalDAV server, over tsdav. Every request goes through one
// fetch of ours: it adds the credentials (so they are in no object tsdav might print), sends them
// only to the configured server's origin, and turns what the model or operator can act on (401,
// unreachable, a missing calendar) into an error saying so. tsdav answers a failed REPORT with an
// empty list rather than an error, so without this a refused login would read as "no events".
import { createAccount, createCalendarObject, type DAVCalendarObject, deleteCalendarObject, fetchCalendarObjects, fetchCalendars, getBasicAuthHeaders, propfind, updateCalendarObject } from "tsdav";
import ICAL from "ical.js";
import { FIELD, type Resolved } from "./settings.js";
import { isKnownZone } from "./times.js";

export interface CalendarRef {
  url: string;
  name: string;
  /** The calendar's own zone (its calendar-timezone), when it names one the runtime knows. */
  timezone?: string;
}

export interface StoredObject {
  url: string;
  etag?: string;
  data: string;
}

/** Calendars found by display name, per server/user/calendar setting: discovery costs several requests. */
export type CalendarCache = Map<string, CalendarRef>;

const ok = (status: number) => status >= 200 && status < 300;

function causeCode(e: unknown): string | undefined {
  const cause = (e as { cause?: { code?: string; errors?: Array<{ code?: string }> } }).cause;
  return cause?.code ?? cause?.errors?.[0]?.code;
}

export class DavSession {
  private fatal?: Error;
  private readonly origin: string;
  private readonly auth: string;

  constructor(
    private readonly s: Resolved,
    private readonly signal: AbortSignal,
    private readonly cache: CalendarCache,
  ) {
    this.origin = new URL(s.url).origin;
    this.auth = getBasicAuthHeaders({ username: s.username, password: s.secret }).authorization!;
  }

  /** The first error that decides the call; tsdav may catch it and go on, so it is kept here. */
  private fail(e: Error): Error {
    this.fatal ??= e;
    return e;
  }

  readonly fetch = async (input: string | URL | Request, init: RequestInit = {}): Promise<Response> => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    const method = (init.method ?? "GET").toUpperCase();
    if (url.origin !== this.origin) {
      throw this.fail(
        new Error(`the CalDAV server pointed at ${url.origin}, not ${this.origin} (${FIELD}.url): the credentials are sent only to ${FIELD}.url; set it to that server if it is the right one`),
      );
    }
    const headers = new Headers(init.headers);
    headers.set("authorization", this.auth);
    // Redirects are not followed blindly: tsdav's discovery asks for them ("manual") and reads
    // Location itself, so each hop passes the origin check above; elsewhere one is an error.
    const discovery = init.redirect === "manual";
    let res: Response;
    try {
      res = await fetch(url, { ...init, headers, redirect: "manual", signal: this.signal });
    } catch (e) {
      if (this.signal.aborted) throw this.fail(new Error("the call was cancelled (stopped or timed out) before the CalDAV server answered"));
      throw this.fail(new Error(`the CalDAV server at ${this.origin} is unreachable (${causeCode(e) ?? (e as Error).message}): check ${FIELD}.url and that the server is up`));
    }
    if (res.status === 401) {
      throw this.fail(
        new Error(`the CalDAV server refused the credentials (401) for user ${JSON.stringify(this.s.username)}: check ${FIELD}.username and the password that ${FIELD}.password (${this.s.password}) points at`),
      );
    }
    if (res.status >= 300 && res.status < 400 && !discovery) {
      const location = res.headers.get("location");
      throw this.fail(new Error(`the CalDAV server redirected ${method} ${url.pathname}${location ? ` to ${location}` : ""} (${res.status}): set ${FIELD}.url or ${FIELD}.calendar to where it points`));
    }
    // A failing /.well-known/caldav is not fatal: tsdav then tries the configured URL itself.
    if (res.status >= 500 && !discovery && !url.pathname.startsWith("/.well-known/")) {
      throw this.fail(new Error(`the CalDAV server failed (${res.status} ${res.statusText}) on ${method} ${url.pathname}; try again later`));
    }
    if (method === "REPORT" && !ok(res.status) && res.status !== 207) {
      if (res.status === 404) throw this.fail(new Error(`the calendar ${url.pathname} does not exist on the server (404): check ${FIELD}.calendar`));
      if (res.status === 403) throw this.fail(new Error(`user ${JSON.stringify(this.s.username)} may not read the calendar ${url.pathname} (403): check ${FIELD}.calendar`));
      throw this.fail(new Error(`the CalDAV server refused to search ${url.pathname} (${res.status} ${res.statusText})`));
    }
    return res;
  };

  /** Runs a tsdav call; the error that decided it wins over what tsdav made of it. */
  private async dav<T>(what: string, fn: () => Promise<T>): Promise<T> {
    let result: T;
    try {
      result = await fn();
    } catch (e) {
      throw this.fatal ?? new Error(`CalDAV ${what} failed: ${(e as Error).message}`);
    }
    if (this.fatal) throw this.fatal;
    return result;
  }

  /** The calendar of the settings: by URL (checked to be a calendar), by display name, or the only one. */
  async calendar(): Promise<CalendarRef> {
    const key = JSON.stringify([this.s.url, this.s.username, this.s.calendar ?? null]);
    const cached = this.cache.get(key);
    if (cached) return cached;
    const wanted = this.s.calendar;
    const found = wanted && /^(https?:\/\/|\/)/i.test(wanted) ? await this.calendarAt(new URL(wanted, this.s.url).href) : await this.calendarNamed(wanted);
    this.cache.set(key, found);
    return found;
  }

  private async calendarAt(url: string): Promise<CalendarRef> {
    const [res] = await this.dav("PROPFIND", () =>
      propfind({ url, depth: "0", props: { "d:displayname": {}, "d:resourcetype": {}, "c:calendar-timezone": {} }, fetch: this.fetch }),
    );
    if (!res?.ok) {
      throw new Error(`${FIELD}.calendar: ${new URL(url).pathname} ${res?.status === 404 ? "does not exist on the server" : `cannot be read (${res?.status} ${res?.statusText})`}`);
    }
    if (!Object.keys(res.props?.resourcetype ?? {}).includes("calendar")) throw new Error(`${FIELD}.calendar: ${new URL(url).pathname} is not a calendar`);
    const name = res.props?.displayname;
    return { url, name: typeof name === "string" || typeof name === "number" ? String(name) : new URL(url).pathname, timezone: zoneOfCalendar(res.props?.calendarTimezone) };
  }

  private async calendarNamed(wanted: string | undefined): Promise<CalendarRef> {
    const account = await this.dav("discovery", () => createAccount({ account: { serverUrl: this.s.url, accountType: "caldav" }, fetch: this.fetch }));
    const calendars = await this.dav("PROPFIND", () => fetchCalendars({ account, fetch: this.fetch }));
    const named = calendars.map((c) => ({ c, name: displayNameOf(c.displayName) ?? new URL(c.url).pathname }));
    const list = named.map((n) => JSON.stringify(n.name)).sort().join(", ") || "none";
    const pick = wanted === undefined ? (named.length === 1 ? named[0] : undefined) : (named.find((n) => n.name === wanted) ?? named.find((n) => n.name.toLowerCase() === wanted.toLowerCase()));
    if (!pick) {
      if (wanted === undefined) throw new Error(`${FIELD}.calendar is not set and user ${JSON.stringify(this.s.username)} has ${named.length} calendars (${list}): set it to one of them`);
      throw new Error(`${FIELD}.calendar: user ${JSON.stringify(this.s.username)} has no calendar named ${JSON.stringify(wanted)}; there are: ${list}`);
    }
    return { url: pick.c.url, name: pick.name, timezone: zoneOfCalendar(pick.c.timezone) };
  }

  /** The objects with an event overlapping [from, to) (the server applies recurrences). */
  async objectsBetween(cal: CalendarRef, from: Date, to: Date): Promise<StoredObject[]> {
    const objects = await this.dav("calendar-query", () =>
      fetchCalendarObjects({ calendar: { url: cal.url }, timeRange: { start: from.toISOString(), end: to.toISOString() }, urlFilter: this.memberOf(cal), fetch: this.fetch }),
    );
    return this.stored(objects, cal);
  }

  /**
   * The objects whose UID contains `uid` (the server's text-match); the caller compares exactly.
   * The uid goes only into the query's XML text (tsdav escapes it), never into a URL.
   */
  async objectsWithUid(cal: CalendarRef, uid: string): Promise<StoredObject[]> {
    const filters = {
      "c:comp-filter": {
        _attributes: { name: "VCALENDAR" },
        "c:comp-filter": {
          _attributes: { name: "VEVENT" },
          "c:prop-filter": { _attributes: { name: "UID" }, "c:text-match": { _attributes: { collation: "i;octet" }, _text: uid } },
        },
      },
    };
    const objects = await this.dav("calendar-query", () => fetchCalendarObjects({ calendar: { url: cal.url }, filters, urlFilter: this.memberOf(cal), fetch: this.fetch }));
    return this.stored(objects, cal);
  }

  async create(cal: CalendarRef, filename: string, ics: string): Promise<void> {
    const res = await this.dav("PUT", () => createCalendarObject({ calendar: { url: cal.url }, filename, iCalString: ics, fetch: this.fetch }));
    if (ok(res.status)) return;
    if (res.status === 403) throw new Error(`user ${JSON.stringify(this.s.username)} may not add events to calendar ${JSON.stringify(cal.name)} (403: read-only?)`);
    throw new Error(`the CalDAV server refused to store the event (${res.status} ${res.statusText}): ${(await res.text()).slice(0, 300)}`);
  }

  async update(obj: StoredObject, ics: string): Promise<void> {
    const res = await this.dav("PUT", () => updateCalendarObject({ calendarObject: { url: obj.url, etag: obj.etag, data: ics }, fetch: this.fetch }));
    this.check(res, "change");
  }

  async remove(obj: StoredObject): Promise<void> {
    const res = await this.dav("DELETE", () => deleteCalendarObject({ calendarObject: { url: obj.url, etag: obj.etag }, fetch: this.fetch }));
    this.check(res, "delete");
  }

  private check(res: Response, verb: string): void {
    if (ok(res.status)) return;
    if (res.status === 412) throw new Error(`the event changed on the server since it was read (412): list it again and retry`);
    if (res.status === 404) throw new Error(`the event is gone from the server (404): it was deleted meanwhile`);
    if (res.status === 403) throw new Error(`user ${JSON.stringify(this.s.username)} may not ${verb} this event (403: read-only calendar?)`);
    throw new Error(`the CalDAV server refused to ${verb} the event (${res.status} ${res.statusText})`);
  }

  /** Only objects directly inside the calendar collection: never the collection itself, another collection, or another server. */
  private memberOf(cal: CalendarRef): (url: string) => boolean {
    const base = new URL(cal.url);
    const dir = base.pathname.endsWith("/") ? base.pathname : `${base.pathname}/`;
    return (url: string) => {
      const u = new URL(url, base);
      if (u.origin !== base.origin || !u.pathname.startsWith(dir)) return false;
      const rest = u.pathname.slice(dir.length);
      let name: string;
      try {
        name = decodeURIComponent(rest);
      } catch {
        return false;
      }
      return rest.length > 0 && !name.includes("/") && name !== ".." && name !== ".";
    };
  }

  private stored(objects: DAVCalendarObject[], cal: CalendarRef): StoredObject[] {
    const member = this.memberOf(cal);
    return objects.filter((o) => member(o.url) && typeof o.data === "string" && o.data.length > 0).map((o) => ({ url: o.url, etag: o.etag, data: o.data as string }));
  }
}

function displayNameOf(v: unknown): string | undefined {
  if (typeof v === "string" || typeof v === "number") return String(v);
  return undefined;
}

/** The TZID of a calendar-timezone property (a VCALENDAR holding one VTIMEZONE), if the runtime knows it. */
function zoneOfCalendar(text: unknown): string | undefined {
  const raw = typeof text === "string" ? text : (text as { _cdata?: unknown } | undefined)?._cdata;
  if (typeof raw !== "string" || !raw.trim()) return undefined;
  try {
    const tzid = ICAL.Component.fromString(raw).getFirstSubcomponent("vtimezone")?.getFirstPropertyValue("tzid");
    return typeof tzid === "string" && isKnownZone(tzid) ? tzid : undefined;
  } catch {
    return undefined;
  }
}
