import { arch } from "node:os";

// Classic BPF, as seccomp(2) takes it: struct sock_filter { u16 code; u8 jt; u8 jf; u32 k } in host byte order.
const LD_W_ABS = 0x20;
const JEQ_K = 0x15;
const RET_K = 0x06;
const RET_ALLOW = 0x7fff0000;
const RET_ERRNO = 0x00050000;
const EOPNOTSUPP = 95;
// struct seccomp_data: nr at offset 0, arch at offset 4.
const NR = 0;
const ARCH = 4;

/** fallocate(2)'s number per audit architecture this runner may meet (compat ABIs included). */
const FALLOCATE: Array<[arch: number, nrs: number[]]> = [
  [0xc000003e, [285, 0x40000000 + 285]], // x86_64 (and x32)
  [0x40000003, [324]], // i386
  [0xc00000b7, [47]], // aarch64
  [0x40000028, [352]], // arm
];

/**
 * A seccomp filter for bubblewrap's `--seccomp FD`: `fallocate` fails with EOPNOTSUPP, everything
 * else is allowed. fallocate reserves gigabytes in a millisecond, faster than any size check can
 * stop it; without it, filling a disk takes real writes (glibc's posix_fallocate and most tools
 * fall back to writing), which the channel's disk check stops within one of its rounds.
 */
export function noFallocateFilter(): Buffer | undefined {
  if (arch() !== "x64" && arch() !== "arm64") return undefined; // little-endian hosts with the numbers above
  type Target = number | "allow" | "deny" | "nextArch";
  const prog: Array<{ code: number; k: number; jt?: Target; jf?: Target; block?: true }> = [{ code: LD_W_ABS, k: ARCH }];
  FALLOCATE.forEach(([a, nrs], i) => {
    const last = i === FALLOCATE.length - 1;
    // The accumulator holds the architecture here; a mismatch goes on to the next block with it.
    prog.push({ code: JEQ_K, k: a, jt: 0, jf: last ? "allow" : "nextArch", block: true });
    prog.push({ code: LD_W_ABS, k: NR });
    nrs.forEach((nr, j) => prog.push({ code: JEQ_K, k: nr, jt: "deny", jf: j === nrs.length - 1 ? "allow" : 0 }));
  });
  const allowAt = prog.length;
  prog.push({ code: RET_K, k: RET_ALLOW });
  prog.push({ code: RET_K, k: (RET_ERRNO | EOPNOTSUPP) >>> 0 });
  const denyAt = allowAt + 1;
  const buf = Buffer.alloc(prog.length * 8);
  prog.forEach((p, i) => {
    const offset = (t: Target | undefined): number => {
      if (t === undefined || typeof t === "number") return t ?? 0;
      const to = t === "allow" ? allowAt : t === "deny" ? denyAt : prog.findIndex((q, j) => j > i && q.block);
      return to - i - 1;
    };
    buf.writeUInt16LE(p.code, i * 8);
    buf.writeUInt8(offset(p.jt), i * 8 + 2);
    buf.writeUInt8(offset(p.jf), i * 8 + 3);
    buf.writeUInt32LE(p.k >>> 0, i * 8 + 4);
  });
  return buf;
}
