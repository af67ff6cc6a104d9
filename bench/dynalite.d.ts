// dynalite ships no types: the part of its API the bench uses.
declare module 'dynalite' {
  import type { Server } from 'node:http';
  export default function dynalite(options?: { createTableMs?: number; deleteTableMs?: number; updateTableMs?: number }): Server;
}
