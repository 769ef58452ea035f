// An API refusal, said once and where it belongs: each detail naming a field of the form goes next
// to that field, in one sentence, with the API's field names replaced by the form's labels; what
// names no field of the form is one sentence above the button. Nothing is said twice.
import { ApiError } from './api';

export interface FormErrors {
  /** The sentence for the form field whose API path is `path`, if any. */
  field(path: string): string | undefined;
  /** The one sentence that belongs to no field, if any. */
  note: string | null;
}

/** "not an image reference" -> "Not an image reference." */
export function sentence(text: string): string {
  const t = text.trim();
  if (!t) return t;
  const first = t[0]!.toUpperCase() + t.slice(1);
  return /[.!?)]$/.test(first) ? first : `${first}.`;
}

/**
 * The API's field names in a message (`env_var`, `source.image`, or any field in quotes), said with
 * the form's labels. A plain word such as "port" is left alone: it is English as well as a field.
 */
export function inFormWords(text: string, labels: Readonly<Record<string, string>>): string {
  let out = text;
  // Longest first: `source.image` before `image`.
  for (const path of Object.keys(labels).sort((a, b) => b.length - a.length)) {
    const label = labels[path]!.toLowerCase();
    const escaped = path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    out = out.replace(new RegExp(`"${escaped}"`, 'g'), `"${label}"`);
    if (/[._]/.test(path)) out = out.replace(new RegExp(`\\b${escaped}\\b`, 'g'), `"${label}"`);
  }
  return out;
}

/**
 * `labels`: the form's fields by API path (`{'source.image': 'Image'}`). `conflict`: the field a
 * 409 is about (a name already taken), when the form has one.
 */
export function formErrors(
  e: unknown,
  labels: Readonly<Record<string, string>>,
  opts: { conflict?: string } = {},
): FormErrors {
  const byField: Record<string, string> = {};
  let note: string | null = null;
  if (e instanceof ApiError) {
    const unplaced: string[] = [];
    for (const d of e.details ?? []) {
      const path = d.field && fieldOf(d.field, labels);
      if (path && d.message) byField[path] ??= sentence(inFormWords(d.message, labels));
      else if (d.message) unplaced.push(d.field ? `${labelOf(d.field, labels)}: ${d.message}` : d.message);
    }
    if (e.status === 409 && opts.conflict)
      byField[opts.conflict] ??= sentence(inFormWords(e.message, labels));
    else if (!Object.keys(byField).length)
      note = sentence(inFormWords(unplaced.length === 1 ? unplaced[0]! : e.message, labels));
    else if (unplaced.length) note = sentence(inFormWords(unplaced[0]!, labels));
  } else if (e) note = sentence(e instanceof Error ? e.message : String(e));
  return { field: (path) => byField[path], note };
}

/** The form field a detail's path falls under (itself, or its nearest parent the form has). */
function fieldOf(path: string, labels: Readonly<Record<string, string>>): string | null {
  const parts = path.split('.');
  for (let n = parts.length; n > 0; n--) {
    const p = parts.slice(0, n).join('.');
    if (Object.hasOwn(labels, p)) return p;
  }
  return null;
}

function labelOf(path: string, labels: Readonly<Record<string, string>>): string {
  return labels[path] ?? path;
}
