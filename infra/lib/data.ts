/**
 * Where an installation keeps its data: the installation's key (production
 * only), the three DynamoDB tables of docs/data-model.md, and the log groups.
 * The stack creates them first and hands them to everything else: the live
 * delivery (infra/lib/live.ts), the functions (infra/lib/functions.ts), the
 * API (infra/lib/api.ts), the seeding (infra/lib/seeding.ts) and the alarms
 * (infra/lib/alarms.ts).
 */
import { Duration, Names, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as logs from 'aws-cdk-lib/aws-logs';
import * as sqs from 'aws-cdk-lib/aws-sqs';

import { CHECKOV, skipCheckov } from './checkov';

/** The name of the global secondary index of the data table that lists a scope's items (docs/data-model.md). */
export const BY_SCOPE_INDEX = 'by_scope';

/**
 * The sparse global secondary index of the data table that lists the alarms
 * due, earliest first (docs/data-model.md "Alarms"): only call items whose
 * alarm has a `next_at` carry its keys.
 */
export const BY_DUE_INDEX = 'by_due';

/** The installation's tables (docs/data-model.md); the live connections are infra/lib/live.ts's. */
export interface Tables {
  callTypes: dynamodb.Table;
  consumers: dynamodb.Table;
  data: dynamodb.Table;
}

/** A log group of the stack: `id` is its construct id. */
export type LogGroupFactory = (id: string, removalPolicy: RemovalPolicy) => logs.LogGroup;

/**
 * The installation's key (production only): the tables, the log groups, the
 * alarm topic and the queues (the broadcast's failure queue, the alarm
 * timers': infra/lib/alarm-timers.ts, the deliveries':
 * infra/lib/deliveries.ts, the webhooks': infra/lib/webhooks.ts; all made
 * by infra/lib/queues.ts) are encrypted with it, so
 * reading a table takes an IAM permission on this key as well as on the
 * table, CloudTrail records every use of it, and disabling it makes the
 * data, its backups and the logs unreadable at once. KMS rotates it yearly.
 * It outlives a deleted stack like the tables and logs it protects.
 * A sandbox keeps the AWS-owned encryption (the stack creates no key): its
 * data is throwaway test data that expires after 30 days, and a key costs a
 * monthly fee plus requests for nothing worth protecting.
 */
export function createDataKey(stack: Stack, installation: string): kms.Key {
  const key = new kms.Key(stack, 'DataKey', {
    description: `nurse-call ${installation}: the tables, the log groups, the alarm topic and the queues`,
    alias: `alias/nurse-call-${installation}`,
    enableKeyRotation: true,
    removalPolicy: RemovalPolicy.RETAIN,
  });
  // CloudWatch Logs of this region uses the key for the log groups of this
  // account (the encryption context names the log group).
  key.addToResourcePolicy(
    new iam.PolicyStatement({
      sid: 'LogGroupsOfThisAccount',
      principals: [new iam.ServicePrincipal(`logs.${stack.region}.amazonaws.com`)],
      actions: ['kms:Encrypt*', 'kms:Decrypt*', 'kms:ReEncrypt*', 'kms:GenerateDataKey*', 'kms:Describe*'],
      resources: ['*'],
      conditions: {
        ArnLike: {
          'kms:EncryptionContext:aws:logs:arn': `arn:${stack.partition}:logs:${stack.region}:${stack.account}:log-group:*`,
        },
      },
    }),
  );
  return key;
}

export interface TablesProps {
  /** `nurse-call-<installation>-`: the tables are `<prefix>call-types`, `<prefix>consumers`, `<prefix>data`. */
  readonly prefix: string;
  readonly production: boolean;
  /** The installation's key (production). */
  readonly key?: kms.IKey;
}

/**
 * The tables (docs/data-model.md). Production keeps its data: point-in-time
 * recovery, deletion protection, retained when the stack goes, encrypted
 * with the installation's key. A sandbox stack is destroyable as a whole.
 */
export function createTables(stack: Stack, props: TablesProps): Tables {
  const { prefix, production, key } = props;
  const tableSettings = {
    billingMode: dynamodb.BillingMode.PAY_PER_REQUEST,
    pointInTimeRecoverySpecification: { pointInTimeRecoveryEnabled: production },
    deletionProtection: production,
    removalPolicy: production ? RemovalPolicy.RETAIN : RemovalPolicy.DESTROY,
    ...(key ? { encryption: dynamodb.TableEncryption.CUSTOMER_MANAGED, encryptionKey: key } : {}),
  };
  const callTypes = new dynamodb.Table(stack, 'CallTypesTable', {
    ...tableSettings,
    tableName: `${prefix}call-types`,
    partitionKey: { name: 'name', type: dynamodb.AttributeType.STRING },
  });
  const consumers = new dynamodb.Table(stack, 'ConsumersTable', {
    ...tableSettings,
    tableName: `${prefix}consumers`,
    partitionKey: { name: 'id', type: dynamodb.AttributeType.STRING },
    timeToLiveAttribute: 'ttl',
  });
  const data = new dynamodb.Table(stack, 'DataTable', {
    ...tableSettings,
    tableName: `${prefix}data`,
    partitionKey: { name: 'pk', type: dynamodb.AttributeType.STRING },
    sortKey: { name: 'sk', type: dynamodb.AttributeType.STRING },
    timeToLiveAttribute: 'ttl',
    // Every change, before and after, for its two readers: the broadcast
    // (infra/lib/live.ts) and the alarm function (infra/lib/alarm-timers.ts).
    stream: dynamodb.StreamViewType.NEW_AND_OLD_IMAGES,
  });
  data.addGlobalSecondaryIndex({
    indexName: BY_SCOPE_INDEX,
    partitionKey: { name: 'list_pk', type: dynamodb.AttributeType.STRING },
    sortKey: { name: 'list_sk', type: dynamodb.AttributeType.STRING },
    projectionType: dynamodb.ProjectionType.ALL,
  });
  // Keys only: `due_sk` names the time, the scope and the call, and the
  // engine reads the alarm itself (consistently) before it acts.
  data.addGlobalSecondaryIndex({
    indexName: BY_DUE_INDEX,
    partitionKey: { name: 'due_pk', type: dynamodb.AttributeType.STRING },
    sortKey: { name: 'due_sk', type: dynamodb.AttributeType.STRING },
    projectionType: dynamodb.ProjectionType.KEYS_ONLY,
  });
  if (!production) {
    for (const table of [callTypes, consumers, data]) {
      skipCheckov(table, CHECKOV.sandboxTableKey, CHECKOV.sandboxRecovery);
    }
  }
  return { callTypes, consumers, data };
}

/**
 * Subscribes `fn` to the data table's stream (its two readers: the
 * broadcast, infra/lib/live.ts, and the alarm function,
 * infra/lib/alarm-timers.ts), for latency: every record of `filters` as
 * soon as it is there (batching window 0 s, up to 100 a batch), from the
 * latest. A record that fails is retried by itself (partial batch response,
 * bisect on error), at most 3 times and for at most 5 minutes, then a
 * record of its batch (shard, sequence numbers, no item data) goes to
 * `failures`. One batch per shard at a time (parallelization factor 1):
 * a call's changes keep their order. Reading the stream (and, in
 * production, decrypting its records with the key through DynamoDB only)
 * is granted with the mapping.
 */
export function readStream(
  fn: lambda.Function,
  data: dynamodb.ITable,
  props: { readonly filters: readonly object[]; readonly failures: sqs.IQueue },
): void {
  // The destination without CDK's SqsDlq, which would also grant
  // kms:ReEncrypt* and kms:GenerateDataKey* on the key without a
  // condition: the stack grants exactly sqs:SendMessage and, through SQS
  // only, kms:GenerateDataKey and kms:Decrypt (infra/lib/access.ts).
  const onFailure: lambda.IEventSourceDlq = { bind: () => ({ destination: props.failures.queueArn }) };
  const streamArn = data.tableStreamArn;
  if (!streamArn) {
    throw new Error(`the table ${data.node.path} has no stream`);
  }
  // The mapping without CDK's DynamoEventSource, whose grantStreamRead
  // would also give the role kms:Decrypt and kms:DescribeKey on the
  // table's key without a condition: the installation's key also seals the
  // secrets the deliver and forward functions sign with
  // (infra/lib/access.ts), which a role that may decrypt with it directly
  // could open. Stream records are encrypted with the table's key and
  // read through DynamoDB like its items (the stream is DynamoDB's, under
  // the table's encryption at rest), so the role gets the key through
  // DynamoDB only (kms:ViaService; CDK's policy minimisation, on in
  // cdk.json, merges it into the same statement of the role's table
  // access: keyAccess of infra/lib/access.ts). The stream actions are
  // grantStreamRead's: ListStreams supports no narrower resource than `*`.
  // The mapping's id is DynamoEventSource's, so its logical id stays the
  // same (a new mapping from LATEST could miss records).
  fn.addEventSourceMapping(`DynamoDBEventSource:${Names.nodeUniqueId(data.node)}`, {
    eventSourceArn: streamArn,
    startingPosition: lambda.StartingPosition.LATEST,
    batchSize: 100,
    maxBatchingWindow: Duration.seconds(0),
    reportBatchItemFailures: true,
    retryAttempts: 3,
    bisectBatchOnError: true,
    maxRecordAge: Duration.minutes(5),
    parallelizationFactor: 1,
    onFailure,
    filters: props.filters.map((pattern) => lambda.FilterCriteria.filter(pattern as Record<string, unknown>)),
  });
  fn.addToRolePolicy(new iam.PolicyStatement({ actions: ['dynamodb:ListStreams'], resources: ['*'] }));
  fn.addToRolePolicy(
    new iam.PolicyStatement({
      actions: ['dynamodb:DescribeStream', 'dynamodb:GetRecords', 'dynamodb:GetShardIterator'],
      resources: [streamArn],
    }),
  );
  if (data.encryptionKey) {
    fn.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['kms:Decrypt', 'kms:DescribeKey'],
        resources: [data.encryptionKey.keyArn],
        conditions: { StringEquals: { 'kms:ViaService': `dynamodb.${Stack.of(data).region}.amazonaws.com` } },
      }),
    );
  }
}

export interface LogGroupsProps {
  /** The stack's retention of every log group. */
  readonly retention: logs.RetentionDays;
  /** The installation's key (production). */
  readonly key?: kms.IKey;
}

/**
 * Every log group: the stack's retention; in production encrypted with
 * the installation's key.
 */
export function logGroups(stack: Stack, props: LogGroupsProps): LogGroupFactory {
  const { retention, key } = props;
  return (id, removalPolicy) => {
    const group = new logs.LogGroup(stack, id, { retention, removalPolicy, encryptionKey: key });
    if (!key) {
      skipCheckov(group, CHECKOV.sandboxLogKey);
    }
    return group;
  };
}
