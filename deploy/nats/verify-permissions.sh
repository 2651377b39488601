#!/usr/bin/env bash
# Checks deploy/nats/auth.conf against the real services, so the permissions stay correct when the
# bus changes how it talks to JetStream:
#   1. starts nats-server (local binary, >= 2.9) with nats-server.conf + auth.conf on free ports,
#   2. runs `mom doctor` and `mom runner` as user runner, and `mom ingress cli` as user ingress-cli,
#      against the fake LLM (libs/testing), sends one line and waits for the reply, then sends a file
#      with /attach and has the agent attach a copy back (the files bucket both ways), then has it
#      post into a second terminal chat with the send tool (the runner reads that chat's receipts); runs
#      `mom console` as user console and opens each of its pages (every stream, the buckets, the ledger),
#      and makes each change an approver can make there: a spend limit raised (KV MOM_LIMITS, read by
#      the runner), a workspace tool approved (request/reply answered by the runner), a dead letter
#      fixed and put back on its inbound subject,
#   3. tries things the users must NOT be able to do and expects the server to refuse each one,
#   4. fails if the server logged any permission violation in step 2, or if a password from NATS_URL
#      shows up in any service log or terminal output.
#
#   npm run build && deploy/nats/verify-permissions.sh
#
# The services get their credentials the way a deployment gives them: in NATS_URL
# (nats://runner:<password>@host:port), which libs/bus splits into user/pass for nats.js.
set -euo pipefail

repo=$(cd "$(dirname "$0")/../.." && pwd)
mom="$repo/services/cli/bin/mom.js"
command -v nats-server >/dev/null || { echo "nats-server not found (apt-get install -y nats-server)" >&2; exit 2; }
[ -f "$repo/services/cli/dist/main.js" ] && [ -f "$repo/libs/testing/dist/fake-llm-main.js" ] || { echo "build first: npm run build" >&2; exit 2; }

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  if [ "${KEEP:-}" = 1 ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; echo "--- nats-server log" >&2; tail -n 30 "$tmp/nats.log" >&2 || true; exit 1; }

free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
wait_for() { # wait_for <file> <regex> <seconds>
  for _ in $(seq 1 $(($3 * 10))); do grep -Eq "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}

# --- Kubernetes deploys a copy of auth.conf: it must be the file tested here
cmp -s "$repo/deploy/nats/auth.conf" "$repo/k8s/components/nats-auth/auth.conf" \
  || { echo "FAIL: k8s/components/nats-auth/auth.conf differs from deploy/nats/auth.conf (copy it over)" >&2; exit 1; }

# --- NATS with the committed config, overriding only ports and the store dir
port=$(free_port); mport=$(free_port)
mkdir -p "$tmp/conf" "$tmp/js" "$tmp/data"
cp "$repo/deploy/nats/nats-server.conf" "$repo/deploy/nats/auth.conf" "$tmp/conf/"
cat > "$tmp/conf/test.conf" <<EOF
include ./nats-server.conf
include ./auth.conf
# Same keys as in nats-server.conf, so these win (port vs listen would be resolved in random order).
host: 127.0.0.1
port: $port
http_port: $mport
jetstream { store_dir: "$tmp/js", max_memory_store: 64MB, max_file_store: 1GB }
EOF
export MOM_RUNNER_PASSWORD="r-$RANDOM$RANDOM" MOM_INGRESS_CLI_PASSWORD="i-$RANDOM$RANDOM" MOM_SCHEDULER_PASSWORD="s-$RANDOM$RANDOM" MOM_CONSOLE_PASSWORD="c-$RANDOM$RANDOM"
# Users of ingresses this script does not run (test/deploy/ingress-users.test.ts runs them).
export MOM_INGRESS_MATRIX_PASSWORD="m-$RANDOM$RANDOM" MOM_INGRESS_EMAIL_PASSWORD="e-$RANDOM$RANDOM"
nats-server -t -c "$tmp/conf/test.conf" >/dev/null 2>&1 || { nats-server -t -c "$tmp/conf/test.conf"; fail "config does not parse"; }
nats-server -c "$tmp/conf/test.conf" >"$tmp/nats.log" 2>&1 &
pids+=($!)
wait_for "$tmp/nats.log" "Server is ready" 10 || fail "nats-server did not start"

# --- credentials in NATS_URL, as in a deployment (the passwords above need no percent-encoding)
# `env` execs the command, so `$!` of a background job is node's own pid (a shell function would
# put a subshell in between, and killing that leaves node running).
as_runner=(env NATS_URL="nats://runner:$MOM_RUNNER_PASSWORD@127.0.0.1:$port")
as_ingress_cli=(env NATS_URL="nats://ingress-cli:$MOM_INGRESS_CLI_PASSWORD@127.0.0.1:$port")
as_console=(env NATS_URL="nats://console:$MOM_CONSOLE_PASSWORD@127.0.0.1:$port")
as_nobody=(env NATS_URL="nats://127.0.0.1:$port")

# --- fake LLM and a data dir pointing at it. Its script: "ok" to the first line; for the /attach
# line, copy the upload (materialised by the runner) and attach the copy, then answer; then start
# a background job, and answer its end (which the runner publishes on mom.in as @jobs).
cat > "$tmp/turns.json" <<'EOF'
[
  { "text": "ok" },
  { "toolCalls": [{ "name": "bash", "arguments": { "label": "Copy the upload", "command": "cp attachments/*-upload.txt scratch/back.txt" } }] },
  { "toolCalls": [{ "name": "attach", "arguments": { "label": "Send it back", "path": "scratch/back.txt" } }] },
  { "text": "sent back" },
  { "toolCalls": [{ "name": "process", "arguments": { "label": "Start a job", "action": "start", "command": "sleep 1; echo job-done" } }] },
  { "text": "job started" },
  { "text": "the job is done" },
  { "text": "ok" },
  { "toolCalls": [{ "name": "send", "arguments": { "label": "Tell ops", "channel": "cli/ops", "text": "deploy at noon" } }] },
  { "text": "told ops" }
]
EOF
node "$repo/libs/testing/dist/fake-llm-main.js" - >"$tmp/llm.out" 2>"$tmp/llm.err" &
pids+=($!)
wait_for "$tmp/llm.out" baseUrl 10 || fail "fake LLM did not start"
base_url=$(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1],"utf8").split("\n")[0]).baseUrl)' "$tmp/llm.out")
node --input-type=module -e "
  import { fakeLlmModelsJson } from '$repo/libs/testing/dist/index.js';
  import { writeFileSync } from 'node:fs';
  writeFileSync('$tmp/data/models.json', JSON.stringify(fakeLlmModelsJson('$base_url')));
  writeFileSync('$tmp/data/config.json', JSON.stringify({ model: 'fake/fake-model', nats: { url: 'nats://127.0.0.1:$port' }, log: { level: 'info' }, send: { routes: [{ from: 'cli/local', to: ['cli/ops'] }] },
    limits: { channels: { 'cli/local': { day: { tokens: 10000000 } } } },
    console: { identityHeader: 'X-Auth-Request-User', users: { ops: { role: 'viewer' }, boss: { role: 'approver' } } } }));
"
# A workspace tool waiting for approval (the console approves it through a runner).
mkdir -p "$tmp/data/workspace/tools/greet"
echo 'export default { id: "demo.greeting.say", description: "Greets", risk: "read", parameters: { type: "object", properties: {} }, async execute() { return "hi"; } };' >"$tmp/data/workspace/tools/greet/index.ts"
export NATS_URL="nats://127.0.0.1:$port"     # without credentials: only deny.mjs below uses it

# --- 2. the services as their users
if "${as_nobody[@]}" node "$mom" doctor "$tmp/data" >"$tmp/doctor-anon.out" 2>&1; then
  cat "$tmp/doctor-anon.out"; fail "mom doctor without credentials got through"
fi
echo "ok   mom doctor without credentials is refused"
"${as_runner[@]}" node "$mom" doctor "$tmp/data" >"$tmp/doctor.out" 2>&1 || { cat "$tmp/doctor.out"; fail "mom doctor as runner"; }
echo "ok   mom doctor as runner"
# The script is queued only now: each mom doctor above made one tiny model call of its own.
node --input-type=module -e "
  import { connectFakeLlm } from '$repo/libs/testing/dist/index.js';
  import { readFileSync } from 'node:fs';
  await connectFakeLlm('$base_url').enqueue(...JSON.parse(readFileSync('$tmp/turns.json', 'utf8')));
"

"${as_runner[@]}" node "$mom" runner "$tmp/data" 2>"$tmp/runner.log" &
runner_pid=$!
pids+=($runner_pid)
wait_for "$tmp/runner.log" '"msg":"agent runner ready"' 20 || { tail "$tmp/runner.log"; fail "runner did not start"; }
echo "ok   mom runner as runner: streams and ownership buckets provisioned, consuming"

console_port=$(free_port)
"${as_console[@]}" MOM_CONSOLE_PORT="$console_port" node "$mom" console "$tmp/data" 2>"$tmp/console.log" &
console_pid=$!
pids+=($console_pid)
wait_for "$tmp/console.log" '"msg":"console ready"' 20 || { tail "$tmp/console.log"; fail "console did not start"; }

mkfifo "$tmp/cli.in"
"${as_ingress_cli[@]}" node "$mom" ingress cli "$tmp/data" <"$tmp/cli.in" >"$tmp/cli.out" 2>"$tmp/cli.log" &
cli_pid=$!
pids+=($cli_pid)
exec 3>"$tmp/cli.in"
wait_for "$tmp/cli.log" '"msg":"consuming"' 20 || { tail "$tmp/cli.log"; fail "cli ingress did not start consuming"; }
echo "hello from verify-permissions" >&3
wait_for "$tmp/cli.out" '(^|[^a-z])ok([^a-z]|$)' 30 || { cat "$tmp/cli.out"; tail "$tmp/runner.log" "$tmp/cli.log"; fail "no reply in the terminal"; }
echo "ok   mom ingress cli as ingress-cli: message in, reply out"
head -c 1500000 /dev/urandom | base64 >"$tmp/upload.txt" # ~2 MB: many chunks, flow control on the way back
echo "/attach $tmp/upload.txt send it back" >&3
wait_for "$tmp/cli.out" 'back.txt saved to' 30 || { cat "$tmp/cli.out"; tail "$tmp/runner.log" "$tmp/cli.log"; fail "the file did not come back"; }
cmp -s "$tmp/upload.txt" "$tmp/data/downloads/back.txt" || fail "the file that came back differs from the one sent"
echo "ok   files bucket: /attach in (ingress puts, runner gets), attach out (runner puts, ingress gets)"
echo "start a background job" >&3
wait_for "$tmp/cli.out" 'the job is done' 30 || { cat "$tmp/cli.out"; tail "$tmp/runner.log" "$tmp/cli.log"; fail "no report of the background job's end"; }
echo "ok   background job: its end published on mom.in by the runner, reported in the terminal"
# send: a second terminal chat (cli/ops) that mom has seen gets a post from cli/local; its ingress
# records the delivery and the post (mom.receipts.cli.ops, mom.in.cli.ops), the runner reads the receipt.
mkfifo "$tmp/ops.in"
"${as_ingress_cli[@]}" MOM_CLI_CHANNEL=ops node "$mom" ingress cli "$tmp/data" <"$tmp/ops.in" >"$tmp/ops.out" 2>"$tmp/ops.log" &
ops_pid=$!
pids+=($ops_pid)
exec 4>"$tmp/ops.in"
wait_for "$tmp/ops.log" '"msg":"consuming"' 20 || { tail "$tmp/ops.log"; fail "second cli ingress did not start consuming"; }
echo "hello from ops" >&4
wait_for "$tmp/ops.out" '(^|[^a-z])ok([^a-z]|$)' 30 || { cat "$tmp/ops.out"; tail "$tmp/runner.log" "$tmp/ops.log"; fail "no reply in the ops terminal"; }
echo "tell ops about the deploy" >&3
wait_for "$tmp/ops.out" 'deploy at noon' 30 || { cat "$tmp/ops.out"; tail "$tmp/runner.log" "$tmp/ops.log"; fail "the post did not reach the ops terminal"; }
wait_for "$tmp/cli.out" 'told ops' 30 || { cat "$tmp/cli.out"; tail "$tmp/runner.log"; fail "no answer after the post"; }
grep -q '"msg":"post delivered"' "$tmp/runner.log" || { tail "$tmp/runner.log"; fail "the runner did not read the post's delivery receipt"; }
echo "ok   send: cli/local posts into cli/ops, the runner reads the delivery receipt"
exec 4>&-
wait "$ops_pid" 2>/dev/null || true
page() { curl -fsS -H "X-Auth-Request-User: ops" "http://127.0.0.1:$console_port$1"; }
# Whether a page holds a pattern; read whole first (`page | grep -q` under pipefail fails when grep stops early).
page_has() { page "$1" >"$tmp/page.html" && grep -q "$2" "$tmp/page.html"; }
for _ in $(seq 1 50); do page_has / 'cli/local' && break; sleep 0.1; done
page_has / 'cli/local' || { page / | head -c 2000; tail "$tmp/console.log"; fail "the console's overview does not show cli/local"; }
page /channels/cli/local >"$tmp/channel.html" || fail "the console's channel page"
grep -q 'hello from verify-permissions' "$tmp/channel.html" || fail "the console's channel page lacks the conversation"
run_path=$(grep -o '/channels/cli/local/runs/[^"]*' "$tmp/channel.html" | head -n 1)
[ -n "$run_path" ] || fail "the console's channel page links no run"
page_has "$run_path" 'data-kind="end"' || fail "the console's run page ($run_path)"
page /dead-letters >/dev/null || fail "the console's dead letters page"
page /spend >/dev/null || fail "the console's spend page"
page_has /tools 'data-tool="greet"' || { tail "$tmp/console.log"; fail "the console's tools page (answered by the runner) lacks greet"; }
echo "ok   mom console as console: overview, channel, run, dead letters, spend and tools pages"
# What an approver changes, as the browser posts it (same origin).
change() { curl -sS -o /dev/null -w '%{http_code}' -H "X-Auth-Request-User: boss" -H "Origin: http://127.0.0.1:$console_port" -H "Sec-Fetch-Site: same-origin" "http://127.0.0.1:$console_port$1" "${@:2}"; }
code=$(change /spend/limits --data 'kind=channel&id=cli/local&period=day&action=set&tokens=20000000')
[ "$code" = 303 ] || { tail "$tmp/console.log"; fail "the console could not change a spend limit (HTTP $code)"; }
wait_for "$tmp/runner.log" '"msg":"spend limit changed from the console"' 10 || { tail "$tmp/runner.log"; fail "the runner did not see the console's spend limit"; }
echo "ok   console writes a spend limit to MOM_LIMITS, the runner reads it"
curl -fsS -H "X-Auth-Request-User: boss" "http://127.0.0.1:$console_port/tools" >"$tmp/tools.html" || fail "the console's tools page for an approver"
sha=$(grep -m 1 -o 'name="sha256" value="[0-9a-f]*"' "$tmp/tools.html" | sed 's/.*value="//; s/"//' || true)
[ -n "$sha" ] || fail "the console's tools page offers no approval of greet"
code=$(change /tools/greet/approve --data "sha256=$sha")
[ "$code" = 303 ] || { tail "$tmp/console.log" "$tmp/runner.log"; fail "the console could not approve a workspace tool (HTTP $code)"; }
grep -q '"approvedBy": "boss (console)"' "$tmp/data/tool-approvals.json" || fail "the runner did not record the console's tool approval"
echo "ok   console asks a runner to approve a workspace tool (request/reply), the runner writes it"
# The cli ingress's user publishes something that is not a ChannelMessage; the runner dead-letters it.
node --input-type=module -e "
  import { connect } from '$repo/node_modules/@nats-io/transport-node/lib/mod.js';
  import { jetstream } from '$repo/node_modules/@nats-io/jetstream/lib/mod.js';
  const nc = await connect({ servers: 'nats://127.0.0.1:$port', user: 'ingress-cli', pass: process.env.MOM_INGRESS_CLI_PASSWORD });
  await jetstream(nc).publish('mom.in.cli.local', JSON.stringify({ text: 'not a ChannelMessage' }));
  await nc.close();
" || fail "could not publish as ingress-cli"
for _ in $(seq 1 50); do page_has /dead-letters 'href="/dead-letters/[0-9]' && break; sleep 0.1; done
page /dead-letters >"$tmp/dead-letters.html"
dlq=$(grep -m 1 -o 'href="/dead-letters/[0-9]*"' "$tmp/dead-letters.html" | grep -o '[0-9]*' || true)
[ -n "$dlq" ] || fail "the refused payload is not on the console's dead letters page"
page "/dead-letters/$dlq" >/dev/null || fail "the console's page of dead letter #$dlq"
fixed='{"id":"fixed-1","channelId":"local","timestamp":"2026-01-01T00:00:00.000Z","sender":{"id":"u1","username":"ops","isBot":false},"text":"fixed from the console","attachments":[],"isMention":false}'
code=$(change "/dead-letters/$dlq/republish" --data-urlencode "payload=$fixed")
[ "$code" = 303 ] || { tail "$tmp/console.log"; fail "the console could not re-publish a fixed dead letter (HTTP $code)"; }
for _ in $(seq 1 50); do page_has /channels/cli/local 'fixed from the console' && break; sleep 0.1; done
page_has /channels/cli/local 'fixed from the console' || fail "the fixed message is not in the channel"
echo "ok   console puts a fixed dead letter back on mom.in.cli.local"
exec 3>&-
wait "$cli_pid" 2>/dev/null || true
kill -TERM "$console_pid"
wait "$console_pid" || fail "console did not exit cleanly on SIGTERM"
kill -TERM "$runner_pid"
wait "$runner_pid" || fail "runner did not exit cleanly on SIGTERM"
grep -q '"msg":"bus drained"' "$tmp/runner.log" || fail "runner exited without draining"
if grep -Eq "Violation" "$tmp/nats.log"; then grep -E "Violation" "$tmp/nats.log" | sort | uniq -c >&2; fail "the services hit permission violations"; fi
echo "ok   no permission violations while the services ran and shut down"

# --- 3. what must be refused
cat > "$tmp/deny.mjs" <<EOF
import { connect } from "$repo/node_modules/@nats-io/transport-node/lib/mod.js";
import { jetstream, jetstreamManager } from "$repo/node_modules/@nats-io/jetstream/lib/mod.js";
const [user, pass, what, arg] = process.argv.slice(2);
const nc = await connect({ servers: process.env.NATS_URL, user, pass, reconnect: false });
let denied = false;
(async () => { for await (const s of nc.status()) if (s.type === "error" && /Permissions Violation/.test(String(s.error?.message))) denied = true; })();
try {
  if (what === "publish") await jetstream(nc).publish(arg, "{}", { timeout: 1500 });
  else if (what === "delete-stream") await (await jetstreamManager(nc)).streams.delete(arg);
  else if (what === "subscribe") { nc.subscribe(arg); await nc.flush(); }
  else if (what === "read-inbound") {
    const c = await jetstream(nc).consumers.get("MOM_IN", { filter_subjects: arg, deliver_policy: "last_per_subject" });
    const got = [];
    for await (const m of await c.fetch({ max_messages: 10, expires: 1000 })) { got.push(m.subject); if (m.info.pending === 0) break; }
    await c.delete().catch(() => {});
    if (process.env.EXPECT_READ && !denied && got.includes(process.env.EXPECT_READ)) { await nc.close(); console.log("read"); process.exit(0); }
  }
} catch {}
await new Promise((r) => setTimeout(r, 300));
await nc.close().catch(() => {});
console.log(denied ? "denied" : "ALLOWED");
process.exit(denied ? 0 : 1);
EOF
refuse() { # refuse <user> <password> <what> <arg>
  if node "$tmp/deny.mjs" "$@" >/dev/null 2>&1; then echo "ok   $1 cannot $3 $4"; else fail "$1 could $3 $4"; fi
}
# Backfill reads (ordered consumers on MOM_IN): its own adapter's channels yes, another adapter's no.
EXPECT_READ=mom.in.cli.local node "$tmp/deny.mjs" ingress-cli "$MOM_INGRESS_CLI_PASSWORD" read-inbound "mom.in.cli.*" >/dev/null 2>&1 \
  || fail "ingress-cli could not read its own adapter's inbound messages (backfill)"
echo "ok   ingress-cli reads the last inbound message of its own channels (backfill)"
refuse ingress-cli "$MOM_INGRESS_CLI_PASSWORD" read-inbound "mom.in.slack-acme.*"
refuse ingress-cli "$MOM_INGRESS_CLI_PASSWORD" read-inbound "mom.in.>"
refuse ingress-cli "$MOM_INGRESS_CLI_PASSWORD" publish mom.in.slack-acme.C1
refuse ingress-cli "$MOM_INGRESS_CLI_PASSWORD" publish mom.out.cli.local
refuse ingress-cli "$MOM_INGRESS_CLI_PASSWORD" delete-stream MOM_IN
refuse ingress-cli "$MOM_INGRESS_CLI_PASSWORD" subscribe "mom.in.>"
refuse runner "$MOM_RUNNER_PASSWORD" publish mom.ctl.cli.local
refuse ingress-cli "$MOM_INGRESS_CLI_PASSWORD" publish mom.ctl.slack-acme.C1
# What an ingress drew of each run (KV MOM_DRAWN): its own adapter's keys only.
refuse ingress-cli "$MOM_INGRESS_CLI_PASSWORD" publish '$KV.MOM_DRAWN.slack-acme.r1'
refuse runner "$MOM_RUNNER_PASSWORD" publish '$KV.MOM_DRAWN.cli.r1'
refuse runner "$MOM_RUNNER_PASSWORD" delete-stream MOM_OUT
refuse scheduler "$MOM_SCHEDULER_PASSWORD" publish mom.out.cli.local
# The console decides approvals, puts fixed dead letters back and changes spend limits (above); nothing else.
node "$tmp/deny.mjs" console "$MOM_CONSOLE_PASSWORD" publish mom.ctl.cli.local >/dev/null 2>&1 \
  && fail "console could not publish an approval decision on mom.ctl.cli.local"
echo "ok   console publishes on a channel's control subject (approval decisions)"
refuse console "$MOM_CONSOLE_PASSWORD" publish mom.out.cli.local
refuse console "$MOM_CONSOLE_PASSWORD" publish mom.receipts.cli.local
refuse console "$MOM_CONSOLE_PASSWORD" publish mom.dlq.console
refuse console "$MOM_CONSOLE_PASSWORD" publish '$KV.MOM_CHANNELS.cli.local'
refuse console "$MOM_CONSOLE_PASSWORD" delete-stream MOM_DLQ
refuse console "$MOM_CONSOLE_PASSWORD" subscribe "mom.ctl.>"
refuse console "$MOM_CONSOLE_PASSWORD" subscribe "mom.tools.approve"
refuse console "$MOM_CONSOLE_PASSWORD" publish '$KV.MOM_AUTH_COOLDOWNS.x'
# Only the console asks for tool approvals; the runner only answers them.
refuse runner "$MOM_RUNNER_PASSWORD" publish mom.tools.approve
refuse runner "$MOM_RUNNER_PASSWORD" publish '$KV.MOM_LIMITS.global.day'
refuse ingress-cli "$MOM_INGRESS_CLI_PASSWORD" publish mom.tools.approve

# --- 4. credentials from NATS_URL must not reach logs or terminal output (last, so the checks above
# report even when this fails)
leaks=$(grep -lF -e "$MOM_RUNNER_PASSWORD" -e "$MOM_INGRESS_CLI_PASSWORD" -e "$MOM_CONSOLE_PASSWORD" "$tmp"/*.log "$tmp"/*.out || true)
[ -z "$leaks" ] || fail "a password from NATS_URL shows up in: $(echo $leaks | sed "s|$tmp/||g")"
echo "ok   no password from NATS_URL in the services' logs or output"
echo "PASS: deploy/nats/auth.conf"
