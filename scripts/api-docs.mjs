#!/usr/bin/env node
// Writes docs/api.md, the API reference of every public entry in package.json "exports", from the
// declarations the build emits into dist/ (tsc keeps JSDoc there). It reads the .d.ts text itself: TypeDoc
// is not a dependency, and the native TypeScript compiler has no JavaScript API to ask.
// Plain JavaScript on purpose, like build.mjs: it runs on a fresh clone with nothing compiled yet.
//
//   node scripts/api-docs.mjs             builds the declarations (build.mjs --types-only), then writes docs/api.md
//   node scripts/api-docs.mjs --no-build  uses dist/ as it is
//   node scripts/api-docs.mjs --check     writes nothing; exits 1 when docs/api.md is out of date
//
// test/package/api-docs.test.ts imports collectApi() and renderApi() from here: it fails on an export
// without JSDoc and on a docs/api.md that differs from what renderApi() produces.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Where the reference is written, relative to the repository root. */
export const API_DOCS_PATH = 'docs/api.md';

/** Interfaces whose every member must carry a description: the options and props users fill in. */
export const OPTIONS_INTERFACE = /(Options|Props)$/;

// ---------------------------------------------------------------------------------------------------------
// Scanning declaration text

/** Index just past the string literal that starts at `i` (quote at `i`). */
function skipString(src, i) {
  const quote = src[i];
  for (let j = i + 1; j < src.length; j++) {
    if (src[j] === '\\') j++;
    else if (src[j] === quote) return j + 1;
  }
  return src.length;
}

/** Index just past the template literal (type) that starts at `i`, `${...}` placeholders included. */
function skipTemplate(src, i) {
  for (let j = i + 1; j < src.length; j++) {
    if (src[j] === '\\') j++;
    else if (src[j] === '`') return j + 1;
    else if (src[j] === '$' && src[j + 1] === '{') {
      let depth = 1;
      j += 2;
      for (; j < src.length && depth > 0; j++) {
        if (src[j] === '{') depth++;
        else if (src[j] === '}') depth--;
        else if (src[j] === '`') j = skipTemplate(src, j) - 1;
        else if (src[j] === "'" || src[j] === '"') j = skipString(src, j) - 1;
      }
      j--;
    }
  }
  return src.length;
}

/** Marks a comment as the file's own documentation rather than its first statement's. */
const MODULE_DOC = /@(module|packageDocumentation)\b/;

const BLOCK_DECLARATION =
  /^(?:export\s+)?(?:declare\s+)?(?:default\s+)?(?:abstract\s+)?(?:interface|class|enum|namespace|module|global)\b/;

/**
 * Splits declaration text (a whole .d.ts file, or the body of an interface or class) into statements, each
 * with the JSDoc comment right before it. A statement ends at a `;` outside brackets, or at the `}` that
 * closes the body of an interface, class, enum or namespace (those end without a `;`).
 */
function splitStatements(src) {
  const statements = [];
  let doc = null;
  let start = -1;
  let depth = 0;
  let angle = 0;
  let block = false;
  let bodyDepth = -1;
  const end = (at) => {
    statements.push({ doc: start.doc, text: src.slice(start.at, at).trim() });
    start = -1;
    depth = 0;
    angle = 0;
    block = false;
    bodyDepth = -1;
  };
  let i = 0;
  while (i < src.length) {
    const c = src[i];
    if (c === '/' && src[i + 1] === '*') {
      const close = src.indexOf('*/', i + 2);
      const stop = close < 0 ? src.length : close + 2;
      const comment = src.slice(i, stop);
      // A file's own doc (`@module`) documents no statement.
      if (start === -1) doc = comment.startsWith('/**') && comment !== '/**/' && !MODULE_DOC.test(comment) ? comment : null;
      i = stop;
      continue;
    }
    if (c === '/' && src[i + 1] === '/') {
      const close = src.indexOf('\n', i);
      i = close < 0 ? src.length : close;
      continue;
    }
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (start === -1) {
      start = { at: i, doc };
      doc = null;
      block = BLOCK_DECLARATION.test(src.slice(i, i + 80));
    }
    if (c === '"' || c === "'") {
      i = skipString(src, i);
      continue;
    }
    if (c === '`') {
      i = skipTemplate(src, i);
      continue;
    }
    if (c === '<' && depth === 0 && bodyDepth === -1) angle++;
    else if (c === '>' && depth === 0 && bodyDepth === -1 && src[i - 1] !== '=' && angle > 0) angle--;
    else if (c === '{' || c === '[' || c === '(') {
      if (c === '{' && block && bodyDepth === -1 && depth === 0 && angle === 0) bodyDepth = 0;
      depth++;
    } else if (c === '}' || c === ']' || c === ')') {
      depth--;
      if (c === '}' && depth === 0 && bodyDepth === 0) {
        end(i + 1);
        i++;
        continue;
      }
    } else if (c === ';' && depth === 0) {
      end(i + 1);
      i++;
      continue;
    }
    i++;
  }
  if (start !== -1) end(src.length);
  return statements;
}

/** The text with comments removed and whitespace collapsed to single spaces. */
function compact(text) {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === '/' && text[i + 1] === '*') {
      const close = text.indexOf('*/', i + 2);
      i = close < 0 ? text.length : close + 2;
      out += ' ';
    } else if (c === '/' && text[i + 1] === '/') {
      const close = text.indexOf('\n', i);
      i = close < 0 ? text.length : close;
    } else if (c === '"' || c === "'") {
      const stop = skipString(text, i);
      out += text.slice(i, stop);
      i = stop;
    } else if (c === '`') {
      const stop = skipTemplate(text, i);
      out += text.slice(i, stop);
      i = stop;
    } else {
      out += c;
      i++;
    }
  }
  return out
    .replace(/\s+/g, ' ')
    .replace(/([([{<]) /g, '$1')
    .replace(/ ([)\]>,;])/g, '$1')
    .replace(/\{([^ }])/g, '{ $1')
    .replace(/([^ {])\}/g, '$1 }')
    .replace(/; \}/g, ' }')
    .replace(/;$/, '')
    .trim();
}

/** The text between the first `{` of a block declaration's body and its closing `}`. */
function blockBody(text) {
  let depth = 0;
  let angle = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '"' || c === "'") i = skipString(text, i) - 1;
    else if (c === '`') i = skipTemplate(text, i) - 1;
    else if (c === '/' && text[i + 1] === '*') i = text.indexOf('*/', i + 2) + 1;
    else if (c === '<' && depth === 0) angle++;
    else if (c === '>' && depth === 0 && text[i - 1] !== '=' && angle > 0) angle--;
    else if (c === '{' && depth === 0 && angle === 0) {
      const close = text.lastIndexOf('}');
      return { head: text.slice(0, i), body: text.slice(i + 1, close) };
    } else if (c === '(' || c === '[' || c === '{') depth++;
    else if (c === ')' || c === ']' || c === '}') depth--;
  }
  return { head: text, body: '' };
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
// Modules, exports and declarations

const DECLARATION =
  /^(?:export\s+)?(?:declare\s+)?(?:default\s+)?(?:abstract\s+)?(?:async\s+)?(function|class|interface|type|const|let|var|enum|namespace|module)\s+([A-Za-z_$][\w$]*)/;

/** Reads and indexes one declaration file: its local declarations, exports and star re-exports, in order. */
function readModule(file, cache) {
  if (cache.has(file)) return cache.get(file);
  const text = readFileSync(file, 'utf8');
  const module = { file, declarations: new Map(), imports: new Map(), items: [], doc: null };
  cache.set(file, module);
  const leading = /^\s*(\/\*\*[\s\S]*?\*\/)/.exec(text);
  if (leading && MODULE_DOC.test(leading[1])) module.doc = leading[1];
  const statements = splitStatements(text);
  statements.forEach((statement, index) => {
    const source = statement.text;
    let match;
    if ((match = /^import\s+(type\s+)?(?:(\w+)\s*,?\s*)?(?:\{([^}]*)\})?(?:\*\s+as\s+(\w+))?\s*from\s*['"]([^'"]+)['"]/.exec(source))) {
      for (const spec of specifiers(match[3] ?? '')) module.imports.set(spec.local, { from: match[5], name: spec.name });
      return;
    }
    if ((match = /^export\s+(type\s+)?\*\s*(?:as\s+(\w+)\s*)?from\s*['"]([^'"]+)['"]/.exec(source))) {
      if (index === 0 && statement.doc && !module.doc) module.doc = statement.doc;
      if (match[2]) module.items.push({ kind: 'reexport', exported: match[2], name: '*', from: match[3] });
      else module.items.push({ kind: 'star', from: match[3] });
      return;
    }
    if ((match = /^export\s+(type\s+)?\{([^}]*)\}\s*(?:from\s*['"]([^'"]+)['"])?/.exec(source))) {
      if (index === 0 && statement.doc && match[3] && !module.doc) module.doc = statement.doc;
      for (const spec of specifiers(match[2])) {
        if (match[3]) module.items.push({ kind: 'reexport', exported: spec.exported, name: spec.name, from: match[3] });
        else module.items.push({ kind: 'local', exported: spec.exported, name: spec.local });
      }
      return;
    }
    if ((match = DECLARATION.exec(source))) {
      const [, keyword, name] = match;
      const list = module.declarations.get(name) ?? [];
      list.push({ keyword, text: source, doc: statement.doc });
      module.declarations.set(name, list);
      if (/^export\s/.test(source) && list.length === 1) {
        module.items.push({ kind: 'local', exported: /^export\s+default\s/.test(source) ? 'default' : name, name });
      }
    }
  });
  return module;
}

/** `a, type B, c as d` -> [{ name, local, exported }]. */
function specifiers(list) {
  return list
    .split(',')
    .map((part) => part.trim().replace(/^type\s+/, ''))
    .filter(Boolean)
    .map((part) => {
      const [name, alias] = part.split(/\s+as\s+/);
      return { name, local: alias ?? name, exported: alias ?? name };
    });
}

/** The declaration file a relative module specifier names, or null for a package. */
function resolveSpecifier(fromFile, specifier) {
  if (!specifier.startsWith('.')) return null;
  const base = resolve(dirname(fromFile), specifier.replace(/\.(m|c)?js$/, ''));
  for (const candidate of [`${base}.d.ts`, `${base}.d.mts`, join(base, 'index.d.ts')]) {
    if (existsSync(candidate)) return candidate;
  }
  throw new Error(`api-docs: ${fromFile} re-exports '${specifier}', which has no declaration file`);
}

/** Every export of a module, in statement order, `export *` expanded in place; each resolved to its declaration. */
function moduleExports(file, cache, seen = new Set()) {
  if (seen.has(file)) return [];
  seen.add(file);
  const module = readModule(file, cache);
  const explicit = new Set(module.items.filter((item) => item.kind !== 'star').map((item) => item.exported));
  const out = [];
  const names = new Set();
  for (const item of module.items) {
    if (item.kind === 'star') {
      const target = resolveSpecifier(file, item.from);
      if (!target) continue;
      for (const entry of moduleExports(target, cache, new Set(seen))) {
        if (entry.name === 'default' || explicit.has(entry.name) || names.has(entry.name)) continue;
        names.add(entry.name);
        out.push(entry);
      }
      continue;
    }
    if (names.has(item.exported)) continue;
    names.add(item.exported);
    out.push({ name: item.exported, ...resolveExport(file, item, cache) });
  }
  return out;
}

/** Follows one export through re-exports and imports to the file that declares it. */
function resolveExport(file, item, cache) {
  const module = readModule(file, cache);
  if (item.kind === 'local') {
    if (module.declarations.has(item.name)) return { file, declarations: module.declarations.get(item.name) };
    const imported = module.imports.get(item.name);
    if (imported) return resolveExport(file, { kind: 'reexport', name: imported.name, from: imported.from }, cache);
    throw new Error(`api-docs: ${file} exports '${item.name}', which it does not declare`);
  }
  const target = resolveSpecifier(file, item.from);
  if (!target) return { file: null, external: item.from, declarations: [] };
  const found = moduleExports(target, cache).find((entry) => entry.name === item.name);
  if (!found) throw new Error(`api-docs: ${file} re-exports '${item.name}' from '${item.from}', which does not export it`);
  return { file: found.file, external: found.external, declarations: found.declarations };
}

// ---------------------------------------------------------------------------------------------------------
// The model the test and the renderer share

/** Members of an interface or class body: name, signature, doc; private and protected members left out. */
function membersOf(body) {
  const members = [];
  for (const statement of splitStatements(body)) {
    // `name?: T | undefined` reads as `name?: T` (the `| undefined` is there for exactOptionalPropertyTypes).
    const signature = compact(statement.text).replace(/^([^(:]*\?\s*:\s*[\s\S]*?) \| undefined$/, '$1');
    if (/^(private|protected)\s/.test(signature) || /^(?:readonly\s+)?#/.test(signature)) continue;
    const stripped = signature.replace(/^((public|static|readonly|abstract|declare|override|accessor)\s+)*/, '');
    let name;
    let match;
    if ((match = /^(?:get|set)\s+([A-Za-z_$][\w$]*)/.exec(stripped))) name = match[1];
    else if ((match = /^([A-Za-z_$][\w$]*|'[^']*'|"[^"]*")\??\s*[:(<=;]|^([A-Za-z_$][\w$]*)$/.exec(stripped))) {
      name = (match[1] ?? match[2]).replace(/^['"]|['"]$/g, '');
    }
    else if (stripped.startsWith('[')) name = '[index]';
    else if (stripped.startsWith('(') || stripped.startsWith('<')) name = '(call)';
    else if (stripped.startsWith('new')) name = 'new';
    else name = stripped;
    const doc = parseJsDoc(statement.doc);
    // Implementation details the declarations must keep (the servers call them), not API.
    if (doc?.tags.some((tag) => tag.tag === 'internal')) continue;
    members.push({ name, signature, doc, documented: documented(doc) || name === 'constructor' });
  }
  return members;
}

function summaryOf(name, resolved) {
  const [first] = resolved.declarations;
  if (!first) return { kind: 'external', signature: `export { ${name} } from '${resolved.external}'`, members: [] };
  const kind = first.keyword === 'let' || first.keyword === 'var' ? 'const' : first.keyword;
  const strip = (text) => text.replace(/^export\s+/, '').replace(/^declare\s+/, '').replace(/^default\s+/, '');
  if (kind === 'interface' || kind === 'class' || kind === 'enum' || kind === 'namespace' || kind === 'module') {
    const { head, body } = blockBody(strip(first.text));
    // An error class's `name` is its class name: nothing to document.
    const members = kind === 'namespace' || kind === 'module' ? [] : membersOf(body).filter((member) => !(/Error$/.test(name) && member.name === 'name'));
    return { kind, signature: compact(head), members };
  }
  return { kind, signature: resolved.declarations.map((declaration) => compact(strip(declaration.text))).join('\n'), members: [] };
}

/**
 * Reads the public API from the emitted declarations: one entry per package.json export with a `types`
 * condition (at its top or under `import`), each with its exports in declaration order, their kind, compact signature, JSDoc and members.
 *
 * @param root - the repository root
 * @param dist - the declarations root (dist/ of the repository, unless given)
 */
export function collectApi({ root = process.cwd(), dist = join(root, 'dist') } = {}) {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const cache = new Map();
  const entries = [];
  for (const [subpath, target] of Object.entries(pkg.exports ?? {})) {
    // The ES modules' declarations: the CommonJS copy (the "require" condition) holds the same text.
    const types = typeof target === 'object' && target ? (target.types ?? target.import?.types) : null;
    if (!types) continue;
    const declarationFile = join(dist, relative('dist', types.replace(/^\.\//, '')));
    const specifier = subpath === '.' ? pkg.name : `${pkg.name}/${subpath.replace(/^\.\//, '')}`;
    const module = readModule(declarationFile, cache);
    const exports = moduleExports(declarationFile, cache).map((entry) => {
      const doc = parseJsDoc(entry.declarations.find((declaration) => declaration.doc)?.doc ?? null);
      const source = entry.file ? sourceOf(dist, entry.file) : entry.external;
      return { name: entry.name, source, doc, documented: documented(doc), ...summaryOf(entry.name, entry) };
    });
    entries.push({ specifier, source: sourceOf(dist, declarationFile), doc: parseJsDoc(module.doc), exports });
  }
  return entries;
}

/** `dist/lambda/inbox/index.d.ts` -> `lambda/inbox/index.ts`. */
function sourceOf(dist, declarationFile) {
  return relative(dist, declarationFile).split(sep).join('/').replace(/\.d\.(m?)ts$/, '.$1ts');
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
          if (!member.doc?.description.trim()) {
            problems.push(`${entry.specifier}: ${item.name}.${member.name} (${item.source}) has no description`);
          }
        }
      }
    }
  }
  return problems;
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
  const paragraph = text.split(/\n\s*\n/)[0].replace(/\s+/g, ' ').trim();
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
  const heading = item.kind === 'class' ? 'Members' : 'Properties';
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
    '<!-- Generated by `npm run docs` (scripts/api-docs.mjs) from the JSDoc in the sources. Do not edit by hand. -->',
    '',
    'Every export of the package\'s public entries, with its declaration and its documentation. The design',
    'behind them is in [architecture.md](architecture.md).',
    '',
  ];
  slug('API reference');
  const entryAnchors = entries.map((entry) => slug(entry.specifier));
  const itemAnchors = entries.map((entry) => new Map(entry.exports.map((item) => [item.name, slug(item.name)])));
  for (const [index, entry] of entries.entries()) {
    lines.push(`- [${code(entry.specifier)}](#${entryAnchors[index]}) (${entry.exports.length} exports): ${cell(entry.doc ? firstSentence(prose(entry.doc.description, new Map())) : code(entry.source))}`);
  }
  for (const [index, entry] of entries.entries()) {
    const anchors = itemAnchors[index];
    lines.push('', `## ${entry.specifier}`, '');
    lines.push(`\`import { ... } from '${entry.specifier}'\`, declared by ${code(entry.source)}.`);
    if (entry.doc) lines.push('', ...tagLinesWithDescription(entry.doc, anchors));
    lines.push('', '| Export | Kind | Summary |', '|---|---|---|');
    for (const item of entry.exports) {
      const summary = item.doc ? cell(firstSentence(prose(item.doc.description, anchors))) : '';
      lines.push(`| [${code(item.name)}](#${anchors.get(item.name)}) | ${item.kind} | ${summary} |`);
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
  return `${lines.join('\n').replace(/\n{3,}/g, '\n\n').trimEnd()}\n`;
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
  const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
  const args = process.argv.slice(2);
  const check = args.includes('--check');
  if (!args.includes('--no-build')) {
    const build = spawnSync(process.execPath, [join(root, 'scripts/build.mjs'), '--types-only'], { cwd: root, stdio: 'inherit' });
    if (build.status !== 0) process.exit(build.status ?? 1);
  }
  const entries = collectApi({ root });
  const markdown = renderApi(entries);
  const target = join(root, API_DOCS_PATH);
  for (const problem of undocumented(entries)) process.stderr.write(`api-docs: ${problem}\n`);
  if (check) {
    const current = existsSync(target) ? readFileSync(target, 'utf8') : '';
    if (current !== markdown) {
      process.stderr.write(`api-docs: ${API_DOCS_PATH} is out of date: run npm run docs\n`);
      process.exit(1);
    }
    return;
  }
  mkdirSync(dirname(target), { recursive: true });
  writeFileSync(target, markdown);
  const counts = entries.map((entry) => `${entry.specifier} ${entry.exports.length}`).join(', ');
  process.stdout.write(`api-docs: wrote ${API_DOCS_PATH} (${counts})\n`);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();

/** Exposed for the test's hint when dist/ is older than a source it documents. */
export function staleDeclarations(entries, { root = process.cwd(), dist = join(root, 'dist') } = {}) {
  const stale = [];
  const sources = new Set(entries.flatMap((entry) => [entry.source, ...entry.exports.map((item) => item.source)]));
  for (const source of [...sources].sort()) {
    const file = join(root, source);
    const declaration = join(dist, source.replace(/\.(m?)ts$/, '.d.$1ts'));
    if (existsSync(file) && existsSync(declaration) && statSync(file).mtimeMs > statSync(declaration).mtimeMs) stale.push(source);
  }
  return stale;
}
