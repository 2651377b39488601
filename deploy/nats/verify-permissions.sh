#!/usr/bin/env bash
# Checks deploy/nats/auth.conf against the real services, so the permissions stay correct when the
# bus changes how it talks to JetStream:
#   1. starts nats-server (local binary, >= 2.9) with nats-server.conf + auth.conf on free ports,
#   2. runs `mom doctor` and `mom runner` as user runner, and `mom ingress cli` as user ingress-cli,
#      against the fake LLM (libs/testing), sends one line and waits for the reply, then sends a file
#      with /attach and has the agent attach a copy back (the files bucket both ways),
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
export MOM_RUNNER_PASSWORD="r-$RANDOM$RANDOM" MOM_INGRESS_CLI_PASSWORD="i-$RANDOM$RANDOM" MOM_SCHEDULER_PASSWORD="s-$RANDOM$RANDOM"
nats-server -t -c "$tmp/conf/test.conf" >/dev/null 2>&1 || { nats-server -t -c "$tmp/conf/test.conf"; fail "config does not parse"; }
nats-server -c "$tmp/conf/test.conf" >"$tmp/nats.log" 2>&1 &
pids+=($!)
wait_for "$tmp/nats.log" "Server is ready" 10 || fail "nats-server did not start"

# --- credentials in NATS_URL, as in a deployment (the passwords above need no percent-encoding)
# `env` execs the command, so `$!` of a background job is node's own pid (a shell function would
# put a subshell in between, and killing that leaves node running).
as_runner=(env NATS_URL="nats://runner:$MOM_RUNNER_PASSWORD@127.0.0.1:$port")
as_ingress_cli=(env NATS_URL="nats://ingress-cli:$MOM_INGRESS_CLI_PASSWORD@127.0.0.1:$port")
as_nobody=(env NATS_URL="nats://127.0.0.1:$port")

# --- fake LLM and a data dir pointing at it. Its script: "ok" to the first line; for the /attach
# line, copy the upload (materialised by the runner) and attach the copy, then answer.
cat > "$tmp/turns.json" <<'EOF'
[
  { "text": "ok" },
  { "toolCalls": [{ "name": "bash", "arguments": { "label": "Copy the upload", "command": "cp attachments/*-upload.txt scratch/back.txt" } }] },
  { "toolCalls": [{ "name": "attach", "arguments": { "label": "Send it back", "path": "scratch/back.txt" } }] },
  { "text": "sent back" }
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
  writeFileSync('$tmp/data/config.json', JSON.stringify({ model: 'fake/fake-model', nats: { url: 'nats://127.0.0.1:$port' }, log: { level: 'info' } }));
"
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
exec 3>&-
wait "$cli_pid" 2>/dev/null || true
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
refuse runner "$MOM_RUNNER_PASSWORD" publish mom.in.cli.local
refuse runner "$MOM_RUNNER_PASSWORD" publish mom.ctl.cli.local
refuse ingress-cli "$MOM_INGRESS_CLI_PASSWORD" publish mom.ctl.slack-acme.C1
refuse runner "$MOM_RUNNER_PASSWORD" delete-stream MOM_OUT
refuse scheduler "$MOM_SCHEDULER_PASSWORD" publish mom.out.cli.local

# --- 4. credentials from NATS_URL must not reach logs or terminal output (last, so the checks above
# report even when this fails)
leaks=$(grep -lF -e "$MOM_RUNNER_PASSWORD" -e "$MOM_INGRESS_CLI_PASSWORD" "$tmp"/*.log "$tmp"/*.out || true)
[ -z "$leaks" ] || fail "a password from NATS_URL shows up in: $(echo $leaks | sed "s|$tmp/||g")"
echo "ok   no password from NATS_URL in the services' logs or output"
echo "PASS: deploy/nats/auth.conf"
