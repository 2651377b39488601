import { type IngressDefinition, parseApprovalButton, type PlatformConnection, type PlatformContext, type PlatformMessage, type WebhookServer, whenStored } from "@mom/ingress-sdk";
import { GraphApi, WINDOW_CLOSED } from "./graph-api.js";
import { WhatsAppSettings } from "./whatsapp-options.js";
import { WhatsAppSurface, WindowClosedError } from "./whatsapp-surface.js";
import { failedDeliveries, toWhatsAppInbound, type WebhookMessage, webhookMessages } from "./whatsapp-webhook.js";
import { startWebhookServer } from "./whatsapp-webhook-server.js";

type Ctx = PlatformContext<WhatsAppSettings>;

/**
 * One WhatsApp business number: signed webhook posts become messages of `<adapter>/<wa_id>` (in
 * order per person), runs are drawn as replies over the Cloud API (see docs/whatsapp.md).
 * Everything else is the ingress shell's.
 */
export const whatsappIngress: IngressDefinition<typeof WhatsAppSettings> = {
  platform: "whatsapp",
  settings: WhatsAppSettings,
  connect(ctx) {
    const { settings: s, log, adapter } = ctx;
    const api = new GraphApi(s, adapter, log);
    const surface = new WhatsAppSurface(api, log);
    let server: WebhookServer | undefined;
    const connection: PlatformConnection & { readonly port: number } = {
      surface,
      // No edits on WhatsApp: nothing is redrawn, so the interval only paces typing renewals.
      editIntervalMs: 1000,
      typingIntervalMs: 20_000,
      /** The port the webhook server listens on, once started. */
      get port() {
        if (!server) throw new Error("the whatsapp webhook server is not started");
        return server.port;
      },
      async start() {
        const accept = (body: unknown) => onPost(ctx, api, surface, body);
        server = await startWebhookServer(s, log, accept);
        log.info({ adapter, port: server.port }, "whatsapp ingress: webhook listening");
      },
      stop: async () => server?.close(),
      // WhatsApp has no connection to hold: the ingress is ready while Meta can post to its webhook.
      problem: () => (server?.listening() ? undefined : "webhook server not listening"),
    };
    return connection;
  },
};

/** A verified webhook body: sends WhatsApp reports failed, and each message behind the earlier ones of its sender; settles once all are stored. */
function onPost(ctx: Ctx, api: GraphApi, surface: WhatsAppSurface, body: unknown): Promise<void> {
  for (const f of failedDeliveries(body)) {
    const why = f.errors.some((e) => e.code === WINDOW_CLOSED)
      ? new WindowClosedError(f.recipient).message
      : `WhatsApp could not deliver a message to ${f.recipient}: ${f.errors.map((e) => `${e.code ?? "?"} ${e.title ?? e.message ?? ""}`.trim()).join("; ") || "no reason given"}`;
    ctx.log.error({ messageId: f.messageId, to: f.recipient, errors: f.errors }, why);
    void ctx.inbound.undelivered(f.messageId, why);
  }
  const ours = webhookMessages(body).filter((w) => !w.phoneNumberId || w.phoneNumberId === ctx.settings.phoneNumberId);
  for (const w of ours) surface.wrote(w.message.from, Number(w.message.timestamp) * 1000 || Date.now());
  // Meta forgets a post answered 200 and re-sends one answered otherwise, for days: 200 only once stored.
  return whenStored(ours.map((w) => ctx.inbound.receiveInTurn(w.message.from, w.message.id, () => convert(ctx, api, surface, w))));
}

/** In the message's turn: the read receipt, then an approval tap or the message to publish. */
async function convert(ctx: Ctx, api: GraphApi, surface: WhatsAppSurface, w: WebhookMessage): Promise<PlatformMessage | undefined> {
  const { log } = ctx;
  await api.markRead(w.message.id, false).catch((err: unknown) => log.warn({ err }, "could not send the read receipt"));
  const button = w.message.interactive?.button_reply;
  if (button) return void (await onButton(ctx, surface, w, button.id));
  const m = toWhatsAppInbound(w, (mediaId, max, signal) => api.download(mediaId, max, signal));
  if (!m) return void log.debug({ type: w.message.type }, "message kind mom does not read");
  // Delivered after the window it opened had closed (a webhook re-sent long after an outage): an
  // answer could not be sent, so it is kept in the channel's history but does not start a run.
  const closed = surface.windowClosed(m.channelId);
  if (closed) log.warn({ from: m.sender.id, id: m.id, sentAt: m.timestamp }, `a message arrived after its 24-hour window closed; recorded, not answered: ${closed.message}`);
  return { ...m, ...(closed && { isMention: false }), refuse: (text) => surface.post(m.channelId, text, { replyTo: m.id }) };
}

/** A reply button of an approval prompt; someone who may not decide is told so in the chat. */
async function onButton(ctx: Ctx, surface: WhatsAppSurface, w: WebhookMessage, id: string): Promise<void> {
  const parsed = parseApprovalButton(id);
  if (!parsed) return;
  const from = w.message.from;
  const channel = parsed.channel ?? from;
  // An approver's own copy is not in the asker's chat: the outcome goes there without quoting it.
  const prompt = { ref: channel === from ? (w.message.context?.id ?? "") : "" };
  const { refusal } = await ctx.inbound.decide({ ...parsed, user: { id: from, username: w.sender.username }, channel, prompt });
  if (refusal) await surface.post(from, refusal, { replyTo: w.message.id }).catch((err: unknown) => ctx.log.warn({ err }, "could not tell a non-approver"));
}
