/**
 * Alarms in AWS (DECISIONS §17; issue 28): the timer queue and its
 * dead-letter queue, the stream failure queue, the alarm function's two
 * event source mappings (the data table's stream, filtered to calls,
 * duties and audit items inserted; the timer queue), its environment and
 * exact permissions (with the delivery queue of deliveries.test.ts), the
 * queues' alarms, the alarm on stream records skipped unread (a metric filter
 * on the function's log), and what the Rust side must name the same way (the
 * queue variables, the keys the filter reads, the longest delay, the error
 * lines the metric filter matches). Offline, on the synthesized templates
 * of both modes.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';

import { Template } from 'aws-cdk-lib/assertions';

import { UNREADABLE_RECORD_MESSAGES, UNREADABLE_RECORD_METRIC } from '../lib/alarm-timers';
import { ServiceMode, functionsOf } from '../lib/nurse-call-stack';
import {
  Json,
  functionId,
  managedPoliciesOf,
  mappingsOf,
  matches,
  only,
  permissionsOf,
  queueId,
  resourcesOf,
  rustErrorMessages,
  synth,
  tableId,
  text,
} from './helpers';

const MODES: ServiceMode[] = ['production', 'sandbox'];
// With the alarm topic, as scripts/test synthesizes them for cfn-lint and checkov.
const templates: Record<ServiceMode, Template> = {
  production: synth('production', { alarmEmail: 'ops@example.org' }),
  sandbox: synth('sandbox', { alarmEmail: 'ops@example.org' }),
};
const REPO = path.resolve(__dirname, '..', '..', '..');

/** The alarm function's queues, by the suffix of their names. */
const QUEUES = ['alarm-timers', 'alarm-timers-dlq', 'alarm-stream-failures'] as const;

const DYNAMODB_VIA = 'StringEquals kms:ViaService=dynamodb.${AWS::Region}.amazonaws.com';
const SQS_VIA = 'StringEquals kms:ViaService=sqs.${AWS::Region}.amazonaws.com';

for (const mode of MODES) {
  const template = templates[mode];
  const production = mode === 'production';
  const queue = (suffix: string) => resourcesOf(template, 'AWS::SQS::Queue')[queueId(template, suffix)];
  const queueArn = (suffix: string) => ({ 'Fn::GetAtt': [queueId(template, suffix), 'Arn'] });
  const alarmFunction = () => resourcesOf(template, 'AWS::Lambda::Function')[functionId(template, 'alarm')];
  const streamMapping = () =>
    only(
      Object.fromEntries(
        Object.entries(mappingsOf(template, 'alarm')).filter(([, m]) => m.Properties.EventSourceArn['Fn::GetAtt']?.[1] === 'StreamArn'),
      ),
      "the alarm function's stream mapping",
    )[1];

  describe(`${mode}: the timer queue, its dead-letter queue and the stream failure queue`, () => {
    it('the timer queue: standard, each timer its own delay, visibility 30 s (above the function\'s 10 s), kept 4 days, to the dead-letter queue after 5 receives', () => {
      const props = queue('alarm-timers').Properties;
      assert.equal(props.QueueName, `nurse-call-test-${mode}-alarm-timers`);
      assert.equal(props.FifoQueue, undefined);
      assert.equal(props.DelaySeconds, undefined);
      assert.equal(props.VisibilityTimeout, 30);
      assert.ok(alarmFunction().Properties.Timeout < props.VisibilityTimeout);
      assert.equal(props.MessageRetentionPeriod, 4 * 24 * 3600);
      assert.deepEqual(props.RedrivePolicy, { deadLetterTargetArn: queueArn('alarm-timers-dlq'), maxReceiveCount: 5 });
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

    it(`each of the three: TLS only, ${production ? "encrypted with the installation's key" : 'SQS-managed encryption'}, deleted with the stack`, () => {
      const policies = Object.values(resourcesOf(template, 'AWS::SQS::QueuePolicy'));
      for (const suffix of QUEUES) {
        const id = queueId(template, suffix);
        const resource = queue(suffix);
        if (production) {
          const keyId = Object.keys(resourcesOf(template, 'AWS::KMS::Key'))[0];
          assert.deepEqual(resource.Properties.KmsMasterKeyId, { 'Fn::GetAtt': [keyId, 'Arn'] }, suffix);
          assert.equal(resource.Properties.SqsManagedSseEnabled, undefined, suffix);
        } else {
          assert.equal(resource.Properties.KmsMasterKeyId, undefined, suffix);
          assert.equal(resource.Properties.SqsManagedSseEnabled, true, suffix);
        }
        assert.equal(resource.DeletionPolicy, 'Delete', suffix);
        const [policy] = policies.filter((p) => p.Properties.Queues.some((q: Json) => q.Ref === id));
        assert.ok(policy, `the queue policy of ${suffix}`);
        assert.deepEqual(policy.Properties.Queues, [{ Ref: id }], suffix);
        assert.deepEqual(
          policy.Properties.PolicyDocument.Statement,
          [
            {
              Action: 'sqs:*',
              Condition: { Bool: { 'aws:SecureTransport': 'false' } },
              Effect: 'Deny',
              Principal: { AWS: '*' },
              Resource: { 'Fn::GetAtt': [id, 'Arn'] },
            },
          ],
          suffix,
        );
      }
    });
  });

  describe(`${mode}: the alarm function's two event sources`, () => {
    it('exactly two mappings: the data table\'s stream and the timer queue', () => {
      const sources = Object.values(mappingsOf(template, 'alarm')).map((m) => text(m.Properties.EventSourceArn)).sort();
      assert.deepEqual(sources, [`{${tableId(template, 'data')}.StreamArn}`, `{${queueId(template, 'alarm-timers')}.Arn}`].sort());
    });

    it('the stream: latency first, partial batch failures, bounded retries, bisect, 5 minutes, the filters, the failure queue', () => {
      const mapping = streamMapping();
      const patterns = mapping.Properties.FilterCriteria.Filters.map((f: Json) => JSON.parse(f.Pattern));
      assert.deepEqual(patterns, [
        { eventName: ['INSERT', 'MODIFY'], dynamodb: { Keys: { sk: { S: ['call'] } } } },
        { eventName: ['INSERT', 'MODIFY', 'REMOVE'], dynamodb: { Keys: { pk: { S: [{ prefix: 'duty#' }] } } } },
        { eventName: ['INSERT'], dynamodb: { Keys: { sk: { S: [{ prefix: 'audit#' }] } } } },
      ]);
      assert.deepEqual(
        { ...mapping.Properties, FilterCriteria: undefined },
        {
          FunctionName: { Ref: functionId(template, 'alarm') },
          EventSourceArn: { 'Fn::GetAtt': [tableId(template, 'data'), 'StreamArn'] },
          StartingPosition: 'LATEST',
          BatchSize: 100,
          MaximumBatchingWindowInSeconds: 0,
          FunctionResponseTypes: ['ReportBatchItemFailures'],
          MaximumRetryAttempts: 3,
          BisectBatchOnFunctionError: true,
          MaximumRecordAgeInSeconds: 300,
          ParallelizationFactor: 1,
          DestinationConfig: { OnFailure: { Destination: queueArn('alarm-stream-failures') } },
          FilterCriteria: undefined,
        },
      );
    });

    it('the filters let through new and changed calls, every change of a duty, and audit items inserted, only', () => {
      const patterns: Json[] = streamMapping().Properties.FilterCriteria.Filters.map((f: Json) => JSON.parse(f.Pattern));
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
        ['INSERT', 'open#installation', '00000000000000000042', false], // an open-call index item
        ['INSERT', 'webhook#outbox', '0001', false], // a webhook event
        ['INSERT', 'installation', 'duty#x', false], // `duty#` in the sort key only
      ] as const) {
        assert.equal(
          patterns.some((pattern) => matches(pattern, record(eventName, pk, sk))),
          wanted,
          `${eventName} ${pk} ${sk}`,
        );
      }
    });

    it('the timer queue: up to 10 timers a batch, without waiting, partial batch failures', () => {
      const [, mapping] = only(
        Object.fromEntries(
          Object.entries(mappingsOf(template, 'alarm')).filter(([, m]) => m.Properties.EventSourceArn['Fn::GetAtt']?.[1] === 'Arn'),
        ),
        "the alarm function's queue mapping",
      );
      assert.deepEqual(mapping.Properties, {
        FunctionName: { Ref: functionId(template, 'alarm') },
        EventSourceArn: queueArn('alarm-timers'),
        BatchSize: 10,
        MaximumBatchingWindowInSeconds: 0,
        FunctionResponseTypes: ['ReportBatchItemFailures'],
      });
    });

    it('two readers of the stream, the broadcast and the alarm function: the most a shard supports', () => {
      const readers = Object.values(resourcesOf(template, 'AWS::Lambda::EventSourceMapping'))
        .filter((m) => m.Properties.EventSourceArn['Fn::GetAtt']?.[1] === 'StreamArn')
        .map((m) => m.Properties.FunctionName.Ref)
        .sort();
      assert.deepEqual(readers, [functionId(template, 'alarm'), functionId(template, 'broadcast')].sort());
    });

    it('no other function reads the timer queue', () => {
      const readers = Object.values(resourcesOf(template, 'AWS::Lambda::EventSourceMapping'))
        .filter((m) => m.Properties.EventSourceArn['Fn::GetAtt']?.[0] === queueId(template, 'alarm-timers'))
        .map((m) => m.Properties.FunctionName.Ref);
      assert.deepEqual(readers, [functionId(template, 'alarm')]);
    });
  });

  describe(`${mode}: the alarm function`, () => {
    it('arm64 provided.al2023 from its zip, 10 s, 256 MB, its own log group', () => {
      const props = alarmFunction().Properties;
      assert.deepEqual(props.Architectures, ['arm64']);
      assert.equal(props.Runtime, 'provided.al2023');
      assert.equal(props.Handler, 'bootstrap');
      assert.equal(props.Timeout, 10);
      assert.equal(props.MemorySize, 256);
      const group = resourcesOf(template, 'AWS::Logs::LogGroup')[props.LoggingConfig.LogGroup.Ref];
      assert.equal(group.Properties.RetentionInDays, production ? 90 : 14);
      assert.equal(props.ReservedConcurrentExecutions, production ? undefined : 5);
    });

    it('the request path\'s environment (its audit lines expire with their call) plus ALARM_TIMER_QUEUE_URL and DELIVERY_QUEUE_URL, the queues\' URLs', () => {
      const variables = alarmFunction().Properties.Environment.Variables;
      // A queue's `Ref` is its URL.
      assert.deepEqual(variables.ALARM_TIMER_QUEUE_URL, { Ref: queueId(template, 'alarm-timers') });
      assert.deepEqual(variables.DELIVERY_QUEUE_URL, { Ref: queueId(template, 'deliveries') });
      assert.deepEqual(
        Object.fromEntries(Object.entries(variables).map(([k, v]) => [k, text(v)])),
        {
          SERVICE_MODE: mode,
          SERVICE_TIME_ZONE: 'Europe/Berlin',
          CALL_TYPES_TABLE: `{${tableId(template, 'call-types')}}`,
          CONSUMERS_TABLE: `{${tableId(template, 'consumers')}}`,
          DATA_TABLE: `{${tableId(template, 'data')}}`,
          CALL_RETENTION_DAYS: '400',
          RUST_LOG: 'info',
          ALARM_TIMER_QUEUE_URL: `{${queueId(template, 'alarm-timers')}}`,
          DELIVERY_QUEUE_URL: `{${queueId(template, 'deliveries')}}`,
        },
      );
    });

    it('exactly its statements, and only the basic execution role besides (logs)', () => {
      const key = production ? ['key'] : [];
      assert.deepEqual(
        permissionsOf(template, 'alarm'),
        [
          'dynamodb:Scan on table call-types',
          // As staff has it: the same alarm engine.
          'dynamodb:DeleteItem, dynamodb:GetItem, dynamodb:PutItem, dynamodb:Query, dynamodb:UpdateItem on table data',
          // Timers (sent, and sent on), the stream's failure records, push jobs.
          `sqs:SendMessage on queue nurse-call-test-${mode}-alarm-stream-failures, queue nurse-call-test-${mode}-alarm-timers, queue nurse-call-test-${mode}-deliveries`,
          // The event source mappings: the stream read (ListStreams has no
          // narrower resource), the timers' receive and delete.
          'dynamodb:DescribeStream, dynamodb:GetRecords, dynamodb:GetShardIterator on table data stream',
          'dynamodb:ListStreams on *',
          `sqs:ChangeMessageVisibility, sqs:DeleteMessage, sqs:GetQueueAttributes, sqs:GetQueueUrl, sqs:ReceiveMessage on queue nurse-call-test-${mode}-alarm-timers`,
          ...key.flatMap(() => [
            `kms:Decrypt, kms:DescribeKey, kms:Encrypt, kms:GenerateDataKey on key if ${DYNAMODB_VIA}`,
            `kms:Decrypt, kms:GenerateDataKey on key if ${SQS_VIA}`,
            'kms:Decrypt, kms:DescribeKey on key',
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
      const [topicId] = only(resourcesOf(template, 'AWS::SNS::Topic'), 'topic');
      const alarms = Object.values(resourcesOf(template, 'AWS::CloudWatch::Alarm'));
      const alarm = (name: string) => {
        const found = alarms.filter((a) => a.Properties.AlarmName === `nurse-call-test-${mode}-${name}`);
        assert.equal(found.length, 1, name);
        assert.deepEqual(found[0].Properties.AlarmActions, [{ Ref: topicId }], name);
        assert.equal(found[0].Properties.TreatMissingData, 'notBreaching', name);
        assert.equal(found[0].Properties.EvaluationPeriods, 1, name);
        return found[0].Properties;
      };
      const summary = (props: Json) => ({
        namespace: props.Namespace,
        metric: props.MetricName,
        dimensions: props.Dimensions,
        statistic: props.Statistic,
        comparison: props.ComparisonOperator,
        threshold: props.Threshold,
      });
      const onQueue = (suffix: string) => [{ Name: 'QueueName', Value: { 'Fn::GetAtt': [queueId(template, suffix), 'QueueName'] } }];
      assert.deepEqual(summary(alarm('alarm-stream-failures')), {
        namespace: 'AWS/SQS',
        metric: 'ApproximateNumberOfMessagesVisible',
        dimensions: onQueue('alarm-stream-failures'),
        statistic: 'Maximum',
        comparison: 'GreaterThanOrEqualToThreshold',
        threshold: 1,
      });
      const deadLetters = alarm('alarm-timers-dlq');
      assert.deepEqual(summary(deadLetters), {
        namespace: 'AWS/SQS',
        metric: 'ApproximateNumberOfMessagesVisible',
        dimensions: onQueue('alarm-timers-dlq'),
        statistic: 'Maximum',
        comparison: 'GreaterThanOrEqualToThreshold',
        threshold: 1,
      });
      assert.match(deadLetters.AlarmDescription, /5 times.*may not escalate/);
      assert.deepEqual(summary(alarm('alarm-timers-age')), {
        namespace: 'AWS/SQS',
        metric: 'ApproximateAgeOfOldestMessage',
        dimensions: onQueue('alarm-timers'),
        statistic: 'Maximum',
        comparison: 'GreaterThanThreshold',
        threshold: 960,
      });
      assert.equal(alarm('alarm-throttles').MetricName, 'Throttles');
      assert.equal(alarm('alarm-errors').MetricName, 'Errors');
    });

    it('a stream record skipped unread: a metric filter on the alarm function\'s log group counts its lines, one within five minutes raises the alarm, to the topic', () => {
      const group = alarmFunction().Properties.LoggingConfig.LogGroup;
      const [, filter] = only(
        Object.fromEntries(
          Object.entries(resourcesOf(template, 'AWS::Logs::MetricFilter')).filter(
            ([, f]) => f.Properties.MetricTransformations[0].MetricName === 'AlarmRecordsUnreadable',
          ),
        ),
        'the unreadable-records metric filter',
      );
      assert.deepEqual(filter.Properties, {
        LogGroupName: { Ref: group.Ref },
        FilterPattern:
          '{ ($.message = "unreadable stream record skipped") || ' +
          '($.message = "unreadable stream record skipped: its alarm gets nothing from it") }',
        MetricTransformations: [{ MetricNamespace: `NurseCall/test-${mode}`, MetricName: 'AlarmRecordsUnreadable', MetricValue: '1' }],
      });
      assert.equal(UNREADABLE_RECORD_METRIC, 'AlarmRecordsUnreadable');

      const [topicId] = only(resourcesOf(template, 'AWS::SNS::Topic'), 'topic');
      const found = Object.values(resourcesOf(template, 'AWS::CloudWatch::Alarm')).filter(
        (a) => a.Properties.AlarmName === `nurse-call-test-${mode}-alarm-records-unreadable`,
      );
      assert.equal(found.length, 1);
      const { AlarmDescription: description, ...props } = found[0].Properties;
      assert.deepEqual(props, {
        AlarmName: `nurse-call-test-${mode}-alarm-records-unreadable`,
        Namespace: `NurseCall/test-${mode}`,
        MetricName: 'AlarmRecordsUnreadable',
        Statistic: 'Sum',
        Period: 300,
        ComparisonOperator: 'GreaterThanOrEqualToThreshold',
        Threshold: 1,
        EvaluationPeriods: 1,
        TreatMissingData: 'notBreaching',
        AlarmActions: [{ Ref: topicId }],
      });
      assert.match(description, /not retried, not in the stream failure queue/);
      assert.match(description, /may not escalate/);
      assert.match(description, /may not have been pushed/);
      assert.ok(description.length <= 1024, 'CloudWatch takes at most 1024 characters');
    });
  });
}

describe('the Rust side names the same', () => {
  const source = (file: string) => fs.readFileSync(path.join(REPO, 'functions', file), 'utf8');
  /** Every Rust source of a crate of functions/, joined (whichever file declares a name). */
  const crate = (name: string) =>
    fs
      .readdirSync(path.join(REPO, 'functions', name, 'src'), { recursive: true, encoding: 'utf8' })
      .filter((file) => file.endsWith('.rs'))
      .map((file) => source(path.join(name, 'src', file)))
      .join('\n');

  it('the alarm function reads the timer queue\'s URL from ALARM_TIMER_QUEUE_URL and the delivery queue\'s from DELIVERY_QUEUE_URL, both required', () => {
    assert.match(crate('alarms-aws'), /pub const TIMER_QUEUE_URL_VAR: &str = "ALARM_TIMER_QUEUE_URL";/);
    assert.match(crate('alarms-aws'), /pub const DELIVERY_QUEUE_URL_VAR: &str = "DELIVERY_QUEUE_URL";/);
    assert.match(source('alarms-aws/src/setup.rs'), /required\(TIMER_QUEUE_URL_VAR\)\?/);
    assert.match(source('alarms-aws/src/setup.rs'), /required\(DELIVERY_QUEUE_URL_VAR\)\?/);
  });

  it('an audit item\'s sort key begins with audit#, and an inserted one is what the alarm function pushes', () => {
    assert.match(source('store-dynamodb/src/alarm_items.rs'), /pub const AUDIT_PREFIX: &str = "audit#";/);
    assert.match(crate('alarms-aws'), /if sort\.starts_with\(AUDIT_PREFIX\) \{/);
    assert.match(crate('alarms-aws'), /if record\.event_name != "INSERT" \{\s*return Ok\(Vec::new\(\)\);/);
  });

  it('a duty\'s partition key begins with duty#, and a call item\'s sort key is call: what the filters read', () => {
    assert.match(crate('alarms-aws'), /const DUTY_PK_PREFIX: &str = "duty#";/);
    assert.match(source('store-dynamodb/src/alarm_items.rs'), /pub fn duty_pk\(scope: &Scope\) -> String \{\s*format!\("duty#\{\}", scope\.as_str\(\)\)/);
    assert.match(source('store-dynamodb/src/item.rs'), /pub const CALL_SK: &str = "call";/);
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
      ].sort(),
    );
    // A record skipped is not reported as a batch item failure: nothing else says so.
    assert.match(
      source('alarms-aws/src/handler.rs'),
      /"unreadable stream record skipped: its alarm gets nothing from it"\);\s*tally\.unreadable \+= 1;\s*continue;/,
    );
  });

  it('a timer is delayed at most 900 s: the age alarm\'s 960 s is above it', () => {
    assert.match(source('core/src/domain/alarm/timer.rs'), /pub const MAX_DELAY_SECONDS: u32 = 900;/);
  });
});
