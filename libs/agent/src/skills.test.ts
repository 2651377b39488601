import { afterAll, describe, expect, it } from "@jest/globals";
import { execFileSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadMomSkills, SKILL_FILE_MAX_BYTES, SKILL_FRONTMATTER_MAX_BYTES, SKILL_FRONTMATTER_MAX_TOTAL_BYTES, SKILL_MAX_DEPTH } from "./skills.js";
import { mainThreadCpu } from "@mom/testing";

const base = mkdtempSync(join(tmpdir(), "mom-skills-"));
afterAll(() => rmSync(base, { recursive: true, force: true }));
let n = 0;

function workspace() {
  const ws = join(base, `w${++n}`);
  const channel = join(ws, "channels", "cli", "a");
  const other = join(ws, "channels", "cli", "b");
  for (const d of [join(ws, "skills"), join(channel, "skills"), join(other, "skills", "secret")]) mkdirSync(d, { recursive: true });
  writeFileSync(join(other, "skills", "secret", "SKILL.md"), skill("secret", "b's private skill"));
  return { ws, channel, other };
}

const skill = (name: string, description: string) => `---\nname: ${name}\ndescription: ${description}\n---\nDo it.\n`;
function put(dir: string, name: string, text: string) {
  mkdirSync(join(dir, name), { recursive: true });
  writeFileSync(join(dir, name, "SKILL.md"), text);
}

describe("loadMomSkills", () => {
  it("loads workspace and channel skills (the channel's wins on a name clash), root .md files too", async () => {
    const { ws, channel } = workspace();
    put(join(ws, "skills"), "report", skill("report", "global report"));
    put(join(ws, "skills"), "deploy", skill("deploy", "deploys"));
    put(join(channel, "skills"), "report", skill("report", "channel report"));
    put(join(channel, "skills", "group"), "nested", skill("nested", "one level down"));
    writeFileSync(join(ws, "skills", "loose.md"), "---\ndescription: a loose skill\n---\n");
    const { skills, problems } = await loadMomSkills(ws, channel);
    const byName = Object.fromEntries(skills.map((s) => [s.name, s]));
    expect(Object.keys(byName).sort()).toEqual(["deploy", "nested", "report", "skills"]);
    expect(byName.report).toMatchObject({ description: "channel report", filePath: join(channel, "skills", "report", "SKILL.md"), baseDir: join(channel, "skills", "report") });
    expect(byName.nested!.filePath).toBe(join(channel, "skills", "group", "nested", "SKILL.md"));
    expect(problems).toEqual([]);
  });

  it("does not freeze on a FIFO .gitignore, .ignore or SKILL.md, and says what it skipped", async () => {
    const { ws, channel } = workspace();
    put(join(channel, "skills"), "ok", skill("ok", "still loads"));
    execFileSync("mkfifo", [join(channel, "skills", ".gitignore"), join(channel, "skills", ".ignore"), join(ws, "skills", ".fdignore")]);
    mkdirSync(join(channel, "skills", "piped"));
    execFileSync("mkfifo", [join(channel, "skills", "piped", "SKILL.md")]);
    const started = Date.now();
    const { skills, problems } = await loadMomSkills(ws, channel);
    expect(Date.now() - started).toBeLessThan(2000);
    expect(skills.map((s) => s.name)).toEqual(["ok"]);
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/skills\/\.gitignore: is not a regular file/),
        expect.stringMatching(/skills\/\.ignore: is not a regular file/),
        expect.stringMatching(/skills\/\.fdignore: is not a regular file/),
        expect.stringMatching(/skills\/piped\/SKILL\.md: is a FIFO, not a regular file/),
      ]),
    );
  });

  it("never follows a symlink: not to the host's root, not to another channel's skills, not a symlinked SKILL.md", async () => {
    const { ws, channel, other } = workspace();
    symlinkSync("/", join(channel, "skills", "host"));
    symlinkSync(join(other, "skills", "secret"), join(channel, "skills", "secret"));
    mkdirSync(join(channel, "skills", "linked"));
    symlinkSync(join(other, "skills", "secret", "SKILL.md"), join(channel, "skills", "linked", "SKILL.md"));
    const started = Date.now();
    const { skills, problems } = await loadMomSkills(ws, channel);
    expect(Date.now() - started).toBeLessThan(2000);
    expect(skills).toEqual([]);
    expect(problems.sort()).toEqual(
      [`${join(channel, "skills", "host")}: is a symlink`, `${join(channel, "skills", "linked", "SKILL.md")}: is a symlink`, `${join(channel, "skills", "secret")}: is a symlink`].map((p) =>
        expect.stringContaining(p),
      ),
    );
  });

  it("skips a skills/ that is itself a symlink or a FIFO", async () => {
    const { ws, channel, other } = workspace();
    rmSync(join(channel, "skills"), { recursive: true });
    symlinkSync(join(other, "skills"), join(channel, "skills"));
    rmSync(join(ws, "skills"), { recursive: true });
    execFileSync("mkfifo", [join(ws, "skills")]);
    const { skills, problems } = await loadMomSkills(ws, channel);
    expect(skills).toEqual([]);
    expect(problems).toEqual([expect.stringMatching(/skills: is a FIFO, not a directory; skipped$/), expect.stringMatching(/skills: is a symlink .*; skipped$/)]);
  });

  it("bounds what it reads: an oversized SKILL.md is skipped, deep trees are not walked", async () => {
    const { ws, channel } = workspace();
    put(join(channel, "skills"), "huge", skill("huge", "x".repeat(SKILL_FILE_MAX_BYTES)));
    let deep = join(channel, "skills");
    for (let i = 0; i <= SKILL_MAX_DEPTH; i++) deep = join(deep, `d${i}`);
    put(deep, "deep", skill("deep", "too deep"));
    const { skills, problems } = await loadMomSkills(ws, channel);
    expect(skills).toEqual([]);
    expect(problems).toEqual(
      expect.arrayContaining([expect.stringMatching(/huge\/SKILL\.md: is \d+ bytes, more than the 262144/), expect.stringMatching(/more than 4 directories deep; not looked into/)]),
    );
  });

  // Front matter is YAML, parsed synchronously on the runner's event loop, which serves every
  // channel; the yaml library checks each key of a mapping against all the ones before it, so a
  // mapping of n keys costs n². Four SKILL.md of 100 KB of "kN: v" lines (well under the 256 KB a
  // SKILL.md may have) held the runner for seconds on every run of the channel that wrote them.
  it("parses at most a few KB of front matter per skill, and a bounded amount per skills/", async () => {
    const { ws, channel } = workspace();
    const keys = (bytes: number) => {
      let out = "";
      for (let i = 0; out.length < bytes; i++) out += `k${i}: v\n`;
      return out;
    };
    const bomb = (name: string) => `---\nname: ${name}\ndescription: slow\n${keys(100_000)}---\nx\n`;
    for (const name of ["bomb-a", "bomb-b", "bomb-c", "bomb-d"]) put(join(channel, "skills"), name, bomb(name));
    const bombFrontMatter = bomb("bomb-a").indexOf("\n---", 3) - 4;
    put(join(channel, "skills"), "ok", skill("ok", "a usual skill"));
    // Many skills of front matter just under the per-file bound: together past the total.
    const each = SKILL_FRONTMATTER_MAX_BYTES - 200;
    const many = Math.ceil(SKILL_FRONTMATTER_MAX_TOTAL_BYTES / each) + 3;
    for (let i = 0; i < many; i++) put(join(channel, "skills"), `wide-${String(i).padStart(2, "0")}`, `---\nname: wide-${String(i).padStart(2, "0")}\ndescription: wide\n${keys(each - 60)}---\n`);
    const {
      result: { skills, problems },
      cpuMs,
    } = await mainThreadCpu(() => loadMomSkills(ws, channel));
    expect(cpuMs).toBeLessThan(1000); // unbounded, each bomb held it ~1.6 s
    const names = skills.map((s) => s.name);
    expect(names).toContain("ok");
    expect(names.filter((n) => n.startsWith("bomb"))).toEqual([]);
    expect(problems).toContain(`${join(channel, "skills", "bomb-a", "SKILL.md")}: its front matter is ${bombFrontMatter} bytes, more than the ${SKILL_FRONTMATTER_MAX_BYTES} the runner parses; skipped`);
    const wide = names.filter((n) => n.startsWith("wide-"));
    expect(wide.length).toBeGreaterThan(0);
    expect(wide.length).toBeLessThan(many);
    expect(problems).toContain(
      `${join(channel, "skills", `wide-${String(wide.length).padStart(2, "0")}`, "SKILL.md")}: the front matter of the skills in ${join(channel, "skills")} is more than ${SKILL_FRONTMATTER_MAX_TOTAL_BYTES} bytes in all, the most the runner parses; skipped`,
    );
  }, 120_000);
});
