import { describe, expect, it } from 'vitest';
import { resolveTarget } from '../../lambda/inbox/transport/data-api/transport.js';

const secretArn = 'arn:aws:secretsmanager:eu-west-1:123456789012:secret:inbox-AbCdEf';

describe('the default Data API client', () => {
  it.each([
    ['eu-west-1', 'arn:aws:rds:eu-west-1:123456789012:cluster:orders'],
    ['cn-north-1', 'arn:aws-cn:rds:cn-north-1:123456789012:cluster:orders'],
  ])('calls the cluster in its own region, %s, whatever AWS_REGION says', async (region, resourceArn) => {
    const { client } = resolveTarget({ resourceArn, secretArn }, { AWS_REGION: 'us-east-1' });
    expect(await client.config.region()).toBe(region);
    client.destroy();
  });

  it('uses AWS_REGION against a local endpoint, whose ARNs are made up', async () => {
    const { client } = resolveTarget(
      { resourceArn: 'arn:aws:rds:us-east-1:123456789012:cluster:local', secretArn },
      { AWS_REGION: 'eu-central-1', INBOX_DATA_API_ENDPOINT: 'http://127.0.0.1:1' },
    );
    expect(await client.config.region()).toBe('eu-central-1');
    client.destroy();
  });

  it('takes no region from an ARN that does not start the value', async () => {
    // A value pasted with something before it is not the cluster's ARN: its region must not be guessed from
    // the middle, and the SDK's own chain (AWS_REGION here) decides.
    const previous = process.env.AWS_REGION;
    process.env.AWS_REGION = 'ap-south-1';
    try {
      const { client } = resolveTarget({ resourceArn: 'orders=arn:aws:rds:eu-west-1:123456789012:cluster:orders', secretArn }, {});
      try {
        expect(await client.config.region()).toBe('ap-south-1');
      } finally {
        client.destroy();
      }
    } finally {
      if (previous === undefined) delete process.env.AWS_REGION;
      else process.env.AWS_REGION = previous;
    }
  });
});
