import { type IngressDefinition, metrics, type PlatformConnection, RecentMap } from "@mom/ingress-sdk";
import type { IStorageProvider, MatrixClient } from "matrix-bot-sdk";
import { resolve } from "node:path";
import { Prompts } from "./matrix-approvals.js";
import { createMatrixClient, routeSdkLogs } from "./matrix-client.js";
import { MatrixEvents } from "./matrix-events.js";
import type { BotIdentity } from "./matrix-inbound.js";
import { MediaDownloads } from "./matrix-media.js";
import { DEFAULT_EDIT_INTERVAL_MS, MatrixSettings } from "./matrix-options.js";
import { RoomFacts } from "./matrix-rooms.js";
import { loadMatrixSdk, type MatrixSdk } from "./matrix-sdk.js";
import { MatrixSurface } from "./matrix-surface.js";

const SYNC_PATH = "/_matrix/client/v3/sync";

/**
 * One Matrix bot account over matrix-bot-sdk: rooms it is in are channels `<adapter>/<room id>`,
 * /sync brings what people say, runs are drawn as messages edited in place (see docs/matrix.md).
 * Deployed as an external adapter: nothing of mom changes to add it. Everything else is the
 * ingress shell's.
 */
export const matrixIngress: IngressDefinition<typeof MatrixSettings> = {
  platform: "matrix",
  settings: MatrixSettings,
  async connect(ctx) {
    const { settings: s, log, adapter } = ctx;
    const sdk = await loadMatrixSdk();
    routeSdkLogs(sdk, log);
    const storage = storageOf(sdk, s.store);
    const rateLimited = () => metrics.platformRateLimits.inc({ adapter });
    const sync = syncHealth(log);
    let events: MatrixEvents | undefined;
    let stopping = false;
    const client = createMatrixClient(sdk, {
      homeserverUrl: s.homeserverUrl,
      accessToken: s.accessToken,
      storage,
      rateLimited,
      log,
      // The long poll in flight when stopping ends with the connection; that is no failure.
      observe: (path, failure) => !stopping && path === SYNC_PATH && sync.saw(failure),
      handlers: {
        invite: (room, ev) => events!.invite(room, ev),
        joined: (room) => events!.joined(room),
        event: (room, ev) => events!.event(room, ev),
      },
    });
    const me = await identify(client, s, adapter);
    const senders = new RecentMap<{ userId: string }>(10_000);
    const prompts = new Prompts();
    const rooms = new RoomFacts(client, log);
    me.displayName = await rooms.displayName(me.userId);
    const surface = new MatrixSurface(client, prompts, senders);
    events = new MatrixEvents({ ctx, client, me, rooms, media: new MediaDownloads(s.homeserverUrl, s.accessToken, rateLimited), surface, prompts, senders, storage });
    const connection: PlatformConnection & { client: MatrixClient; me: BotIdentity } = {
      client,
      me,
      surface,
      editIntervalMs: s.editIntervalMs ?? DEFAULT_EDIT_INTERVAL_MS,
      typingIntervalMs: 5000, // typing is sent with a 6 s timeout
      async start() {
        if (!(await storage.getSyncToken())) {
          events!.ignoreBefore = Date.now();
          log.info({ store: s.store ?? "memory" }, "no matrix sync token stored: what was said before now is not answered");
        }
        await client.start();
        log.info({ user: me.userId, store: s.store ?? "memory" }, "matrix sync started");
      },
      async stop() {
        stopping = true;
        events!.stop();
        client.stop();
      },
      problem: () => sync.problem(),
    };
    return connection;
  },
};

function storageOf(sdk: MatrixSdk, store: string | undefined): IStorageProvider {
  return !store || store === "memory" ? new sdk.MemoryStorageProvider() : new sdk.SimpleFsStorageProvider(resolve(store));
}

/** The bot's user id from the token (whoami); the configured `userId`, when given, must be it. */
async function identify(client: MatrixClient, s: MatrixSettings, adapter: string): Promise<BotIdentity> {
  let userId: string;
  try {
    userId = (await client.getWhoAmI()).user_id;
  } catch (err) {
    const e = err as { errcode?: string; statusCode?: number; message?: string };
    const why = e.errcode === "M_UNKNOWN_TOKEN" || e.statusCode === 401 ? "the access token was refused" : `could not reach the homeserver at ${s.homeserverUrl}`;
    throw new Error(`matrix adapter "${adapter}": ${why} (whoami: ${e.errcode ?? e.message ?? String(err)})`, { cause: err });
  }
  if (s.userId && s.userId !== userId) throw new Error(`matrix adapter "${adapter}": the access token belongs to ${userId}, not to the configured userId ${s.userId}`);
  return { userId };
}

/**
 * Whether /sync works. matrix-bot-sdk retries a failing sync forever, with a back-off, while the
 * client stays "started": the first failure and the recovery are logged, and /readyz says so meanwhile.
 */
function syncHealth(log: { warn(o: object, m: string): void; info(o: object, m: string): void }) {
  let failing: { since: string; why: string } | undefined;
  return {
    saw(failure: string | undefined): void {
      if (failure === undefined) {
        if (failing) log.info({ since: failing.since }, "matrix sync works again");
        failing = undefined;
      } else if (!failing) {
        failing = { since: new Date().toISOString(), why: failure };
        log.warn({ why: failure }, `matrix sync failed (retrying): ${failure}`);
      }
    },
    problem: () => (failing ? `Matrix sync failing since ${failing.since}: ${failing.why}` : undefined),
  };
}
