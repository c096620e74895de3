/**
 * Least privilege: exactly the actions each function's code issues
 * (functions/store-dynamodb/src/, the live functions of the contract of
 * issue 13, the alarm function's queues), the use of the installation's
 * key those actions need, and the deliver and forward functions' direct
 * use of it for the secrets they sign with (functions/kms/src/lib.rs).
 * The functions (infra/lib/functions.ts) and the seeding
 * (infra/lib/seeding.ts) get their statements from here; the tests of
 * infra/test/stack.test.ts and infra/test/data-protection.test.ts assert them.
 */
import { Stack } from 'aws-cdk-lib';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';

import type { AlarmTimers } from './alarm-timers';
import { BY_SCOPE_INDEX, Tables } from './data';
import type { Deliveries } from './deliveries';
import type { FunctionName } from './functions';
import { BY_CONNECTION_INDEX, Live } from './live';
import type { Webhooks } from './webhooks';

/**
 * The variable the deliver and forward functions read the installation's
 * key from to seal and open the secrets they sign with
 * (SECRETS_KEY_VAR of functions/kms/src/lib.rs); production only: unset,
 * the secrets stay plain and no KMS call is made (the sandbox).
 */
export const SECRETS_KEY_VAR = 'SECRETS_KEY_ID';

/**
 * The encryption context's `purpose` of each kind of sealed secret
 * (`Sealed::context` of functions/core/src/signing/sealing.rs): what the
 * grants below are conditioned on, so that each function opens its own
 * kind of secret only.
 */
export const SEALED_PURPOSES = {
  /** The installation's VAPID private key: the deliver function seals it on its first cold start and opens it on each. */
  vapidPrivateKey: 'vapid-private-key',
  /** A webhook endpoint's secret (the context also names the endpoint): the admin command seals it, the forward function opens it. */
  webhookSecret: 'webhook-secret',
} as const;

/** The DynamoDB actions that write (and so need the key to encrypt). */
const DYNAMODB_WRITES = ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem', 'dynamodb:BatchWriteItem'];

/**
 * The data table as the functions that write calls use it (display's open
 * and close, staff's responses and the alarm function's steps, the same
 * alarm engine): reads of an item or a partition, and the puts, updates
 * and deletes of their transactions.
 */
const ALARM_ENGINE_ACTIONS = [
  'dynamodb:Query',
  'dynamodb:GetItem',
  'dynamodb:PutItem',
  'dynamodb:UpdateItem',
  'dynamodb:DeleteItem',
];

export interface AccessProps {
  readonly production: boolean;
  readonly tables: Tables;
  /** The live delivery: its connections table, its management API and its failure queue. */
  readonly live: Live;
  /** The alarm function's queues: the timer queue and its stream failure queue. */
  readonly alarmTimers: AlarmTimers;
  /** The delivery queue the alarm function sends push jobs to. */
  readonly deliveries: Deliveries;
  /** The webhook queue the alarm function sends wake-ups to. */
  readonly webhooks: Webhooks;
  /** The installation's key (production). */
  readonly key?: kms.IKey;
}

/**
 * The IAM statements of each function. TransactWriteItems has no IAM action
 * of its own; it needs the action of each item in it.
 */
export function accessOf(stack: Stack, props: AccessProps): Record<FunctionName, iam.PolicyStatementProps[]> {
  const { production, live, alarmTimers, deliveries, webhooks, key } = props;
  const { callTypes, consumers, data } = props.tables;
  const connections = live.connections;
  const byScopeArn = `${data.tableArn}/index/${BY_SCOPE_INDEX}`;
  const byConnectionArn = `${connections.tableArn}/index/${BY_CONNECTION_INDEX}`;
  // Sending to a queue encrypted with the installation's key: a data key
  // for the message, through SQS only.
  const sendThroughKey: iam.PolicyStatementProps[] = key
    ? [
        {
          actions: ['kms:GenerateDataKey', 'kms:Decrypt'],
          resources: [key.keyArn],
          conditions: { StringEquals: { 'kms:ViaService': `sqs.${stack.region}.amazonaws.com` } },
        },
      ]
    : [];
  // The secrets a function signs with, sealed with the installation's key
  // (functions/kms/src/lib.rs): the function calls KMS itself, so no
  // kms:ViaService; the key's ARN only, and only for the encryption
  // context's `purpose` of its own kind of secret, so that a function
  // cannot open (or seal) the other's secrets, nor decrypt anything else
  // directly with these. None without a key: the secrets stay plain.
  // The condition holds only because no statement of any role allows the
  // key without one (IAM allows what any statement allows): every other
  // use is through DynamoDB or SQS (kms:ViaService), the event sources'
  // too, which is why the stack maps its queues and stream itself rather
  // than with CDK's event sources (takeFrom of infra/lib/queues.ts,
  // readStream of infra/lib/data.ts). infra/test/data-protection.test.ts
  // asserts it of every policy of the stack.
  const sealWithKey = (actions: string[], purpose: string): iam.PolicyStatementProps[] =>
    key
      ? [
          {
            actions,
            resources: [key.keyArn],
            conditions: { StringEquals: { 'kms:EncryptionContext:purpose': purpose } },
          },
        ]
      : [];
  // The signed requests' consumer (GetItem) and its sign of life
  // (DECISIONS §19: UpdateItem of its item, at most once per third of its
  // heartbeat per warm instance; a silence it ends: TransactWriteItems of
  // that Update and an UpdateItem of the silence's history item in the
  // data table, which each of these functions may update).
  const signOfLife: iam.PolicyStatementProps = {
    actions: ['dynamodb:GetItem', 'dynamodb:UpdateItem'],
    resources: [consumers.tableArn],
  };
  return {
    // authenticate; call types; snapshot (Query pk), open (TransactWriteItems:
    // Put lock + Put call + Update element; GetItem of the existing lock),
    // re-open (UpdateItem), close (TransactWriteItems: Update + Delete). In
    // sandbox stacks also a consumer's hash mismatches for the test page
    // (PutItem, Query, DeleteItem: already covered).
    display: [
      signOfLife,
      { actions: ['dynamodb:Scan'], resources: [callTypes.tableArn] },
      { actions: ALARM_ENGINE_ACTIONS, resources: [data.tableArn] },
    ],
    // the display by its token's hash (GetItem; in sandbox stacks also the
    // test page's consumer, for its cookie); call types to sort and
    // describe the calls; the open calls from the scope's open-call index
    // partition (Query), the elements from the by_scope index (Query).
    // And the silent central systems (DECISIONS §19): the consumers with
    // a heartbeat (Scan of the consumers table, a few items).
    'display-read': [
      { actions: ['dynamodb:GetItem', 'dynamodb:Scan'], resources: [consumers.tableArn] },
      { actions: ['dynamodb:Scan'], resources: [callTypes.tableArn] },
      { actions: ['dynamodb:Query'], resources: [data.tableArn, byScopeArn] },
    ],
    // authenticate; single form UpdateItem, multi form TransactWriteItems of
    // Updates, then BatchGetItem of the elements.
    element: [
      signOfLife,
      {
        actions: [
          'dynamodb:UpdateItem',
          'dynamodb:BatchGetItem',
          // Sandbox stacks only: a consumer's hash mismatches for the test
          // page (put, read the partition's keys, delete the oldest).
          ...(production ? [] : ['dynamodb:PutItem', 'dynamodb:Query', 'dynamodb:DeleteItem']),
        ],
        resources: [data.tableArn],
      },
    ],
    // And the phones' Web Push registration (DECISIONS §15; issue 47 moved
    // it here from the staff function): the staff member by their token's
    // hash (GetItem of the credential), the VAPID public key (GetItem), a
    // subscription put or deleted with its channel item in the roster and
    // its person's cap item (TransactWriteItems: Put/Delete + Update), the
    // new device's sign-on test item (PutItem of push#test): only the
    // push, roster and cap partitions.
    'call-types': [
      { actions: ['dynamodb:Scan'], resources: [callTypes.tableArn] },
      { actions: ['dynamodb:GetItem'], resources: [consumers.tableArn] },
      {
        actions: ['dynamodb:GetItem', 'dynamodb:Query', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'],
        resources: [data.tableArn],
        conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['push#*', 'staff#*', 'cap#*'] } },
      },
    ],
    // the page's consumer (GetItem, PutItem); call types for the page and the
    // records; the lists from the by_scope index, the hash mismatches from
    // their partition of the data table (Query only, no writes).
    sandbox: [
      { actions: ['dynamodb:GetItem', 'dynamodb:PutItem'], resources: [consumers.tableArn] },
      { actions: ['dynamodb:Scan'], resources: [callTypes.tableArn] },
      { actions: ['dynamodb:Query'], resources: [data.tableArn, byScopeArn] },
    ],
    // the staff member by their token's hash (GetItem of the credential);
    // call types; their duty and the scope's roster (Query), sign on and
    // off (PutItem, DeleteItem); the open calls (Query of the open-call
    // partition); a response: the call's alarm (GetItem), the address's
    // open calls for a presence (Query), the conditional alarm write with
    // its audit (TransactWriteItems: Update + Put). An alarm server's
    // response (DECISIONS §16): its consumer (GetItem), the scope's staff
    // (Query), then the same; in sandbox stacks a consumer's hash
    // mismatches for the test page (PutItem, Query, DeleteItem: covered).
    // The staff pages' read lists the silent central systems (Scan, §19).
    staff: [
      signOfLife,
      { actions: ['dynamodb:Scan'], resources: [consumers.tableArn] },
      { actions: ['dynamodb:Scan'], resources: [callTypes.tableArn] },
      { actions: ALARM_ENGINE_ACTIONS, resources: [data.tableArn] },
    ],
    // $connect: the display by its token's hash, or in sandbox stacks the
    // visitor's consumer (GetItem); records the connection (PutItem), and a
    // staff page as its person's channel in the roster (PutItem, DECISIONS
    // §18: functions/store-dynamodb/src/channels.rs).
    // $disconnect: finds the connection's scope (Query of by_connection),
    // removes it and its channel item (DeleteItem).
    'live-connect': [
      { actions: ['dynamodb:GetItem'], resources: [consumers.tableArn] },
      { actions: ['dynamodb:PutItem', 'dynamodb:DeleteItem'], resources: [data.tableArn] },
      { actions: ['dynamodb:PutItem', 'dynamodb:DeleteItem'], resources: [connections.tableArn] },
      { actions: ['dynamodb:Query'], resources: [byConnectionArn] },
    ],
    // call types for the call records; the scope's connections (Query),
    // a gone one removed (DeleteItem); posts to this API's connections
    // only, and closes those of a rotated or revoked credential (§20); failed batches to its queue (the stream read itself, with the
    // key through DynamoDB only, is granted with the event source mapping:
    // readStream of infra/lib/data.ts).
    broadcast: [
      { actions: ['dynamodb:Scan'], resources: [callTypes.tableArn] },
      { actions: ['dynamodb:Query', 'dynamodb:DeleteItem'], resources: [connections.tableArn] },
      { actions: ['execute-api:ManageConnections'], resources: [live.postToConnectionsArn, live.closeConnectionsArn] },
      { actions: ['sqs:SendMessage'], resources: [live.failures.queueArn] },
      ...sendThroughKey,
    ],
    // call types for the alarm levels; the data table as staff has it, the
    // same alarm engine and one grant to review (its path deletes nothing
    // today): a timer's call and its alarm (GetItem), the scope's roster
    // and duties, an address's open calls, the webhook endpoints (Query),
    // the conditional alarm write with its audit and webhook events
    // (TransactWriteItems: Update + Put). Timers (and webhook wake-ups
    // delayed to a retry's time) to the timer queue, an audit's alerts and
    // cancels to the delivery queue (SendMessageBatch is authorised by
    // SendMessage), wake-ups of the webhook dispatcher to the webhook
    // queue, failed stream batches to its failure queue (the stream read
    // and the timer queue's receive and delete, with the key through
    // DynamoDB and SQS only, are granted with the event source mappings:
    // readStream of infra/lib/data.ts, takeFrom of infra/lib/queues.ts).
    // The minute's wake-up sweeps the central systems' links (DECISIONS
    // §19): the consumers with a heartbeat (Scan), a silence kept on the
    // consumer's item with its history item in the data table
    // (TransactWriteItems: Update + Put), an alert counted (UpdateItem),
    // the silence's webhook event in the outbox (PutItem).
    alarm: [
      { actions: ['dynamodb:Scan', 'dynamodb:UpdateItem'], resources: [consumers.tableArn] },
      { actions: ['dynamodb:Scan'], resources: [callTypes.tableArn] },
      { actions: ALARM_ENGINE_ACTIONS, resources: [data.tableArn] },
      {
        actions: ['sqs:SendMessage'],
        resources: [
          alarmTimers.timerQueue.queueArn,
          alarmTimers.streamFailures.queueArn,
          deliveries.queue.queueArn,
          webhooks.queue.queueArn,
        ],
      },
      ...sendThroughKey,
    ],
    // The Web Push store (functions/store-dynamodb/src/push.rs): the VAPID
    // key pair (GetItem; on the first cold start a conditional PutItem, and
    // after a lost race the GetItem of the winner's), a person's
    // subscriptions (Query of their partition), each alert pushed recorded
    // on its device (UpdateItem, DECISIONS §18), one the push service says
    // is gone (DeleteItem). Nothing of the other tables; the delivery
    // queue's receive and delete, with the key through SQS only, are
    // granted with the event source mapping (takeFrom of
    // infra/lib/queues.ts). In production the VAPID private key is
    // sealed with the installation's key: encrypted on the first cold
    // start, decrypted on each (SECRETS_KEY_ID).
    deliver: [
      { actions: ['dynamodb:GetItem', 'dynamodb:Query'], resources: [data.tableArn] },
      // Its writes only to the push items (issue 46): the VAPID key pair and
      // each person's subscriptions with their device facts (`push#…`), and
      // a gone subscription's channel item in its scope's roster partition
      // (`staff#…`). Never a call, an alarm, an audit line or a credential.
      {
        actions: ['dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:DeleteItem'],
        resources: [data.tableArn],
        conditions: { 'ForAllValues:StringLike': { 'dynamodb:LeadingKeys': ['push#*', 'staff#*'] } },
      },
      ...sealWithKey(['kms:Encrypt', 'kms:Decrypt'], SEALED_PURPOSES.vapidPrivateKey),
    ],
    // The webhook dispatcher (functions/core/src/app/webhooks.rs) and its
    // store (functions/store-dynamodb/src/webhooks.rs, attention.rs,
    // webhook_wakes.rs): the call types for the events' bodies (Scan); the
    // endpoints, the outbox, an event's delivery log, the attention marks
    // and a scope's roster (consistent Query of their partitions); whether
    // an alert is current (GetItem of the call); the delivery log's lines
    // and the finished events (BatchWriteItem: puts and deletes); an
    // endpoint's `failing_since` (UpdateItem); an attention mark moved with
    // its event's outbox item (TransactWriteItems: Put + Put); a later
    // retry's wake-up item (PutItem); the elements for the attention sweep
    // (Query of the index by_scope). An alarm server's 2xx to a call.alert
    // as its handsets' receipts (DECISIONS §16, §18; receipts.rs): the
    // alarm engine's receipt as the staff function writes a phone's, with
    // the same reads and one TransactWriteItems (Update + Put), all within
    // the grants above. No DeleteItem, and no queue to send
    // to: the alarm function schedules the wake-up from the stream. The
    // webhook queue's receive and delete, with the key through SQS only,
    // are granted with the event source mapping (takeFrom of
    // infra/lib/queues.ts). In production the endpoints' secrets are
    // sealed with the installation's key: decrypted only, the admin
    // command seals them with its operator's credentials (SECRETS_KEY_ID).
    forward: [
      { actions: ['dynamodb:Scan'], resources: [callTypes.tableArn] },
      {
        actions: ['dynamodb:GetItem', 'dynamodb:PutItem', 'dynamodb:UpdateItem', 'dynamodb:BatchWriteItem'],
        resources: [data.tableArn],
      },
      { actions: ['dynamodb:Query'], resources: [data.tableArn, byScopeArn] },
      ...sealWithKey(['kms:Decrypt'], SEALED_PURPOSES.webhookSecret),
    ],
  };
}

/**
 * With the installation's key, DynamoDB uses it on behalf of the caller:
 * each function may use it through DynamoDB only (kms:ViaService), to
 * decrypt when it only reads, to encrypt too when it writes. The statements
 * `statements` (DynamoDB access) need; none without a key.
 */
export function keyAccess(
  stack: Stack,
  key: kms.IKey | undefined,
  statements: iam.PolicyStatementProps[],
): iam.PolicyStatementProps[] {
  if (!key) {
    return [];
  }
  const writes = statements.some((statement) =>
    (statement.actions ?? []).some((action) => DYNAMODB_WRITES.includes(action)),
  );
  return [
    {
      actions: ['kms:Decrypt', 'kms:DescribeKey', ...(writes ? ['kms:Encrypt', 'kms:GenerateDataKey'] : [])],
      resources: [key.keyArn],
      conditions: { StringEquals: { 'kms:ViaService': `dynamodb.${stack.region}.amazonaws.com` } },
    },
  ];
}
