// The SQS client of the commands that send or receive (parked redrive, dlq redrive): AWS, or a local
// endpoint. @aws-sdk/client-sqs is an optional peer, loaded only when such a command runs.
import type { SQSClient } from '@aws-sdk/client-sqs';

/**
 * A client for the queues: at `endpoint` (the --sqs-endpoint flag, else $AWS_ENDPOINT_URL_SQS), else AWS in
 * the region `queueUrl` names, else the environment's, else `fallbackRegion`'s.
 */
export async function sqsClient(options: {
  endpoint: string | undefined;
  queueUrl: string | undefined;
  fallbackRegion?: string | undefined;
}): Promise<SQSClient> {
  let sqs: typeof import('@aws-sdk/client-sqs');
  try {
    sqs = await import('@aws-sdk/client-sqs');
  } catch {
    throw new Error('this command sends with @aws-sdk/client-sqs, which is not installed: npm install @aws-sdk/client-sqs');
  }
  const endpoint = options.endpoint || process.env.AWS_ENDPOINT_URL_SQS;
  const region =
    /^https:\/\/sqs\.([a-z0-9-]+)\.amazonaws\.com/.exec(options.queueUrl ?? '')?.[1] ??
    (process.env.AWS_REGION || process.env.AWS_DEFAULT_REGION || options.fallbackRegion || 'us-east-1');
  return new sqs.SQSClient({
    region,
    ...(endpoint
      ? {
          endpoint,
          // A local endpoint does not check signatures; real credentials are never needed for it.
          credentials: { accessKeyId: process.env.AWS_ACCESS_KEY_ID ?? 'local', secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY ?? 'local' },
        }
      : {}),
  });
}
