/**
 * Alarms in AWS (DECISIONS §17): an alarm steps on time without a process
 * that keeps time. Every committed change that moves a call's next step
 * reaches the alarm function through the data table's stream (never from
 * the request path: a committed open gets its timer even when the request's
 * Lambda died after the commit); the function puts a timer for it on an SQS
 * queue, delayed until it is due (at most 900 s; a longer wait is sent on
 * with the remainder), and takes it when it becomes visible: a due timer
 * steps the alarm with a conditional write, whose stream record schedules
 * the next timer. A duplicate or late timer does nothing. The timer queue
 * also carries webhook wake-ups, which the function passes on to the
 * webhook queue when it takes them: a retry's, delayed until it is due,
 * and, every minute, the EventBridge schedule's, for the forward
 * function's attention sweep (infra/lib/webhooks.ts).
 *
 *   a write ─▶ data table ─stream─▶ alarm ─SendMessage, delay ≤ 900 s─▶ timer queue ◀─ EventBridge schedule (every minute): a webhook wake-up
 *                                   ▲ │ │ │                             │ │
 *                                   │ │ │ │                             │ └ failed 5 times ─▶ dead-letter queue (alarmed)
 *                                   └─┼─┼─┼────── due timers ───────────┘
 *                                     │ │ └ failed stream batches ─▶ SQS queue (alarmed)
 *                                     │ └ an audit's alerts and cancels ─▶ delivery queue ─▶ deliver (infra/lib/deliveries.ts)
 *                                     └ webhook outbox events and due wake-ups ─▶ webhook queue ─▶ forward (infra/lib/webhooks.ts)
 *
 * A stream record the function cannot read is skipped, neither retried nor
 * reported to the failure queue: its error line is counted by a metric
 * filter and alarmed ({@link UNREADABLE_RECORD_MESSAGES}).
 *
 * The stack creates the function like every other one (runtime, logs, its
 * environment with ALARM_TIMER_QUEUE_URL, DELIVERY_QUEUE_URL and
 * WEBHOOK_QUEUE_URL: infra/lib/functions.ts; least privilege:
 * infra/lib/access.ts) and hands it to {@link AlarmTimers.subscribe}.
 */
import { Duration } from 'aws-cdk-lib';
import * as cloudwatch from 'aws-cdk-lib/aws-cloudwatch';
import * as dynamodb from 'aws-cdk-lib/aws-dynamodb';
import * as kms from 'aws-cdk-lib/aws-kms';
import * as lambda from 'aws-cdk-lib/aws-lambda';
import * as sqs from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';

import { CHECKOV } from './checkov';
import { readStream } from './data';
import { logLinesAlarm } from './metric-alarms';
import { DEAD_LETTER_RETENTION, ageAlarm, encryptedQueue, messagesAlarm, queueWithDeadLetters, takeFrom } from './queues';

/** The partition of the webhook outbox's events (`OUTBOX_PK` of functions/store-dynamodb/src/webhook_items.rs). */
export const OUTBOX_PK = 'webhook#outbox';

/** The partition of the webhook wake-ups the forward function puts for a later retry (`WAKE_PK` of functions/store-dynamodb/src/webhook_wakes.rs). */
export const WAKE_PK = 'webhook#wake';

/** The partition of the sign-on tests the staff function asks for (`DEVICE_TEST_PK` of functions/store-dynamodb/src/device_tests.rs). */
export const DEVICE_TEST_PK = 'push#test';

/**
 * The stream records the alarm function is invoked for (any pattern):
 * new and changed calls (an open stores its alarm due at once; a step, a
 * response or a close moves or ends it), every change of a duty (a
 * sign-on, a change, a sign-off or a shift's end by TTL: the scope's
 * running alarms are looked at again), audit items inserted (each
 * carries the alerts and cancels of the alarm write that made it, in the
 * same transaction: they become push jobs on the delivery queue,
 * infra/lib/deliveries.ts), and webhook items inserted: an event into the
 * outbox ({@link OUTBOX_PK}: a wake-up of the forward function's
 * dispatcher on the webhook queue at once, infra/lib/webhooks.ts) or a
 * wake-up the forward function put for a later retry ({@link WAKE_PK}: one
 * then, delayed on the timer queue until it is due), and sign-on tests
 * inserted ({@link DEVICE_TEST_PK}: the staff function sends no pushes, so
 * the test's push job goes to the delivery queue from here, DECISIONS
 * §18). Locks, index items, push subscriptions,
 * elements, webhook endpoints, attention marks and delivery log lines, and
 * the removal of an audit item, an outbox event, a wake-up or a call
 * (finished, or by TTL) wake nothing and are filtered out by Lambda before
 * they cost an invocation (functions/alarms-aws/src/wakes.rs). Five
 * patterns at most: Lambda's quota of filters per event source mapping.
 */
export const ALARM_FILTERS = [
  { eventName: ['INSERT', 'MODIFY'], dynamodb: { Keys: { sk: { S: ['call'] } } } },
  { eventName: ['INSERT', 'MODIFY', 'REMOVE'], dynamodb: { Keys: { pk: { S: [{ prefix: 'duty#' }] } } } },
  { eventName: ['INSERT'], dynamodb: { Keys: { sk: { S: [{ prefix: 'audit#' }] } } } },
  { eventName: ['INSERT'], dynamodb: { Keys: { pk: { S: [OUTBOX_PK, WAKE_PK, DEVICE_TEST_PK] } } } },
];

/**
 * The alarm function's timeout: like the request path's functions (a step
 * is a few DynamoDB operations, each given up after 4 s), but not the
 * props' `lambdaTimeout`: the timer queue's visibility timeout must stay
 * above it ({@link TIMER_VISIBILITY_TIMEOUT}).
 */
export const ALARM_TIMEOUT = Duration.seconds(10);

/**
 * How long a timer taken by the function stays invisible to others: above
 * {@link ALARM_TIMEOUT} (Lambda refuses a mapping whose queue's is below the
 * function's), so that an invocation still running is not given the same
 * timer again; a timer that failed is given again after it.
 */
export const TIMER_VISIBILITY_TIMEOUT = Duration.seconds(30);

/** Receives of a timer that failed each time before it goes to the dead-letter queue. */
export const TIMER_MAX_RECEIVES = 5;

/**
 * The timer queue's oldest message age (s) above which the function is not
 * taking timers: a message is delayed at most 900 s, and is taken as soon
 * as it becomes visible.
 */
export const TIMER_AGE_ALARM_SECONDS = 960;

/**
 * The error lines of the alarm function (functions/alarms-aws/src/handler.rs;
 * JSON logs, `message` a field of each line) that mean an alarm may not
 * escalate or be pushed with nothing else to say so: a stream record that
 * could not be read (`unreadable stream record skipped`), or whose call,
 * duty or audit item could not be read (`unreadable stream record skipped:
 * its alarm gets nothing from it`), is skipped for good. The batch succeeds
 * without it, so Lambda neither retries it nor reports it to the stream
 * failure queue: the call it changed may get no timer (no escalation) and
 * the audit's alerts and cancels no push job. The lines name the record
 * (its index in the batch, or its sequence number), never its data.
 *
 * The handler's other error lines are left out, each alarmed already or
 * harmless to an alarm: `stream batch not sent on: retried whole` (Lambda
 * retries the batch; once the retries or 5 minutes are spent its record
 * goes to the stream failure queue, `alarm-stream-failures`); `a timer
 * message that is no timer: left to the dead-letter queue` (there after
 * {@link TIMER_MAX_RECEIVES} receives, `alarm-timers-dlq`); `neither a
 * stream nor a timer queue event: ignored` (the function is invoked by its
 * two mappings only: such an event carries no alarm).
 */
export const UNREADABLE_RECORD_MESSAGES = [
  'unreadable stream record skipped',
  'unreadable stream record skipped: its alarm gets nothing from it',
] as const;

/** The metric the unreadable-record lines of the alarm function's log group count into. */
export const UNREADABLE_RECORD_METRIC = 'AlarmRecordsUnreadable';

/**
 * The error line of the minute's wake-up for each alarm whose next step
 * (a level, a re-alert, a receipt deadline, an accept's timeout) it found
 * more than 5 s overdue and stepped (DECISIONS §19): only a lost stream
 * record or timer leaves one so late. Logged by the core's overdue sweep
 * (`run_overdue_alarms`, functions/core/src/app/alarm/looks.rs) in the
 * alarm function; one such line within five minutes raises the alarm.
 */
export const OVERDUE_MESSAGES = ["alarm step overdue: its timer was lost; stepped by the minute's wake-up"] as const;

/** The metric the overdue lines of the alarm function's log group count into. */
export const OVERDUE_METRIC = 'AlarmStepsOverdue';

/**
 * The timer queue's name, `nurse-call-<installation>-alarm-timers`: the
 * queue is made with it, and the key policy statement that lets the
 * webhook wake-up schedule send to the queue names the queue's ARN built
 * from it (its encryption context; infra/lib/webhooks.ts).
 */
export function timerQueueName(installation: string): string {
  return `nurse-call-${installation}-alarm-timers`;
}

export interface AlarmTimersProps {
  /** The installation's name: `nurse-call-<installation>-alarm-…` queues and alarms. */
  readonly installation: string;
  /** The installation's key (production): the three queues. */
  readonly key?: kms.IKey;
}

export class AlarmTimers extends Construct {
  /**
   * The timers, each delayed until its alarm's next step is due, and webhook
   * wake-ups (a retry's, the EventBridge schedule's): the function's
   * ALARM_TIMER_QUEUE_URL.
   */
  readonly timerQueue: sqs.Queue;
  /** Timers the function failed to take {@link TIMER_MAX_RECEIVES} times. */
  readonly timerDeadLetters: sqs.Queue;
  /** The stream mapping's on-failure destination: a record of each batch the function gave up on. */
  readonly streamFailures: sqs.Queue;
  private readonly installation: string;

  constructor(scope: Construct, id: string, props: AlarmTimersProps) {
    super(scope, id);
    const { installation, key } = props;
    this.installation = installation;

    // Each queue as every queue of the stack (infra/lib/queues.ts):
    // encrypted (the alarm role may use the installation's key through SQS,
    // the stack grants it), TLS only, deleted with the stack (a timer is
    // only worth something to the function that takes it).
    //
    // --- The timer queue: standard (a timer may come twice, which the
    // conditional write makes harmless; each names its own due time, so
    // order does not matter). A timer is sent on at least every 900 s, so
    // one of 4 days is stuck for good; the age alarm says so long before.
    // The timers that failed 5 times (a step or a sending on that kept
    // failing, a message that is no timer) go to its dead-letter queue,
    // kept 14 days for the alarm to be looked into.
    const timers = queueWithDeadLetters(this, {
      ids: { queue: 'TimerQueue', deadLetters: 'TimerDeadLetters' },
      name: timerQueueName(installation),
      visibility: TIMER_VISIBILITY_TIMEOUT,
      retention: Duration.days(4),
      maxReceiveCount: TIMER_MAX_RECEIVES,
      key,
      sandboxKey: CHECKOV.sandboxTimerQueueKey,
    });
    this.timerQueue = timers.queue;
    this.timerDeadLetters = timers.deadLetters;

    // --- What the function gave up on in the stream (retries spent, record
    // too old): Lambda sends a record of the batch (shard, sequence
    // numbers, no item data) here. Kept 14 days, like the broadcast's.
    this.streamFailures = encryptedQueue(this, 'StreamFailures', {
      name: `nurse-call-${installation}-alarm-stream-failures`,
      retention: DEAD_LETTER_RETENTION,
      key,
      sandboxKey: CHECKOV.sandboxQueueKey,
    });
  }

  /**
   * Subscribes `fn` to its two event sources, for latency (no batching
   * window on either: an open's first timer goes out at once, a due timer
   * steps at once), and returns the alarms of the three queues and of the
   * unreadable stream records.
   *
   * - The data table's stream, the records of {@link ALARM_FILTERS}, up to
   *   100 a batch. A record that fails is retried by itself (partial batch
   *   response, bisect on error), at most 3 times and for at most 5
   *   minutes, then reported to the failure queue. The broadcast reads the
   *   same stream: two readers per shard, the documented maximum
   *   (a third reader would be throttled).
   * - The timer queue, up to 10 timers a batch; a timer that fails is
   *   reported alone (partial batch response) and given again after the
   *   visibility timeout, until the dead-letter queue takes it.
   *
   * Besides, metric filters on the function's log group count its
   * {@link UNREADABLE_RECORD_MESSAGES} and its {@link OVERDUE_MESSAGES},
   * and an alarm fires on one such line within five minutes.
   */
  subscribe(fn: lambda.Function, data: dynamodb.ITable): cloudwatch.Alarm[] {
    readStream(fn, data, { filters: ALARM_FILTERS, failures: this.streamFailures });
    takeFrom(fn, this.timerQueue);

    const name = (suffix: string) => `nurse-call-${this.installation}-${suffix}`;
    return [
      logLinesAlarm(this, {
        installation: this.installation,
        filters: [{ id: 'UnreadableRecordsFilter', logGroup: fn.logGroup }],
        messages: UNREADABLE_RECORD_MESSAGES,
        metricName: UNREADABLE_RECORD_METRIC,
        alarmId: 'UnreadableRecordsAlarm',
        alarmName: name('alarm-records-unreadable'),
        alarmDescription:
          'The alarm function skipped a stream record it could not read (not retried, not in the stream failure queue): ' +
          'the call it changed may have got no timer, so its alarm may not escalate (the due index by_due still lists it), ' +
          "and an audit's alerts and cancels may not have been pushed to the phones; " +
          "see the alarm function's log for the record (index or sequence number)",
      }),
      logLinesAlarm(this, {
        installation: this.installation,
        filters: [{ id: 'OverdueStepsFilter', logGroup: fn.logGroup }],
        messages: OVERDUE_MESSAGES,
        metricName: OVERDUE_METRIC,
        alarmId: 'OverdueStepsAlarm',
        alarmName: name('alarm-steps-overdue'),
        alarmDescription:
          "The minute's wake-up found an alarm whose next step was more than 5 s overdue and stepped it (at most about a minute late): " +
          'a stream record or a timer was lost (see the stream failure queue, the dead-letter queue and the alarm function\'s log: call_id, due_at, late_s)',
      }),
      messagesAlarm(this, 'StreamFailuresAlarm', this.streamFailures, {
        alarmName: name('alarm-stream-failures'),
        alarmDescription:
          'The alarm function gave up on stream records (retries or 5 minutes spent): the calls they changed may have got no timer, so their alarms may not escalate (the due index by_due still lists them); the queue holds which',
      }),
      messagesAlarm(this, 'TimerDeadLettersAlarm', this.timerDeadLetters, {
        alarmName: name('alarm-timers-dlq'),
        alarmDescription:
          `An alarm's timer could not be taken ${TIMER_MAX_RECEIVES} times: its call may not escalate (the call stays shown on displays); ` +
          'or a webhook wake-up (body {"webhooks":"wake"}) could not be passed on to the webhook queue: webhook events wait in the outbox until the next wake-up; the dead-letter queue holds which',
      }),
      ageAlarm(this, 'TimerAgeAlarm', this.timerQueue, {
        alarmName: name('alarm-timers-age'),
        alarmDescription: `A timer has waited more than ${TIMER_AGE_ALARM_SECONDS} s in the timer queue (one is delayed at most 900 s): the alarm function is not taking timers, alarms are not escalating`,
        seconds: TIMER_AGE_ALARM_SECONDS,
      }),
    ];
  }
}
