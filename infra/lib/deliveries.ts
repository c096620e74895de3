/**
 * Web Push in AWS (DECISIONS §15, §17): the alerts and cancels of every
 * alarm write reach the staff's phones through a queue and the `deliver`
 * function. The alarm function reads each write's audit item from the data
 * table's stream (infra/lib/alarm-timers.ts) and puts its push jobs on the
 * delivery queue at once; the deliver function takes them without waiting
 * and sends each with the local server's Pusher, retrying within the
 * push's 60 s TTL inside the invocation (a push later than that is worth
 * nothing, so the queue does not retry it by delay).
 *
 *   data table ─stream─▶ alarm ─SendMessage─▶ delivery queue ─▶ deliver ─HTTPS─▶ push services ─▶ phones
 *                                                 │
 *                                                 └ unreadable 3 times ─▶ dead-letter queue (alarmed)
 *
 * A push the function gives up on is an error line of its log, which a
 * metric filter counts and an alarm reports ({@link NOT_DELIVERED_MESSAGES}).
 *
 * The stack creates the function like every other one (runtime, logs, its
 * environment with VAPID_SUBJECT, and in production SECRETS_KEY_ID, the
 * installation's key sealing the VAPID private key: infra/lib/functions.ts;
 * least privilege: infra/lib/access.ts) and hands it to
 * {@link Deliveries.subscribe}.
 */
import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';

import { CHECKOV } from './checkov';
import { logLinesAlarm } from './metric-alarms';
import { ageAlarm, messagesAlarm, queueWithDeadLetters, takeFrom } from './queues';

/** A push's `TTL` (s): the push services drop it after that (functions/core/src/domain/push.rs). */
export const PUSH_TTL_SECONDS = 60;

/**
 * The deliver function's timeout: a job is sent within the invocation, its
 * failed attempts (5 s each) retried until the push's 60 s TTL runs out
 * (functions/push/src/delivery_queue.rs); 70 s leaves room for the last
 * attempt and the subscriptions' read.
 */
export const DELIVER_TIMEOUT = Duration.seconds(70);

/**
 * How long a job taken by the function stays invisible to others: 6 times
 * {@link DELIVER_TIMEOUT}, AWS's recommendation for a queue that invokes a
 * function (batching and retries of throttled invocations included).
 */
export const DELIVERY_VISIBILITY_TIMEOUT = Duration.seconds(6 * DELIVER_TIMEOUT.toSeconds());

/** Receives of a job the function reported failed before it goes to the dead-letter queue. */
export const DELIVERY_MAX_RECEIVES = 3;

/**
 * The delivery queue's oldest message age (s) above which the deliver
 * function is not keeping up (or failing): its pushes are older than their
 * TTL.
 */
export const DELIVERY_AGE_ALARM_SECONDS = PUSH_TTL_SECONDS;

/**
 * The error lines of the deliver function (functions/push/src/queue.rs and
 * delivery_queue.rs; JSON logs, `message` a field of each line) that say a
 * push to a person's phone was not delivered: its retries were spent, the
 * push service refused it, or it could not be encrypted or signed (`push
 * not delivered`); it was older than its TTL when taken (`push not
 * delivered: older than its TTL when taken`); the VAPID key pair could not
 * be read (`push not sent`); the person's subscriptions could not be read
 * (`push not sent: the subscriptions could not be read`). Each line names
 * the person (`staff_id`), the call (`call_id`) and, once it was tried, the
 * push service's host (`push_service`).
 *
 * The crate's one other error line, `a delivery message that is no push
 * job: left to the dead-letter queue`, is not counted: that job ends in the
 * dead-letter queue, whose alarm (`deliveries-dlq`) already fires.
 */
export const NOT_DELIVERED_MESSAGES = [
  'push not delivered',
  'push not delivered: older than its TTL when taken',
  'push not sent',
  'push not sent: the subscriptions could not be read',
] as const;

/** The metric the not-delivered lines of the deliver function's log group count into. */
export const NOT_DELIVERED_METRIC = 'PushesNotDelivered';

export interface DeliveriesProps {
  /** The installation's name: `nurse-call-<installation>-deliveries…` queues and alarms. */
  readonly installation: string;
  /** The installation's key (production): both queues. */
  readonly key?: kms.IKey;
}

export class Deliveries extends Construct {
  /** The push jobs, sent at once by the alarm function: its DELIVERY_QUEUE_URL. */
  readonly queue: sqs.Queue;
  /** Jobs the deliver function reported failed {@link DELIVERY_MAX_RECEIVES} times (no push job). */
  readonly deadLetters: sqs.Queue;
  private readonly installation: string;

  constructor(scope: Construct, id: string, props: DeliveriesProps) {
    super(scope, id);
    const { installation, key } = props;
    this.installation = installation;

    // --- The delivery queue: standard (a job that comes twice shows the
    // same notification, which its Topic and tag replace on the phone), as
    // every queue of the stack (infra/lib/queues.ts: the alarm role sends,
    // the deliver role receives, both through SQS). Kept 1 hour: a push is
    // worth nothing after its 60 s TTL, but an operator should still see a
    // backlog (the age alarm). Jobs the function could not read 3 times go
    // to its dead-letter queue, kept 14 days (counted from the first send)
    // for an operator to look into.
    const deliveries = queueWithDeadLetters(this, {
      ids: { queue: 'DeliveryQueue', deadLetters: 'DeliveryDeadLetters' },
      name: `nurse-call-${installation}-deliveries`,
      visibility: DELIVERY_VISIBILITY_TIMEOUT,
      retention: Duration.hours(1),
      maxReceiveCount: DELIVERY_MAX_RECEIVES,
      key,
      sandboxKey: CHECKOV.sandboxDeliveryQueueKey,
    });
    this.queue = deliveries.queue;
    this.deadLetters = deliveries.deadLetters;
  }

  /**
   * Subscribes `fn` to the delivery queue, for latency (an alert must reach
   * the phone at once: no batching window), up to 10 jobs a batch; a job
   * that fails is reported alone (partial batch response) and given again
   * after the visibility timeout, until the dead-letter queue takes it.
   * Receiving, deleting and the queue's attributes (and, in production,
   * decrypting with the key through SQS only) are granted with the mapping
   * ({@link takeFrom}). Returns the
   * two alarms of the queues and the alarm on the function's
   * {@link NOT_DELIVERED_MESSAGES}: a metric filter on its log group counts
   * them, one such line within five minutes raises it.
   */
  subscribe(fn: lambda.Function): cloudwatch.Alarm[] {
    takeFrom(fn, this.queue);

    const name = (suffix: string) => `nurse-call-${this.installation}-${suffix}`;
    return [
      logLinesAlarm(this, {
        installation: this.installation,
        filters: [{ id: 'NotDeliveredFilter', logGroup: fn.logGroup }],
        messages: NOT_DELIVERED_MESSAGES,
        metricName: NOT_DELIVERED_METRIC,
        alarmId: 'NotDeliveredAlarm',
        alarmName: name('pushes-not-delivered'),
        alarmDescription:
          'A push to a phone was not delivered (retries spent, refused by the push service, not encrypted or signed, ' +
          'older than its TTL when taken, or the VAPID key or the subscriptions not read): a phone may have missed an alert or a cancel; ' +
          'the alert still rang on open staff pages, on displays and through alarm servers; ' +
          "see the deliver function's log for person (staff_id), call (call_id) and push service host (push_service)",
      }),
      messagesAlarm(this, 'DeliveryDeadLettersAlarm', this.deadLetters, {
        alarmName: name('deliveries-dlq'),
        alarmDescription: `Push jobs the deliver function could not read (${DELIVERY_MAX_RECEIVES} times): a phone may have missed an alert; the dead-letter queue holds which`,
      }),
      ageAlarm(this, 'DeliveryAgeAlarm', this.queue, {
        alarmName: name('deliveries-age'),
        alarmDescription: `A push job has waited more than ${DELIVERY_AGE_ALARM_SECONDS} s in the delivery queue, longer than a push's TTL: the deliver function is not keeping up or fails, alerts reach the phones late or not at all`,
        seconds: DELIVERY_AGE_ALARM_SECONDS,
      }),
    ];
  }
}
