import type { CloudFormationCustomResourceEvent } from 'aws-lambda';

/**
 * A CloudFormation custom resource event, as the Provider framework hands it to an onEvent handler: the request,
 * the properties (with the ServiceToken CloudFormation adds), and for an Update or a Delete the physical id, and for
 * an Update the old properties.
 */
export function customResourceEvent(
  resource: { readonly type: string; readonly logicalId: string },
  request: 'Create' | 'Update' | 'Delete',
  properties: object,
  previous: { readonly physicalId?: string; readonly old?: object } = {},
): CloudFormationCustomResourceEvent {
  const base = { ServiceToken: 'x', ResponseURL: 'x', StackId: 'x', RequestId: 'x', LogicalResourceId: resource.logicalId, ResourceType: resource.type };
  const resourceProperties = { ServiceToken: 'x', ...properties };
  if (request === 'Create') return { ...base, RequestType: 'Create', ResourceProperties: resourceProperties };
  const physical = { PhysicalResourceId: previous.physicalId ?? 'x' };
  if (request === 'Delete') return { ...base, ...physical, RequestType: 'Delete', ResourceProperties: resourceProperties };
  return { ...base, ...physical, RequestType: 'Update', ResourceProperties: resourceProperties, OldResourceProperties: { ServiceToken: 'x', ...previous.old } };
}

/** The inbox's migration resource (lambda/functions/migration) and its role resource (lambda/functions/database-roles). */
export const MIGRATION_RESOURCE = { type: 'Custom::InboxMigration', logicalId: 'Migration' } as const;
export const ROLE_RESOURCE = { type: 'Custom::InboxDatabaseRole', logicalId: 'Role' } as const;
