// Hostname rules of the contract. One function decides, and its refusals name the rule broken,
// because an operator pasting "https://shop.example.com/" wants to know what to remove.
import { isIP } from 'node:net';
import { domainToASCII } from 'node:url';

export type HostnameRule =
  | 'type'
  | 'empty'
  | 'ascii'
  | 'spaces'
  | 'wildcard'
  | 'slash'
  | 'colon'
  | 'at'
  | 'ip_address'
  | 'length'
  | 'empty_label'
  | 'single_label'
  | 'label_length'
  | 'ldh';

export type HostnameCheck =
  { ok: true; hostname: string } | { ok: false; rule: HostnameRule; message: string };

export const MAX_HOSTNAME = 253;
export const MAX_LABEL = 63;
const LDH = /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/;

function refuse(rule: HostnameRule, message: string): HostnameCheck {
  return { ok: false, rule, message };
}

/**
 * Lower-cases, drops one trailing dot and checks the contract's rules, in an order that names
 * the most useful rule first (a URL is reported for its slash, not for its colon).
 */
export function checkHostname(input: unknown): HostnameCheck {
  if (typeof input !== 'string') return refuse('type', 'hostname must be a string');
  if (input.length === 0) return refuse('empty', 'hostname is empty');
  if (input.length > 4 * MAX_HOSTNAME)
    return refuse('length', `hostname is longer than ${MAX_HOSTNAME} characters`);
  if (/[^\x00-\x7f]/.test(input)) {
    const puny = domainToASCII(input.trim().toLowerCase());
    const hint = puny && puny !== input ? `: write it as "${puny}"` : '';
    return refuse(
      'ascii',
      `hostname must be ASCII; give an internationalised name in its punycode form (xn--...)${hint}`,
    );
  }
  if (/\s/.test(input)) return refuse('spaces', 'hostname must not contain spaces or other whitespace');
  if (input.includes('*'))
    return refuse('wildcard', 'wildcard hostnames ("*") are not supported; add each hostname');
  if (input.includes('/'))
    return refuse('slash', 'hostname must not contain "/": give the name only, without scheme or path');
  if (input.includes('@')) return refuse('at', 'hostname must not contain "@"');
  if (input.includes(':'))
    return refuse('colon', 'hostname must not contain ":": give the name only, without scheme or port');
  let name = input.toLowerCase();
  if (name.endsWith('.')) name = name.slice(0, -1);
  if (name.length === 0) return refuse('empty', 'hostname is empty');
  if (isIP(name))
    return refuse('ip_address', 'an IP address is not a hostname; certificates are issued for names');
  if (name.length > MAX_HOSTNAME)
    return refuse(
      'length',
      `hostname is ${name.length} characters long; at most ${MAX_HOSTNAME} are allowed`,
    );
  const labels = name.split('.');
  if (labels.some((l) => l.length === 0))
    return refuse('empty_label', 'hostname has an empty label (two dots in a row, or a leading dot)');
  if (labels.length < 2)
    return refuse('single_label', 'hostname needs at least two labels (like "example.com")');
  for (const label of labels) {
    if (label.length > MAX_LABEL)
      return refuse(
        'label_length',
        `label "${label.slice(0, 20)}..." is ${label.length} characters long; at most ${MAX_LABEL} are allowed`,
      );
    if (!LDH.test(label)) {
      return refuse(
        'ldh',
        `label "${label}" may hold only letters, digits and hyphens, and may not start or end with a hyphen`,
      );
    }
  }
  return { ok: true, hostname: name };
}

/** A single DNS label under the rules above (for automatic hosts built from app and service names). */
export function isLabel(s: string): boolean {
  return s.length >= 1 && s.length <= MAX_LABEL && LDH.test(s);
}
