import { Body, Controller, Get, Inject, Param, Post, Query, Req, Res, Sse, type MessageEvent } from "@nestjs/common";
import { type OutboundEvent, parseQualifiedChannelId, qualifiedChannelId, type ChannelRef } from "@mom/contracts";
import { readiness, registry } from "@mom/observability";
import type { Request, Response } from "express";
import { readFileSync } from "node:fs";
import { randomUUID } from "node:crypto";
import { auditTime, fromEvent, map, merge, Observable, of } from "rxjs";
import { ChangeRefused, ConsoleService, DecisionRefused } from "./console.service.js";
import { RedriveError } from "./redrive-runner.js";
import { readDeadLetters } from "./dead-letters.js";
import type { ChangedChannels } from "./live-state.js";
import { OverviewPatches } from "./overview-patches.js";
import type { ConsoleIdentity } from "./identity.js";
import { channelUrl, STATIC_FILES, Views } from "./views.js";
import { formatEntry } from "@mom/render";

export const SESSION_COOKIE = "mom_console";
type Req = Request & { consoleUser?: ConsoleIdentity };

/** Changes to the overview within this window go to a browser together (a busy row is sent once). */
const COALESCE_MS = 100;
/** Names this process's state versions: a page from before a restart is re-sent whole. */
const EPOCH = randomUUID().slice(0, 8);

/** JSON laid out to be edited (it is published re-serialised anyway); anything else as it is. */
function indented(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}

const html = (res: Response, status: number, body: string) => res.status(status).type("html").set("cache-control", "no-store").send(body);

@Controller()
export class ConsoleController {
  private readonly views = new Views();

  constructor(@Inject(ConsoleService) private readonly svc: ConsoleService) {}

  @Get("healthz")
  healthz(@Res() res: Response) {
    res.json({ status: "ok" });
  }

  @Get("readyz")
  readyz(@Res() res: Response) {
    const r = readiness();
    res.status(r.ready ? 200 : 503).json(r.ready ? { status: "ready" } : { status: "not ready", reason: r.reason });
  }

  @Get("metrics")
  async metrics(@Res() res: Response) {
    res.type(registry.contentType).send(await registry.metrics());
  }

  @Get("static/:file")
  asset(@Param("file") file: string, @Res() res: Response) {
    const path = Object.hasOwn(STATIC_FILES, file) ? STATIC_FILES[file] : undefined;
    if (!path) return void res.status(404).type("text").send("no such file");
    res.type(file.endsWith(".css") ? "css" : "js").set("cache-control", "public, max-age=300").send(readFileSync(path, "utf8"));
  }

  @Get("login")
  loginPage(@Res() res: Response) {
    html(res, 200, this.views.render("login", { tokenLogin: this.svc.identities.tokenLogin, header: this.svc.opts.loaded.config.console.identityHeader }));
  }

  @Post("login")
  login(@Body() body: { token?: string }, @Res() res: Response) {
    const user = typeof body?.token === "string" ? this.svc.identities.byToken(body.token) : undefined;
    if (!user) {
      this.svc.opts.logger.warn("console sign-in with an unknown token");
      return html(res, 401, this.views.render("login", { tokenLogin: this.svc.identities.tokenLogin, error: "That token belongs to no console user." }));
    }
    const secure = this.svc.opts.loaded.config.console.publicUrl?.startsWith("https:") === true;
    res.cookie(SESSION_COOKIE, user.name, { signed: true, httpOnly: true, sameSite: "strict", secure, path: "/", maxAge: 12 * 3600_000 });
    res.redirect(303, "/");
  }

  @Post("logout")
  logout(@Res() res: Response) {
    res.clearCookie(SESSION_COOKIE, { path: "/" });
    res.redirect(303, "/login");
  }

  @Get()
  overview(@Req() req: Req, @Res() res: Response) {
    const since = `${EPOCH}.${this.svc.state.version}`;
    html(res, 200, this.views.render("overview", { user: req.consoleUser, overview: this.svc.state.snapshot(), since }));
  }

  @Get("approvals")
  approvals(@Req() req: Req, @Res() res: Response, @Query("sent") sent?: string) {
    const notice = sent ? `Decision on approval ${sent} sent; it disappears from here once the runner has taken it.` : undefined;
    html(res, 200, this.views.render("approvals", { user: req.consoleUser, approvals: this.svc.approvalCards(req.consoleUser!), notice }));
  }

  @Post("approvals/:id")
  async decide(@Req() req: Req, @Param("id") id: string, @Body() body: { decision?: string }, @Res() res: Response) {
    try {
      await this.svc.decide(req.consoleUser!, id, String(body?.decision ?? ""));
      res.redirect(303, `/approvals?sent=${encodeURIComponent(id)}`);
    } catch (err) {
      if (!(err instanceof DecisionRefused)) throw err;
      html(res, err.status, this.views.render("message", { user: req.consoleUser, title: "Not sent", text: err.message, back: "/approvals" }));
    }
  }

  @Get("spend")
  spend(@Req() req: Req, @Res() res: Response, @Query("said") said?: string) {
    html(res, 200, this.views.render("spend", { user: req.consoleUser, s: this.svc.spendView(), notice: said }));
  }

  /** Raise, lower or lift one budget, or give it back to config.json (approvers; see ConsoleService.changeLimit). */
  @Post("spend/limits")
  async changeLimit(@Req() req: Req, @Body() body: Record<string, string | undefined>, @Res() res: Response) {
    try {
      const { said } = await this.svc.changeLimit(req.consoleUser!, { kind: String(body?.kind ?? ""), id: body?.id, period: String(body?.period ?? ""), action: String(body?.action ?? ""), usd: body?.usd, tokens: body?.tokens });
      res.redirect(303, `/spend?said=${encodeURIComponent(said)}`);
    } catch (err) {
      this.refused(req, res, err, "Limit not changed", "/spend");
    }
  }

  @Get("dead-letters")
  async deadLetters(@Req() req: Req, @Res() res: Response, @Query("republished") republished?: string) {
    const { rows, total } = await readDeadLetters(this.svc.bus);
    const seq = Number(republished);
    const done = Number.isInteger(seq) ? this.svc.republishedOf(seq).at(-1) : undefined;
    html(res, 200, this.views.render("dead-letters", { user: req.consoleUser, rows, total, republishedOf: (n: number) => this.svc.republishedOf(n), done }));
  }

  /** One dead letter whole, with the form that puts a fixed payload back (approvers). */
  @Get("dead-letters/:seq")
  async deadLetter(@Req() req: Req, @Param("seq") seq: string, @Res() res: Response) {
    const n = Number(seq);
    const d = Number.isInteger(n) && n > 0 ? await this.svc.deadLetter(n) : undefined;
    if (!d) return html(res, 404, this.views.render("message", { user: req.consoleUser, title: "No such dead letter", text: `MOM_DLQ has no message #${seq} (aged out, or never there).`, back: "/dead-letters" }));
    html(res, 200, this.views.render("dead-letter", { user: req.consoleUser, d, text: indented(d.payload ?? ""), republished: await this.svc.readRepublished(d) }));
  }

  @Post("dead-letters/:seq/republish")
  async republish(@Req() req: Req, @Param("seq") seq: string, @Body() body: { payload?: string }, @Res() res: Response) {
    const n = Number(seq);
    const text = String(body?.payload ?? "");
    try {
      if (!Number.isInteger(n) || n <= 0) throw new ChangeRefused(404, `MOM_DLQ has no message #${seq}`);
      await this.svc.republish(req.consoleUser!, n, text);
      res.redirect(303, `/dead-letters?republished=${n}`);
    } catch (err) {
      // A payload that does not pass: the form again, with the text as edited and why.
      const d = err instanceof ChangeRefused && err.status === 400 ? await this.svc.deadLetter(n) : undefined;
      if (!d) return this.refused(req, res, err, "Not re-published", `/dead-letters/${n}`);
      html(res, 400, this.views.render("dead-letter", { user: req.consoleUser, d, text, error: (err as Error).message, republished: await this.svc.readRepublished(d) }));
    }
  }

  /** Workspace tools, each new or changed one with its diff since the approved version (a runner reads them). */
  @Get("tools")
  async tools(@Req() req: Req, @Res() res: Response, @Query("approved") approved?: string) {
    try {
      const review = await this.svc.toolReview();
      html(res, 200, this.views.render("tools", { user: req.consoleUser, review, approved }));
    } catch (err) {
      this.refused(req, res, err, "Tools not available", "/");
    }
  }

  @Post("tools/:name/approve")
  async approveTool(@Req() req: Req, @Param("name") name: string, @Body() body: { sha256?: string }, @Res() res: Response) {
    try {
      await this.svc.approveTool(req.consoleUser!, name, String(body?.sha256 ?? ""));
      res.redirect(303, `/tools?approved=${encodeURIComponent(name)}`);
    } catch (err) {
      this.refused(req, res, err, "Tool not approved", "/tools");
    }
  }

  /** A ChangeRefused said on a page with its status; anything else is a bug and goes up. */
  private refused(req: Req, res: Response, err: unknown, title: string, back: string): void {
    if (!(err instanceof ChangeRefused)) throw err;
    html(res, err.status, this.views.render("message", { user: req.consoleUser, title, text: err.message, back }));
  }

  /**
   * Live updates for the page that asked. The overview gets out-of-band patches of what changed
   * (OverviewPatches), at most every COALESCE_MS; the approvals page, short, is re-rendered whole
   * at most every 150 ms.
   */
  @Sse("events")
  events(@Req() req: Req, @Query("view") view?: string, @Query("since") since?: string): Observable<MessageEvent> {
    const user = req.consoleUser!;
    if (view === "approvals") {
      const render = (): MessageEvent => ({ type: "approvals", data: this.views.render("approvals-body", { approvals: this.svc.approvalCards(user) }) });
      return merge(of(0), fromEvent(this.svc.state, "change")).pipe(auditTime(150), map(render));
    }
    const state = this.svc.state;
    return new Observable<MessageEvent>((sub) => {
      const patches = new OverviewPatches(state, this.views, EPOCH);
      const send = (data: string[]) => data.forEach((d) => sub.next({ type: "patch", data: d }));
      let timer: NodeJS.Timeout | undefined;
      const onChange = (channels: ChangedChannels) => {
        patches.note(channels);
        timer ??= setTimeout(() => {
          timer = undefined;
          send(patches.flush());
        }, COALESCE_MS);
      };
      state.on("change", onChange);
      send(patches.start(since));
      return () => {
        state.off("change", onChange);
        clearTimeout(timer);
      };
    });
  }

  @Get("channels/:adapter/:channelId")
  async channel(@Req() req: Req, @Param("adapter") adapter: string, @Param("channelId") channelId: string, @Res() res: Response) {
    const ref = this.ref(adapter, channelId, res);
    if (!ref) return;
    const w = await this.svc.channelWindow(ref);
    const runs = w.entries.flatMap((e) => {
      if (e.kind !== "out" || !("data" in e)) return [];
      const o = e.data as OutboundEvent;
      return o.event.type === "run_started" ? [{ runId: o.runId, time: e.time, user: o.event.trigger.username, model: o.event.model }] : [];
    });
    const lines = w.entries.map((e) => formatEntry(e)).filter((l): l is string => l !== undefined);
    html(res, 200, this.views.render("channel", { user: req.consoleUser, channel: qualifiedChannelId(ref), runs: runs.reverse(), lines, agedOut: w.agedOut, models: this.svc.redriveModels() }));
  }

  /** Runs in the request (a form post, no live updates): the page comes back when the redrive is done. */
  @Post("channels/:adapter/:channelId/redrive")
  async redrive(@Req() req: Req, @Param("adapter") adapter: string, @Param("channelId") channelId: string, @Body() body: { window?: string; model?: string }, @Res() res: Response) {
    const ref = this.ref(adapter, channelId, res);
    if (!ref) return;
    const channel = qualifiedChannelId(ref);
    try {
      const report = await this.svc.redrive(req.consoleUser!, ref, String(body?.window ?? ""), String(body?.model ?? ""));
      html(res, 200, this.views.render("redrive", { user: req.consoleUser, report }));
    } catch (err) {
      const status = err instanceof RedriveError ? err.status : 500;
      if (status === 500) this.svc.opts.logger.error({ err, channel }, "console redrive failed");
      html(res, status, this.views.render("message", { user: req.consoleUser, title: "Redrive not done", text: (err as Error).message, back: channelUrl(channel) }));
    }
  }

  @Get("channels/:adapter/:channelId/runs/:runId")
  async run(@Req() req: Req, @Param("adapter") adapter: string, @Param("channelId") channelId: string, @Param("runId") runId: string, @Res() res: Response) {
    const ref = this.ref(adapter, channelId, res);
    if (!ref) return;
    const t = await this.svc.timeline(ref, qualifiedChannelId(ref), runId);
    html(res, t.found || t.steps.length ? 200 : 404, this.views.render("run", { user: req.consoleUser, t }));
  }

  private ref(adapter: string, channelId: string, res: Response): ChannelRef | undefined {
    try {
      return parseQualifiedChannelId(`${adapter}/${channelId}`);
    } catch (err) {
      html(res, 400, this.views.render("message", { title: "No such channel", text: (err as Error).message, back: "/" }));
      return undefined;
    }
  }
}

export { channelUrl };
