import type { BashOperations, EditOperations, ReadOperations, WriteOperations } from "@mariozechner/pi-coding-agent";
import { type ChannelSandbox, DEFAULT_EXEC_TIMEOUT_MS, stoppedNote } from "@mom/sandbox";

// What a command killed with SIGKILL exits with in a shell: mom killed it, so the call failed.
const KILLED_EXIT_CODE = 137;

/**
 * pi's bash through the channel's executor. pi hands over the runner's own environment; it is
 * dropped here (the executor gives a clean one). A command mom stopped for too much output or
 * the channel's disk limit fails with a note saying so, as does one that ran into the memory or
 * file-size limit; aborts and timeouts are reported the way pi expects them.
 */
export function sandboxedBash(sandbox: ChannelSandbox): BashOperations {
  return {
    async exec(command, cwd, { onData, signal, timeout }) {
      const timeoutMs = timeout !== undefined && timeout > 0 ? timeout * 1000 : DEFAULT_EXEC_TIMEOUT_MS;
      const result = await sandbox.executor.exec({ command, cwd, onData, signal, timeoutMs });
      if (result.stopped === "aborted") throw new Error("aborted");
      if (result.stopped === "timeout") throw new Error(`timeout:${Math.round(timeoutMs / 1000)}`);
      // Stopped for its output or the channel's disk limit, or it ran into the memory or file-size
      // limit: the model reads why in a last line of the output.
      const note = result.stopped === "output" || result.stopped === "disk" || result.hit ? stoppedNote(result, sandbox.executor.maxOutputBytes, timeoutMs, sandbox.executor.limits) : undefined;
      if (note) onData(Buffer.from(`\n${note}\n`));
      if (result.stopped === "output" || result.stopped === "disk") return { exitCode: KILLED_EXIT_CODE };
      return { exitCode: result.exitCode };
    },
  };
}

const IMAGE_SIGNATURES: [string, (b: Buffer) => boolean][] = [
  ["image/png", (b) => b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))],
  ["image/jpeg", (b) => b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff],
  ["image/gif", (b) => b.subarray(0, 4).toString("latin1") === "GIF8"],
  ["image/webp", (b) => b.subarray(0, 4).toString("latin1") === "RIFF" && b.subarray(8, 12).toString("latin1") === "WEBP"],
];

/** read, write and edit through the channel's confined file access (paths judged by the sandbox's view). */
export function sandboxedFileOperations(sandbox: ChannelSandbox): { read: ReadOperations; write: WriteOperations; edit: EditOperations } {
  const { files } = sandbox;
  return {
    read: {
      readFile: (p) => files.readFile(p),
      access: (p) => files.access(p, "read"),
      detectImageMimeType: async (p) => {
        const head = await files.readHead(p, 12);
        return IMAGE_SIGNATURES.find(([, test]) => test(head))?.[0] ?? null;
      },
    },
    write: { writeFile: (p, content) => files.writeFile(p, content), mkdir: (d) => files.mkdir(d) },
    edit: {
      readFile: (p) => files.readFile(p),
      writeFile: (p, content) => files.writeFile(p, content),
      access: (p) => files.access(p, "write"),
    },
  };
}
