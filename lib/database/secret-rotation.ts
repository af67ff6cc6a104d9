import type { Duration } from 'aws-cdk-lib';
import * as ec2 from 'aws-cdk-lib/aws-ec2';
import type * as rds from 'aws-cdk-lib/aws-rds';
import * as secretsmanager from 'aws-cdk-lib/aws-secretsmanager';
import { Construct } from 'constructs';

/** Props for {@link InboxSecretRotation}. */
export interface InboxSecretRotationProps {
  /** The cluster whose users the rotation functions sign in as. */
  readonly cluster: rds.IDatabaseCluster;
  /** The cluster's VPC: the rotation functions run in it. */
  readonly vpc: ec2.IVpc;
  /** The subnets the rotation functions (and the endpoint) use. */
  readonly vpcSubnets: ec2.SubnetSelection;
  /** Days between rotations. */
  readonly interval: Duration;
  /** Create a Secrets Manager interface endpoint in `vpc`: the only route an isolated subnet has to Secrets Manager. */
  readonly createEndpoint: boolean;
}

/**
 * Rotates the cluster's secrets with Secrets Manager's hosted single-user PostgreSQL rotation: each user
 * changes its own password, and the Data API, which reads the secret on every call, follows at once.
 * The rotation functions run in the cluster's VPC under one security group that may reach only the
 * cluster's port and the Secrets Manager endpoint, which this construct adds to the NAT-free VPC.
 */
export class InboxSecretRotation extends Construct {
  /** The security group of every rotation function. */
  public readonly securityGroup: ec2.SecurityGroup;
  /** The Secrets Manager interface endpoint, when one was created. */
  public readonly endpoint?: ec2.InterfaceVpcEndpoint;
  readonly #props: InboxSecretRotationProps;

  constructor(scope: Construct, id: string, props: InboxSecretRotationProps) {
    super(scope, id);
    this.#props = props;
    this.securityGroup = new ec2.SecurityGroup(this, 'SecurityGroup', {
      vpc: props.vpc,
      allowAllOutbound: false,
      description: 'sqs-inbox secret rotation functions: the cluster port and the Secrets Manager endpoint only',
    });
    props.cluster.connections.allowDefaultPortFrom(this.securityGroup, 'sqs-inbox secret rotation');
    if (props.createEndpoint) {
      this.endpoint = new ec2.InterfaceVpcEndpoint(this, 'SecretsManagerEndpoint', {
        vpc: props.vpc,
        service: ec2.InterfaceVpcEndpointAwsService.SECRETS_MANAGER,
        subnets: props.vpcSubnets,
        privateDnsEnabled: true,
        open: false,
        // An endpoint only answers; its network interfaces never open a connection.
        securityGroups: [
          new ec2.SecurityGroup(this, 'EndpointSecurityGroup', {
            vpc: props.vpc,
            allowAllOutbound: false,
            description: 'sqs-inbox Secrets Manager endpoint: HTTPS from the rotation functions only',
          }),
        ],
      });
      this.endpoint.connections.allowDefaultPortFrom(this.securityGroup, 'sqs-inbox secret rotation');
    } else {
      // The VPC brings its own route to Secrets Manager (an endpoint or a NAT gateway).
      this.securityGroup.addEgressRule(ec2.Peer.anyIpv4(), ec2.Port.tcp(443), 'Secrets Manager over HTTPS');
    }
  }

  /**
   * Rotates `secret` (a user of the cluster, attached to it so it holds host, port and engine) every
   * `interval`, first right after it is created.
   */
  public rotate(secret: secretsmanager.ISecret): secretsmanager.RotationSchedule {
    return secret.addRotationSchedule('Rotation', {
      hostedRotation: secretsmanager.HostedRotation.postgreSqlSingleUser({
        vpc: this.#props.vpc,
        vpcSubnets: this.#props.vpcSubnets,
        securityGroups: [this.securityGroup],
      }),
      automaticallyAfter: this.#props.interval,
    });
  }
}
