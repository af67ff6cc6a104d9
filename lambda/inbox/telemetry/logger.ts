import { Console } from 'node:console';
import { randomInt } from 'node:crypto';
import type { InboxLogger } from './telemetry.js';

// Powertools Logger's thresholds. Names are checked with `in`, as Powertools checks them.
const LEVELS: Readonly<Record<string, number>> = { TRACE: 6, DEBUG: 8, INFO: 12, WARN: 16, ERROR: 20, CRITICAL: 24, SILENT: 28 };
const RESERVED = ['level', 'message', 'sampling_rate', 'service', 'timestamp'];
const TRUTHY = ['1', 'y', 'yes', 't', 'true', 'on'];
const UNSAFE_KEYS = ['__proto__', 'constructor'];

/** An environment variable as Powertools reads one: trimmed, '' when unset. */
const fromEnv = (key: string) => process.env[key]?.trim() ?? '';
const isDevMode = () => TRUTHY.includes(fromEnv('POWERTOOLS_DEV').toLowerCase());

/**
 * The logger `inbox()` uses when none is given. It writes the JSON lines that Powertools'
 * `new Logger({ serviceName: consumer })` writes (same keys in the same order, same streams) and reads the
 * same environment: `AWS_LAMBDA_LOG_LEVEL` (Advanced Logging Controls), `POWERTOOLS_LOG_LEVEL` or
 * `LOG_LEVEL`, `POWERTOOLS_LOGGER_SAMPLE_RATE`, `POWERTOOLS_DEV`, `TZ` and the X-Ray trace id. It leaves
 * out what the inbox never calls (log buffering, context injection, correlation ids, persistent keys),
 * which is most of the utility's 18 KB in a Lambda bundle. For those, pass a Powertools `Logger` as
 * `logger`.
 */
export class JsonLogger implements InboxLogger {
  readonly #service: string;
  readonly #console: Pick<Console, 'debug' | 'info' | 'warn' | 'error'>;
  readonly #indent: number;
  readonly #samplingRate: number = 0;
  #level: number;
  readonly #warnedOnce = new Set<string>();
  #timezoneWarned = false;

  constructor(service: string) {
    this.#service = service;
    const dev = isDevMode();
    this.#console = dev ? console : new Console({ stdout: process.stdout, stderr: process.stderr });
    this.#indent = dev ? 4 : 0;
    const lambdaLevel = fromEnv('AWS_LAMBDA_LOG_LEVEL');
    const alc = lambdaLevel === 'FATAL' ? 'CRITICAL' : lambdaLevel;
    const configured = fromEnv('POWERTOOLS_LOG_LEVEL') || fromEnv('LOG_LEVEL');
    // Advanced Logging Controls win over any configured level.
    this.#level = alc in LEVELS ? LEVELS[alc]! : configured in LEVELS ? LEVELS[configured]! : LEVELS.INFO!;
    const rate = Number(fromEnv('POWERTOOLS_LOGGER_SAMPLE_RATE'));
    if (Number.isNaN(rate)) throw new TypeError('Environment variable POWERTOOLS_LOGGER_SAMPLE_RATE must be a number');
    if (rate >= 0 && rate <= 1) {
      this.#samplingRate = rate;
      if (rate && randomInt(0, 100) / 100 <= rate && this.#level > LEVELS.TRACE!) {
        if (!(alc in LEVELS)) this.#level = LEVELS.DEBUG!;
        else if (this.#level > LEVELS.DEBUG!) {
          this.#warnOnce(
            `Current log level (DEBUG) does not match AWS Lambda Advanced Logging Controls minimum log level (${alc}). This can lead to data loss, consider adjusting them.`,
          );
        }
        this.debug('Setting log level to DEBUG due to sampling rate');
      }
    }
  }

  debug(message: string, ...extra: unknown[]): void {
    this.#log('DEBUG', message, extra);
  }

  info(message: string, ...extra: unknown[]): void {
    this.#log('INFO', message, extra);
  }

  warn(message: string, ...extra: unknown[]): void {
    this.#log('WARN', message, extra);
  }

  error(message: string, ...extra: unknown[]): void {
    this.#log('ERROR', message, extra);
  }

  #warnOnce(message: string): void {
    if (this.#warnedOnce.has(message)) return;
    this.#warnedOnce.add(message);
    this.warn(message);
  }

  #log(level: 'DEBUG' | 'INFO' | 'WARN' | 'ERROR', message: string, extra: readonly unknown[]): void {
    if (LEVELS[level]! < this.#level) return;
    // The keys Powertools' formatter sets, in its order; those without a value are dropped below.
    const line: Record<string, unknown> = {
      level,
      message,
      timestamp: this.#timestamp(new Date()),
      service: this.#service,
      cold_start: undefined,
      function_arn: undefined,
      function_memory_size: undefined,
      function_name: undefined,
      function_request_id: undefined,
      sampling_rate: this.#samplingRate,
      xray_trace_id: xrayTraceId(),
      tenant_id: undefined,
    };
    // Powertools gathers the extra keys first (a later value replaces an earlier one), then deep-merges them in.
    const additional: Record<string, unknown> = {};
    for (const item of extra) {
      if (item === null || item === undefined) continue;
      if (item instanceof Error) additional.error = item;
      else if (typeof item === 'string') additional.extra = item;
      else {
        for (const [key, value] of Object.entries(item)) {
          if (RESERVED.includes(key)) this.warn(`The key "${key}" is a reserved key and will be dropped.`);
          else additional[key] = value;
        }
      }
    }
    for (const key of Object.keys(additional)) {
      const value = additional[key];
      // As deepMerge: an undefined value never hides a set one (xray_trace_id, say).
      if (!UNSAFE_KEYS.includes(key) && (value !== undefined || line[key] === undefined)) line[key] = merged(value, []);
    }
    for (const key of Object.keys(line)) {
      if (line[key] === undefined || line[key] === null || line[key] === '') delete line[key];
    }
    this.#console[level.toLowerCase() as 'debug' | 'info' | 'warn' | 'error'](JSON.stringify(line, jsonReplacer(), this.#indent));
  }

  /** ISO 8601 in UTC, or with the offset of `TZ` when it names another zone. */
  #timestamp(now: Date): string {
    const configured = fromEnv('TZ');
    if (!configured || configured.includes('UTC')) return now.toISOString();
    let zone = configured;
    try {
      new Intl.DateTimeFormat('en', { timeZone: configured });
    } catch {
      if (!this.#timezoneWarned) {
        this.#timezoneWarned = true;
        console.warn(`Invalid or unresolvable time zone: "${configured}" - falling back to UTC.`);
      }
      zone = 'UTC';
    }
    const two = '2-digit';
    const parts: Record<string, string> = {};
    const format = { hourCycle: 'h23', year: 'numeric', month: two, day: two, hour: two, minute: two, second: two, timeZone: zone } as const;
    for (const part of new Intl.DateTimeFormat('en', format).formatToParts(now)) parts[part.type] = part.value;
    const offset = zone === configured ? -now.getTimezoneOffset() : 0;
    const pad = (value: number, width = 2) => String(value).padStart(width, '0');
    return (
      `${parts.year}-${parts.month}-${parts.day}T${parts.hour}:${parts.minute}:${parts.second}.${pad(now.getMilliseconds(), 3)}` +
      `${offset >= 0 ? '+' : '-'}${pad(Math.abs(Math.floor(offset / 60)))}:${pad(Math.abs(offset % 60))}`
    );
  }
}

/** The Root of the X-Ray trace header (per invocation under Lambda's multi-concurrency runtime). */
function xrayTraceId(): string | undefined {
  const store = (globalThis as { awslambda?: { InvokeStore?: { getXRayTraceId(): string | undefined } } }).awslambda?.InvokeStore;
  const header = store?.getXRayTraceId() ?? fromEnv('_X_AMZN_TRACE_ID');
  if (header === '') return undefined;
  if (!header.includes('=')) return header;
  const fields: Record<string, string | undefined> = {};
  for (const field of header.split(';')) {
    const [key, value] = field.split('=');
    fields[key!] = value;
  }
  return fields.Root;
}

/**
 * `value` as Powertools' deepMerge copies it into a log line: plain objects and arrays are copied, without
 * `__proto__` or `constructor` keys and without the plain objects and arrays that refer back to one they sit
 * in (an array keeps a hole for each, written as null, and is cut after the last one it keeps); anything
 * else is kept as it is.
 */
function merged(value: unknown, ancestors: unknown[]): unknown {
  if (!Array.isArray(value) && !isPlainObject(value)) return value;
  ancestors.push(value);
  const keep = (item: unknown) => !((Array.isArray(item) || isPlainObject(item)) && ancestors.includes(item));
  let copy: unknown[] | Record<string, unknown>;
  if (Array.isArray(value)) {
    copy = [];
    for (let index = 0; index < value.length; index++) {
      if (keep(value[index])) copy[index] = merged(value[index], ancestors);
    }
  } else {
    copy = {};
    for (const key of Object.keys(value)) {
      if (!UNSAFE_KEYS.includes(key) && keep(value[key])) copy[key] = merged(value[key], ancestors);
    }
  }
  ancestors.pop();
  return copy;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const prototype = Object.getPrototypeOf(value) as unknown;
  return prototype === Object.prototype || prototype === null;
}

/** As Powertools serialises a log line: errors as objects, bigints as strings, circular references left out. */
function jsonReplacer(): (this: unknown, key: string, value: unknown) => unknown {
  const ancestors: unknown[] = [];
  return function (this: unknown, _key: string, value: unknown) {
    const replaced = value instanceof Error ? formatError(value) : value;
    if (typeof replaced === 'bigint') return replaced.toString();
    if (typeof replaced === 'object' && replaced !== null) {
      while (ancestors.length > 0 && ancestors.at(-1) !== this) ancestors.pop();
      if (ancestors.includes(replaced)) return undefined;
      ancestors.push(replaced);
    }
    return replaced;
  };
}

function formatError(error: Error): Record<string, unknown> {
  const { stack, cause } = error;
  const formatted: Record<string, unknown> = {
    name: error.name,
    location: codeLocation(stack),
    message: error.message,
    stack: isDevMode() && typeof stack === 'string' ? stack.split('\n') : stack,
    cause: cause instanceof Error ? formatError(cause) : cause,
  };
  for (const key in error) {
    if (!['name', 'message', 'stack', 'cause'].includes(key)) {
      formatted[key] = Object.hasOwn(error, key) ? (error as unknown as Record<string, unknown>)[key] : undefined;
    }
  }
  return formatted;
}

function codeLocation(stack: string | undefined): string {
  for (const line of stack?.split('\n') ?? []) {
    const match = /\(([^()]*?):(\d+?):(\d+?)\)\\?$/.exec(line);
    if (match) return `${match[1]}:${Number(match[2])}`;
  }
  return '';
}
