import type { Bus } from "@mom/bus";
import { parsePayload, ToolApproveRequest, type ToolApproveReply, type ToolReviewReply, ToolReviewRequest, TOOLS_QUEUE, toolsSubject, validator } from "@mom/contracts";
import { approveTool, reviewWorkspaceTools, workspaceToolDirs } from "@mom/tools";
import { join } from "node:path";
import type { Logger } from "pino";

const checkReview = validator(ToolReviewRequest);
const checkApprove = validator(ToolApproveRequest);

/**
 * The web console's way to the workspace tools' approvals (docs/console.md "Tools"): they live on
 * the runners' disk (data/tool-approvals.json, workspace/tools), and the console reads only NATS,
 * so a runner answers its requests — one runner of the queue group per request, any of them, since
 * they share the data dir. An approval names the digest the person reviewed; a tool that changed
 * since is refused. The registry picks the approval up from the file as after `mom tools approve`.
 */
export function answerToolReviews(bus: Bus, o: { runnerId: string; approvalsFile: string; toolsDir: string; log: Logger }): { stop(): void } {
  const ns = bus.subjects.namespace;
  const reply = (m: { respond(data: string): boolean }, body: ToolReviewReply | ToolApproveReply) => {
    try {
      m.respond(JSON.stringify(body));
    } catch (err) {
      o.log.warn({ err }, "tool review answer not sent");
    }
  };
  const fail = (err: unknown) => ({ ok: false as const, error: err instanceof Error ? err.message : String(err) });
  const subs: Array<ReturnType<Bus["subscribe"]>> = [
    bus.subscribe(toolsSubject(ns, "review"), {
      queue: TOOLS_QUEUE,
      callback: (err, m) => {
        if (err) return;
        const req = parsePayload(checkReview, m.data);
        if (!req.ok) return reply(m, { ok: false, error: `not a tool review request: ${req.reason}` });
        reviewWorkspaceTools(o.approvalsFile, o.toolsDir).then(
          (tools) => reply(m, { ok: true, runner: o.runnerId, tools }),
          (e: unknown) => reply(m, fail(e)),
        );
      },
    }),
    bus.subscribe(toolsSubject(ns, "approve"), {
      queue: TOOLS_QUEUE,
      callback: (err, m) => {
        if (err) return;
        const req = parsePayload(checkApprove, m.data);
        if (!req.ok) return reply(m, { ok: false, error: `not a tool approval: ${req.reason}` });
        const { name, sha256, by } = req.value;
        if (!workspaceToolDirs(o.toolsDir).includes(name)) return reply(m, { ok: false, error: `no tool ${name} in workspace/tools` });
        approveTool(o.approvalsFile, join(o.toolsDir, name), { expectSha256: sha256, by }).then(
          (d) => {
            o.log.info({ tool: name, sha256: d.sha256, files: d.files.length, approvedBy: by }, "workspace tool approved from the console");
            reply(m, { ok: true, runner: o.runnerId, sha256: d.sha256, files: d.files.length });
          },
          (e: unknown) => {
            o.log.warn({ tool: name, err: (e as Error).message, by }, "workspace tool approval refused");
            reply(m, fail(e));
          },
        );
      },
    }),
  ];
  return { stop: () => subs.forEach((s) => s.unsubscribe()) };
}
