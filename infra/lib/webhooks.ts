/**
 * Webhooks in AWS (DECISIONS §16, §17): where nothing polls the outbox,
 * the forward function's webhook dispatcher is woken through a FIFO queue.
 * A write keeps its webhook events as items of the outbox (partition
 * `webhook#outbox` of the data table) in its own transaction; the alarm
 * function reads their INSERTs from the stream (`ALARM_FILTERS` of
 * infra/lib/alarm-timers.ts) and sends one wake-up per stream batch to the
 * webhook queue; the forward function takes it and runs the local
 * server's dispatcher in rounds (functions/forward/src/webhook_rounds.rs)
 * until the deliveries rest. A FIFO queue of one message group: one
 * invocation at a time, so each call's events keep their order per
 * endpoint. A retry due later than the invocation waits for is a wake-up
 * item the forward function puts into the data table (`webhook#wake`, with
 * its time); the alarm function reads its INSERT from the stream too,
 * delays a wake-up on the timer queue until then (a FIFO queue has no
 * per-message delay) and passes it on to the webhook queue when it comes.
 * So the forward function sends to no queue.
 *
 *   a write ──▶ outbox item ─stream─▶ alarm ─────────────────────────────▶ webhook queue (FIFO) ─▶ forward ─HTTPS─▶ endpoints
 *   forward ──▶ wake-up item ─stream─▶ alarm ─▶ timer queue ─▶ alarm ─┘      └ failed 3 times ─▶ dead-letter queue (alarmed)
 *   (a later retry)
 *
 *   EventBridge schedule (every minute) ─▶ timer queue ─▶ alarm ─▶ webhook queue ─▶ forward (sweeps element.attention)
 *
 * The rounds also sweep the elements for `element.attention` (battery
 * low, unreachable, silent; at most every ATTENTION_EVERY, 10 s, of
 * functions/core/src/app/webhooks/attention.rs), but only when something
 * wakes them: in a quiet house no call, no write and no retry would, and
 * the event would never go out. So an EventBridge schedule sends the
 * wake-up every minute ({@link ATTENTION_WAKE_EVERY}, {@link Webhooks.wakeEveryMinute}).
 * To the timer queue, not to the webhook queue: the timer queue is a
 * standard queue, which takes the rule's message as it is (the FIFO
 * webhook queue wants a message group and a deduplication id on every
 * message, which the alarm function names), and the alarm function
 * already passes a wake-up taken from it on to the webhook queue
 * (`WEBHOOK_WAKE` of functions/alarms-aws/src/queues.rs), deduplicated by
 * the timer message's id. Every minute: a battery runs low over hours, and
 * 1,440 wake-ups a day (a message on each queue, two short invocations)
 * cost cents a month. A wake-up EventBridge could not put on the timer
 * queue (refused by the queue's or the key's policy) is dropped after its
 * retries and only counted as the rule's failed invocation, which an alarm
 * reports ({@link WAKE_FAILED_ALARM}).
 *
 * An event an alarm server may not get is an error line of the function's
 * log, which a metric filter counts and an alarm reports
 * ({@link NOT_DELIVERED_MESSAGES}).
 *
 * The stack creates the function like every other one (runtime, logs, in
 * production SECRETS_KEY_ID, the installation's key sealing the endpoints'
 * secrets: infra/lib/functions.ts; least privilege: infra/lib/access.ts)
 * and hands it to {@link Webhooks.subscribe}.
 */
import { ArnFormat, Duration, Stack } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as events from 'aws-cdk-lib/aws-events';
import * as iam from 'aws-cdk-lib/aws-iam';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';

import { timerQueueName } from './alarm-timers';
import { CHECKOV } from './checkov';
import { ALARM_PERIOD, AT_LEAST_ONCE, logLinesAlarm } from './metric-alarms';
import { messagesAlarm, queueWithDeadLetters, takeFrom } from './queues';

/**
 * The forward function's timeout: its rounds wait at most 5 s for a retry
 * within the invocation and stop 8 s before its end (an attempt takes at
 * most 5 s), so 70 s leaves some 60 s of rounds per wake-up, the backoff's
 * first three retries (1, 2, 4 s) included
 * (functions/forward/src/webhook_rounds.rs).
 */
export const FORWARD_TIMEOUT = Duration.seconds(70);

/**
 * How long a wake-up taken by the forward function stays invisible to
 * others: 6 times {@link FORWARD_TIMEOUT}, as the delivery queue's for the
 * deliver function (AWS's recommendation for a queue that invokes a
 * function). While it is invisible the queue's one message group gives
 * nothing else: a wake-up whose invocation crashed holds the webhooks up
 * this long, then comes again.
 */
export const WEBHOOK_VISIBILITY_TIMEOUT = Duration.seconds(6 * FORWARD_TIMEOUT.toSeconds());

/**
 * Receives of a wake-up before it goes to the dead-letter queue. The
 * forward function never reports a wake-up failed (its rounds schedule
 * their own next one): only an invocation that failed as a whole (a crash,
 * a timeout, a failed cold start) gives it again.
 */
export const WEBHOOK_MAX_RECEIVES = 3;

/**
 * The error lines of the forward function (its rounds in
 * functions/forward/src/webhook_rounds.rs and the local server's
 * dispatcher in functions/core/src/app/webhooks.rs and
 * webhook_attempts.rs; JSON logs, `message` a field of each line) that
 * say an alarm server may not have got an event: a retry's wake-up could
 * not be put (`webhook wake-up not scheduled: …`: waiting events go with
 * the next event's), a round's attempts could not be written to the
 * delivery log nor its events taken out of the outbox (`delivery attempts
 * not logged yet`: kept for the next round, an event may be sent again),
 * the endpoint's secret could not sign the event (`webhook not signed:
 * …`), the event was given up after §16's retries (`webhook given up`,
 * naming the event, the endpoint and why), or an attempt was not made
 * because the endpoint's host is or resolves to an address of the home's
 * network or this machine and it was not created with `--private-network`
 * (`webhook not sent: its host is on the home's network or this machine`,
 * DECISIONS §20).
 *
 * The function's one other error line, `cold start failed` (of its
 * runner, functions/lambda-support/src/events.rs), is not counted: the
 * invocation fails, which the function's errors alarm reports.
 */
export const NOT_DELIVERED_MESSAGES = [
  "webhook wake-up not scheduled: waiting events go with the next event's",
  'delivery attempts not logged yet',
  "webhook not signed: fix or rotate the endpoint's secret",
  'webhook given up',
  "webhook not sent: its host is on the home's network or this machine",
] as const;

/** The metric the not-delivered lines of the forward function's log group count into. */
export const NOT_DELIVERED_METRIC = 'WebhooksNotDelivered';

/**
 * How often the EventBridge schedule wakes the forward function through
 * the timer queue, so that its rounds sweep the elements for
 * `element.attention` when nothing else wakes them (see the module).
 */
export const ATTENTION_WAKE_EVERY = Duration.minutes(1);

/**
 * The schedule's message: the body of a webhook wake-up on the timer
 * queue, `WEBHOOK_WAKE` of functions/alarms-aws/src/queues.rs
 * (`{"webhooks":"wake"}`), which the alarm function passes on.
 */
export const WEBHOOK_WAKE = { webhooks: 'wake' } as const;

/**
 * The schedule's message: the minute's wake-up on the timer queue,
 * `MINUTE_WAKE` of functions/alarms-aws/src/queues.rs
 * (`{"minute":"wake"}`). The alarm function steps the alarms whose next
 * step is overdue (a lost stream record or timer, DECISIONS §19) and
 * passes a {@link WEBHOOK_WAKE} on to the webhook queue.
 */
export const MINUTE_WAKE = { minute: 'wake' } as const;

/**
 * EventBridge's retries of a wake-up the timer queue did not take, and how
 * old a wake-up may get before it is dropped (EventBridge's least): a
 * wake-up missed is harmless, the next minute's comes anyway.
 */
export const ATTENTION_WAKE_RETRIES = 2;
export const ATTENTION_WAKE_MAX_AGE = Duration.seconds(60);

/**
 * The schedule's rule: `nurse-call-<installation>-webhook-wake`, at most
 * 64 characters (EventBridge's limit) for the longest installation name
 * (40 characters).
 */
export function wakeRuleName(installation: string): string {
  return `nurse-call-${installation}-webhook-wake`;
}

/**
 * The alarm on the schedule's failed invocations,
 * `nurse-call-<installation>-webhook-wake-failed`: one within five minutes.
 */
export const WAKE_FAILED_ALARM = 'webhook-wake-failed';

export interface WebhooksProps {
  /** The installation's name: `nurse-call-<installation>-webhooks…` queues and alarm. */
  readonly installation: string;
  /** The installation's key (production): both queues. */
  readonly key?: kms.IKey;
}

/** The service EventBridge's rules send as (the queue and key policies' principal). */
const EVENTS = 'events.amazonaws.com';

export class Webhooks extends Construct {
  /** The wake-ups, sent by the alarm function: its WEBHOOK_QUEUE_URL. */
  readonly queue: sqs.Queue;
  /** Wake-ups whose invocation failed {@link WEBHOOK_MAX_RECEIVES} times. */
  readonly deadLetters: sqs.Queue;
  private readonly installation: string;

  constructor(scope: Construct, id: string, props: WebhooksProps) {
    super(scope, id);
    const { installation, key } = props;
    this.installation = installation;

    // --- The webhook queue: FIFO, one message group (`outbox`), no
    // content-based deduplication: each wake-up names what caused it (a
    // stream record's sequence number, a timer message's id), so a stream
    // batch or a timer message retried within 5 minutes wakes once. As
    // every queue of the stack (infra/lib/queues.ts: the alarm role sends,
    // the forward role receives, both through SQS). Kept 4 days, like the
    // timers; wake-ups that failed 3 times go to its dead-letter queue
    // (FIFO, as SQS wants for a FIFO queue's), kept 14 days.
    const webhooks = queueWithDeadLetters(this, {
      ids: { queue: 'WebhookQueue', deadLetters: 'WebhookDeadLetters' },
      name: `nurse-call-${installation}-webhooks`,
      fifo: true,
      visibility: WEBHOOK_VISIBILITY_TIMEOUT,
      retention: Duration.days(4),
      maxReceiveCount: WEBHOOK_MAX_RECEIVES,
      key,
      sandboxKey: CHECKOV.sandboxWebhookQueueKey,
    });
    this.queue = webhooks.queue;
    this.deadLetters = webhooks.deadLetters;
  }

  /**
   * Subscribes `fn` to the webhook queue, up to 10 wake-ups a batch (they
   * ask for the same: one batch runs the rounds once), with partial batch
   * responses (the forward function answers an empty list: a wake-up is
   * never failed on its own); no batching window, which Lambda does not
   * take for a FIFO queue. Receiving, deleting and the queue's attributes
   * (and, in production, decrypting with the key through SQS only) are
   * granted with the mapping ({@link takeFrom}). Returns the alarm on the
   * dead-letter queue and the alarm on
   * the function's {@link NOT_DELIVERED_MESSAGES}: a metric filter on its
   * log group counts them, one such line within five minutes raises it.
   */
  subscribe(fn: lambda.Function): cloudwatch.Alarm[] {
    takeFrom(fn, this.queue);
    return [
      logLinesAlarm(this, {
        installation: this.installation,
        filters: [{ id: 'NotDeliveredFilter', logGroup: fn.logGroup }],
        messages: NOT_DELIVERED_MESSAGES,
        metricName: NOT_DELIVERED_METRIC,
        alarmId: 'NotDeliveredAlarm',
        alarmName: `nurse-call-${this.installation}-webhooks-not-delivered`,
        alarmDescription:
          "An alarm server may not have got an event (given up after §16's retries, not signed, or its retry not scheduled); " +
          "the call still shows on displays and staff pages; see the forward function's log for endpoint and call.",
      }),
      messagesAlarm(this, 'WebhookDeadLettersAlarm', this.deadLetters, {
        alarmName: `nurse-call-${this.installation}-webhooks-dlq`,
        alarmDescription:
          `Webhook wake-ups the forward function could not take (its invocation failed ${WEBHOOK_MAX_RECEIVES} times: a crash, a timeout or a failed cold start): ` +
          'webhook events may wait in the outbox until the next wake-up (the next event, or a retry scheduled); ' +
          "see the forward function's log and its errors alarm; the dead-letter queue holds which",
      }),
    ];
  }

  /**
   * The EventBridge schedule (see the module): every
   * {@link ATTENTION_WAKE_EVERY} a rule on the default event bus sends
   * {@link WEBHOOK_WAKE} to `timerQueue` (the alarm function's, named
   * {@link timerQueueName}: a standard queue, encrypted with the
   * installation's key in production), retried {@link ATTENTION_WAKE_RETRIES}
   * times within {@link ATTENTION_WAKE_MAX_AGE}. Returns the alarm on the
   * rule's failed invocations ({@link WAKE_FAILED_ALARM}).
   *
   * The target without CDK's targets.SqsQueue, whose grant is wider than
   * the rule needs: for a queue with a customer key it lets any rule of the
   * account send (aws:SourceAccount), adds sqs:GetQueueAttributes and
   * sqs:GetQueueUrl, and gives EventBridge kms:Encrypt, kms:ReEncrypt* and
   * kms:GenerateDataKey* on the key under the same condition. Here the
   * queue's policy lets EventBridge send (sqs:SendMessage only) for this
   * rule only (aws:SourceArn), and in production the key's policy lets it
   * generate and check the queue's data keys (kms:GenerateDataKey and
   * kms:Decrypt, what SQS asks KMS for on a sender's behalf, as SQS's key
   * management guide lists them for a service sending to an encrypted
   * queue) for this rule only (aws:SourceArn) and for this queue only:
   * kms:EncryptionContext:aws:sqs:arn, the queue's ARN, the encryption
   * context SQS documents for every KMS call of its server-side
   * encryption. Not kms:ViaService, as the functions' grants through SQS
   * have it (infra/lib/queues.ts): AWS documents that condition for
   * principals of the account whose request a service makes, not for a
   * service principal such as EventBridge's, and should KMS not see it
   * for such a call, every wake-up would be refused, not sent and only
   * counted as a failed invocation. The encryption context is in the
   * request whoever the caller is; it also binds the grant to the one
   * queue, where kms:ViaService would have allowed any queue of the
   * region encrypted with the key.
   *
   * Both ARNs of the key policy are built from names, not the resources'
   * attributes: with the rule's, the key would depend on the rule, the rule
   * on the queue (its target) and the queue on the key; with the queue's,
   * the key would depend on the queue, which depends on the key. Cycles
   * CloudFormation refuses. So the queue must be the one named
   * {@link timerQueueName} (checked). infra/test/webhook-wakes.test.ts and
   * data-protection.test.ts assert both statements exactly.
   */
  wakeEveryMinute(timerQueue: sqs.Queue): cloudwatch.Alarm[] {
    if (timerQueue.fifo) {
      throw new Error('the webhook wake-up schedule sends to a standard queue: a FIFO queue wants a deduplication id the rule cannot name');
    }
    const queueName = timerQueueName(this.installation);
    if ((timerQueue.node.defaultChild as sqs.CfnQueue).queueName !== queueName) {
      throw new Error(`the webhook wake-up schedule sends to the timer queue ${queueName}: the key policy names its ARN by that name`);
    }
    const stack = Stack.of(this);
    const ruleName = wakeRuleName(this.installation);
    const rule = new events.Rule(this, 'WakeSchedule', {
      ruleName,
      description:
        'Wakes the alarm function every minute through its timer queue: it steps overdue alarms (a lost timer) and wakes the forward function, so that its rounds send element.attention in a quiet house',
      schedule: events.Schedule.rate(ATTENTION_WAKE_EVERY),
    });
    rule.addTarget({
      bind: () => ({
        arn: timerQueue.queueArn,
        input: events.RuleTargetInput.fromObject(MINUTE_WAKE),
        retryPolicy: {
          maximumRetryAttempts: ATTENTION_WAKE_RETRIES,
          maximumEventAgeInSeconds: ATTENTION_WAKE_MAX_AGE.toSeconds(),
        },
        targetResource: timerQueue,
      }),
    });
    timerQueue.addToResourcePolicy(
      new iam.PolicyStatement({
        principals: [new iam.ServicePrincipal(EVENTS)],
        actions: ['sqs:SendMessage'],
        resources: [timerQueue.queueArn],
        conditions: { ArnEquals: { 'aws:SourceArn': rule.ruleArn } },
      }),
    );
    const key = timerQueue.encryptionMasterKey;
    if (key) {
      const added = key.addToResourcePolicy(
        new iam.PolicyStatement({
          sid: 'WebhookWakeScheduleSendsThroughSqs',
          principals: [new iam.ServicePrincipal(EVENTS)],
          actions: ['kms:GenerateDataKey', 'kms:Decrypt'],
          resources: ['*'],
          conditions: {
            ArnEquals: { 'aws:SourceArn': stack.formatArn({ service: 'events', resource: 'rule', resourceName: ruleName }) },
            StringEquals: {
              'kms:EncryptionContext:aws:sqs:arn': stack.formatArn({
                service: 'sqs',
                resource: queueName,
                arnFormat: ArnFormat.NO_RESOURCE_NAME,
              }),
            },
          },
        }),
      );
      if (!added.statementAdded) {
        throw new Error("the timer queue's key takes no key policy statement: EventBridge could not send the webhook wake-ups");
      }
    }

    // --- Say loudly when the wake-ups cannot be delivered: a refused
    // sending (the queue's or the key's policy, the key disabled) is
    // retried, then dropped, and only counted as the rule's failed
    // invocation; nothing else would tell.
    const failed = new cloudwatch.Metric({
      namespace: 'AWS/Events',
      metricName: 'FailedInvocations',
      // The rule's Ref: its name, as the rule is on the default event bus.
      dimensionsMap: { RuleName: rule.ruleName },
      statistic: 'Sum',
      period: ALARM_PERIOD,
    });
    return [
      failed.createAlarm(this, 'WakeFailedAlarm', {
        alarmName: `nurse-call-${this.installation}-${WAKE_FAILED_ALARM}`,
        alarmDescription:
          "The EventBridge schedule could not put its minute's wake-up of the forward function on the alarm timer queue: " +
          'element.attention (battery low, unreachable, silent) is not announced to the alarm servers in a quiet house while it fails ' +
          '(calls and their events are unaffected: they wake the forward function themselves); ' +
          `check the rule ${ruleName}'s FailedInvocations, the key policy (WebhookWakeScheduleSendsThroughSqs, in production) ` +
          "and the timer queue's policy (EventBridge may send for this rule)",
        ...AT_LEAST_ONCE,
      }),
    ];
  }
}
