import { type IngressDefinition, metrics } from "@mom/ingress-sdk";
import type { MatrixClient } from "matrix-bot-sdk";
import { resolve } from "node:path";
import { createMatrixClient, routeSdkLogs } from "./matrix-client.js";
import { MatrixEvents } from "./matrix-events.js";
import type { BotIdentity } from "./matrix-inbound.js";
import { MediaDownloads } from "./matrix-media.js";
import { MatrixSettings } from "./matrix-options.js";
import { RoomFacts } from "./matrix-rooms.js";
import { loadMatrixSdk } from "./matrix-sdk.js";
import { SyncStore } from "./matrix-store.js";
import { MatrixSurface } from "./matrix-surface.js";

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
    const storage = new SyncStore(!s.store || s.store === "memory" ? undefined : resolve(s.store));
    const client = createMatrixClient(sdk, { ...s, storage, rateLimited: () => metrics.platformRateLimits.inc({ adapter }), log });
    const me = await identify(client, s, adapter);
    const rooms = new RoomFacts(client, log);
    me.displayName = await rooms.displayName(me.userId);
    const surface = new MatrixSurface(client);
    const events = new MatrixEvents({ ctx, client, me, rooms, media: new MediaDownloads(client), surface });
    client.handlers = events;
    return {
      surface,
      editIntervalMs: s.editIntervalMs ?? 2000,
      typingIntervalMs: 5000, // typing is sent with a 6 s timeout
      async start() {
        if (!(await storage.getSyncToken())) {
          events.ignoreBefore = Date.now();
          log.info({ store: s.store ?? "memory" }, "no matrix sync token stored: what was said before now is not answered");
        }
        await client.start();
        return { user: me.userId, store: s.store ?? "memory" };
      },
      async stop() {
        client.stop();
      },
      problem: () => client.sync.problem(),
    };
  },
};

/** The bot's user id from the token (whoami); the configured `userId`, when given, must be it. */
async function identify(client: MatrixClient, s: MatrixSettings, adapter: string): Promise<BotIdentity> {
  const { user_id: userId } = await client.getWhoAmI().catch((err: { errcode?: string; statusCode?: number; message?: string }) => {
    const why = err.errcode === "M_UNKNOWN_TOKEN" || err.statusCode === 401 ? "the access token was refused" : `could not reach the homeserver at ${s.homeserverUrl}`;
    throw new Error(`matrix adapter "${adapter}": ${why} (whoami: ${err.errcode ?? err.message ?? String(err)})`, { cause: err });
  });
  if (s.userId && s.userId !== userId) throw new Error(`matrix adapter "${adapter}": the access token belongs to ${userId}, not to the configured userId ${s.userId}`);
  return { userId };
}
