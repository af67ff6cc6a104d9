import type { IConstruct } from 'constructs';
import { scanSql } from '../../lambda/inbox/transport/sql-scanner.js';
import type { InboxMigrationSet } from './migration-sets.js';

// The tables a database's own migration sets create, so that a consumer's `databaseGrants` on a table none
// of them creates (a typo: public.reservatons) is named at synth instead of failing the role at deploy.

const created = new WeakMap<IConstruct, ReadonlySet<string>>();

/** A CREATE TABLE, VIEW or SEQUENCE from its first word on, and the name it creates (unquoted: folded). */
const CREATES =
  /^create\s+(?:or\s+replace\s+)?(?:(?:global\s+|local\s+)?(?:temporary|temp|unlogged)\s+|materialized\s+|recursive\s+)?(?:table|view|sequence)\s+(?:if\s+not\s+exists\s+)?((?:"[^"]+"|[a-z_][a-z0-9_$]*)(?:\s*\.\s*(?:"[^"]+"|[a-z_][a-z0-9_$]*))?)/i;

/** `schema.name` of a created relation, as a grant names it: unqualified is public, unquoted folds to lower case. */
function qualified(name: string): string {
  const parts = name.split(/\s*\.\s*/).map((part) => (part.startsWith('"') ? part.slice(1, -1) : part.toLowerCase()));
  return parts.length === 1 ? `public.${parts[0]}` : parts.join('.');
}

/** The relations `sets` create, as `schema.name`. */
export function tablesCreatedBy(sets: readonly InboxMigrationSet[]): Set<string> {
  const tables = new Set<string>();
  for (const migration of sets.flatMap((set) => set.migrations)) {
    for (const sql of Array.isArray(migration.statements) ? migration.statements : []) {
      if (typeof sql !== 'string') continue;
      for (const { text } of scanSql(sql).statements) {
        // Scanned alone, a statement's leading words are placed in its own text, whose comments before it stay.
        const first = scanSql(text).statements[0]?.parts[0]?.words[0];
        const match = first && CREATES.exec(text.slice(first.end - first.word.length));
        if (match) tables.add(qualified(match[1]!));
      }
    }
  }
  return tables;
}

/** Records what `database`'s own migration sets create; a database with none records nothing (its tables come from elsewhere). */
export function declareCreatedTables(database: IConstruct, sets: readonly InboxMigrationSet[]): void {
  if (sets.length > 0) created.set(database, tablesCreatedBy(sets));
}

/** What `database`'s own migration sets create, or `undefined` when it has none. */
export function createdTables(database: IConstruct): ReadonlySet<string> | undefined {
  return created.get(database);
}
