import { scanSql } from '../sql-scanner.js';

/**
 * What Aurora DSQL refuses of PostgreSQL's SQL, kept as data with its sources, so that a test profile can
 * refuse every statement the runtime sends that DSQL would refuse, and a reader can check each rule
 * against the page it cites.
 *
 * `status` says how sure the rule is:
 * - `unsupported`: DSQL's user guide says so;
 * - `not-listed`: the guide's supported-SQL page (which calls itself "not exhaustive") does not list it, and
 *   no primary source was found either way; refused by the profile's strict check only.
 *
 * The constructs issue 24 asked about carry `checked`: what the pages said on the day they were read.
 */

const GUIDE = 'https://docs.aws.amazon.com/aurora-dsql/latest/userguide';
/** The guide's pages the rules cite. */
export const DSQL_SOURCES = {
  unsupported: `${GUIDE}/working-with-postgresql-compatibility-unsupported-features.html`,
  supportedSql: `${GUIDE}/working-with-postgresql-compatibility-supported-sql-features.html`,
  dataTypes: `${GUIDE}/working-with-postgresql-compatibility-supported-data-types.html`,
  ddl: `${GUIDE}/working-with-ddl.html`,
  quotas: `${GUIDE}/CHAP_quotas.html`,
  concurrency: `${GUIDE}/working-with-concurrency-control.html`,
  /** The markdown edition of the supported-SQL page, which is newer than some HTML translations (`FOR { UPDATE | KEY SHARE }`). */
  supportedSqlMarkdown: `${GUIDE}/working-with-postgresql-compatibility-supported-sql-features.md`,
  foreignKeys: `${GUIDE}/working-with-foreign-key-constraints.html`,
  releaseNotes: `${GUIDE}/release-notes.html`,
} as const;

/** One thing DSQL refuses, and how to recognise it in a statement's text. */
export interface DsqlSqlRule {
  readonly id: string;
  readonly status: 'unsupported' | 'not-listed';
  /** Matched against the statement's `code` (literals, quoted identifiers and comments blanked), upper-cased. */
  readonly pattern: RegExp;
  /** What DSQL does instead, or what to write instead. */
  readonly says: string;
  readonly source: string;
  /** For a construct the inbox was asked to check (issue 24): what the pages said when read, and what stays open. */
  readonly checked?: DsqlSqlCheck | undefined;
}

/** What the guide's pages said of one construct when they were read, with each page read. */
export interface DsqlSqlCheck {
  /** The day the pages were read (UTC). */
  readonly on: string;
  /** What they say, and whether the runtime sends the construct on DSQL. */
  readonly found: string;
  /** `true` when a page settles it; `false` when only a real cluster can. */
  readonly confirmed: boolean;
  readonly sources: readonly string[];
}

/** When the constructs of issue 24 were looked up. */
const CHECKED_ON = '2026-12-02';

const TABLE_DDL = String.raw`^\s*(?:CREATE|ALTER)\s+TABLE\b`;

export const DSQL_SQL_RULES: readonly DsqlSqlRule[] = [
  {
    id: 'truncate',
    status: 'unsupported',
    pattern: /^\s*TRUNCATE\b/,
    says: 'TRUNCATE is not supported: DELETE in batches of at most 3,000 rows',
    source: DSQL_SOURCES.unsupported,
  },
  {
    id: 'trigger',
    status: 'unsupported',
    pattern: /^\s*CREATE\s+(?:OR\s+REPLACE\s+)?(?:CONSTRAINT\s+)?TRIGGER\b/,
    says: 'triggers are not supported',
    source: DSQL_SOURCES.unsupported,
    checked: {
      on: CHECKED_ON,
      found:
        'Unsupported: the unsupported-features page lists triggers among the unsupported objects and CREATE TRIGGER among the unsupported ' +
        "expressions. The runtime creates none; the DSQL profile's own row-limit trigger is installed beside it, on a connection of its own.",
      confirmed: true,
      sources: [DSQL_SOURCES.unsupported],
    },
  },
  {
    id: 'temporary-table',
    status: 'unsupported',
    pattern: /^\s*CREATE\s+(?:(?:GLOBAL|LOCAL)\s+)?(?:TEMP|TEMPORARY)\s+TABLE\b/,
    says: 'temporary tables are not supported',
    source: DSQL_SOURCES.unsupported,
    checked: {
      on: CHECKED_ON,
      found:
        'Unsupported: the unsupported-features page lists temporary tables among the unsupported objects and CREATE TEMPORARY TABLES ' +
        'among the unsupported expressions. The runtime creates none: batch inputs are jsonb_to_recordset in the statement.',
      confirmed: true,
      sources: [DSQL_SOURCES.unsupported],
    },
  },
  {
    id: 'procedural-language',
    status: 'unsupported',
    pattern: /^\s*DO\b|\bLANGUAGE\s+PLPGSQL\b/,
    says: 'only functions written in SQL are supported: no PL/pgSQL, no DO blocks',
    source: DSQL_SOURCES.unsupported,
  },
  {
    id: 'savepoint',
    status: 'unsupported',
    pattern: /^\s*(?:SAVEPOINT|RELEASE)\b|^\s*ROLLBACK\s+(?:WORK\s+|TRANSACTION\s+)?TO\b/,
    says: 'SAVEPOINT is not supported',
    source: DSQL_SOURCES.unsupported,
  },
  { id: 'vacuum', status: 'unsupported', pattern: /^\s*VACUUM\b/, says: 'VACUUM is not supported (nor needed)', source: DSQL_SOURCES.unsupported },
  { id: 'alter-system', status: 'unsupported', pattern: /^\s*ALTER\s+SYSTEM\b/, says: 'ALTER SYSTEM is not supported', source: DSQL_SOURCES.unsupported },
  {
    id: 'create-database',
    status: 'unsupported',
    pattern: /^\s*CREATE\s+DATABASE\b/,
    says: 'a cluster has one database, postgres',
    source: DSQL_SOURCES.unsupported,
  },
  {
    id: 'synchronous-index',
    status: 'unsupported',
    pattern: /^\s*CREATE\s+(?:UNIQUE\s+)?INDEX\b(?!\s+ASYNC\b)/,
    says: 'indexes are created with CREATE INDEX ASYNC',
    source: DSQL_SOURCES.supportedSql,
  },
  {
    id: 'serial',
    status: 'unsupported',
    pattern: new RegExp(`${TABLE_DDL}[\\s\\S]*\\b(?:SMALL|BIG)?SERIAL\\b`),
    says: 'serial types create a sequence with the default cache; use an identity column with CACHE 1 or >= 65536, or a uuid',
    source: DSQL_SOURCES.unsupported,
  },
  {
    id: 'sequence-cache',
    status: 'unsupported',
    pattern: /^\s*CREATE\s+SEQUENCE\b(?![\s\S]*\bCACHE\s+(?:1|6553[6-9]|655[4-9]\d|65[6-9]\d\d|6[6-9]\d{3}|[7-9]\d{4}|\d{6,})\b)/,
    says: 'a sequence needs CACHE 1 or CACHE >= 65536',
    source: DSQL_SOURCES.unsupported,
  },
  {
    id: 'partition',
    status: 'unsupported',
    pattern: new RegExp(`${TABLE_DDL}[\\s\\S]*\\b(?:PARTITION\\s+(?:BY|OF)|INHERITS)\\b`),
    says: 'partitions and table inheritance are not supported',
    source: DSQL_SOURCES.unsupported,
  },
  {
    // DSQL supports foreign keys since 26 August 2026 (release notes): on CREATE TABLE, and on an existing
    // table with ALTER TABLE ... ADD CONSTRAINT ... NOT VALID, the only form the note gives for one.
    id: 'foreign-key-validated',
    status: 'unsupported',
    pattern: /^\s*ALTER\s+TABLE\b(?![\s\S]*\bNOT\s+VALID\b)[\s\S]*\b(?:REFERENCES|FOREIGN\s+KEY)\b/,
    says: 'a foreign key added to an existing table is added with ADD CONSTRAINT ... NOT VALID',
    source: DSQL_SOURCES.foreignKeys,
    checked: {
      on: '2026-12-04',
      found:
        'the release notes of 26 August 2026: "Aurora DSQL now supports foreign key constraints. You can define foreign key constraints when you create a table, or add them to an existing table with ALTER TABLE ... ADD CONSTRAINT ... NOT VALID."',
      confirmed: true,
      sources: [DSQL_SOURCES.releaseNotes, DSQL_SOURCES.foreignKeys],
    },
  },
  {
    id: 'exclusion-constraint',
    status: 'unsupported',
    pattern: /\bEXCLUDE\s+USING\b/,
    says: 'exclusion constraints are not supported',
    source: DSQL_SOURCES.unsupported,
  },
  {
    id: 'jsonb-column',
    status: 'unsupported',
    pattern: new RegExp(`${TABLE_DDL}[\\s\\S]*\\bJSONB\\b`),
    says: 'jsonb is a query runtime type only: store json or text, cast to jsonb in queries',
    source: DSQL_SOURCES.dataTypes,
  },
  {
    id: 'row-level-security',
    status: 'not-listed',
    pattern: /\b(?:ENABLE|DISABLE|FORCE)\s+ROW\s+LEVEL\s+SECURITY\b|^\s*CREATE\s+POLICY\b/,
    says: 'row-level security is not among the supported commands: scope roles with GRANT',
    source: DSQL_SOURCES.supportedSql,
  },
  {
    id: 'skip-locked',
    status: 'not-listed',
    pattern: /\bSKIP\s+LOCKED\b|\bNOWAIT\b/,
    says: 'only FOR UPDATE and FOR KEY SHARE are listed, with no SKIP LOCKED or NOWAIT (there are no locks to skip)',
    source: DSQL_SOURCES.supportedSql,
    checked: {
      on: CHECKED_ON,
      found:
        'Not confirmed either way. The supported-SQL page lists `FOR { UPDATE | KEY SHARE }` (older editions: FOR UPDATE) with "transaction ' +
        'limits apply", and no SKIP LOCKED or NOWAIT; the unsupported-features page does not name them; the concurrency page says DSQL is ' +
        "lock-free. The purge's DELETE sends FOR UPDATE SKIP LOCKED on DSQL.",
      confirmed: false,
      sources: [DSQL_SOURCES.supportedSqlMarkdown, DSQL_SOURCES.unsupported, DSQL_SOURCES.concurrency],
    },
  },
  {
    id: 'advisory-lock',
    status: 'not-listed',
    pattern: /\bPG_(?:TRY_)?ADVISORY_(?:XACT_)?LOCK(?:_SHARED)?\s*\(/,
    says: 'advisory locks are not listed: DSQL is lock-free; serialise with a row both writers update instead',
    source: DSQL_SOURCES.concurrency,
  },
  {
    id: 'ctid',
    status: 'not-listed',
    pattern: /\bCTID\b/,
    says: 'system columns such as ctid are not listed: address rows by their primary key',
    source: DSQL_SOURCES.supportedSql,
    checked: {
      on: CHECKED_ON,
      found:
        'Not confirmed either way: no page of the guide mentions ctid or system columns, in the supported SQL or in the unsupported ' +
        "features (DSQL's storage is its own, so a row's ctid may not mean what it means on PostgreSQL). The purge's DELETE finds its rows " +
        'by ctid on DSQL.',
      confirmed: false,
      sources: [DSQL_SOURCES.supportedSqlMarkdown, DSQL_SOURCES.unsupported],
    },
  },
  {
    id: 'data-modifying-cte',
    status: 'not-listed',
    pattern: /^\s*WITH\b[\s\S]*\bAS\s*(?:NOT\s+)?(?:MATERIALIZED\s*)?\(\s*(?:INSERT|UPDATE|DELETE|MERGE)\b/,
    says: 'WITH is listed for SELECT; INSERT, UPDATE or DELETE inside WITH is not',
    source: DSQL_SOURCES.supportedSql,
    checked: {
      on: CHECKED_ON,
      found:
        'Not confirmed either way. The supported-SQL page lists WITH (common table expressions) as a clause of SELECT and WITH as a clause ' +
        'of UPDATE; of INSERT it lists INTO, VALUES and SELECT (not RETURNING or ON CONFLICT, which AWS itself uses), of DELETE USING and ' +
        'WHERE; it calls itself "not exhaustive". The unsupported-features page does not name data-modifying WITH. Every claim on DSQL is ' +
        '`WITH claim AS (INSERT ... ON CONFLICT DO NOTHING RETURNING ...)`: if a cluster refuses it, every mode needs its claim in two statements.',
      confirmed: false,
      sources: [DSQL_SOURCES.supportedSqlMarkdown, DSQL_SOURCES.unsupported],
    },
  },
  {
    id: 'isolation-level',
    status: 'not-listed',
    pattern: /\bISOLATION\s+LEVEL\b/,
    says: 'DSQL runs every transaction at repeatable read; BEGIN takes only READ ONLY or READ WRITE',
    source: DSQL_SOURCES.supportedSql,
  },
];

/** A statement DSQL would refuse, and the rule that says so. */
export interface DsqlSqlViolation {
  readonly rule: DsqlSqlRule;
  /** The statement (of a multi-statement text, the one that broke the rule). */
  readonly statement: string;
}

/**
 * The rules `sql` breaks: each statement of the text (as the shared scanner splits it) against every rule,
 * matched against its `code`, where literals, quoted identifiers and comments are blanked, so that their
 * words never match and their quotes never hide a keyword. `strict` adds the `not-listed` rules to the
 * `unsupported` ones.
 */
export function checkDsqlSql(sql: string, strict = false): DsqlSqlViolation[] {
  const violations: DsqlSqlViolation[] = [];
  for (const { text, code } of scanSql(sql).statements) {
    const upper = code.toUpperCase();
    for (const rule of DSQL_SQL_RULES) {
      if ((strict || rule.status === 'unsupported') && rule.pattern.test(upper)) violations.push({ rule, statement: text });
    }
  }
  return violations;
}
