/**
 * Seeds the call types table with the ten defaults (infra/lib/call-types.ts),
 * once: only when the stack is created (onCreate, no onUpdate), and each put
 * is conditional on the name being new, so an admin's edit is never
 * overwritten.
 */
import { RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as cr from 'aws-cdk-lib/custom-resources';

import { keyAccess } from './access';
import { DEFAULT_CALL_TYPES, callTypeItem } from './call-types';
import { CHECKOV, skipCheckov } from './checkov';
import { LogGroupFactory } from './data';

/** The construct id of AwsCustomResource's provider function (aws-cdk-lib/custom-resources). */
const SEEDING_PROVIDER_ID = 'AWS679f53fac002430cb0da5b7982bd2287';

export interface SeedingProps {
  /** `nurse-call-<installation>-`: the seeded items' physical ids are `<prefix>call-type-<id>`. */
  readonly prefix: string;
  readonly callTypes: dynamodb.ITable;
  /** The installation's key (production): the table is encrypted with it. */
  readonly key?: kms.IKey;
  /** Makes the seeding's log group. */
  readonly logGroup: LogGroupFactory;
}

export function seedCallTypes(stack: Stack, props: SeedingProps): void {
  const { prefix, callTypes, key } = props;
  const seedLogs = props.logGroup('SeedCallTypesLogs', RemovalPolicy.DESTROY);
  const seedAccess: iam.PolicyStatementProps[] = [{ actions: ['dynamodb:PutItem'], resources: [callTypes.tableArn] }];
  for (const callType of DEFAULT_CALL_TYPES) {
    new cr.AwsCustomResource(stack, `SeedCallType${callType.id}`, {
      resourceType: 'Custom::SeedCallType',
      installLatestAwsSdk: false,
      logGroup: seedLogs,
      onCreate: {
        service: 'DynamoDB',
        action: 'putItem',
        parameters: {
          TableName: callTypes.tableName,
          Item: callTypeItem(callType),
          ConditionExpression: 'attribute_not_exists(#name)',
          ExpressionAttributeNames: { '#name': 'name' },
        },
        // Already there (maybe edited by an admin): keep it.
        ignoreErrorCodesMatching: 'ConditionalCheckFailedException',
        physicalResourceId: cr.PhysicalResourceId.of(`${prefix}call-type-${callType.id}`),
      },
      policy: cr.AwsCustomResourcePolicy.fromStatements(
        [...seedAccess, ...keyAccess(stack, key, seedAccess)].map((statement) => new iam.PolicyStatement(statement)),
      ),
    });
  }
  // The seeding's provider: one function for all ten (a singleton of the CDK).
  const seedingProvider = stack.node.tryFindChild(SEEDING_PROVIDER_ID);
  if (!seedingProvider) {
    throw new Error(`the seeding provider ${SEEDING_PROVIDER_ID} is not where the CDK used to put it`);
  }
  skipCheckov(seedingProvider, CHECKOV.noVpc, CHECKOV.seedingDlq, CHECKOV.seedingConcurrency);
}
