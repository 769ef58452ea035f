// The few bytes of DNS (RFC 1035) the upstream resolver needs: read one question from a query,
// write its answer (A and AAAA records, or NXDOMAIN). Anything else in a query (EDNS options,
// extra sections) is ignored; a message this cannot read gets no answer, as a server would drop it.
import { isIP } from 'node:net';

export const QTYPE_A = 1;
export const QTYPE_AAAA = 28;
const QCLASS_IN = 1;
export const RCODE_OK = 0;
export const RCODE_NXDOMAIN = 3;
export const RCODE_NOTIMP = 4;

export interface Question {
  id: number;
  /** Recursion desired, echoed in the answer. */
  rd: boolean;
  /** Lower-cased, with the root's trailing dot: `80.web.<app>.svc.internal.` */
  name: string;
  qtype: number;
  qclass: number;
  /** The question section's bytes as sent (the answer repeats them). */
  raw: Buffer;
}

const HEADER = 12;

/** The query's single question, or null when the message is not a standard query we can read. */
export function readQuestion(msg: Buffer): Question | null {
  if (msg.length < HEADER + 5) return null;
  const flags = msg.readUInt16BE(2);
  const qr = flags >> 15;
  const opcode = (flags >> 11) & 0xf;
  if (qr !== 0 || opcode !== 0 || msg.readUInt16BE(4) !== 1) return null;
  const labels: string[] = [];
  let at = HEADER;
  for (;;) {
    const len = msg[at];
    if (len === undefined || len > 63) return null; // compression pointers never start a question
    at++;
    if (len === 0) break;
    if (at + len > msg.length) return null;
    labels.push(msg.toString('latin1', at, at + len).toLowerCase());
    at += len;
    if (at - HEADER > 255) return null;
  }
  if (at + 4 > msg.length) return null;
  const qtype = msg.readUInt16BE(at);
  const qclass = msg.readUInt16BE(at + 2);
  return {
    id: msg.readUInt16BE(0),
    rd: (flags & 0x0100) !== 0,
    name: `${labels.join('.')}.`,
    qtype,
    qclass,
    raw: Buffer.from(msg.subarray(HEADER, at + 4)),
  };
}

/**
 * The answer to `q`: `rcode`, and for a found name one record per address of the asked type
 * (A: IPv4, AAAA: IPv6; the others are left out, which is an empty, successful answer). The
 * server is authoritative for its names and says recursion is available, so that resolvers take
 * an empty answer as "no such record" rather than as a referral.
 */
export function writeAnswer(q: Question, rcode: number, addresses: readonly string[] = [], ttl = 0): Buffer {
  const family = q.qtype === QTYPE_A ? 4 : q.qtype === QTYPE_AAAA ? 6 : 0;
  const records =
    rcode === RCODE_OK && q.qclass === QCLASS_IN ? addresses.filter((a) => isIP(a) === family) : [];
  const head = Buffer.alloc(HEADER);
  head.writeUInt16BE(q.id, 0);
  // QR=1, opcode 0, AA=1, RD as asked, RA=1, rcode.
  head.writeUInt16BE(0x8000 | 0x0400 | (q.rd ? 0x0100 : 0) | 0x0080 | (rcode & 0xf), 2);
  head.writeUInt16BE(1, 4);
  head.writeUInt16BE(records.length, 6);
  const parts = [head, q.raw];
  for (const a of records) {
    const data = family === 4 ? ipv4Bytes(a) : ipv6Bytes(a);
    const rr = Buffer.alloc(12);
    rr.writeUInt16BE(0xc000 | HEADER, 0); // the name: a pointer to the question's
    rr.writeUInt16BE(q.qtype, 2);
    rr.writeUInt16BE(QCLASS_IN, 4);
    rr.writeUInt32BE(ttl, 6);
    rr.writeUInt16BE(data.length, 10);
    parts.push(rr, data);
  }
  return Buffer.concat(parts);
}

function ipv4Bytes(a: string): Buffer {
  return Buffer.from(a.split('.').map(Number));
}

function ipv6Bytes(a: string): Buffer {
  const [head, tail] = a.includes('::') ? a.split('::') : [a, null];
  const groups = (s: string | undefined | null) => (s ? s.split(':') : []);
  let left = groups(head);
  let right = groups(tail);
  // An IPv4 tail (::ffff:1.2.3.4) is two groups.
  const fix = (g: string[]) => {
    const last = g[g.length - 1];
    if (last && last.includes('.')) {
      const b = ipv4Bytes(last);
      g.splice(g.length - 1, 1, ((b[0]! << 8) | b[1]!).toString(16), ((b[2]! << 8) | b[3]!).toString(16));
    }
    return g;
  };
  left = fix(left);
  right = fix(right);
  const fill = tail === null ? [] : Array<string>(8 - left.length - right.length).fill('0');
  const all = [...left, ...fill, ...right];
  const out = Buffer.alloc(16);
  all.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2));
  return out;
}
