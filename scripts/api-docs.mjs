#!/usr/bin/env node
// The public surface, reviewed: for every entry in package.json "exports", API Extractor (which carries its
// own TypeScript compiler: the native one this repository builds with has no JavaScript API) reads the
// declarations the build emits into dist/ and writes
//   etc/<entry>.api.md   the API report, checked in: a change to the surface shows in review as a diff of it
//   docs/api.md          the reference, rendered from API Extractor's doc model of the same declarations
// Plain JavaScript on purpose, like build.mjs: it runs on a fresh clone with nothing compiled yet.
//
//   node scripts/api-docs.mjs             builds the declarations (build.mjs --types-only), then writes both
//   node scripts/api-docs.mjs --no-build  uses dist/ as it is
//   node scripts/api-docs.mjs --check     writes nothing; exits 1 when a report or docs/api.md is out of date
//   node scripts/api-docs.mjs --count     prints the exports per entry (values and types), writes nothing
//
// npm run docs and npm run api run it; test/package/api-docs.test.ts runs extract() with check: true, so
// npm test fails on a surface changed without its report, an export without JSDoc, or a stale docs/api.md.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** This repository: API Extractor, its TSDoc settings and the Node types come from here, whatever `root` is. */
const HOME = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** Where the reference is written, relative to the repository root. */
export const API_DOCS_PATH = 'docs/api.md';

/** Where the API reports are kept, relative to the repository root. */
export const API_REPORT_FOLDER = 'etc';

/** Interfaces whose every member must carry a description: the options and props users fill in. */
export const OPTIONS_INTERFACE = /(Options|Props)$/;

// ---------------------------------------------------------------------------------------------------------
// API Extractor

/** The package's entries: `sqs-inbox/cdk` -> its declaration file and its report's name (`sqs-inbox-cdk`). */
export function entriesOf(root) {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  return Object.entries(pkg.exports ?? {}).flatMap(([subpath, target]) => {
    // The ES modules' declarations: the CommonJS copy (the "require" condition) re-exports the same.
    const types = typeof target === 'object' && target ? (target.types ?? target.import?.types) : null;
    if (!types) return [];
    const specifier = subpath === '.' ? pkg.name : `${pkg.name}/${subpath.replace(/^\.\//, '')}`;
    return [{ specifier, declarationFile: join(root, types), reportName: specifier.replace(/\//g, '-') }];
  });
}

function extractorConfig(root, entry, modelFolder) {
  const require = createRequire(join(HOME, 'package.json'));
  const { ExtractorConfig } = require('@microsoft/api-extractor');
  // API Extractor's own copy: the TSDoc config must be the version it reads.
  const { TSDocConfigFile } = createRequire(require.resolve('@microsoft/api-extractor'))('@microsoft/tsdoc-config');
  return ExtractorConfig.prepare({
    configObject: {
      projectFolder: root,
      mainEntryPointFilePath: entry.declarationFile,
      compiler: {
        overrideTsconfig: {
          compilerOptions: {
            target: 'ES2022',
            module: 'NodeNext',
            moduleResolution: 'NodeNext',
            lib: ['ES2023'],
            types: ['node'],
            typeRoots: [join(HOME, 'node_modules/@types')],
            strict: true,
            skipLibCheck: true,
          },
          files: [entry.declarationFile],
        },
      },
      apiReport: {
        enabled: true,
        reportFileName: entry.reportName,
        reportFolder: join(root, API_REPORT_FOLDER),
        reportTempFolder: modelFolder,
      },
      docModel: { enabled: true, apiJsonFilePath: join(modelFolder, `${entry.reportName}.api.json`) },
      dtsRollup: { enabled: false },
      tsdocMetadata: { enabled: false },
      messages: {
        // The report carries what a reviewer should see (a type the entry uses but does not export); the
        // package has one release level, so no release tags.
        // A link that resolves nowhere is an error: it fails the api-docs test instead of waiting in a report.
        extractorMessageReporting: {
          default: { logLevel: 'warning', addToApiReportFile: true },
          'ae-missing-release-tag': { logLevel: 'none' },
          'ae-unresolved-link': { logLevel: 'error', addToApiReportFile: false },
          // So is a type a signature shows that its entry does not export: users meet it and cannot name it.
          'ae-forgotten-export': { logLevel: 'error', addToApiReportFile: false },
        },
        // The sources' comments are JSDoc, not strict TSDoc (`{ a: 1 }` in prose): the reference reads them as JSDoc.
        tsdocMessageReporting: { default: { logLevel: 'none' } },
        compilerMessageReporting: { default: { logLevel: 'warning' } },
      },
    },
    configObjectFullPath: undefined,
    packageJsonFullPath: join(root, 'package.json'),
    tsdocConfigFile: TSDocConfigFile.loadFile(join(HOME, API_REPORT_FOLDER, 'tsdoc.json')),
  });
}

/**
 * Runs API Extractor over every entry of the package at `root` (its declarations must be built), and reads
 * the doc models it writes. With `check`, a report that differs from etc/<entry>.api.md (or is missing)
 * is named in `changedReports` and nothing is written; without, the reports are updated.
 *
 * @param root - the package's folder
 * @param check - compare the reports instead of writing them
 * @returns the entries with their exports, the reports that changed, and API Extractor's problems
 */
export function extract({ root = HOME, check = false } = {}) {
  const require = createRequire(join(HOME, 'package.json'));
  const { CompilerState, Extractor } = require('@microsoft/api-extractor');
  const modelFolder = mkdtempSync(join(tmpdir(), 'sqs-inbox-api-'));
  try {
    const entries = entriesOf(root);
    const missing = entries.filter((entry) => !existsSync(entry.declarationFile));
    if (missing.length > 0) {
      throw new Error(`api-docs: no declarations at ${missing.map((entry) => relative(root, entry.declarationFile)).join(', ')}: run \`npm run build\` first.`);
    }
    // API Extractor writes no report into a folder that does not exist.
    if (!check) mkdirSync(join(root, API_REPORT_FOLDER), { recursive: true });
    const configs = entries.map((entry) => extractorConfig(root, entry, modelFolder));
    // One TypeScript program for every entry: each entry alone would parse the same files again.
    const compilerState = CompilerState.create(configs[0], { additionalEntryPoints: entries.map((entry) => entry.declarationFile) });
    const changedReports = [];
    const problems = [];
    const collected = entries.map((entry, index) => {
      const result = Extractor.invoke(configs[index], {
        localBuild: !check,
        compilerState,
        messageCallback: (message) => {
          message.handled = true;
          if (message.logLevel === 'error' || message.logLevel === 'warning') {
            if (message.messageId.startsWith('console-api-report')) return;
            problems.push(
              `${entry.specifier}: ${message.text}${message.sourceFilePath ? ` (${relative(root, message.sourceFilePath)}:${message.sourceFileLine})` : ''}`,
            );
          }
        },
      });
      if (result.apiReportChanged) changedReports.push(`${API_REPORT_FOLDER}/${entry.reportName}.api.md`);
      const model = JSON.parse(readFileSync(join(modelFolder, `${entry.reportName}.api.json`), 'utf8'));
      return collectEntry(entry, model, root);
    });
    return { entries: collected, changedReports, problems };
  } finally {
    rmSync(modelFolder, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------------------
// The doc model

const KINDS = { Function: 'function', Class: 'class', Interface: 'interface', TypeAlias: 'type', Variable: 'const', Enum: 'enum', Namespace: 'namespace' };

/** The text of an item's declaration, without `export`/`declare` and the closing `;`, on one line. */
function signatureOf(item) {
  return (item.excerptTokens ?? [])
    .map((token) => token.text)
    .join('')
    .replace(/\s+/g, ' ')
    .replace(/^export\s+/, '')
    .replace(/^declare\s+/, '')
    .replace(/\s*[;{]?\s*$/, '')
    .trim();
}

/** `name?: T | undefined` reads as `name?: T` (the `| undefined` is there for exactOptionalPropertyTypes). */
function memberSignature(member) {
  const signature = signatureOf(member);
  return member.isOptional ? signature.replace(/ \| undefined$/, '') : signature;
}

function membersOf(item) {
  return (
    (item.members ?? [])
      .map((member) => {
        const doc = parseJsDoc(member.docComment?.trim() || null);
        const name =
          member.kind === 'Constructor'
            ? 'constructor'
            : member.kind === 'CallSignature'
              ? '(call)'
              : member.kind === 'IndexSignature'
                ? '[index]'
                : member.name;
        return { name, signature: memberSignature(member), doc, documented: documented(doc) || name === 'constructor' };
      })
      // Implementation details the declarations must keep (the servers call them), not API; and an error
      // class's `name`, which is its class name.
      .filter((member) => !member.doc?.tags.some((tag) => tag.tag === 'internal'))
      .filter((member) => !(item.kind === 'Class' && /Error$/.test(item.name) && member.name === 'name'))
  );
}

/** The leading comment of an entry's declaration file: what the entry is for. */
function moduleDoc(declarationFile) {
  const match = /^\s*(\/\*\*[\s\S]*?\*\/)/.exec(readFileSync(declarationFile, 'utf8'));
  return match ? parseJsDoc(match[1]) : null;
}

function collectEntry(entry, model, root) {
  const [entryPoint] = model.members;
  const exports = [];
  for (const item of entryPoint.members) {
    const kind = KINDS[item.kind] ?? item.kind.toLowerCase();
    const doc = parseJsDoc(item.docComment?.trim() || null);
    const source = item.fileUrlPath ?? '';
    const previous = exports.at(-1);
    // Overloads: one export, each signature, the documentation of the first that has one.
    if (previous?.name === item.name && previous.kind === kind) {
      previous.signature += `\n${signatureOf(item)}`;
      if (!previous.documented && documented(doc)) Object.assign(previous, { doc, documented: true });
      continue;
    }
    exports.push({ name: item.name, kind, source, doc, documented: documented(doc), signature: signatureOf(item), members: membersOf(item) });
  }
  const source = relative(root, entry.declarationFile)
    .replace(/^dist\//, '')
    .replace(/\.d\.ts$/, '.ts');
  return { specifier: entry.specifier, source, doc: moduleDoc(entry.declarationFile), exports };
}

/**
 * What lacks documentation: exports without JSDoc, and members of exported options and props interfaces
 * (`...Options`, `...Props`) without a description. Each problem names the export, its entry and its file.
 */
export function undocumented(entries) {
  const problems = [];
  for (const entry of entries) {
    for (const item of entry.exports) {
      if (!item.documented) problems.push(`${entry.specifier}: ${item.kind} ${item.name} (${item.source}) has no JSDoc`);
      if (item.kind === 'interface' && OPTIONS_INTERFACE.test(item.name)) {
        for (const member of item.members) {
          if (!member.doc?.description.trim()) problems.push(`${entry.specifier}: ${item.name}.${member.name} (${item.source}) has no description`);
        }
      }
    }
  }
  return problems;
}

/**
 * Names per entry, values (functions, classes, constants, enums) and types apart: the surface's size. A name
 * declared twice and merged (an interface and its namespace of types) is one name, as a user imports it.
 */
export function counts(entries) {
  return entries.map((entry) => {
    const names = new Set(entry.exports.map((item) => item.name));
    const values = new Set(entry.exports.filter((item) => ['function', 'class', 'const', 'enum'].includes(item.kind)).map((item) => item.name)).size;
    return { specifier: entry.specifier, exports: names.size, values, types: names.size - values };
  });
}

// ---------------------------------------------------------------------------------------------------------
// JSDoc

const INLINE_TAGS = ['default', 'defaultValue', 'param', 'returns', 'throws', 'see', 'deprecated', 'remarks', 'since'];

/**
 * Parses a JSDoc comment into its description and block tags. Tags start a line (`@example` keeps its
 * lines verbatim) or, for the common one-line style `/** Text. @default 10 *\/`, follow a space mid-line.
 */
export function parseJsDoc(comment) {
  if (!comment) return null;
  const lines = comment
    .replace(/^\/\*\*/, '')
    .replace(/\*\/$/, '')
    .split('\n')
    .map((line) => line.replace(/^\s*\* ?/, '').replace(/\s+$/, ''));
  const blocks = [{ tag: null, lines: [] }];
  for (const line of lines) {
    const tagged = /^\s*@(\w+)\s?(.*)$/.exec(line);
    if (tagged) blocks.push({ tag: tagged[1], lines: [tagged[2]] });
    else blocks.at(-1).lines.push(line);
  }
  // One-line docs: "Text. @default x" puts a tag mid-line, outside examples and code spans.
  const split = [];
  const midLine = new RegExp(`(?:^|\\s)@(${INLINE_TAGS.join('|')})\\b\\s?`);
  for (const block of blocks) {
    if (block.tag === 'example') {
      split.push(block);
      continue;
    }
    let current = { tag: block.tag, lines: [] };
    split.push(current);
    for (const line of block.lines) {
      let rest = line;
      for (;;) {
        const match = outsideCode(rest, midLine);
        if (!match) break;
        current.lines.push(rest.slice(0, match.index));
        current = { tag: match[1], lines: [] };
        split.push(current);
        rest = rest.slice(match.index + match[0].length);
      }
      current.lines.push(rest);
    }
  }
  const text = (block) => trimLines(block.lines).join('\n');
  const description = text(split[0]);
  const tags = split.slice(1).map((block) => ({ tag: block.tag, text: text(block) }));
  return { description, tags };
}

/** The first match of `pattern` in `line` that is not inside a `code span`. */
function outsideCode(line, pattern) {
  const global = new RegExp(pattern.source, 'g');
  for (let match = global.exec(line); match; match = global.exec(line)) {
    const ticks = (line.slice(0, match.index).match(/`/g) ?? []).length;
    if (ticks % 2 === 0) return match;
  }
  return null;
}

function trimLines(lines) {
  let from = 0;
  let to = lines.length;
  while (from < to && lines[from].trim() === '') from++;
  while (to > from && lines[to - 1].trim() === '') to--;
  const kept = lines.slice(from, to);
  // Dedent (examples keep their relative indentation).
  const indents = kept.filter((line) => line.trim() !== '').map((line) => /^ */.exec(line)[0].length);
  const strip = indents.length ? Math.min(...indents) : 0;
  return kept.map((line) => line.slice(strip));
}

/** Whether a parsed JSDoc says anything: a description, or at least a tag other than @internal. */
function documented(doc) {
  return Boolean(doc && (doc.description.trim() || doc.tags.some((tag) => tag.text.trim() && tag.tag !== 'internal')));
}

// ---------------------------------------------------------------------------------------------------------
// Markdown

/** GitHub's heading anchors, duplicates numbered in document order. */
function slugger() {
  const counts = new Map();
  return (heading) => {
    const base = heading
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const count = counts.get(base) ?? 0;
    counts.set(base, count + 1);
    return count ? `${base}-${count}` : base;
  };
}

function code(text) {
  const ticks = text.includes('`') ? '``' : '`';
  const pad = text.startsWith('`') || text.endsWith('`') ? ' ' : '';
  return `${ticks}${pad}${text}${pad}${ticks}`;
}

/** JSDoc prose as Markdown: `{@link X}` becomes a link to X's section when this entry documents X. */
function prose(text, anchors) {
  return text.replace(/\{@link(?:code|plain)?\s+([^}|\s]+)(?:\s*\|\s*|\s+)?([^}]*)\}/g, (_, target, label) => {
    const shown = label.trim() || target;
    const anchor = anchors.get(target.split(/[.#]/)[0]);
    return anchor ? `[${code(shown)}](#${anchor})` : code(shown);
  });
}

/** The first sentence of the first paragraph (a period inside a `code span` ends nothing). */
function firstSentence(text) {
  const paragraph = text
    .split(/\n\s*\n/)[0]
    .replace(/\s+/g, ' ')
    .trim();
  let ticks = 0;
  for (let i = 0; i < paragraph.length; i++) {
    if (paragraph[i] === '`') ticks++;
    else if (ticks % 2 === 0 && '.!?'.includes(paragraph[i]) && (i + 1 === paragraph.length || paragraph[i + 1] === ' ')) {
      return paragraph.slice(0, i + 1);
    }
  }
  return paragraph;
}

function cell(text) {
  return text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

/**
 * A `@default` as Markdown. CDK's `@default - prose` and sentences stay prose; a value (`10_000`, `'auto'`,
 * `Duration.days(4)`, `{ onFailure: 'skip-group' }`) becomes code.
 */
function defaultText(text, anchors) {
  const value = text.replace(/\s+/g, ' ').trim();
  if (/^-\s/.test(value)) return prose(value.slice(2), anchors);
  const looksLikeCode = !value.includes('`') && (/^\S+$/.test(value) || /^(\{.*\}|\[.*\]|'[^']*'|"[^"]*")$/.test(value));
  return looksLikeCode ? code(value) : prose(value, anchors);
}

/**
 * The tags in order, a `@default` that follows a `@param` folded into it (`@param sets the sets. @default
 * [INBOX_MIGRATIONS]` documents the parameter's default, not the function's).
 */
function groupTags(doc) {
  const tags = [];
  for (const tag of doc?.tags ?? []) {
    const previous = tags.at(-1);
    if ((tag.tag === 'default' || tag.tag === 'defaultValue') && previous?.tag === 'param' && previous.default === undefined) {
      previous.default = tag.text;
      continue;
    }
    if (tag.tag === 'param') {
      const [, name = tag.text, text = ''] = /^(?:\{[^}]*\}\s*)?(\S+)\s*(?:-\s*)?([\s\S]*)$/.exec(tag.text) ?? [];
      tags.push({ tag: 'param', name, text, default: undefined });
    } else {
      tags.push({ ...tag });
    }
  }
  return tags;
}

function oneLine(text) {
  return text.replace(/\s+/g, ' ').trim();
}

function paramLine(param, anchors, indent = '') {
  const parts = [prose(oneLine(param.text), anchors)];
  if (param.default !== undefined) parts.push(`Default: ${defaultText(param.default, anchors)}.`.replace(/\.\.$/, '.'));
  const text = parts.filter(Boolean).join(' ');
  return `${indent}- ${code(param.name)}${text ? `: ${text}` : ''}`;
}

function tagLines(doc, anchors) {
  const lines = [];
  const tags = groupTags(doc);
  const params = tags.filter((tag) => tag.tag === 'param');
  if (params.length) lines.push('', '**Parameters**', '', ...params.map((param) => paramLine(param, anchors)));
  for (const tag of tags) {
    if (tag.tag === 'example') {
      const body = tag.text.replace(/^```\w*\n?|\n?```$/g, '');
      lines.push('', '**Example**', '', '```ts', body, '```');
    } else if (tag.tag === 'default' || tag.tag === 'defaultValue') {
      lines.push('', `**Default:** ${defaultText(tag.text, anchors)}`);
    } else if (tag.tag === 'returns') {
      lines.push('', `**Returns:** ${prose(oneLine(tag.text), anchors)}`);
    } else if (tag.tag === 'throws') {
      lines.push('', `**Throws:** ${prose(oneLine(tag.text), anchors)}`);
    } else if (tag.tag === 'see') {
      lines.push('', `**See:** ${prose(oneLine(tag.text), anchors)}`);
    } else if (tag.tag === 'deprecated') {
      lines.push('', `**Deprecated.** ${prose(oneLine(tag.text), anchors)}`);
    } else if (tag.tag === 'remarks') {
      lines.push('', prose(tag.text, anchors));
    }
  }
  return lines;
}

function memberLines(item, anchors) {
  const lines = [];
  const heading = item.kind === 'class' || item.kind === 'namespace' ? 'Members' : 'Properties';
  lines.push('', `**${heading}**`, '');
  for (const member of item.members) {
    const parts = [];
    if (member.doc?.description.trim()) parts.push(prose(oneLine(member.doc.description), anchors));
    const tags = groupTags(member.doc);
    for (const tag of tags) {
      if (tag.tag === 'default' || tag.tag === 'defaultValue') parts.push(`Default: ${defaultText(tag.text, anchors)}.`.replace(/\.\.$/, '.'));
      else if (tag.tag === 'returns') parts.push(`Returns ${prose(oneLine(tag.text), anchors)}`);
      else if (tag.tag === 'deprecated') parts.push(`Deprecated. ${prose(oneLine(tag.text), anchors)}`);
    }
    lines.push(`- ${code(member.signature)}${parts.length ? `: ${parts.join(' ')}` : ''}`);
    for (const param of tags.filter((tag) => tag.tag === 'param')) lines.push(paramLine(param, anchors, '  '));
    const example = tags.find((tag) => tag.tag === 'example');
    if (example) lines.push('', '  ```ts', ...example.text.split('\n').map((line) => (line ? `  ${line}` : '')), '  ```', '');
  }
  return lines;
}

/**
 * Renders the reference as Markdown. Deterministic: the same declarations always give the same text, so
 * the test can compare it with docs/api.md byte for byte.
 */
export function renderApi(entries) {
  const slug = slugger();
  const lines = [
    '# API reference',
    '',
    "<!-- Generated by `npm run docs` (scripts/api-docs.mjs) from API Extractor's model of the declarations and their JSDoc. Do not edit by hand. -->",
    '',
    "Every export of the package's public entries, with its declaration and its documentation. The design",
    'behind them is in [architecture.md](architecture.md).',
    '',
  ];
  slug('API reference');
  const entryAnchors = entries.map((entry) => slug(entry.specifier));
  // One section per declaration: a merged name (an interface and its namespace) has two, and a link to the
  // name goes to the first.
  const itemSlugs = entries.map((entry) => entry.exports.map((item) => slug(item.name)));
  const itemAnchors = entries.map((entry, index) => {
    const anchors = new Map();
    for (const [position, item] of entry.exports.entries()) if (!anchors.has(item.name)) anchors.set(item.name, itemSlugs[index][position]);
    return anchors;
  });
  const sizes = counts(entries);
  for (const [index, entry] of entries.entries()) {
    lines.push(
      `- [${code(entry.specifier)}](#${entryAnchors[index]}) (${sizes[index].exports} exports): ${cell(entry.doc ? firstSentence(prose(entry.doc.description, new Map())) : code(entry.source))}`,
    );
  }
  for (const [index, entry] of entries.entries()) {
    const anchors = itemAnchors[index];
    lines.push('', `## ${entry.specifier}`, '');
    lines.push(`\`import { ... } from '${entry.specifier}'\`, declared by ${code(entry.source)}.`);
    if (entry.doc) lines.push('', ...tagLinesWithDescription(entry.doc, anchors));
    lines.push('', '| Export | Kind | Summary |', '|---|---|---|');
    for (const [position, item] of entry.exports.entries()) {
      const summary = item.doc ? cell(firstSentence(prose(item.doc.description, anchors))) : '';
      lines.push(`| [${code(item.name)}](#${itemSlugs[index][position]}) | ${item.kind} | ${summary} |`);
    }
    for (const item of entry.exports) {
      lines.push('', `### ${item.name}`, '');
      lines.push(`${item.kind}, declared in ${code(item.source)}`);
      lines.push('', '```ts', item.signature, '```');
      if (item.doc?.description.trim()) lines.push('', prose(item.doc.description, anchors));
      if (item.doc) lines.push(...tagLines(item.doc, anchors));
      if (item.members.length) lines.push(...memberLines(item, anchors));
    }
  }
  return `${lines
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trimEnd()}\n`;
}

function tagLinesWithDescription(doc, anchors) {
  const lines = [];
  if (doc.description.trim()) lines.push(prose(doc.description, anchors));
  lines.push(...tagLines(doc, anchors));
  return lines;
}

// ---------------------------------------------------------------------------------------------------------
// Command line

function main() {
  const args = process.argv.slice(2);
  const check = args.includes('--check');
  const count = args.includes('--count');
  if (!args.includes('--no-build')) {
    const build = spawnSync(process.execPath, [join(HOME, 'scripts/build.mjs'), '--types-only'], { cwd: HOME, stdio: 'inherit' });
    if (build.status !== 0) process.exit(build.status ?? 1);
  }
  // --count writes nothing, so it compares: a report it would change is left as it is.
  const { entries, changedReports, problems } = extract({ root: HOME, check: check || count });
  const sizes = counts(entries);
  if (count) {
    for (const size of sizes)
      process.stdout.write(`${size.specifier.padEnd(26)} ${String(size.exports).padStart(4)}  (${size.values} values, ${size.types} types)\n`);
    process.stdout.write(`${'total'.padEnd(26)} ${String(sizes.reduce((sum, size) => sum + size.exports, 0)).padStart(4)}\n`);
    return;
  }
  const found = [...problems, ...undocumented(entries)];
  for (const problem of found) process.stderr.write(`api-docs: ${problem}\n`);
  // The reports and the page are still written (or checked), so that the problems can be read in them; the
  // exit status says the surface is not ready for review.
  if (found.length > 0) process.exitCode = 1;
  const markdown = renderApi(entries);
  const target = join(HOME, API_DOCS_PATH);
  if (check) {
    const stale = [...changedReports, ...((existsSync(target) ? readFileSync(target, 'utf8') : '') === markdown ? [] : [API_DOCS_PATH])];
    if (stale.length > 0) {
      process.stderr.write(
        `api-docs: the public surface changed without its review: ${stale.join(', ')} out of date. Run npm run api, and commit the reports with the change.\n`,
      );
      process.exit(1);
    }
    return;
  }
  mkdirSync(dirname(target), { recursive: true });
  writeFileSync(target, markdown);
  const summary = sizes.map((size) => `${size.specifier} ${size.exports}`).join(', ');
  process.stdout.write(
    `api-docs: wrote ${API_REPORT_FOLDER}/*.api.md and ${API_DOCS_PATH} (${summary})${changedReports.length ? `; changed: ${changedReports.join(', ')}` : ''}\n`,
  );
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
