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
 * An event an alarm server may not get is an error line of the function's
 * log, which a metric filter counts and an alarm reports
 * ({@link NOT_DELIVERED_MESSAGES}).
 *
 * The stack creates the function like every other one (runtime, logs, in
 * production SECRETS_KEY_ID, the installation's key sealing the endpoints'
 * secrets: infra/lib/functions.ts; least privilege: infra/lib/access.ts)
 * and hands it to {@link Webhooks.subscribe}.
 */
import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';

import { CHECKOV } from './checkov';
import { logLinesAlarm } from './metric-alarms';
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
 * …`), or the event was given up after §16's retries (`webhook given up`,
 * naming the event, the endpoint and why).
 *
 * The crate's one other error line, `cold start failed`, is not counted:
 * the invocation fails, which the function's errors alarm reports.
 */
export const NOT_DELIVERED_MESSAGES = [
  "webhook wake-up not scheduled: waiting events go with the next event's",
  'delivery attempts not logged yet',
  "webhook not signed: fix or rotate the endpoint's secret",
  'webhook given up',
] as const;

/** The metric the not-delivered lines of the forward function's log group count into. */
export const NOT_DELIVERED_METRIC = 'WebhooksNotDelivered';

export interface WebhooksProps {
  /** The installation's name: `nurse-call-<installation>-webhooks…` queues and alarm. */
  readonly installation: string;
  /** The installation's key (production): both queues. */
  readonly key?: kms.IKey;
}

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
}
