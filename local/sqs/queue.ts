import type { StoredMessage } from './message.js';
import type { QueueConfig } from './queue-attributes.js';
import type { SqsModel } from './model.js';

export interface DedupEntry {
  messageId: string;
  sequenceNumber?: string | undefined;
  expiresAt: number;
}

export interface ReceiveAttempt {
  expiresAt: number;
  messages: { messageId: string; receiptHandle: string }[];
}

/** One queue's state. The model owns the rules; this holds what they act on. */
export class Queue {
  readonly name: string;
  readonly arn: string;
  readonly fifo: boolean;
  readonly createdTimestamp: number;
  lastModifiedTimestamp: number;
  config: QueueConfig;
  /** Insertion order is enqueue order, which FIFO delivery follows. */
  readonly messages = new Map<string, StoredMessage>();
  /** FIFO deduplication ids seen in the last five minutes, kept after the message is deleted. */
  readonly dedup = new Map<string, DedupEntry>();
  readonly receiveAttempts = new Map<string, ReceiveAttempt>();
  /** Message ids whose visibility was changed since their last receive (ends a ReceiveRequestAttemptId). */
  readonly visibilityChanged = new Set<string>();
  lastPurgeAt: number | undefined;
  deleted = false;
  #sequence = 0n;
  readonly #listeners = new Set<() => void>();

  constructor(init: { name: string; arn: string; config: QueueConfig; now: number }) {
    this.name = init.name;
    this.arn = init.arn;
    this.fifo = init.config.fifo;
    this.config = init.config;
    this.createdTimestamp = init.now;
    this.lastModifiedTimestamp = init.now;
  }

  /** SequenceNumber: large, non-consecutive, increasing within the queue and so within each group. */
  nextSequenceNumber(): string {
    this.#sequence += 1n;
    return (18_000_000_000_000_000_000n + this.#sequence * 65_536n).toString();
  }

  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Wakes long polls: something may have become receivable. */
  notify(): void {
    for (const listener of [...this.#listeners]) listener();
  }

  /** Drops messages past MessageRetentionPeriod and dedup ids past their window. */
  expire(now: number): void {
    const retentionMs = this.config.messageRetentionPeriod * 1000;
    for (const [id, message] of this.messages) {
      if (message.enqueuedAt + retentionMs <= now) this.messages.delete(id);
    }
    for (const [key, entry] of this.dedup) {
      if (entry.expiresAt <= now) this.dedup.delete(key);
    }
    for (const [key, attempt] of this.receiveAttempts) {
      if (attempt.expiresAt <= now) this.receiveAttempts.delete(key);
    }
  }

  counts(now: number): ReturnType<SqsModel['counts']> {
    const counts: ReturnType<SqsModel['counts']> = { visible: 0, inFlight: 0, delayed: 0 };
    for (const message of this.messages.values()) {
      if (message.visibleAt <= now) counts.visible += 1;
      else if (message.receiveCount > 0) counts.inFlight += 1;
      else counts.delayed += 1;
    }
    return counts;
  }

  /** The next moment a delayed or in-flight message becomes visible, if any. */
  nextWakeAt(now: number): number | undefined {
    let next: number | undefined;
    for (const message of this.messages.values()) {
      if (message.visibleAt > now && (next === undefined || message.visibleAt < next)) next = message.visibleAt;
    }
    return next;
  }
}

export function isInFlight(message: StoredMessage, now: number): boolean {
  return message.receiveCount > 0 && message.visibleAt > now;
}
