/**
 * The stack's SQS queues, all of one kind, and their alarms: the
 * broadcast's failure queue (infra/lib/live.ts), the alarm function's timer
 * queue with its dead-letter queue and its stream failure queue
 * (infra/lib/alarm-timers.ts), the delivery queue (infra/lib/deliveries.ts)
 * and the webhook queue (infra/lib/webhooks.ts) with theirs.
 *
 * Each queue is encrypted: in production with the installation's key,
 * which a sending role (infra/lib/access.ts) and a receiving role (its
 * event source mapping: {@link takeFrom}) may use through SQS only (the
 * key policy leaves the account's principals to IAM); in a sandbox with
 * SQS-managed keys, checkov's customer-key finding suppressed with the
 * queue's own reason. TLS only. Deleted with the stack: what a queue holds
 * is worth something only to the function that takes it, or (a dead-letter
 * or failure queue) to an operator for the 14 days SQS keeps it at most.
 */
import { Duration, Names, RemovalPolicy, Stack } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';

import { CheckovSkip, skipCheckov } from './checkov';
import { ALARM_PERIOD, AT_LEAST_ONCE } from './metric-alarms';

/** How long a dead-letter or failure queue keeps a message: the most SQS allows. */
export const DEAD_LETTER_RETENTION = Duration.days(14);

export interface QueueProps {
  /** The queue's name (`nurse-call-<installation>-…`, ending `.fifo` for a FIFO queue). */
  readonly name: string;
  /** How long the queue keeps a message. */
  readonly retention: Duration;
  /** A FIFO queue (no content-based deduplication: the sender names each message's). @default false */
  readonly fifo?: boolean;
  /** How long a message taken stays invisible to others. @default SQS's 30 s */
  readonly visibility?: Duration;
  /** Where a message goes after it was received too often. */
  readonly deadLetterQueue?: sqs.DeadLetterQueue;
  /** The installation's key (production). */
  readonly key?: kms.IKey;
  /** Why SQS-managed keys do in a sandbox (checkov CKV_AWS_27): what the queue holds. */
  readonly sandboxKey: CheckovSkip;
}

/** One queue of the stack (see the module). */
export function encryptedQueue(scope: Construct, id: string, props: QueueProps): sqs.Queue {
  const { key } = props;
  const queue = new sqs.Queue(scope, id, {
    encryption: key ? sqs.QueueEncryption.KMS : sqs.QueueEncryption.SQS_MANAGED,
    encryptionMasterKey: key,
    enforceSSL: true,
    removalPolicy: RemovalPolicy.DESTROY,
    queueName: props.name,
    fifo: props.fifo,
    visibilityTimeout: props.visibility,
    retentionPeriod: props.retention,
    deadLetterQueue: props.deadLetterQueue,
  });
  if (!key) {
    skipCheckov(queue, props.sandboxKey);
  }
  return queue;
}

export interface QueueWithDeadLettersProps {
  /** The construct ids of the queue and of its dead-letter queue (their logical ids). */
  readonly ids: { readonly queue: string; readonly deadLetters: string };
  /**
   * The queue's name without `.fifo`: `nurse-call-<installation>-<what>`;
   * the dead-letter queue's is `<name>-dlq`. A FIFO queue and its
   * dead-letter queue (which SQS wants FIFO too) end in `.fifo`.
   */
  readonly name: string;
  /** @default false */
  readonly fifo?: boolean;
  /** How long a message taken stays invisible: above the function's timeout (Lambda refuses less). */
  readonly visibility: Duration;
  /** How long the queue keeps a message; its dead-letter queue keeps one {@link DEAD_LETTER_RETENTION}. */
  readonly retention: Duration;
  /** Receives of a message that failed each time before it goes to the dead-letter queue. */
  readonly maxReceiveCount: number;
  readonly key?: kms.IKey;
  /** Why SQS-managed keys do in a sandbox, for both queues. */
  readonly sandboxKey: CheckovSkip;
}

/**
 * A queue a function takes from, and its dead-letter queue: a message the
 * function failed `maxReceiveCount` times moves there, kept for an
 * operator to look into (its alarm: {@link messagesAlarm}). The queue's
 * key, so that a message moved needs no other.
 */
export function queueWithDeadLetters(
  scope: Construct,
  props: QueueWithDeadLettersProps,
): { queue: sqs.Queue; deadLetters: sqs.Queue } {
  const { fifo, key, sandboxKey } = props;
  const suffix = fifo ? '.fifo' : '';
  const deadLetters = encryptedQueue(scope, props.ids.deadLetters, {
    name: `${props.name}-dlq${suffix}`,
    fifo,
    retention: DEAD_LETTER_RETENTION,
    key,
    sandboxKey,
  });
  const queue = encryptedQueue(scope, props.ids.queue, {
    name: `${props.name}${suffix}`,
    fifo,
    visibility: props.visibility,
    retention: props.retention,
    deadLetterQueue: { queue: deadLetters, maxReceiveCount: props.maxReceiveCount },
    key,
    sandboxKey,
  });
  return { queue, deadLetters };
}

/**
 * The SQS actions of a function's event source mapping on a queue, taken
 * with the function's role: receive, delete, hide a message longer, the
 * queue's attributes and URL. CDK's grantConsumeMessages's, unchanged.
 */
const TAKE_ACTIONS = [
  'sqs:ReceiveMessage',
  'sqs:ChangeMessageVisibility',
  'sqs:GetQueueUrl',
  'sqs:DeleteMessage',
  'sqs:GetQueueAttributes',
];

/**
 * Subscribes `fn` to `queue`, for latency: up to 10 messages a batch (the
 * most without a batching window), taken at once (batching window 0 s; a
 * FIFO queue takes none at all). A message that fails is reported alone
 * (partial batch response) and given again after the visibility timeout,
 * until the dead-letter queue takes it.
 *
 * The mapping without CDK's SqsEventSource, whose grantConsumeMessages
 * would also give the role kms:Decrypt on the queue's key without a
 * condition: the installation's key also seals the secrets the deliver and
 * forward functions sign with (infra/lib/access.ts), and a role that may
 * decrypt with it directly could open either kind, whatever its own
 * grant's `purpose` says (IAM allows what any statement allows). So the
 * role gets exactly {@link TAKE_ACTIONS} on the queue and, in production,
 * kms:Decrypt through SQS only (kms:ViaService), as a sending role does
 * (infra/lib/access.ts; the alarm role's two merge into one statement,
 * CDK's policy minimisation being on in cdk.json). This rather than a Deny
 * of direct use beside CDK's grant: Allows that each say what they are for
 * are simpler to read (and to test) than an unconditioned Allow undone by
 * a Deny of negated conditions (true where the key is absent). The
 * mapping's id is SqsEventSource's, so its logical id stays the same.
 * infra/test/data-protection.test.ts asserts that no role may use the key
 * directly but for its own purpose.
 */
export function takeFrom(fn: lambda.Function, queue: sqs.Queue): void {
  fn.addEventSourceMapping(`SqsEventSource:${Names.nodeUniqueId(queue.node)}`, {
    eventSourceArn: queue.queueArn,
    batchSize: 10,
    maxBatchingWindow: queue.fifo ? undefined : Duration.seconds(0),
    reportBatchItemFailures: true,
  });
  fn.addToRolePolicy(new iam.PolicyStatement({ actions: TAKE_ACTIONS, resources: [queue.queueArn] }));
  const key = queue.encryptionMasterKey;
  if (key) {
    fn.addToRolePolicy(
      new iam.PolicyStatement({
        actions: ['kms:Decrypt'],
        resources: [key.keyArn],
        conditions: { StringEquals: { 'kms:ViaService': `sqs.${Stack.of(queue).region}.amazonaws.com` } },
      }),
    );
  }
}

export interface QueueAlarmProps {
  /** `nurse-call-<installation>-…`: the alarm topic's key lets CloudWatch publish those names only. */
  readonly alarmName: string;
  /** What it means and what to look at (CloudWatch takes at most 1024 characters). */
  readonly alarmDescription: string;
}

/**
 * An alarm on a message in `queue` (the most visible within five
 * minutes, at least 1): for a dead-letter or failure queue, which should
 * stay empty.
 */
export function messagesAlarm(scope: Construct, id: string, queue: sqs.IQueue, props: QueueAlarmProps): cloudwatch.Alarm {
  return queue
    .metricApproximateNumberOfMessagesVisible({ period: ALARM_PERIOD, statistic: 'Maximum' })
    .createAlarm(scope, id, { ...props, ...AT_LEAST_ONCE });
}

/** An alarm on `queue`'s oldest message older than `seconds` (the most within five minutes): nobody is taking them. */
export function ageAlarm(
  scope: Construct,
  id: string,
  queue: sqs.IQueue,
  props: QueueAlarmProps & { readonly seconds: number },
): cloudwatch.Alarm {
  const { seconds, ...alarm } = props;
  return queue.metricApproximateAgeOfOldestMessage({ period: ALARM_PERIOD, statistic: 'Maximum' }).createAlarm(scope, id, {
    ...alarm,
    ...AT_LEAST_ONCE,
    threshold: seconds,
    comparisonOperator: cloudwatch.ComparisonOperator.GREATER_THAN_THRESHOLD,
  });
}
