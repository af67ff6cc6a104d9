#!/usr/bin/env node
// The CLI is TypeScript; tsx compiles it on the fly so `npx sqs-inbox` needs no build step.
import { register } from 'tsx/esm/api';

// The SDK warns on Node 20 that it will need Node 22 from 2027; the CLI's output stays readable without it.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

register();
await import('./sqs-inbox.ts');
