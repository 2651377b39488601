// Real mail servers for e-mail tests: Debian's dovecot (IMAP, and LMTP for delivery) and postfix
// (SMTP), each an instance of its own in a temp dir on free loopback ports. Postfix takes mail for
// the test domains and hands it to dovecot over LMTP (virtual mailboxes), authenticates senders
// through dovecot's auth service, and bounces what dovecot refuses, as a real setup does.
import { type ChildProcess, spawn } from "node:child_process";
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { spawnSync } from "node:child_process";
import nodemailer from "nodemailer";
import type { SendMailOptions } from "nodemailer";
import { type ParsedMail, simpleParser } from "mailparser";
import { freePort, waitForPort } from "./nats-server.js";

const DOVECOT = "/usr/sbin/dovecot";
const LMTP = "/usr/lib/dovecot/lmtp";
const POSTFIX = "/usr/sbin/postfix";
const POSTFIX_MASTER = "/usr/lib/postfix/sbin/master";

/** Why the mail servers cannot run here (a test skips with it), or undefined when they can. */
export function mailServersUnavailable(): string | undefined {
  const missing = [DOVECOT, LMTP, POSTFIX, POSTFIX_MASTER].filter((b) => !existsSync(b));
  if (missing.length) return `the mail server binaries are not installed (${missing.join(", ")}): apt-get install dovecot-imapd dovecot-lmtpd postfix`;
  if (process.getuid?.() !== 0) return "postfix's master runs only as root, and these tests are not root";
  return undefined;
}

export interface MailServersOptions {
  /** The mailboxes, address -> password. Their domains are the ones postfix delivers into dovecot. */
  users: Record<string, string>;
  /** Domains postfix accepts mail for and then fails to deliver (dovecot has no such user): a real bounce to the sender. */
  bouncingDomains?: string[];
}

export interface DeliveredMail {
  /** The message as stored, headers and body. */
  source: Buffer;
  /** IMAP \Seen (the Maildir's S flag). */
  seen: boolean;
}

export interface MailServers {
  host: string;
  imapPort: number;
  /** Postfix's SMTP port: loopback clients may send without logging in, others log in (SASL through dovecot). */
  smtpPort: number;
  dir: string;
  /** Sends a message as a mail client on the same network does; resolves with its Message-ID. */
  send(message: SendMailOptions): Promise<string>;
  /** The messages dovecot holds for `address`, oldest first (read from its Maildir). */
  mailbox(address: string): DeliveredMail[];
  /** The same, parsed. */
  messages(address: string): Promise<Array<ParsedMail & { seen: boolean }>>;
  /** The postfix log (deliveries, bounces). */
  mailLog(): string;
  /** Stops dovecot: IMAP connections drop and delivery is deferred until `startImap`. */
  stopImap(): Promise<void>;
  startImap(): Promise<void>;
  stop(): Promise<void>;
}

function domainOf(address: string): string {
  return address.slice(address.indexOf("@") + 1);
}

/** A process as /proc shows it; `start` (its start time since boot) tells it from a later one of the same pid. */
interface Member {
  pid: number;
  comm: string;
  start: string;
}

/** The processes of process group `pgid` (read from /proc). */
function groupMembers(pgid: number): Member[] {
  const out: Member[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    const m = statOf(Number(name));
    if (m && m.pgid === pgid) out.push(m);
  }
  return out;
}

function statOf(pid: number): (Member & { pgid: number }) | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // "pid (comm) state ppid pgrp ... starttime(22nd)": comm may hold spaces and parentheses.
    const close = stat.lastIndexOf(")");
    const rest = stat.slice(close + 2).split(" ");
    return { pid, comm: stat.slice(stat.indexOf("(") + 1, close), pgid: Number(rest[2]), start: rest[19]! };
  } catch {
    return undefined; // gone
  }
}

function kill(m: Member): void {
  // Only the process seen then, not a later one given its pid.
  if (statOf(m.pid)?.start !== m.start) return;
  try {
    process.kill(m.pid, "SIGKILL");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ESRCH") throw err; // gone meanwhile
  }
}

/**
 * Stops a master started in a process group of its own (SIGTERM; SIGKILL after 5 s), then kills
 * what is left of its group, or of it only the processes named `only`, and resolves with the
 * rest. Dovecot's imap processes outlive a master stopped by SIGTERM and hold their clients'
 * connections open for seconds (longer on a busy machine): without this an outage is none.
 */
async function stopProcess(child: ChildProcess | undefined, only?: string[]): Promise<Member[]> {
  if (!child?.pid || child.exitCode !== null || child.signalCode !== null) return [];
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), 5000);
  await exited;
  clearTimeout(timer);
  // Read right away: a group id is not given to a new process while the group has members.
  const left = groupMembers(child.pid);
  for (const m of left) if (!only || only.includes(m.comm)) kill(m);
  return only ? left.filter((m) => !only.includes(m.comm)) : [];
}

/** Starts dovecot and postfix for `users`; stop() ends both and removes their directory. */
export async function startMailServers(o: MailServersOptions): Promise<MailServers> {
  const why = mailServersUnavailable();
  if (why) throw new Error(why);
  const dir = mkdtempSync(join(tmpdir(), "mom-mail-"));
  // Dovecot's and postfix's unprivileged processes reach their sockets and files below it.
  chmodSync(dir, 0o755);
  const [imapPort, lmtpPort, authPort, smtpPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const host = "127.0.0.1";
  const domains = [...new Set(Object.keys(o.users).map(domainOf))];
  const mail = join(dir, "mail");
  mkdirSync(mail);
  const mailUser = userInfo({ encoding: "utf8" }).uid === 0 ? "mail" : userInfo().username;
  const mailUid = Number(spawnSync("id", ["-u", mailUser], { encoding: "utf8" }).stdout.trim());
  chownSync(mail, mailUid, Number(spawnSync("id", ["-g", mailUser], { encoding: "utf8" }).stdout.trim()));
  writeFileSync(join(dir, "users"), Object.entries(o.users).map(([a, p]) => `${a}:{PLAIN}${p}\n`).join(""));
  const dovecotConf = join(dir, "dovecot.conf");
  writeFileSync(
    dovecotConf,
    `base_dir = ${dir}/dovecot-run
state_dir = ${dir}/dovecot-state
log_path = ${dir}/dovecot.log
instance_name = mom-test-${imapPort}
protocols = imap lmtp
listen = ${host}
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
auth_failure_delay = 0
mail_location = maildir:${mail}/%d/%n
mail_uid = ${mailUser}
mail_gid = ${mailUser}
first_valid_uid = ${mailUid}
passdb {
  driver = passwd-file
  args = scheme=PLAIN username_format=%u ${dir}/users
}
userdb {
  driver = static
  args = home=${mail}/%d/%n
}
service imap-login {
  inet_listener imap {
    address = ${host}
    port = ${imapPort}
  }
  inet_listener imaps {
    port = 0
  }
}
service lmtp {
  inet_listener lmtp {
    address = ${host}
    port = ${lmtpPort}
  }
}
service auth {
  inet_listener postfix-sasl {
    address = ${host}
    port = ${authPort}
  }
}
`,
  );
  const pf = join(dir, "postfix");
  mkdirSync(join(pf, "queue"), { recursive: true });
  mkdirSync(join(pf, "data"));
  chownSync(join(pf, "data"), Number(spawnSync("id", ["-u", "postfix"], { encoding: "utf8" }).stdout.trim()), 0);
  const table = (name: string, lines: string[]) => (writeFileSync(join(pf, name), lines.map((l) => `${l}\n`).join("")), `texthash:${join(pf, name)}`);
  writeFileSync(
    join(pf, "main.cf"),
    `compatibility_level = 3.6
queue_directory = ${pf}/queue
data_directory = ${pf}/data
maillog_file = ${pf}/maillog
maillog_file_prefixes = ${dir}
syslog_name = postfix-mom-test-${smtpPort}
myhostname = mx.mom.test
mydestination =
inet_interfaces = ${host}
inet_protocols = ipv4
mynetworks = 127.0.0.0/8
smtpd_sasl_auth_enable = yes
smtpd_sasl_type = dovecot
smtpd_sasl_path = inet:${host}:${authPort}
smtpd_relay_restrictions = permit_mynetworks, permit_sasl_authenticated, reject_unauth_destination
virtual_mailbox_domains = ${domains.join(", ")}
virtual_mailbox_maps = ${table("mailboxes", Object.keys(o.users).map((a) => `${a} ok`))}
virtual_transport = lmtp:inet:${host}:${lmtpPort}
relay_domains = ${(o.bouncingDomains ?? []).join(", ")}
transport_maps = ${table("transport", (o.bouncingDomains ?? []).map((d) => `${d} lmtp:inet:${host}:${lmtpPort}`))}
alias_maps =
alias_database =
smtp_dns_support_level = disabled
# Mail deferred while dovecot is down (stopImap) goes out within seconds of its return.
queue_run_delay = 1s
minimal_backoff_time = 1s
maximal_backoff_time = 2s
smtputf8_enable = no
biff = no
`,
  );
  // No chroot: the daemons read the temp dir as it is.
  const services = [
    `${host}:${smtpPort} inet n - n - - smtpd`,
    "pickup unix n - n 60 1 pickup",
    "cleanup unix n - n - 0 cleanup",
    "qmgr unix n - n 300 1 qmgr",
    "rewrite unix - - n - - trivial-rewrite",
    "bounce unix - - n - 0 bounce",
    "defer unix - - n - 0 bounce",
    "trace unix - - n - 0 bounce",
    "verify unix - - n - 1 verify",
    "flush unix n - n 1000? 0 flush",
    "proxymap unix - - n - - proxymap",
    "smtp unix - - n - - smtp",
    "relay unix - - n - - smtp",
    "showq unix n - n - - showq",
    "error unix - - n - - error",
    "retry unix - - n - - error",
    "discard unix - - n - - discard",
    "lmtp unix - - n - - lmtp",
    "anvil unix - - n - 1 anvil",
    "scache unix - - n - 1 scache",
    "postlog unix-dgram n - n - 1 postlogd",
  ];
  writeFileSync(join(pf, "master.cf"), services.map((s) => `${s}\n`).join(""));

  let dovecot: ChildProcess | undefined;
  let postfix: ChildProcess | undefined;
  // What an IMAP outage left running (dovecot's auth, which postfix's SMTP logins use, and its
  // log): until dovecot starts again, which needs their listening sockets back.
  const leftovers: Member[] = [];
  const startImap = async () => {
    leftovers.splice(0).forEach(kill);
    dovecot = spawn(DOVECOT, ["-F", "-c", dovecotConf], { stdio: "ignore", detached: true });
    await waitForPort(imapPort, dovecot, 15_000, `dovecot (log: ${dir}/dovecot.log)`);
  };
  const stopAll = async () => {
    await stopProcess(postfix);
    await stopProcess(dovecot);
    leftovers.splice(0).forEach(kill);
  };
  try {
    await startImap();
    // `postfix check` lays out the queue directory (and says what is wrong with the config).
    const check = spawnSync(POSTFIX, ["-c", pf, "check"], { encoding: "utf8" });
    if (check.status !== 0) throw new Error(`postfix check failed: ${check.stderr || readFileSync(join(pf, "maillog"), "utf8")}`);
    postfix = spawn(POSTFIX_MASTER, ["-d", "-c", pf], { stdio: "ignore", detached: true });
    await waitForPort(smtpPort, postfix, 15_000, `postfix (log: ${pf}/maillog)`);
  } catch (err) {
    await stopAll();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  const transport = nodemailer.createTransport({ host, port: smtpPort, secure: false, ignoreTLS: true });
  const servers: MailServers = {
    host,
    imapPort,
    smtpPort,
    dir,
    async send(message) {
      const info = await transport.sendMail(message);
      return info.messageId;
    },
    mailbox(address) {
      const box = join(mail, domainOf(address), address.slice(0, address.indexOf("@")));
      let files = ["new", "cur"].flatMap((sub) => (existsSync(join(box, sub)) ? readdirSync(join(box, sub)).map((f) => ({ sub, f })) : []));
      // Maildir names start with the delivery time (seconds, then microseconds): `1795767622.M665671P17037.host`.
      const key = (f: string) => {
        const m = /^(\d+)\.M(\d+)/.exec(f);
        return m ? Number(m[1]) * 1e6 + Number(m[2]) : 0;
      };
      // A message dovecot moves from new/ to cur/ between the two listings is in both: listed once.
      const unique = new Map(files.map((x) => [x.f.split(":")[0]!, x]));
      files = [...unique.values()].sort((a, b) => key(a.f) - key(b.f));
      // Dovecot moves a message from new/ to cur/ (and renames it with its flags) while we read.
      const read = ({ sub, f }: { sub: string; f: string }): DeliveredMail | undefined => {
        const base = f.split(":")[0]!;
        for (const [dir, name] of [[sub, f], ...(existsSync(join(box, "cur")) ? readdirSync(join(box, "cur")).filter((n) => n.split(":")[0] === base).map((n) => ["cur", n]) : [])] as const) {
          try {
            return { source: readFileSync(join(box, dir, name)), seen: dir === "cur" && /:2,[A-Z]*S/.test(name) };
          } catch (err) {
            if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
          }
        }
        return undefined;
      };
      return files.map(read).filter((m): m is DeliveredMail => m !== undefined);
    },
    async messages(address) {
      return Promise.all(servers.mailbox(address).map(async (m) => Object.assign(await simpleParser(m.source), { seen: m.seen })));
    },
    mailLog: () => (existsSync(join(pf, "maillog")) ? readFileSync(join(pf, "maillog"), "utf8") : ""),
    // Clients' IMAP connections and LMTP deliveries drop at once; SMTP still takes mail to defer.
    stopImap: async () => void leftovers.push(...(await stopProcess(dovecot, ["imap", "imap-login", "lmtp"]))),
    startImap,
    async stop() {
      transport.close();
      await stopAll();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return servers;
}
