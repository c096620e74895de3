/**
 * Web Push in AWS (DECISIONS §15, §17; issue 28): the delivery queue and
 * its dead-letter queue, the deliver function (its event source mapping,
 * environment with VAPID_SUBJECT and in production SECRETS_KEY_ID,
 * timeout, exact permissions, checkov
 * reasons), the queues' alarms, the alarm on pushes not delivered (a metric
 * filter on the function's log), the vapidSubject setting, and what the
 * Rust side must do the same way (the push's TTL the timeout and the age
 * alarm are made for, the default VAPID subject, the push store's DynamoDB
 * operations the grant is made for, the error lines the filter matches).
 * Offline, on the synthesized templates of both modes.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';

import { Template } from 'aws-cdk-lib/assertions';

import {
  DEFAULT_PUSH_SERVICES,
  DEFAULT_VAPID_SUBJECT,
  DELIVER_TIMEOUT,
  functionsOf,
} from '../lib/nurse-call-stack';
import { DELIVERY_AGE_ALARM_SECONDS, NOT_DELIVERED_MESSAGES, NOT_DELIVERED_METRIC, PUSH_TTL_SECONDS } from '../lib/deliveries';
import {
  DYNAMODB_VIA,
  SQS_VIA,
  Json,
  MODES,
  REPO,
  alarmNamed,
  alarmSummary,
  appTemplate,
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
  rustErrorMessages,
  rustSource,
  sealedPurpose,
  synth,
  topicTemplates,
} from './helpers';

const templates = topicTemplates();

/** The logical id of the installation's key (production). */
const keyIdOf = (template: Template) => Object.keys(resourcesOf(template, 'AWS::KMS::Key'))[0];

for (const mode of MODES) {
  const template = templates[mode];
  const production = mode === 'production';
  const queue = (suffix: string) => resourcesOf(template, 'AWS::SQS::Queue')[queueId(template, suffix)];
  const deliverFunction = () => resourcesOf(template, 'AWS::Lambda::Function')[functionId(template, 'deliver')];

  describe(`${mode}: the delivery queue and its dead-letter queue`, () => {
    it('the delivery queue: standard, no delay, visibility 6 × the function\'s 70 s, kept 1 hour, to the dead-letter queue after 3 receives', () => {
      const props = queue('deliveries').Properties;
      assert.equal(props.QueueName, `nurse-call-test-${mode}-deliveries`);
      assert.equal(props.FifoQueue, undefined);
      assert.equal(props.DelaySeconds, undefined);
      assert.equal(props.VisibilityTimeout, 6 * 70);
      assert.equal(props.VisibilityTimeout, 6 * deliverFunction().Properties.Timeout);
      assert.equal(props.MessageRetentionPeriod, 3600);
      assert.deepEqual(props.RedrivePolicy, { deadLetterTargetArn: queueArnOf(template, 'deliveries-dlq'), maxReceiveCount: 3 });
      // A job that failed every receive reaches the dead-letter queue long
      // before the queue would drop it.
      assert.ok(props.VisibilityTimeout * props.RedrivePolicy.maxReceiveCount < props.MessageRetentionPeriod);
    });

    it('the dead-letter queue keeps what it gets 14 days, and sends it nowhere', () => {
      const props = queue('deliveries-dlq').Properties;
      assert.equal(props.QueueName, `nurse-call-test-${mode}-deliveries-dlq`);
      assert.equal(props.MessageRetentionPeriod, 14 * 24 * 3600);
      assert.equal(props.RedrivePolicy, undefined);
      assert.equal(props.FifoQueue, undefined);
    });

    it(`both: TLS only, ${production ? "encrypted with the installation's key" : 'SQS-managed encryption'}, deleted with the stack`, () => {
      assertQueuesProtected(template, mode, ['deliveries', 'deliveries-dlq'], /push jobs/);
    });
  });

  describe(`${mode}: the deliver function`, () => {
    it('arm64 provided.al2023 from its zip, 70 s, 256 MB, its own log group, no VPC', () => {
      const props = assertServiceFunction(template, mode, 'deliver', { timeout: 70, memory: 256 });
      assert.equal(DELIVER_TIMEOUT.toSeconds(), 70);
      assert.match(props.Description, /Web Push/);
    });

    it('one event source: the delivery queue, up to 10 jobs a batch, without waiting, partial batch failures', () => {
      assert.equal(Object.keys(mappingsOf(template, 'deliver')).length, 1);
      assertQueueMapping(template, 'deliver', 'deliveries');
    });

    it('no other function reads the delivery queue, and none reads its dead letters', () => {
      assert.deepEqual(queueReaders(template, 'deliveries'), [functionId(template, 'deliver')]);
      assert.deepEqual(queueReaders(template, 'deliveries-dlq'), []);
    });

    it(`the environment: mode, time zone, tables, logs, VAPID_SUBJECT and PUSH_SERVICES${production ? ', SECRETS_KEY_ID (the key sealing the VAPID private key)' : ''} (no retention: it writes no calls)`, () => {
      assert.deepEqual(environmentOf(template, 'deliver'), {
        ...commonEnvironment(template, mode),
        VAPID_SUBJECT: 'mailto:admin@localhost',
        PUSH_SERVICES: DEFAULT_PUSH_SERVICES,
        // The installation's key's ARN; none in a sandbox (no key: the
        // VAPID private key stays plain).
        ...(production ? { SECRETS_KEY_ID: `{${keyIdOf(template)}.Arn}` } : {}),
      });
    });

    it('exactly its statements: the push store on the data table, the delivery queue\'s receive; only the basic execution role besides (logs)', () => {
      const key = production ? ['key'] : [];
      assert.deepEqual(
        permissionsOf(template, 'deliver'),
        [
          // The VAPID key pair (GetItem, the first one's conditional
          // PutItem), a person's subscriptions (Query), each alert pushed
          // recorded on its device (UpdateItem), a gone one (DeleteItem):
          // writes to the push items' partitions only (issue 46).
          'dynamodb:GetItem, dynamodb:Query on table data',
          'dynamodb:DeleteItem, dynamodb:PutItem, dynamodb:UpdateItem on table data if ForAllValues:StringLike dynamodb:LeadingKeys=push#*,staff#*',
          // The event source mapping's receive and delete.
          `sqs:ChangeMessageVisibility, sqs:DeleteMessage, sqs:GetQueueAttributes, sqs:GetQueueUrl, sqs:ReceiveMessage on queue nurse-call-test-${mode}-deliveries`,
          ...key.flatMap(() => [
            `kms:Decrypt, kms:DescribeKey, kms:Encrypt, kms:GenerateDataKey on key if ${DYNAMODB_VIA}`,
            // The jobs, encrypted with the installation's key: through SQS
            // only (infra/lib/queues.ts takeFrom), so that this cannot open
            // the webhook secrets.
            `kms:Decrypt on key if ${SQS_VIA}`,
            // The VAPID private key, sealed on the first cold start and
            // opened on each: called directly, for its purpose only.
            `kms:Decrypt, kms:Encrypt on key if ${sealedPurpose('vapid-private-key')}`,
          ]),
        ].sort(),
      );
      assert.deepEqual(managedPoliciesOf(template, 'deliver'), [
        'arn:${AWS::Partition}:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole',
      ]);
    });

    it('only the alarm function sends to the delivery queue; no role sends to or reads its dead letters', () => {
      for (const name of functionsOf(mode)) {
        const permissions = permissionsOf(template, name);
        const sends = permissions.some((p) => /^sqs:SendMessage on .*queue nurse-call-test-[a-z]+-deliveries(,|$)/.test(p));
        assert.equal(sends, name === 'alarm', name);
        assert.doesNotMatch(permissions.join('\n'), /deliveries-dlq/, name);
        if (name !== 'deliver') {
          assert.doesNotMatch(permissions.join('\n'), /sqs:ReceiveMessage[^\n]*deliveries/, name);
        }
      }
    });

    it('its checkov suppressions carry its own reasons: the push services on the internet, the queue\'s redrive, the alerts a cap would hold back', () => {
      const skips: Json[] = deliverFunction().Metadata.checkov.skip;
      assert.deepEqual(
        skips.map((s) => s.id).sort(),
        ['CKV_AWS_116', 'CKV_AWS_117', 'CKV_AWS_173', ...(production ? ['CKV_AWS_115'] : [])].sort(),
      );
      assert.match(skips.find((s) => s.id === 'CKV_AWS_117').comment, /push services on the internet/);
      assert.match(skips.find((s) => s.id === 'CKV_AWS_116').comment, /delivery queue.*dead-letter queue/);
      if (production) {
        assert.match(skips.find((s) => s.id === 'CKV_AWS_115').comment, /alerts to the staff's phones/);
      }
    });
  });

  describe(`${mode}: the alarms`, () => {
    it('a job in the dead-letter queue, a job older than a push\'s 60 s TTL, the function\'s throttles and errors; all to the topic', () => {
      const alarm = (name: string) => alarmNamed(template, mode, name);
      const deadLetters = alarm('deliveries-dlq');
      assert.deepEqual(alarmSummary(deadLetters), queueAlarmSummary(template, 'deliveries-dlq'));
      assert.match(deadLetters.AlarmDescription, /could not read.*a phone may have missed an alert/);
      const age = alarm('deliveries-age');
      assert.deepEqual(alarmSummary(age), queueAlarmSummary(template, 'deliveries', 60));
      assert.match(age.AlarmDescription, /not keeping up or fails/);
      assert.equal(alarm('deliver-throttles').MetricName, 'Throttles');
      assert.equal(alarm('deliver-errors').MetricName, 'Errors');
    });

    it('a push not delivered: a metric filter on the deliver function\'s log group counts its lines, one within five minutes raises the alarm, to the topic', () => {
      const description = logLinesAlarmOf(template, mode, {
        fn: 'deliver',
        filterPattern:
          '{ ($.message = "push not delivered") || ($.message = "push not delivered: older than its TTL when taken") || ' +
          '($.message = "push not sent") || ($.message = "push not sent: the subscriptions could not be read") }',
        metricName: 'PushesNotDelivered',
        alarm: 'pushes-not-delivered',
      });
      assert.equal(NOT_DELIVERED_METRIC, 'PushesNotDelivered');
      assert.match(description, /a phone may have missed an alert or a cancel/);
      assert.match(description, /the alert still rang on open staff pages, on displays and through alarm servers/);
      assert.match(description, /log for person \(staff_id\), call \(call_id\) and push service host \(push_service\)/);
    });
  });
}

describe('without an alarm address', () => {
  it('the not-delivered filter and alarm are made all the same, without an action', () => {
    const template = synth('production');
    template.resourceCountIs('AWS::SNS::Topic', 0);
    const found = Object.values(resourcesOf(template, 'AWS::CloudWatch::Alarm')).filter(
      (a) => a.Properties.AlarmName === 'nurse-call-test-production-pushes-not-delivered',
    );
    assert.equal(found.length, 1);
    assert.equal(found[0].Properties.AlarmActions, undefined);
    template.hasResourceProperties('AWS::Logs::MetricFilter', {
      MetricTransformations: [{ MetricNamespace: 'NurseCall/test-production', MetricName: 'PushesNotDelivered', MetricValue: '1' }],
    });
  });
});

describe('vapidSubject', () => {
  const subjectOf = (template: Template) =>
    resourcesOf(template, 'AWS::Lambda::Function')[functionId(template, 'deliver')].Properties.Environment.Variables.VAPID_SUBJECT;

  it('comes from the props (trimmed), mailto:admin@localhost when unset or empty; only the deliver function gets it', () => {
    assert.equal(DEFAULT_VAPID_SUBJECT, 'mailto:admin@localhost');
    assert.equal(subjectOf(synth('production', { vapidSubject: ' https://pflege.example.org/kontakt ' })), 'https://pflege.example.org/kontakt');
    assert.equal(subjectOf(synth('sandbox', { vapidSubject: 'mailto:pflege@example.org' })), 'mailto:pflege@example.org');
    assert.equal(subjectOf(synth('production', { vapidSubject: '' })), 'mailto:admin@localhost');
    for (const mode of MODES) {
      for (const name of functionsOf(mode).filter((n) => n !== 'deliver')) {
        const fn = resourcesOf(templates[mode], 'AWS::Lambda::Function')[functionId(templates[mode], name)];
        assert.equal(fn.Properties.Environment.Variables.VAPID_SUBJECT, undefined, `${mode} ${name}`);
      }
    }
  });

  it('refuses what the deliver function would refuse at its cold start (parse_vapid_subject)', () => {
    for (const bad of ['admin@example.org', 'http://example.org', 'mailto:', 'https://', 'mailto:a b@example.org', 'mailto:pflege@exämple.org']) {
      assert.throws(() => synth('production', { vapidSubject: bad }), /vapidSubject/, bad);
    }
  });

  it('the CDK app passes vapidSubject from the context', () => {
    const template = appTemplate({ installation: 'vapid', mode: 'production', vapidSubject: 'mailto:pflege@example.org' });
    const subjects = Object.values(template.Resources as Record<string, Json>)
      .filter((r) => r.Type === 'AWS::Lambda::Function' && r.Properties.Environment?.Variables?.VAPID_SUBJECT)
      .map((r) => r.Properties.Environment.Variables.VAPID_SUBJECT);
    assert.deepEqual(subjects, ['mailto:pflege@example.org']);
  });
});

describe('pushServices', () => {
  const servicesOf = (template: Template, name: 'call-types' | 'deliver') =>
    resourcesOf(template, 'AWS::Lambda::Function')[functionId(template, name)].Properties.Environment.Variables.PUSH_SERVICES;

  it('comes from the props (trimmed), the browsers\' push services when unset or empty; the call-types function (registrations, issue 47) and the deliver function (pushes) get it, no other', () => {
    assert.equal(DEFAULT_PUSH_SERVICES, 'fcm.googleapis.com,*.push.apple.com,*.push.services.mozilla.com,*.notify.windows.com');
    const set = synth('production', { pushServices: ' fcm.googleapis.com,*.push.apple.com ' });
    assert.equal(servicesOf(set, 'call-types'), 'fcm.googleapis.com,*.push.apple.com');
    assert.equal(servicesOf(set, 'deliver'), 'fcm.googleapis.com,*.push.apple.com');
    assert.equal(servicesOf(synth('sandbox', { pushServices: '' }), 'deliver'), DEFAULT_PUSH_SERVICES);
    for (const mode of MODES) {
      for (const name of functionsOf(mode)) {
        const fn = resourcesOf(templates[mode], 'AWS::Lambda::Function')[functionId(templates[mode], name)];
        const expected = name === 'call-types' || name === 'deliver' ? DEFAULT_PUSH_SERVICES : undefined;
        assert.equal(fn.Properties.Environment.Variables.PUSH_SERVICES, expected, `${mode} ${name}`);
      }
    }
  });

  it('refuses what is no list of hosts (a URL, a port, a path, a trailing dot, nothing)', () => {
    for (const bad of [',', 'https://fcm.googleapis.com', 'fcm.googleapis.com:443', 'fcm.googleapis.com/x', 'fcm.googleapis.com.', '*', 'a b']) {
      assert.throws(() => synth('production', { pushServices: bad }), /pushServices/, bad);
    }
  });

  it('the CDK app passes pushServices from the context', () => {
    const template = appTemplate({ installation: 'pushes', mode: 'production', pushServices: 'fcm.googleapis.com' });
    const lists = Object.values(template.Resources as Record<string, Json>)
      .filter((r) => r.Type === 'AWS::Lambda::Function' && r.Properties.Environment?.Variables?.PUSH_SERVICES)
      .map((r) => r.Properties.Environment.Variables.PUSH_SERVICES);
    assert.deepEqual(lists, ['fcm.googleapis.com', 'fcm.googleapis.com']);
  });

  it('is the Rust side\'s default, read through the settings', () => {
    assert.match(rustSource('core/src/domain/push_services.rs'), /pub const DEFAULT_PUSH_SERVICES: &str =\s*"([^"]*)";/);
    const [, rust] = /pub const DEFAULT_PUSH_SERVICES: &str =\s*"([^"]*)";/.exec(rustSource('core/src/domain/push_services.rs'))!;
    assert.equal(rust, DEFAULT_PUSH_SERVICES);
    assert.match(rustSource('core/src/config.rs'), /var\("PUSH_SERVICES"\)/);
  });
});

describe('the Rust side does the same', () => {
  it('a workspace package and binary `deliver`, the zip scripts/build-lambdas makes', () => {
    assert.match(rustSource('deliver/Cargo.toml'), /^name = "deliver"$/m);
    assert.ok(fs.existsSync(path.join(REPO, 'functions', 'deliver', 'src', 'main.rs')));
    assert.match(fs.readFileSync(path.join(REPO, 'Cargo.toml'), 'utf8'), /"functions\/deliver"/);
  });

  it('a push lives 60 s (the age alarm\'s threshold), each attempt at most 5 s: the 70 s timeout outlasts the last retry', () => {
    assert.match(rustSource('core/src/domain/push.rs'), /pub const PUSH_TTL_SECONDS: u64 = 60;/);
    assert.equal(PUSH_TTL_SECONDS, 60);
    assert.equal(DELIVERY_AGE_ALARM_SECONDS, PUSH_TTL_SECONDS);
    const attempt = /pub const ATTEMPT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs\((\d+)\);/.exec(
      rustSource('core/src/domain/webhooks/schedule.rs'),
    );
    assert.ok(attempt, 'ATTEMPT_TIMEOUT of schedule.rs');
    assert.match(rustSource('push/src/queue.rs'), /\.timeout\(ATTEMPT_TIMEOUT\)/);
    assert.ok(DELIVER_TIMEOUT.toSeconds() >= PUSH_TTL_SECONDS + Number(attempt[1]));
  });

  it('the deliver function reads VAPID_SUBJECT through the settings, whose default is the stack\'s', () => {
    assert.match(rustSource('deliver/src/main.rs'), /Settings::from_env\(Mode::Production\)/);
    assert.match(rustSource('deliver/src/main.rs'), /Pusher::new\(store\.clone\(\), sealer, &settings\.staff\)/);
    assert.match(rustSource('push/src/queue.rs'), /vapid_subject: staff\.vapid_subject\.clone\(\)/);
    assert.match(rustSource('core/src/config.rs'), /var\("VAPID_SUBJECT"\)/);
    assert.match(rustSource('core/src/config.rs'), new RegExp(`pub const DEFAULT_VAPID_SUBJECT: &'static str = "${DEFAULT_VAPID_SUBJECT}";`));
  });

  it('the push crate logs exactly the not-delivered messages the metric filter matches, as error lines; its one other error line is the dead-letter queue\'s', () => {
    // Without the webhook sender's, which is the forward function's (webhooks.test.ts).
    const webhooks = rustErrorMessages(path.join(REPO, 'functions', 'push', 'src', 'webhook_sender.rs'));
    const messages = rustErrorMessages(path.join(REPO, 'functions', 'push', 'src')).filter((m) => !webhooks.includes(m));
    for (const message of NOT_DELIVERED_MESSAGES) {
      assert.ok(messages.includes(message), `tracing::error!(…, "${message}") in functions/push/src`);
    }
    // A new or renamed error line must be sorted: counted by the filter, or
    // alarmed otherwise (this one: the deliveries-dlq alarm).
    assert.deepEqual(
      [...new Set(messages)].sort(),
      [...NOT_DELIVERED_MESSAGES, 'a delivery message that is no push job: left to the dead-letter queue'].sort(),
    );
    // Both sources hold them; the filter matches the whole message.
    assert.match(rustSource('push/src/queue.rs'), /"push not delivered"\);/);
    assert.match(rustSource('push/src/delivery_queue.rs'), /"push not delivered: older than its TTL when taken"\s*\);/);
  });

  it('the deliver function answers a partial batch response (reportBatchItemFailures)', () => {
    assert.match(rustSource('push/src/delivery_queue.rs'), /"batchItemFailures"/);
    assert.match(rustSource('push/src/delivery_queue.rs'), /"itemIdentifier"/);
  });

  it('the push store issues exactly GetItem, PutItem, UpdateItem, DeleteItem, Query and their transaction (the grant)', () => {
    const file = rustSource('store-dynamodb/src/push.rs');
    const body = file.slice(file.indexOf('impl PushStore for DynamoStore'));
    assert.ok(body.length > 0, 'impl PushStore for DynamoStore');
    // The trait's methods, and the devices' facts and sign-on tests they
    // call (devices.rs, device_tests.rs).
    const sources = [
      body,
      rustSource('store-dynamodb/src/devices.rs'),
      rustSource('store-dynamodb/src/device_tests.rs'),
      rustSource('store-dynamodb/src/caps.rs'),
    ];
    const calls = new Set(sources.flatMap((source) => [...source.matchAll(/\.client\s*\.(\w+)\(\)/g)].map((m) => m[1])));
    assert.deepEqual([...calls].sort(), ['delete_item', 'get_item', 'put_item', 'update_item']);
    // A person's subscriptions and devices: one Query of their partition; a
    // subscription is written with its channel item in one transaction
    // (TransactWriteItems: the UpdateItem grant of the subscription, which
    // keeps the device's facts, the PutItem grant of the channel item,
    // DECISIONS §18), under the person's cap (caps.rs: a GetItem of the cap
    // item, the Query, its UpdateItem in the transaction, DECISIONS §20).
    assert.deepEqual(
      [...new Set([...body.matchAll(/self\s*\.(\w+)\(/g)].map((m) => m[1]))].sort(),
      ['device_pushed', 'device_received', 'devices_of', 'put_device_test', 'query_partition', 'vapid_keys', 'write_under_cap'],
    );
    assert.match(rustSource('store-dynamodb/src/caps.rs'), /self\.transact\(writes\)/);
    assert.match(rustSource('store-dynamodb/src/devices.rs'), /self\s*\.query_partition\(/);
    assert.match(rustSource('store-dynamodb/src/reads.rs'), /async fn query_partition[^{]*\{\s*self\.client\s*\.query\(\)/);
  });
});
