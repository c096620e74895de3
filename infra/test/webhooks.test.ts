/**
 * Webhooks in AWS (DECISIONS §16, §17; issue 28): the webhook queue (FIFO)
 * and its dead-letter queue, the forward function (its mapping on the
 * queue, timeout, environment with in production SECRETS_KEY_ID, exact
 * permissions, checkov reasons), who may
 * send to and read the queue, the dead-letter queue's alarm, the alarm on
 * events an alarm server may not have got (a metric filter on the
 * function's log), and what the Rust side must do the same way (one
 * message group, a deduplication id on every wake-up, no queue client in
 * the forward function, the webhook dispatcher's store calls its grant is
 * made for, the rounds' time within its timeout, the error lines the
 * filter matches). The alarm function's filter on the outbox and the
 * wake-ups: alarm-timers.test.ts; the EventBridge schedule that wakes the
 * forward function every minute: webhook-wakes.test.ts. Offline, on the
 * synthesized templates of both modes.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';

import { FORWARD_TIMEOUT, functionsOf } from '../lib/nurse-call-stack';
import { NOT_DELIVERED_MESSAGES, NOT_DELIVERED_METRIC, WEBHOOK_MAX_RECEIVES, WEBHOOK_VISIBILITY_TIMEOUT } from '../lib/webhooks';
import {
  DYNAMODB_VIA,
  SQS_VIA,
  Json,
  MODES,
  REPO,
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
  permissionsOf,
  queueAlarmSummary,
  queueArnOf,
  queueId,
  queueReaders,
  resourcesOf,
  rustCrate,
  rustErrorMessages,
  rustSource,
  sealedPurpose,
  topicTemplates,
} from './helpers';

const templates = topicTemplates();

for (const mode of MODES) {
  const template = templates[mode];
  const queue = (suffix: string) => resourcesOf(template, 'AWS::SQS::Queue')[queueId(template, suffix)];
  const production = mode === 'production';
  const forwardFunction = () => resourcesOf(template, 'AWS::Lambda::Function')[functionId(template, 'forward')];

  describe(`${mode}: the webhook queue and its dead-letter queue`, () => {
    it('the webhook queue: FIFO without content-based deduplication, no delay, visibility 6 × the forward function\'s 70 s, kept 4 days, to the dead-letter queue after 3 receives', () => {
      const props = queue('webhooks.fifo').Properties;
      assert.equal(props.QueueName, `nurse-call-test-${mode}-webhooks.fifo`);
      assert.equal(props.FifoQueue, true);
      // The alarm function names each wake-up's deduplication id.
      assert.equal(props.ContentBasedDeduplication, undefined);
      assert.equal(props.DeduplicationScope, undefined);
      assert.equal(props.FifoThroughputLimit, undefined);
      assert.equal(props.DelaySeconds, undefined);
      assert.equal(props.VisibilityTimeout, 6 * 70);
      assert.equal(props.VisibilityTimeout, 6 * forwardFunction().Properties.Timeout);
      assert.equal(props.VisibilityTimeout, WEBHOOK_VISIBILITY_TIMEOUT.toSeconds());
      assert.equal(props.MessageRetentionPeriod, 4 * 24 * 3600);
      assert.deepEqual(props.RedrivePolicy, {
        deadLetterTargetArn: queueArnOf(template, 'webhooks-dlq.fifo'),
        maxReceiveCount: 3,
      });
      assert.equal(WEBHOOK_MAX_RECEIVES, 3);
      // A wake-up that failed every receive reaches the dead-letter queue
      // long before the queue would drop it.
      assert.ok(props.VisibilityTimeout * props.RedrivePolicy.maxReceiveCount < props.MessageRetentionPeriod);
    });

    it('the dead-letter queue: FIFO too (SQS wants a FIFO queue\'s so), keeps what it gets 14 days, and sends it nowhere', () => {
      const props = queue('webhooks-dlq.fifo').Properties;
      assert.equal(props.QueueName, `nurse-call-test-${mode}-webhooks-dlq.fifo`);
      assert.equal(props.FifoQueue, true);
      assert.equal(props.ContentBasedDeduplication, undefined);
      assert.equal(props.MessageRetentionPeriod, 14 * 24 * 3600);
      assert.equal(props.RedrivePolicy, undefined);
    });

    it(`both: TLS only, ${production ? "encrypted with the installation's key" : 'SQS-managed encryption'}, deleted with the stack`, () => {
      assertQueuesProtected(template, mode, ['webhooks.fifo', 'webhooks-dlq.fifo'], /webhook wake-ups/);
    });
  });

  describe(`${mode}: the forward function`, () => {
    it('arm64 provided.al2023 from its zip, 70 s, 256 MB, its own log group, no VPC', () => {
      const props = assertServiceFunction(template, mode, 'forward', { timeout: 70, memory: 256 });
      assert.equal(FORWARD_TIMEOUT.toSeconds(), 70);
      assert.match(props.Description, /Webhooks/);
    });

    it('one event source: the webhook queue, up to 10 wake-ups a batch, partial batch responses, no batching window (Lambda takes none for a FIFO queue)', () => {
      assert.equal(Object.keys(mappingsOf(template, 'forward')).length, 1);
      assertQueueMapping(template, 'forward', 'webhooks.fifo');
    });

    it(`the environment: mode, time zone, tables, logs${production ? ', SECRETS_KEY_ID (the key sealing the endpoints\' secrets)' : ''} (no retention: it writes no calls; no queue URL: it sends to no queue)`, () => {
      assert.deepEqual(environmentOf(template, 'forward'), {
        ...commonEnvironment(template, mode),
        // The installation's key's ARN; none in a sandbox (no key: the
        // secrets stay plain).
        ...(production ? { SECRETS_KEY_ID: `{${Object.keys(resourcesOf(template, 'AWS::KMS::Key'))[0]}.Arn}` } : {}),
      });
    });

    it('exactly its statements: the webhook dispatcher on the tables, the webhook queue\'s receive; only the basic execution role besides (logs)', () => {
      assert.deepEqual(
        permissionsOf(template, 'forward'),
        [
          // The events' call types.
          'dynamodb:Scan on table call-types',
          // Whether an alert is current (GetItem), an attention mark with
          // its outbox item and a retry's wake-up item (PutItem), an
          // endpoint's failing_since (UpdateItem), the delivery log and the
          // finished events (BatchWriteItem).
          'dynamodb:BatchWriteItem, dynamodb:GetItem, dynamodb:PutItem, dynamodb:UpdateItem on table data',
          // The endpoints, the outbox, the delivery log, the attention
          // marks, the roster; the elements (by_scope).
          'dynamodb:Query on table data, table data/index/by_scope',
          // The event source mapping's receive and delete.
          `sqs:ChangeMessageVisibility, sqs:DeleteMessage, sqs:GetQueueAttributes, sqs:GetQueueUrl, sqs:ReceiveMessage on queue nurse-call-test-${mode}-webhooks.fifo`,
          ...(production
            ? [
                `kms:Decrypt, kms:DescribeKey, kms:Encrypt, kms:GenerateDataKey on key if ${DYNAMODB_VIA}`,
                // The wake-ups, encrypted with the installation's key:
                // through SQS only (infra/lib/queues.ts takeFrom), so that
                // this cannot open the VAPID private key.
                `kms:Decrypt on key if ${SQS_VIA}`,
                // The endpoints' secrets, opened only (the admin command
                // seals them): called directly, for their purpose only.
                `kms:Decrypt on key if ${sealedPurpose('webhook-secret')}`,
              ]
            : []),
        ].sort(),
      );
      // Nothing to send (a later retry is an item of the table), nothing to delete alone.
      assert.doesNotMatch(permissionsOf(template, 'forward').join('\n'), /sqs:SendMessage|DeleteItem|by_due/);
      assert.deepEqual(managedPoliciesOf(template, 'forward'), [
        'arn:${AWS::Partition}:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole',
      ]);
    });

    it('its checkov suppressions carry its own reasons: the webhook endpoints on the internet, the queue\'s redrive, the one message group', () => {
      const skips: Json[] = forwardFunction().Metadata.checkov.skip;
      assert.deepEqual(
        skips.map((s) => s.id).sort(),
        ['CKV_AWS_116', 'CKV_AWS_117', 'CKV_AWS_173', ...(production ? ['CKV_AWS_115'] : [])].sort(),
      );
      assert.match(skips.find((s) => s.id === 'CKV_AWS_117').comment, /webhook endpoints on the internet/);
      assert.match(skips.find((s) => s.id === 'CKV_AWS_116').comment, /webhook queue.*dead-letter queue/);
      if (production) {
        assert.match(skips.find((s) => s.id === 'CKV_AWS_115').comment, /one message group/);
      }
    });
  });

  describe(`${mode}: who takes the wake-ups and who sends them`, () => {
    it('no other function reads the webhook queue, and none reads its dead letters', () => {
      assert.deepEqual(queueReaders(template, 'webhooks.fifo'), [functionId(template, 'forward')]);
      assert.deepEqual(queueReaders(template, 'webhooks-dlq.fifo'), []);
    });

    it('only the alarm function sends to the webhook queue, only the forward function receives from it; no role sends to or reads its dead letters', () => {
      for (const name of functionsOf(mode)) {
        const permissions = permissionsOf(template, name);
        const sends = permissions.some((p) => /^sqs:SendMessage on .*queue nurse-call-test-[a-z]+-webhooks\.fifo(,|$)/.test(p));
        assert.equal(sends, name === 'alarm', name);
        const receives = permissions.some((p) => /^sqs:[^\n]*ReceiveMessage on .*queue nurse-call-test-[a-z]+-webhooks\.fifo(,|$)/.test(p));
        assert.equal(receives, name === 'forward', name);
        assert.doesNotMatch(permissions.join('\n'), /webhooks-dlq/, name);
      }
    });
  });

  describe(`${mode}: the alarms`, () => {
    it('a wake-up in the dead-letter queue, to the topic', () => {
      const deadLetters = alarmNamed(template, mode, 'webhooks-dlq');
      assert.deepEqual(alarmSummary(deadLetters), queueAlarmSummary(template, 'webhooks-dlq.fifo'));
      assert.match(deadLetters.AlarmDescription, /^Webhook wake-ups the forward function could not take/);
      assert.match(deadLetters.AlarmDescription, /events may wait in the outbox until the next wake-up/);
      assert.ok(deadLetters.AlarmDescription.length <= 1024, 'CloudWatch takes at most 1024 characters');
    });

    it('an event an alarm server may not have got: a metric filter on the forward function\'s log group counts its lines, one within five minutes raises the alarm, to the topic', () => {
      const description = logLinesAlarmOf(template, mode, {
        fn: 'forward',
        filterPattern:
          '{ ($.message = "webhook wake-up not scheduled: waiting events go with the next event\'s") || ' +
          '($.message = "delivery attempts not logged yet") || ' +
          '($.message = "webhook not signed: fix or rotate the endpoint\'s secret") || ($.message = "webhook given up") || ' +
          '($.message = "webhook not sent: its host is on the home\'s network or this machine") }',
        metricName: 'WebhooksNotDelivered',
        alarm: 'webhooks-not-delivered',
      });
      assert.equal(NOT_DELIVERED_METRIC, 'WebhooksNotDelivered');
      assert.equal(
        description,
        "An alarm server may not have got an event (given up after §16's retries, not signed, or its retry not scheduled); " +
          "the call still shows on displays and staff pages; see the forward function's log for endpoint and call.",
      );
    });
  });
}

/**
 * The webhook dispatcher's calls of its store (functions/core/src/app/
 * webhooks.rs and its modules; the forward function's rounds in
 * functions/forward/src/), with the DynamoDB actions each issues on the
 * DynamoDB store (functions/store-dynamodb/src/): what the forward
 * function's grant is made for.
 */
const DISPATCHER_STORE_CALLS: Record<string, readonly string[]> = {
  // A consistent Query of `webhook#endpoints`.
  endpoints: ['dynamodb:Query on table data'],
  // A consistent Query of `webhook#outbox`, from the cursor.
  outbox_after: ['dynamodb:Query on table data'],
  // One consistent Query per event (`webhook#attempts#<event>`).
  attempts_of: ['dynamodb:Query on table data'],
  // log_attempts (BatchWriteItem of puts), then finish_events
  // (BatchWriteItem of deletes by the events' positions, their sort keys).
  log_and_finish: ['dynamodb:BatchWriteItem on table data'],
  // UpdateItem of the endpoint's `failing_since`.
  set_endpoint_failing: ['dynamodb:UpdateItem on table data'],
  // A consistent GetItem of the call: whether its alert is current.
  alarm: ['dynamodb:GetItem on table data'],
  // The scope's roster (a consistent Query): the people's devices.
  staff_of: ['dynamodb:Query on table data'],
  // The call types (Scan): the events' bodies.
  call_types: ['dynamodb:Scan on table call-types'],
  // The attention sweep: the elements from `by_scope`, the marks (a
  // consistent Query of `webhook#attention`), a mark moved with its
  // event's outbox item (TransactWriteItems of two Puts).
  elements: ['dynamodb:Query on table data/index/by_scope'],
  attention_marks: ['dynamodb:Query on table data'],
  mark_attention: ['dynamodb:PutItem on table data'],
  // A later retry's wake-up item (PutItem).
  schedule_webhook_wake: ['dynamodb:PutItem on table data'],
};

describe('the Rust side does the same', () => {
  it('the forward function\'s rounds and the dispatcher log exactly the not-delivered messages the metric filter matches, as error lines; the function\'s one other error line (its runner\'s) is its errors alarm\'s', () => {
    // The crate and the event functions' runner (lambda_support::run_events).
    const forward = [
      ...rustErrorMessages(path.join(REPO, 'functions', 'forward', 'src')),
      ...rustErrorMessages(path.join(REPO, 'functions', 'lambda-support', 'src', 'events.rs')),
      // Its sender (of the push crate): an attempt refused for its address (§20).
      ...rustErrorMessages(path.join(REPO, 'functions', 'push', 'src', 'webhook_sender.rs')),
    ];
    // The dispatcher's modules of the core crate (its other error lines, of
    // the HTTP side, the alarm runner's (the alarm function's) and the
    // store's fallbacks, are not the forward function's concern here).
    const dispatcher = [
      ...rustErrorMessages(path.join(REPO, 'functions', 'core', 'src', 'app', 'webhooks.rs')),
      ...rustErrorMessages(path.join(REPO, 'functions', 'core', 'src', 'app', 'webhooks')),
      ...rustErrorMessages(path.join(REPO, 'functions', 'core', 'src', 'app', 'forwarding.rs')),
      ...rustErrorMessages(path.join(REPO, 'functions', 'core', 'src', 'app', 'fair.rs')),
    ];
    for (const message of NOT_DELIVERED_MESSAGES) {
      assert.ok([...forward, ...dispatcher].includes(message), `tracing::error!(…, "${message}") in functions/forward/src or functions/core/src/app`);
    }
    // A new or renamed error line must be sorted: counted by the filter, or
    // alarmed otherwise (`cold start failed`: the invocation fails, the forward-errors alarm).
    assert.deepEqual(
      [...new Set([...forward, ...dispatcher])].sort(),
      [...NOT_DELIVERED_MESSAGES, 'cold start failed'].sort(),
    );
    // Each where it is said; the filter matches the whole message.
    assert.match(rustSource('forward/src/webhook_rounds.rs'), /"webhook wake-up not scheduled: waiting events go with the next event's"\);/);
    assert.match(rustSource('core/src/app/webhooks.rs'), /"delivery attempts not logged yet"\);/);
    assert.match(rustSource('core/src/app/webhooks/attempts.rs'), /"webhook not signed: fix or rotate the endpoint's secret"\);/);
    assert.match(rustSource('core/src/app/webhooks/attempts.rs'), /AttemptEnd::GivenUp\(reason\) => tracing::error!\([^;]*"webhook given up"\s*\)/);
  });

  it('the alarm function sends every wake-up in one message group, with a deduplication id (the queue deduplicates by content for nobody)', () => {
    const queues = rustSource('alarms-aws/src/queues.rs');
    assert.match(queues, /const WEBHOOK_GROUP: &str = "[^"]+";/);
    const send = queues.slice(queues.indexOf('pub async fn send_webhook_wake('));
    assert.match(send, /^[^}]*\.message_group_id\(WEBHOOK_GROUP\)\s*\.message_deduplication_id\(dedup_id\(dedup\)\)/);
    // A FIFO queue refuses a per-message delay: a later wake-up goes to the timer queue.
    assert.match(queues, /pub async fn send_webhook_wake_later\(&self, delay_seconds: u32\)/);
    assert.match(rustSource('alarms-aws/src/handler.rs'), /delay => self\.timers\.send_webhook_wake_later\(delay\)\.await\?/);
  });

  it('a workspace package and binary `forward`, the zip scripts/build-lambdas makes', () => {
    assert.match(rustSource('forward/Cargo.toml'), /^name = "forward"$/m);
    assert.ok(fs.existsSync(path.join(REPO, 'functions', 'forward', 'src', 'main.rs')));
    assert.match(fs.readFileSync(path.join(REPO, 'Cargo.toml'), 'utf8'), /"functions\/forward"/);
  });

  it('the forward function runs the rounds for any batch of wake-ups, never reports one failed, reads no queue URL and sends to no queue (a retry later is an item of the table)', () => {
    const main = rustSource('forward/src/main.rs');
    assert.match(main, /rounds\.run\(deadline\)\.await;/);
    assert.match(main, /SqsBatchResponse::default\(\)/);
    assert.doesNotMatch(rustCrate('forward'), /QUEUE_URL|Queue::new|aws_sdk_sqs|alarms_aws/);
    assert.match(rustSource('forward/src/webhook_rounds.rs'), /self\.store\.schedule_webhook_wake\(due\)/);
    // The deliver function has no webhook left: its grant is the push store's.
    assert.doesNotMatch(rustCrate('deliver'), /Dispatcher|webhook_rounds|WEBHOOK_WAKE/);
  });

  it('the dispatcher calls exactly the store methods the grant is made for, and they issue those actions', () => {
    const sources =
      rustSource('core/src/app/webhooks.rs') +
      rustSource('core/src/app/webhooks/attempts.rs') +
      rustSource('core/src/app/webhooks/attention.rs') +
      rustSource('core/src/app/webhooks/reads.rs') +
      rustSource('core/src/app/webhooks/round.rs') +
      rustCrate('forward');
    const calls = new Set([...sources.matchAll(/self\.store\s*\.(\w+)\(/g)].map((m) => m[1]));
    assert.deepEqual([...calls].sort(), Object.keys(DISPATCHER_STORE_CALLS).sort());

    // The DynamoDB store does what the table says (the calls that matter
    // for the grant: a write's action, a read of the index).
    const webhooks = rustSource('store-dynamodb/src/webhooks.rs');
    const body = (source: string, fn: string) => source.slice(source.indexOf(`fn ${fn}(`)).split(/\n    (?:async )?fn |\n    \/\/\/ /)[0];
    assert.match(body(webhooks, 'set_endpoint_failing'), /\.update_item\(\)/);
    assert.match(body(webhooks, 'endpoints'), /self\s*\.query_partition\(ENDPOINTS_PK\)/);
    assert.match(body(webhooks, 'outbox_after'), /\.query\(\)/);
    assert.match(body(webhooks, 'finish_events'), /self\.delete_keys\(/);
    assert.doesNotMatch(body(webhooks, 'finish_events'), /\.query|outbox_keys_of/, 'by the positions, no read first');
    assert.match(body(webhooks, 'log_attempts'), /self\.put_items\(/);
    assert.match(body(webhooks, 'attempts_of'), /self\.query_partition\(/);
    assert.doesNotMatch(webhooks, /fn log_and_finish/, 'the trait\'s: log_attempts, then finish_events');
    const batch = rustSource('store-dynamodb/src/batch.rs');
    assert.deepEqual([...new Set([...batch.matchAll(/\.client\s*\.(\w+)\(\)/g)].map((m) => m[1]))], ['batch_write_item']);
    const attention = rustSource('store-dynamodb/src/attention.rs');
    assert.match(attention, /self\.query_partition\(ATTENTION_PK\)/);
    // The mark and the outbox item: Puts only (no Update, Delete or ConditionCheck).
    assert.match(attention, /Put::builder\(\)/);
    assert.doesNotMatch(attention, /Update::builder|Delete::builder|ConditionCheck::builder/);
    assert.match(rustSource('store-dynamodb/src/webhook_wakes.rs'), /\.put_item\(\)/);
    const lib = rustSource('store-dynamodb/src/lib.rs');
    assert.match(body(lib, 'elements'), /self\s*\.query_list\(/);
    assert.match(body(rustSource('store-dynamodb/src/reads.rs'), 'query_list'), /\.index_name\(BY_SCOPE_INDEX\)/);
    assert.match(body(rustSource('store-dynamodb/src/alarms.rs'), 'alarm'), /\.get_item\(\)/);

    // The forward function's DynamoDB statements are exactly what the
    // dispatcher's calls issue.
    const wanted = new Map<string, Set<string>>();
    for (const line of Object.values(DISPATCHER_STORE_CALLS).flat()) {
      const [action, resource] = line.split(' on ');
      wanted.set(action, (wanted.get(action) ?? new Set()).add(resource));
    }
    for (const mode of MODES) {
      const granted = new Map<string, Set<string>>();
      for (const statement of permissionsOf(templates[mode], 'forward').filter((p) => p.startsWith('dynamodb:'))) {
        const [actions, resources] = statement.split(' on ');
        for (const action of actions.split(', ')) {
          for (const resource of resources.split(', ')) {
            granted.set(action, (granted.get(action) ?? new Set()).add(resource));
          }
        }
      }
      const sorted = (map: Map<string, Set<string>>) =>
        Object.fromEntries([...map].map(([action, resources]) => [action, [...resources].sort()]).sort());
      assert.deepEqual(sorted(granted), sorted(wanted), mode);
    }
  });

  it('the receipts of a delivered call.alert (functions/core/src/app/webhooks/receipts.rs) need no other grant: the scope\'s roster (Query), then the alarm runner\'s receipt as the staff function writes a phone\'s: the call (GetItem), the call types (Scan), the duties and the address\'s open calls (Query), the alarm write with its audit (TransactWriteItems: Update + Put)', () => {
    const receipts = rustSource('core/src/app/webhooks/receipts.rs');
    assert.match(receipts, /store\.staff_of\(&handsets\.scope\)/);
    assert.match(receipts, /\.alarm_runner\(\)\s*\.receive\(/);
    assert.doesNotMatch(receipts, /staff_member\(/, 'a member by id scans the consumers table, which the forward function may not read');
    // The alarm write issues Updates and Puts only.
    const alarms = rustSource('store-dynamodb/src/alarms.rs');
    assert.doesNotMatch(alarms, /Delete::builder|ConditionCheck::builder/);
    assert.match(rustSource('forward/src/main.rs'), /dispatcher\.take_receipts_with\(receipts\);/);
    for (const mode of MODES) {
      const granted = permissionsOf(templates[mode], 'forward').join('\n');
      for (const action of ['GetItem', 'Query', 'UpdateItem', 'PutItem']) {
        assert.match(granted, new RegExp(`dynamodb:${action}[^\\n]* on [^\\n]*table data`), `${mode}: ${action}`);
      }
      assert.match(granted, /dynamodb:Scan on table call-types/, mode);
    }
  });

  it('the rounds end within the 70 s timeout: they stop 8 s before the deadline (more than an attempt\'s 5 s) and wait at most 5 s for a retry', () => {
    const rounds = rustSource('forward/src/webhook_rounds.rs');
    const seconds = (name: string) => {
      const found = new RegExp(`const ${name}: Duration = Duration::from_secs\\((\\d+)\\);`).exec(rounds);
      assert.ok(found, name);
      return Number(found[1]);
    };
    const attempt = /pub const ATTEMPT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs\((\d+)\);/.exec(
      rustSource('core/src/domain/webhooks/schedule.rs'),
    );
    assert.ok(attempt, 'ATTEMPT_TIMEOUT of schedule.rs');
    const [margin, wait] = [seconds('DEADLINE_MARGIN'), seconds('WAIT_IN_INVOCATION')];
    assert.deepEqual([margin, wait], [8, 5]);
    assert.ok(margin > Number(attempt[1]), 'an attempt started before the stop ends before the deadline');
    assert.ok(FORWARD_TIMEOUT.toSeconds() > margin + wait, 'room for a round and a retry waited for');
  });
});
