// A CHECK (or partial index condition) that holds a column to one vocabulary, written from the
// same `as const` list the wire schema and the types use, so a new table cannot drift from them.
// Frozen migrations keep their literal text; tests/unit/db/vocabulary.test.ts compares every
// `in (...)` of the live schema with its list.
import type { RawBuilder } from 'kysely';
import { sql } from './kysely.js';

const WORD = /^[a-z0-9_.]+$/;

/** `column in ('a','b')`; the values are the code's own constants, checked to need no quoting. */
export function oneOf(column: string, values: readonly string[]): RawBuilder<unknown> {
  for (const v of [column, ...values]) if (!WORD.test(v)) throw new Error(`not a plain word: ${v}`);
  return sql.raw(`${column} in (${values.map((v) => `'${v}'`).join(',')})`);
}
