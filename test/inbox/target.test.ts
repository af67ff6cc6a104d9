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
});
