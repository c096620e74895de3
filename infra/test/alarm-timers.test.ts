/**
 * Alarms in AWS (DECISIONS §17; issue 28): the timer queue and its
 * dead-letter queue, the stream failure queue, the alarm function's two
 * event source mappings (the data table's stream, filtered to calls,
 * duties, audit items inserted and webhook items inserted; the timer
 * queue), its environment and exact permissions (with the delivery queue of
 * deliveries.test.ts and the webhook queue of webhooks.test.ts), the
 * queues' alarms, the alarm on stream records skipped unread (a metric
 * filter on the function's log), and what the Rust side must name the same
 * way (the queue variables, the keys the filter reads, the longest delay,
 * the error lines the metric filter matches). Offline, on the synthesized
 * templates of both modes.
 */
import * as assert from 'node:assert/strict';
import * as path from 'node:path';
import { describe, it } from 'node:test';

import { OUTBOX_PK, OVERDUE_MESSAGES, UNREADABLE_RECORD_MESSAGES, UNREADABLE_RECORD_METRIC, WAKE_PK } from '../lib/alarm-timers';
import { functionsOf } from '../lib/nurse-call-stack';
import {
  DYNAMODB_VIA,
  Json,
  MODES,
  REPO,
  SQS_VIA,
  alarmNamed,
  alarmSummary,
  assertQueueMapping,
  assertQueuesProtected,
  assertServiceFunction,
  commonEnvironment,
  environmentOf,
  functionId,
  logLinesAlarmOf,
  managedPoliciesOf,
  mappingsOf,
  matches,
  permissionsOf,
  queueAlarmSummary,
  queueArnOf,
  queueId,
  queueReaders,
  resourcesOf,
  rustCrate,
  rustErrorMessages,
  rustSource,
  streamFiltersOf,
  tableId,
  text,
  topicTemplates,
  wakeSendStatement,
} from './helpers';

const templates = topicTemplates();

/** The alarm function's queues, by the suffix of their names. */
const QUEUES = ['alarm-timers', 'alarm-timers-dlq', 'alarm-stream-failures'] as const;

for (const mode of MODES) {
  const template = templates[mode];
  const production = mode === 'production';
  const queue = (suffix: string) => resourcesOf(template, 'AWS::SQS::Queue')[queueId(template, suffix)];
  const alarmFunction = () => resourcesOf(template, 'AWS::Lambda::Function')[functionId(template, 'alarm')];
  const streamFilters = () => streamFiltersOf(template, 'alarm', 'alarm-stream-failures');

  describe(`${mode}: the timer queue, its dead-letter queue and the stream failure queue`, () => {
    it('the timer queue: standard, each timer its own delay, visibility 30 s (above the function\'s 10 s), kept 4 days, to the dead-letter queue after 5 receives', () => {
      const props = queue('alarm-timers').Properties;
      assert.equal(props.QueueName, `nurse-call-test-${mode}-alarm-timers`);
      assert.equal(props.FifoQueue, undefined);
      assert.equal(props.DelaySeconds, undefined);
      assert.equal(props.VisibilityTimeout, 30);
      assert.ok(alarmFunction().Properties.Timeout < props.VisibilityTimeout);
      assert.equal(props.MessageRetentionPeriod, 4 * 24 * 3600);
      assert.deepEqual(props.RedrivePolicy, { deadLetterTargetArn: queueArnOf(template, 'alarm-timers-dlq'), maxReceiveCount: 5 });
    });

    it('the dead-letter queue and the stream failure queue keep what they get 14 days, and send it nowhere', () => {
      for (const suffix of ['alarm-timers-dlq', 'alarm-stream-failures']) {
        const props = queue(suffix).Properties;
        assert.equal(props.QueueName, `nurse-call-test-${mode}-${suffix}`);
        assert.equal(props.MessageRetentionPeriod, 14 * 24 * 3600, suffix);
        assert.equal(props.RedrivePolicy, undefined, suffix);
        assert.equal(props.FifoQueue, undefined, suffix);
      }
    });

    it(`each of the three: TLS only, ${production ? "encrypted with the installation's key" : 'SQS-managed encryption'}, deleted with the stack; only the timer queue lets EventBridge send, for the webhook wake-up schedule's rule only`, () => {
      // The schedule: infra/lib/webhooks.ts, webhook-wakes.test.ts.
      assertQueuesProtected(template, mode, QUEUES, /alarm timers|failed batch metadata/, {
        'alarm-timers': [wakeSendStatement(template)],
      });
    });
  });

  describe(`${mode}: the alarm function's two event sources`, () => {
    it('exactly two mappings: the data table\'s stream and the timer queue', () => {
      const sources = Object.values(mappingsOf(template, 'alarm')).map((m) => text(m.Properties.EventSourceArn)).sort();
      assert.deepEqual(sources, [`{${tableId(template, 'data')}.StreamArn}`, `{${queueId(template, 'alarm-timers')}.Arn}`].sort());
    });

    it('the stream: latency first, partial batch failures, bounded retries, bisect, 5 minutes, the filters, the failure queue', () => {
      const patterns = streamFilters();
      assert.deepEqual(patterns, [
        { eventName: ['INSERT', 'MODIFY'], dynamodb: { Keys: { sk: { S: ['call'] } } } },
        { eventName: ['INSERT', 'MODIFY', 'REMOVE'], dynamodb: { Keys: { pk: { S: [{ prefix: 'duty#' }] } } } },
        { eventName: ['INSERT'], dynamodb: { Keys: { sk: { S: [{ prefix: 'audit#' }] } } } },
        { eventName: ['INSERT'], dynamodb: { Keys: { pk: { S: ['webhook#outbox', 'webhook#wake', 'push#test'] } } } },
      ]);
      // Lambda's quota: five filters per event source mapping.
      assert.ok(patterns.length <= 5);
    });

    it('the filters let through new and changed calls, every change of a duty, audit items, outbox events, webhook wake-ups and sign-on tests inserted, only', () => {
      const patterns = streamFilters();
      const record = (eventName: string, pk: string, sk: string) => ({
        eventName,
        dynamodb: { Keys: { pk: { S: pk }, sk: { S: sk } } },
      });
      for (const [eventName, pk, sk, wanted] of [
        ['INSERT', 'call#42', 'call', true], // a call opened: its first timer, a presence's look
        ['MODIFY', 'call#42', 'call', true], // a step, a response, a close
        ['REMOVE', 'call#42', 'call', false], // expired by TTL
        ['INSERT', 'call#42', 'audit#0000000003#000', true], // an alarm write's audit: its alerts and cancels become pushes
        ['INSERT', 'call#42', 'audit#0000000003#001', true], // the same write's next chunk of events
        ['REMOVE', 'call#42', 'audit#0000000003#000', false], // an audit item expired by TTL with its call
        ['MODIFY', 'call#42', 'audit#0000000003#000', false], // never written twice; nothing to push if it were
        ['INSERT', 'installation', 'xaudit#1', false], // `audit#` not at the start of the sort key
        ['INSERT', 'audit#installation', 'staff-1', false], // `audit#` in the partition key only
        ['INSERT', 'duty#installation', 'staff-1', true], // a sign-on
        ['MODIFY', 'duty#installation', 'staff-1', true], // a duty changed
        ['REMOVE', 'duty#installation', 'staff-1', true], // a sign-off, or a shift's end by TTL
        ['INSERT', 'duty#c-0123', 'staff-2', true], // a sandbox consumer's duty
        ['INSERT', 'staff#installation', 'staff-1', false], // the roster
        ['INSERT', 'installation#Zimmer-101', 'element', false], // an element
        ['MODIFY', 'installation#Zimmer-101', 'element', false], // an element's status
        ['INSERT', 'installation#Zimmer-101', 'open#Notruf', false], // the open-call lock
        ['REMOVE', 'installation#Zimmer-101', 'open#Notruf', false], // the lock removed at the close
        ['INSERT', 'push#staff-1', '9f86d081', false], // a push subscription
        ['MODIFY', 'push#staff-1', '9f86d081', false], // a device's push or receipt recorded
        ['INSERT', 'push#test', '2026-01-05T09:00:00.000000000Z#staff-1#all', true], // a sign-on test: its push job
        ['REMOVE', 'push#test', '2026-01-05T09:00:00.000000000Z#staff-1#all', false], // gone by TTL
        ['INSERT', 'push#vapid', 'key', false], // the VAPID key pair
        ['INSERT', 'open#installation', '00000000000000000042', false], // an open-call index item
        ['INSERT', 'installation', 'duty#x', false], // `duty#` in the sort key only
        ['INSERT', 'webhook#outbox', '2026-01-05T09:00:00.000000000Z#000#msg_1', true], // a write's webhook event: the deliveries are woken
        ['REMOVE', 'webhook#outbox', '2026-01-05T09:00:00.000000000Z#000#msg_1', false], // the event finished (or expired)
        ['MODIFY', 'webhook#outbox', '2026-01-05T09:00:00.000000000Z#000#msg_1', false], // never written twice
        ['INSERT', 'webhook#wake', '2026-01-05T09:00:08.000000000Z#0a1b2c3d4e5f6a7b', true], // a later retry's wake-up, put by deliver
        ['REMOVE', 'webhook#wake', '2026-01-05T09:00:08.000000000Z#0a1b2c3d4e5f6a7b', false], // gone by TTL
        ['INSERT', 'webhook#endpoints', 'e-1', false], // an endpoint registered
        ['MODIFY', 'webhook#endpoints', 'e-1', false], // its failing_since, its settings
        ['INSERT', 'webhook#attempts#msg_1', 'e-1#0000000001', false], // a delivery log line
        ['INSERT', 'webhook#attention', 'Zimmer-101', false], // an element's attention mark
        ['INSERT', 'webhook#outbox#x', '0001', false], // the outbox's key exactly, no prefix
        ['INSERT', 'call#42', 'webhook#outbox', false], // `webhook#outbox` in the sort key only
      ] as const) {
        assert.equal(
          patterns.some((pattern) => matches(pattern, record(eventName, pk, sk))),
          wanted,
          `${eventName} ${pk} ${sk}`,
        );
      }
    });

    it('the timer queue: up to 10 timers a batch, without waiting, partial batch failures', () => {
      assertQueueMapping(template, 'alarm', 'alarm-timers');
    });

    it('two readers of the stream, the broadcast and the alarm function: the most a shard supports', () => {
      const readers = Object.values(resourcesOf(template, 'AWS::Lambda::EventSourceMapping'))
        .filter((m) => m.Properties.EventSourceArn['Fn::GetAtt']?.[1] === 'StreamArn')
        .map((m) => m.Properties.FunctionName.Ref)
        .sort();
      assert.deepEqual(readers, [functionId(template, 'alarm'), functionId(template, 'broadcast')].sort());
    });

    it('no other function reads the timer queue, and none reads its dead letters', () => {
      assert.deepEqual(queueReaders(template, 'alarm-timers'), [functionId(template, 'alarm')]);
      assert.deepEqual(queueReaders(template, 'alarm-timers-dlq'), []);
    });
  });

  describe(`${mode}: the alarm function`, () => {
    it('arm64 provided.al2023 from its zip, 10 s, 256 MB, its own log group', () => {
      assertServiceFunction(template, mode, 'alarm', { timeout: 10, memory: 256 });
    });

    it('the request path\'s environment (its audit lines expire with their call) plus ALARM_TIMER_QUEUE_URL, DELIVERY_QUEUE_URL and WEBHOOK_QUEUE_URL, the queues\' URLs', () => {
      const variables = alarmFunction().Properties.Environment.Variables;
      // A queue's `Ref` is its URL.
      assert.deepEqual(variables.ALARM_TIMER_QUEUE_URL, { Ref: queueId(template, 'alarm-timers') });
      assert.deepEqual(variables.DELIVERY_QUEUE_URL, { Ref: queueId(template, 'deliveries') });
      assert.deepEqual(variables.WEBHOOK_QUEUE_URL, { Ref: queueId(template, 'webhooks.fifo') });
      assert.deepEqual(environmentOf(template, 'alarm'), {
        ...commonEnvironment(template, mode),
        CALL_RETENTION_DAYS: '400',
        ALARM_TIMER_QUEUE_URL: `{${queueId(template, 'alarm-timers')}}`,
        DELIVERY_QUEUE_URL: `{${queueId(template, 'deliveries')}}`,
        WEBHOOK_QUEUE_URL: `{${queueId(template, 'webhooks.fifo')}}`,
      });
    });

    it('exactly its statements, and only the basic execution role besides (logs)', () => {
      const key = production ? ['key'] : [];
      assert.deepEqual(
        permissionsOf(template, 'alarm'),
        [
          'dynamodb:Scan on table call-types',
          // The minute's sweep of the central systems' links (DECISIONS §19).
          'dynamodb:Scan, dynamodb:UpdateItem on table consumers',
          // As staff has it: the same alarm engine.
          'dynamodb:DeleteItem, dynamodb:GetItem, dynamodb:PutItem, dynamodb:Query, dynamodb:UpdateItem on table data',
          // Timers (sent, and sent on) and webhook wake-ups delayed to a
          // retry's time, the stream's failure records, push jobs, webhook
          // wake-ups.
          `sqs:SendMessage on queue nurse-call-test-${mode}-alarm-stream-failures, queue nurse-call-test-${mode}-alarm-timers, queue nurse-call-test-${mode}-deliveries, queue nurse-call-test-${mode}-webhooks.fifo`,
          // The event source mappings: the stream read (ListStreams has no
          // narrower resource), the timers' receive and delete.
          'dynamodb:DescribeStream, dynamodb:GetRecords, dynamodb:GetShardIterator on table data stream',
          'dynamodb:ListStreams on *',
          `sqs:ChangeMessageVisibility, sqs:DeleteMessage, sqs:GetQueueAttributes, sqs:GetQueueUrl, sqs:ReceiveMessage on queue nurse-call-test-${mode}-alarm-timers`,
          ...key.flatMap(() => [
            // Its writes, and the stream records (encrypted with the
            // table's key, read through DynamoDB: one statement).
            `kms:Decrypt, kms:DescribeKey, kms:Encrypt, kms:GenerateDataKey on key if ${DYNAMODB_VIA}`,
            // What it sends, and the timers it takes (one statement).
            `kms:Decrypt, kms:GenerateDataKey on key if ${SQS_VIA}`,
            // No use of the key but through those two services
            // (infra/lib/data.ts readStream, infra/lib/queues.ts takeFrom).
          ]),
        ].sort(),
      );
      assert.deepEqual(managedPoliciesOf(template, 'alarm'), [
        'arn:${AWS::Partition}:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole',
      ]);
    });

    it('no DynamoDB wildcard, and no other role may send to or receive from the alarm queues', () => {
      assert.doesNotMatch(permissionsOf(template, 'alarm').join('\n'), /dynamodb:\*|sqs:\*|sqs:SendMessage on .*dlq/);
      for (const name of functionsOf(mode).filter((n) => n !== 'alarm')) {
        assert.doesNotMatch(permissionsOf(template, name).join('\n'), /alarm-timers|alarm-stream-failures/, name);
      }
    });

    it('its checkov suppressions carry the event sources\' reasons', () => {
      const skips: Json[] = alarmFunction().Metadata.checkov.skip;
      assert.match(skips.find((s) => s.id === 'CKV_AWS_116').comment, /event source mappings.*dead-letter queue/);
      if (production) {
        assert.match(skips.find((s) => s.id === 'CKV_AWS_115').comment, /due timers/);
      } else {
        assert.equal(skips.find((s) => s.id === 'CKV_AWS_115'), undefined);
      }
    });
  });

  describe(`${mode}: the alarms`, () => {
    it('a failure record of the stream, a timer in the dead-letter queue, a timer older than 960 s, the function\'s throttles and errors; all to the topic', () => {
      const alarm = (name: string) => alarmNamed(template, mode, name);
      assert.deepEqual(alarmSummary(alarm('alarm-stream-failures')), queueAlarmSummary(template, 'alarm-stream-failures'));
      const deadLetters = alarm('alarm-timers-dlq');
      assert.deepEqual(alarmSummary(deadLetters), queueAlarmSummary(template, 'alarm-timers-dlq'));
      assert.match(deadLetters.AlarmDescription, /5 times.*may not escalate/);
      assert.deepEqual(alarmSummary(alarm('alarm-timers-age')), queueAlarmSummary(template, 'alarm-timers', 960));
      assert.equal(alarm('alarm-throttles').MetricName, 'Throttles');
      assert.equal(alarm('alarm-errors').MetricName, 'Errors');
    });

    it('a stream record skipped unread: a metric filter on the alarm function\'s log group counts its lines, one within five minutes raises the alarm, to the topic', () => {
      const description = logLinesAlarmOf(template, mode, {
        fn: 'alarm',
        filterPattern:
          '{ ($.message = "unreadable stream record skipped") || ' +
          '($.message = "unreadable stream record skipped: its alarm gets nothing from it") }',
        metricName: 'AlarmRecordsUnreadable',
        alarm: 'alarm-records-unreadable',
      });
      assert.equal(UNREADABLE_RECORD_METRIC, 'AlarmRecordsUnreadable');
      assert.match(description, /not retried, not in the stream failure queue/);
      assert.match(description, /may not escalate/);
      assert.match(description, /may not have been pushed/);
    });

    it('an alarm step found overdue by the minute\'s wake-up (DECISIONS §19): a metric filter on the alarm function\'s log group counts its lines, one within five minutes raises the alarm, to the topic', () => {
      const description = logLinesAlarmOf(template, mode, {
        fn: 'alarm',
        filterPattern: '{ $.message = "alarm step overdue: its timer was lost; stepped by the minute\'s wake-up" }',
        metricName: 'AlarmStepsOverdue',
        alarm: 'alarm-steps-overdue',
      });
      assert.match(description, /more than 5 s overdue/);
      assert.match(description, /stream record or a timer was lost/);
    });
  });
}

describe('the Rust side names the same', () => {
  it('the alarm function reads the timer queue\'s URL from ALARM_TIMER_QUEUE_URL, the delivery queue\'s from DELIVERY_QUEUE_URL and the webhook queue\'s from WEBHOOK_QUEUE_URL, each required', () => {
    assert.match(rustCrate('alarms-aws'), /pub const TIMER_QUEUE_URL_VAR: &str = "ALARM_TIMER_QUEUE_URL";/);
    assert.match(rustCrate('alarms-aws'), /pub const DELIVERY_QUEUE_URL_VAR: &str = "DELIVERY_QUEUE_URL";/);
    assert.match(rustCrate('alarms-aws'), /pub const WEBHOOK_QUEUE_URL_VAR: &str = "WEBHOOK_QUEUE_URL";/);
    assert.match(rustSource('alarms-aws/src/setup.rs'), /required\(TIMER_QUEUE_URL_VAR\)\?/);
    assert.match(rustSource('alarms-aws/src/setup.rs'), /required\(DELIVERY_QUEUE_URL_VAR\)\?/);
    assert.match(rustSource('alarms-aws/src/setup.rs'), /required\(WEBHOOK_QUEUE_URL_VAR\)\?/);
  });

  it('the outbox\'s and the webhook wake-ups\' partition keys are what the filter passes, and only their INSERTs wake anything', () => {
    assert.equal(OUTBOX_PK, 'webhook#outbox');
    assert.equal(WAKE_PK, 'webhook#wake');
    assert.match(rustSource('store-dynamodb/src/webhook_items.rs'), new RegExp(`pub const OUTBOX_PK: &str = "${OUTBOX_PK}";`));
    assert.match(rustSource('store-dynamodb/src/webhook_wakes.rs'), new RegExp(`pub const WAKE_PK: &str = "${WAKE_PK}";`));
    const wakes = rustSource('alarms-aws/src/wakes.rs');
    assert.match(wakes, /if partition == WAKE_PK \{\s*if operation != "INSERT" \{\s*return Ok\(Vec::new\(\)\);/);
    assert.match(wakes, /if partition == OUTBOX_PK \{\s*return Ok\(if operation == "INSERT" \{\s*vec!\[Wake::Outbox\]\s*\} else \{\s*Vec::new\(\)/);
  });

  it('an audit item\'s sort key begins with audit#, and an inserted one is what the alarm function pushes', () => {
    assert.match(rustSource('store-dynamodb/src/alarm_items.rs'), /pub const AUDIT_PREFIX: &str = "audit#";/);
    assert.match(rustCrate('alarms-aws'), /if sort\.starts_with\(AUDIT_PREFIX\) \{/);
    assert.match(rustCrate('alarms-aws'), /if record\.event_name != "INSERT" \{\s*return Ok\(Vec::new\(\)\);/);
  });

  it('a duty\'s partition key begins with duty#, and a call item\'s sort key is call: what the filters read', () => {
    assert.match(rustCrate('alarms-aws'), /const DUTY_PK_PREFIX: &str = "duty#";/);
    assert.match(rustSource('store-dynamodb/src/alarm_items.rs'), /pub fn duty_pk\(scope: &Scope\) -> String \{\s*format!\("duty#\{\}", scope\.as_str\(\)\)/);
    assert.match(rustSource('store-dynamodb/src/item.rs'), /pub const CALL_SK: &str = "call";/);
  });

  it('the alarm function logs the unreadable-record messages the metric filter matches, as error lines; its other error lines are alarmed otherwise or carry no alarm', () => {
    const messages = rustErrorMessages(path.join(REPO, 'functions', 'alarms-aws', 'src'));
    for (const message of UNREADABLE_RECORD_MESSAGES) {
      assert.ok(messages.includes(message), `tracing::error!(…, "${message}") in functions/alarms-aws/src`);
    }
    // A new or renamed error line must be sorted: counted by the filter, or
    // one of these (infra/lib/alarm-timers.ts says why each is left out).
    assert.deepEqual(
      [...new Set(messages)].sort(),
      [
        ...UNREADABLE_RECORD_MESSAGES,
        'stream batch not sent on: retried whole', // retried, then alarm-stream-failures
        'a timer message that is no timer: left to the dead-letter queue', // alarm-timers-dlq
        'neither a stream nor a timer queue event: ignored', // no alarm in it
        'overdue alarms not swept: the wake-up is given again', // retried, then alarm-timers-dlq
        'links not swept: the wake-up is given again', // retried, then alarm-timers-dlq
        'silence alerts not put on the delivery queue', // the next alert within 5 minutes; the displays' banner comes through the broadcast
      ].sort(),
    );
    // The overdue sweep's line (the core's, logged in the alarm function) is the filter's.
    for (const message of OVERDUE_MESSAGES) {
      assert.ok(
        rustErrorMessages(path.join(REPO, 'functions', 'core', 'src', 'app', 'alarm')).includes(message),
        `tracing::error!(…, "${message}") in functions/core/src/app/alarm`,
      );
    }
    // A record skipped is not reported as a batch item failure: nothing else says so.
    assert.match(
      rustSource('alarms-aws/src/handler.rs'),
      /"unreadable stream record skipped: its alarm gets nothing from it"\);\s*tally\.unreadable \+= 1;\s*continue;/,
    );
  });

  it('a timer is delayed at most 900 s: the age alarm\'s 960 s is above it', () => {
    assert.match(rustSource('core/src/domain/alarm/timer.rs'), /pub const MAX_DELAY_SECONDS: u32 = 900;/);
  });
});
