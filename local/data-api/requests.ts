import { badRequest } from './errors.js';
import type { JsonValue } from './json.js';

/**
 * Reading request members. The v3 SDK validates nothing before sending (shared/reference/data-api.md
 * §1.1), so the server checks every member it reads, and each refusal names the member and the fix.
 */

export type RequestBody = { readonly [member: string]: JsonValue };

/** A member the model marks required. */
export function required(body: RequestBody, member: string, operation: string): string {
  const value = body[member];
  if (value === undefined || value === null) {
    throw badRequest(`${operation} requires the member "${member}", and the request has none. Pass ${member} in the command input.`);
  }
  if (typeof value !== 'string' || value === '') throw badRequest(`${operation}: "${member}" must be a non-empty string.`);
  return value;
}

export function optionalString(body: RequestBody, member: string, operation: string): string | undefined {
  const value = body[member];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string' || value === '') throw badRequest(`${operation}: "${member}" must be a non-empty string when given.`);
  return value;
}

export function optionalBoolean(body: RequestBody, member: string, operation: string): boolean {
  const value = body[member];
  if (value === undefined || value === null) return false;
  if (typeof value !== 'boolean') throw badRequest(`${operation}: "${member}" must be true or false.`);
  return value;
}

export function optionalArray(body: RequestBody, member: string, operation: string): JsonValue[] | undefined {
  const value = body[member];
  if (value === undefined || value === null) return undefined;
  if (!Array.isArray(value)) throw badRequest(`${operation}: "${member}" must be a list.`);
  return value;
}

/** An enum member; the message lists the allowed values. */
export function optionalEnum<T extends string>(value: JsonValue | undefined, allowed: readonly T[], member: string, fallback: T): T {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw badRequest(`"${member}" must be one of ${allowed.join(', ')}; got ${JSON.stringify(value)}.`);
  }
  return value as T;
}

export function optionalObject(body: RequestBody, member: string, operation: string): RequestBody {
  const value = body[member];
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) throw badRequest(`${operation}: "${member}" must be an object.`);
  return value as RequestBody;
}
